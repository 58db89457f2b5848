#!/usr/bin/env python3
"""OpenSSL's secure heap (`ssl_secure_heap`) and worker_connections: what a connection
holds there (secheap_probe, the figures of docs/security.md, bound by the sizing
constants of gw/tls/secheap.h), the default sized from worker_connections, the warning of
start-up and `-t` when an explicit size is too small, and a full heap: a clear [alert]
line, no crash, and the worker serves again once connections close.

Usage: python3 tests/integ/test_secheap.py BIN [TEST...]
"""
import os
import re
import socket
import ssl
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness as h  # noqa: E402

KNOWN_FAILURES = {}
CONN_DEFAULT, CONN_TLSGATE, CONN_PROVIDER = 64, 256, 2048  # gw/tls/secheap.h GW_SECHEAP_CONN_*
FULL = "the secure heap is full"


def probe_bin():
    p = os.environ.get("SECHEAP_PROBE") or os.path.join(os.path.dirname(h.binary()),
                                                        "secheap_probe")
    if not os.access(p, os.X_OK):
        h.skip("no secheap_probe (build the secheap_probe target)")
    return p


def conf_text(env, port, main="", wc=512, extra=""):
    base = env.main_conf(main).replace("worker_connections 512;",
                                       "worker_connections %d;" % wc)
    return base + """http {
    server {
        listen 127.0.0.1:%d ssl;
        server_name a.test;
        %s
        root %s;
        %s
    }
}
""" % (port, env.tls("a_ec"), env.html, extra)


def config_test(env, text, name):
    conf = env.write(name, text)
    p = h.run([h.binary(), "-t", "-c", conf], timeout=30,
              env=dict(os.environ, TLSGATE_STATE_DIR=env.state))
    return p.returncode, p.stdout + p.stderr


def test_probe_figures(env):
    """Bytes of secure heap per server connection, in flight and established, for each key
    exchange, default provider and tlsgate's (sync and async): never above the per-
    connection constant the sizing uses, and nothing left after SSL_free."""
    probe = probe_bin()
    module = os.path.join(os.path.dirname(h.binary()), "tlsgate.so")
    mods = [("-", CONN_DEFAULT)]
    if os.path.exists(module):
        mods.append((module, CONN_TLSGATE))
    seen = []
    for mod, limit in mods:
        for mode in ("sync", "async"):
            for cert, kind in (("a_ec", "tls13"), ("a_rsa", "tls13"), ("a_ec", "tls12-ecdhe"),
                               ("a_rsa", "tls12-ecdhe"), ("a_rsa", "tls12-rsa")):
                if mod == "-" and mode == "async" and kind != "tls13":
                    continue  # the default provider never pauses: same as sync
                crt, key = env.certs[cert]
                p = h.run([probe, crt, key, kind, "24", mod, mode], timeout=60)
                assert p.returncode == 0, p.stderr
                f = dict(kv.split("=", 1) for kv in p.stdout.split())
                line = "%s %s %s %s: %s" % (cert, kind, os.path.basename(mod), mode,
                                             p.stdout.strip())
                seen.append(line)
                for k in ("wait", "paused", "done"):
                    assert int(f[k]) <= limit, line
                assert int(f["freed"]) == 0, "secure heap left behind: " + line
                if kind == "tls13" and mod == "-":
                    # the server's X25519 key share: 32 bytes, kept until SSL_free
                    assert int(f["wait"]) == 32 and int(f["done"]) == 32, line
    print("\n".join("  " + s for s in seen))


def test_warning_and_default(env):
    port = env.port()
    # explicit and too small for worker_connections: -t warns (and still passes)
    rc, out = config_test(env, conf_text(env, port, "ssl_secure_heap 64k;", wc=4096),
                          "small.conf")
    assert rc == 0, out
    m = re.search(r"ssl_secure_heap: the secure heap \(65536 bytes\) is smaller than 4096 "
                  r"worker_connections need \((\d+) bytes.* after about (\d+) connections", out)
    assert m, out
    assert int(m.group(1)) >= 4096 * CONN_DEFAULT and 0 < int(m.group(2)) < 1024, out
    # large enough: no warning
    rc, out = config_test(env, conf_text(env, port, "ssl_secure_heap 64k;", wc=256),
                          "fits.conf")
    assert rc == 0 and "ssl_secure_heap" not in out, out
    # a provider needs more per connection: the same 64k is now too small for 256
    rc, out = config_test(env, conf_text(env, port, "ssl_secure_heap 64k;\n"
                                         "ssl_provider tlsgate;", wc=256), "prov.conf")
    assert rc == 0 and "with a provider" in out and "256 worker_connections" in out, out
    # unset: sized from worker_connections (200000 x 64 + 1m -> 16 MiB), no warning
    rc, out = config_test(env, conf_text(env, port, wc=200000), "auto.conf")
    assert rc == 0 and "ssl_secure_heap" not in out, out
    # the default's cap: 1 GiB, and a warning when even that is short
    # (another provider than tlsgate is sized at CONN_PROVIDER: OpenSSL's legacy provider)
    rc, out = config_test(env, conf_text(env, port, "ssl_provider legacy;\nssl_provider default;",
                                         wc=1048576), "cap.conf")
    assert rc == 0 and "the secure heap (1073741824 bytes, the default) is smaller than " \
        "1048576 worker_connections" in out, out
    env.write(os.path.join(env.html, "index.html"), "hi")
    srv = env.start(env.write("auto.conf", conf_text(env, port, wc=200000)), port=port)
    sizes = dontdump_sizes(srv.pid)
    assert any(16 << 20 <= s < 17 << 20 for s in sizes), sizes
    srv.stop()
    port2 = env.port()
    srv = env.start(env.write("small.conf", conf_text(env, port2, "ssl_secure_heap 64k;",
                                                      wc=4096)), port=port2)
    with open(env.log) as f:
        log = f.read()
    assert "[warn]" in log and "is smaller than 4096 worker_connections" in log, log[-2000:]


def dontdump_sizes(pid):
    """Sizes in bytes of the mappings of pid marked VM_DONTDUMP (the secure heap arena)."""
    out, size = [], None
    with open("/proc/%d/smaps" % pid) as f:
        for line in f:
            if re.match(r"^[0-9a-f]+-[0-9a-f]+ ", line):
                a, b = line.split()[0].split("-")
                size = int(b, 16) - int(a, 16)
            elif line.startswith("VmFlags:") and " dd" in line and size:
                out.append(size)
    return out


_CTX13 = None


def tls13(port, timeout=5):
    global _CTX13
    if _CTX13 is None:  # one context: loading the system CAs per connection costs ~40 ms
        _CTX13 = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        _CTX13.check_hostname = False
        _CTX13.verify_mode = ssl.CERT_NONE
        _CTX13.minimum_version = ssl.TLSVersion.TLSv1_3
    ctx = _CTX13
    raw = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    try:
        s = ctx.wrap_socket(raw, server_hostname="a.test")
    except (ssl.SSLError, OSError):
        raw.close()
        return None
    return s


def get_ok(port):
    s = tls13(port)
    assert s is not None, "handshake failed"
    with s:
        s.sendall(b"GET / HTTP/1.1\r\nHost: a.test\r\n\r\n")
        r, _ = h.read_response(s)
        return r.status == 200


def test_full_heap(env):
    """A tiny heap: established TLS 1.3 connections each keep 32 bytes there; once it is
    full, handshakes fail with one clear [alert] line (not a crash), and the worker serves
    again when connections close."""
    env.allow_log = True
    port = env.port()
    # the default's cap: 1 GiB, and a warning when even that is short
    # (another provider than tlsgate is sized at CONN_PROVIDER: OpenSSL's legacy provider)
    rc, out = config_test(env, conf_text(env, port, "ssl_provider legacy;\nssl_provider default;",
                                         wc=1048576), "cap.conf")
    assert rc == 0 and "the secure heap (1073741824 bytes, the default) is smaller than " \
        "1048576 worker_connections" in out, out
    env.write(os.path.join(env.html, "index.html"), "hi")
    srv = env.start(env.write("t.conf", conf_text(env, port, "ssl_secure_heap 8k;",
                                                  extra="ssl_session_tickets off;")),
                    port=port)
    assert get_ok(port)
    held, failed = [], 0
    try:
        for _ in range(400):
            s = tls13(port)
            if s is None:
                failed += 1
                if failed >= 3:
                    break
                continue
            held.append(s)
        assert failed, "8k of secure heap held %d connections" % len(held)
        assert len(held) > 20, "only %d connections fit in 8k" % len(held)
        assert h.wait_until(lambda: FULL in open(env.log).read(), 5, what="alert line")
        log = open(env.log).read()
        line = [ln for ln in log.splitlines() if FULL in ln][0]
        assert "[alert]" in line and "of 8192 bytes in use" in line and \
            "ssl_secure_heap" in line, line
        assert log.count(FULL) <= 2, "not rate-limited:\n" + log[-3000:]
        print("  8k held %d TLS 1.3 connections; then: %s" % (len(held), line))
        assert srv.proc.poll() is None and len(srv.workers()) == 1
    finally:
        for s in held:
            s.close()
    # the load dropped: the connections' keys are freed, handshakes succeed again
    assert h.wait_until(lambda: get_ok(port), 5, what="serving again")
    for _ in range(20):
        assert get_ok(port)


def test_full_heap_paused(env):
    """ssl_async with an accelerator that keeps each private-key operation 300 ms: more
    concurrent paused handshakes than a tiny heap holds (TLS 1.2 ECDHE: the ephemeral key
    waits in the heap across the pause). Some fail with the [alert] line, none crashes the
    worker, and afterwards every handshake succeeds."""
    d = os.environ.get("FAKEACCEL_DIR") or os.path.dirname(h.binary())
    if not os.path.exists(os.path.join(d, "fakeaccel.so")):
        h.skip("no fakeaccel.so (build the fakeaccel target)")
    env.allow_log = True
    port = env.port()
    env.write(os.path.join(env.html, "index.html"), "hi")
    main = ('ssl_secure_heap 8k;\nssl_provider fakeaccel { path %s; delay_us 300000; '
            'notify callback; }\nssl_propquery "?provider=fakeaccel";' % d)
    env.start(env.write("t.conf", conf_text(env, port, main, extra="ssl_async on; "
                                            "ssl_session_tickets off;")), port=port)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    ctx.maximum_version = ssl.TLSVersion.TLSv1_2
    ctx.set_ciphers("ECDHE-ECDSA-AES128-GCM-SHA256")
    n = 300
    clients = []
    for _ in range(n):  # every ClientHello first: the server pauses them all at once
        sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        inc, out = ssl.MemoryBIO(), ssl.MemoryBIO()
        obj = ctx.wrap_bio(inc, out, server_hostname="a.test")
        try:
            obj.do_handshake()
        except ssl.SSLWantReadError:
            pass
        sock.sendall(out.read())
        clients.append((sock, inc, out, obj))
    ok = failed = 0
    for sock, inc, out, obj in clients:
        try:
            while True:
                try:
                    obj.do_handshake()
                    sock.sendall(out.read())
                    ok += 1
                    break
                except ssl.SSLWantReadError:
                    d_out = out.read()
                    if d_out:
                        sock.sendall(d_out)
                    d_in = sock.recv(65536)
                    if not d_in:
                        raise ConnectionError("closed")
                    inc.write(d_in)
        except (ssl.SSLError, OSError, ConnectionError):
            failed += 1
        # keep them open until all are done (their keys stay in the heap)
    for sock, *_ in clients:
        sock.close()
    assert failed and ok, "ok %d failed %d of %d paused handshakes" % (ok, failed, n)
    log = open(env.log).read()
    assert FULL in log, log[-3000:]
    assert "[alert]" in [ln for ln in log.splitlines() if FULL in ln][0]
    for ln in log.splitlines():
        assert "[emerg]" not in ln and "exited on signal" not in ln, ln
    assert h.wait_until(lambda: get_ok(port), 5, what="serving again")
    print("  %d concurrent paused handshakes in 8k: %d completed, %d failed" % (n, ok, failed))


if __name__ == "__main__":
    h.main(globals())
