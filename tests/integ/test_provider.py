#!/usr/bin/env python3
"""The gateway with its own provider (issue #4): `ssl_provider tlsgate;` (built in, no module
path), `ssl_propquery "?provider=tlsgate"`, `ssl_async on`.

- handshakes: TLS 1.2 RSA key exchange, ECDHE-RSA (X25519 and P-256), ECDHE-ECDSA, TLS 1.3
  with the RSA and the ECDSA certificate (X25519, P-256 and P-384, all accelerated) all
  complete and serve the page;
- batching: under 64 concurrent `Connection: close` clients the worker's provider counters
  (TLSGATE_STATS_FILE, written when the worker exits; `adaptive off`) show requests queued
  in async jobs,
  batches of more than one lane, and partial batches flushed by the worker's poll;
- `ssl_async off`: the same provider computes synchronously (its `sync` counter), no batch;
- the default adaptive choice: every operation accounted for (queued, single or fallback);
- a bad or unknown provider parameter is a clear `-t` error naming it.

Usage: python3 tests/integ/test_provider.py BIN [TEST...]
"""
import os
import re
import signal
import time
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness as h  # noqa: E402

h.FILE_TIMEOUT = 110

KNOWN_FAILURES = {}

MAIN = 'ssl_provider tlsgate;\nssl_propquery "?provider=tlsgate";\n'
# the batching checks want every operation queued: the adaptive choice (single operations
# when batches stay small, e.g. in a sanitizer build where the kernels are slow) is off
MAIN_NO_ADAPTIVE = ('ssl_provider tlsgate { adaptive off; }\n'
                    'ssl_propquery "?provider=tlsgate";\n')


def server_block(env, port, extra):
    return env.server(port, "ssl_session_tickets off;", "ssl_session_cache off;", extra,
                      certs=("a_rsa", "a_ec"))


def start(env, extra, stats, main=MAIN):
    env.write("html/index.html", "hello\n")
    env.write("html/empty", b"")
    port = env.port()
    conf = env.conf(server_block(env, port, extra), main=main + "worker_processes 1;\n")
    srv = env.start(conf, env={"TLSGATE_STATS_FILE": stats})
    srv.wait_port(port)
    return srv, port


def read_stats(path, pids):
    """The counter lines the given processes wrote at exit: {pid: {name: value}}."""
    out = {}
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                m = re.match(r"tlsgate pid=(\d+) (.*)$", line.strip())
                if m and int(m.group(1)) in pids:
                    out[int(m.group(1))] = {k: int(v) for k, v in
                                            (kv.split("=") for kv in m.group(2).split())}
    return out


def s_client(port, args):
    p = h.run(["openssl", "s_client", "-connect", "127.0.0.1:%d" % port, "-servername",
               "a.test", "-ign_eof", *args],
              input="GET / HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n", timeout=20)
    return p.returncode, p.stdout + p.stderr


CASES = [
    ("TLS 1.2 RSA key exchange", ["-tls1_2", "-cipher", "AES256-GCM-SHA384"], "AES256-GCM-SHA384"),
    ("TLS 1.2 ECDHE-RSA X25519", ["-tls1_2", "-cipher", "ECDHE-RSA-AES256-GCM-SHA384",
                                  "-groups", "X25519"], "ECDHE-RSA-AES256-GCM-SHA384"),
    ("TLS 1.2 ECDHE-RSA P-256", ["-tls1_2", "-cipher", "ECDHE-RSA-AES128-GCM-SHA256",
                                 "-groups", "P-256"], "ECDHE-RSA-AES128-GCM-SHA256"),
    ("TLS 1.2 ECDHE-ECDSA", ["-tls1_2", "-cipher", "ECDHE-ECDSA-AES256-GCM-SHA384"],
     "ECDHE-ECDSA-AES256-GCM-SHA384"),
    ("TLS 1.3 RSA X25519", ["-tls1_3", "-sigalgs", "rsa_pss_rsae_sha256", "-groups", "X25519"],
     "TLS_AES_256_GCM_SHA384"),
    ("TLS 1.3 ECDSA P-256", ["-tls1_3", "-sigalgs", "ecdsa_secp256r1_sha256", "-groups", "P-256"],
     "TLS_AES_256_GCM_SHA384"),
    ("TLS 1.3 ECDSA P-384 key share", ["-tls1_3", "-sigalgs", "ecdsa_secp256r1_sha256",
                                       "-groups", "P-384"], "TLS_AES_256_GCM_SHA384"),
]


def run_cases(port):
    for what, args, cipher in CASES:
        rc, out = s_client(port, args)
        assert rc == 0 and ("Cipher is " + cipher) in out and "hello" in out, \
            "%s: handshake or page failed (exit %d):\n%s" % (what, rc, out[-2000:])
        print("  %s: ok" % what, flush=True)


def test_adaptive_default(env):
    """The default (adaptive on): every handshake kind completes, and every private-key
    operation is accounted for as queued, single (sync), fallback or taken from an
    idle-time pool (the worker fills them when its loop would block)."""
    stats = env.path("stats")
    srv, port = start(env, "ssl_async on;", stats)
    pids = set(srv.wait_workers(1))
    run_cases(port)
    p = h.run(["wrk", "-t", "1", "-c", "32", "-d", "2s", "--timeout", "5s", "-H",
               "Connection: close", "https://127.0.0.1:%d/empty" % port], timeout=30)
    assert p.returncode == 0 and "Socket errors" not in p.stdout and "Non-2xx" not in p.stdout, \
        p.stdout + p.stderr
    srv.stop(signal.SIGQUIT)
    c = next(iter(read_stats(stats, pids).values()))
    print("  counters: requests=%d requests_async=%d sync=%d fallbacks=%d batches=%d" % (
        c["requests"], c["requests_async"], c["sync"], c["fallbacks"], c["batches"]), flush=True)
    assert c["requests"] == c["requests_async"] + c["sync"] + c["fallbacks"] + c["pool_hits"], c
    assert c["requests_async"] > 0 and c["batches"] > 0, c


def pooled_handshakes(env, main, n=12):
    """n sequential TLS 1.3 ECDSA P-256 / X25519 handshakes with pauses between them (the
    worker's loop blocks, so it does its idle-time work); the worker's counters."""
    stats = env.path("stats")
    srv, port = start(env, "ssl_async on;", stats, main)
    pids = set(srv.wait_workers(1))
    args = ["-tls1_3", "-sigalgs", "ecdsa_secp256r1_sha256", "-groups", "X25519"]
    for _ in range(n):
        rc, out = s_client(port, args)
        assert rc == 0 and "hello" in out, out[-2000:]
        time.sleep(0.05)
    srv.stop(signal.SIGQUIT)
    c = next(iter(read_stats(stats, pids).values()))
    print("  counters: requests=%d pool_hits=%d pool_misses=%d batches=%d" % (
        c["requests"], c["pool_hits"], c["pool_misses"], c["batches"]), flush=True)
    return c


def test_idle_pools(env):
    """Idle-time precomputation in the gateway: after the first handshake (which makes the
    kinds wanted), every handshake takes its ECDSA sign setup and its X25519 key share from
    the pools the worker filled while idle; with pool_size 0 nothing is pooled."""
    n = 12
    c = pooled_handshakes(env, MAIN, n)
    # per handshake: one ECDSA signature and one X25519 key generation (and the derive,
    # which no pool can serve); the first handshake finds no pool yet
    assert c["pool_hits"] >= 2 * (n - 1), c
    assert c["pool_misses"] == 0, c
    c = pooled_handshakes(env, 'ssl_provider tlsgate { pool_size 0; }\n'
                          'ssl_propquery "?provider=tlsgate";\n', n)
    assert c["pool_hits"] == 0 and c["pool_misses"] == 0, c
    assert c["requests"] == c["requests_async"] + c["sync"] + c["fallbacks"], c


def test_handshakes_and_batching(env):
    stats = env.path("stats")
    srv, port = start(env, "ssl_async on;", stats, MAIN_NO_ADAPTIVE)
    pids = set(srv.wait_workers(1))
    run_cases(port)
    p = h.run(["wrk", "-t", "1", "-c", "64", "-d", "3s", "--timeout", "5s", "-H",
               "Connection: close", "https://127.0.0.1:%d/empty" % port], timeout=30)
    m = re.search(r"^\s*(\d+) requests in", p.stdout, re.M)
    assert p.returncode == 0 and m and int(m.group(1)) > 0, "wrk failed:\n" + p.stdout + p.stderr
    assert "Socket errors" not in p.stdout and "Non-2xx" not in p.stdout, p.stdout
    print("  wrk: %s handshakes in 3 s" % m.group(1), flush=True)
    srv.stop(signal.SIGQUIT)
    st = read_stats(stats, pids)
    assert st, "no provider counters from worker %s in %s" % (pids, stats)
    c = next(iter(st.values()))
    multi = sum(c["batch_fill_%d" % i] for i in range(2, 9))
    print("  worker counters: " + " ".join("%s=%d" % kv for kv in sorted(c.items())), flush=True)
    assert c["requests_async"] > int(m.group(1)), "handshakes were not queued in jobs: %s" % c
    assert multi > 0, "no batch of more than one lane under 64 clients: %s" % c
    assert c["flush_poll"] > 0, "the worker's poll never flushed a partial batch: %s" % c
    # adaptive off: every request is queued, so no switch of mode is counted
    assert c["mode_single"] == 0 and c["mode_batch"] == 0, "mode switches with adaptive off: %s" % c
    # P-384 key shares are batched like the others now (#19): nothing falls back
    assert c["fallbacks"] == 0, "a handshake fell back to the default provider: %s" % c


def test_async_off_is_sync(env):
    stats = env.path("stats")
    srv, port = start(env, "ssl_async off;", stats)
    pids = set(srv.wait_workers(1))
    for what, args, cipher in CASES[:2]:
        rc, out = s_client(port, args)
        assert rc == 0 and ("Cipher is " + cipher) in out, "%s failed:\n%s" % (what, out[-2000:])
    srv.stop(signal.SIGQUIT)
    c = next(iter(read_stats(stats, pids).values()))
    print("  counters: sync=%d requests_async=%d batches=%d" % (c["sync"], c["requests_async"],
                                                               c["batches"]), flush=True)
    assert c["sync"] >= 3 and c["requests_async"] == 0 and c["batches"] == 0, c


def test_bad_parameter(env):
    conf = env.conf(server_block(env, env.port(), ""),
                    main="ssl_provider tlsgate { flush_us notanumber; }\n", name="bad.conf")
    p = h.run([h.binary(), "-t", "-c", conf], timeout=20)
    out = p.stdout + p.stderr
    print("  -t: exit %d: %s" % (p.returncode, out.strip().replace("\n", " | ")[:300]), flush=True)
    assert p.returncode != 0, "-t accepted flush_us notanumber:\n" + out
    assert "tlsgate" in out and "flush_us" in out, "-t does not name the bad parameter:\n" + out


def test_unknown_parameter(env):
    """A misspelt parameter (the provider would ignore it and keep its default) fails -t,
    named with the ones the provider takes; every one of those passes."""
    def check(params):
        conf = env.conf(server_block(env, env.port(), ""), name="p.conf",
                        main="ssl_provider tlsgate { %s }\n" % params)
        p = h.run([h.binary(), "-t", "-c", conf], timeout=20)
        return p.returncode, p.stdout + p.stderr
    rc, out = check("flsuh_us 50;")
    print("  -t: exit %d: %s" % (rc, out.strip().replace("\n", " | ")[:300]), flush=True)
    assert rc != 0 and 'unknown parameter "flsuh_us"' in out and "pool_size" in out, out
    rc, out = check("flush_us 50; poll_mode timer; enable all; adaptive on; pool_size 8;")
    assert rc == 0, out
    assert "[warn]" not in out, out
    # a module path cannot apply to the built-in provider: said, not silently ignored
    rc, out = check("path /nonexistent;")
    assert rc == 0 and '"path /nonexistent" is ignored' in out, out


if __name__ == "__main__":
    h.main(globals())
