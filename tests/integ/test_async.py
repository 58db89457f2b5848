#!/usr/bin/env python3
"""Async TLS (issue #3) with the fake accelerator provider tests/fakeaccel (fakeaccel.so,
found next to the tlsgate binary, or in $FAKEACCEL_DIR):

- rate: with delay_us 2000 and one worker, `ssl_async on` handshakes well above 1/latency
  (TLS 1.3 and TLS 1.2 ECDHE-RSA), `ssl_async off` works but stays below it (on a loaded
  machine the async rate is calibrated against delay_us 0, see check_rate);
- aborts: 3000 ClientHello replay clients that go away (FIN or RST) while their job is
  paused leave no connection, fd or paused job behind; a handshake timeout during a
  paused job drains the connection;
- reload twice under wrk load, then quit while replay clients abort;
- fail_every: injected accelerator failures fail only their own handshake;
- notify modes (callback / fd / provider fallback to wait fds);
- `-t` errors for ssl_provider / ssl_engine.

Every status read uses a plain-HTTP stub_status server (no TLS handshake of its own), so
the counters only move with the load under test.

Usage: python3 tests/integ/test_async.py BIN [TEST...]
"""
import os
import re
import signal
import socket
import ssl
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness as h  # noqa: E402
import replay_hello  # noqa: E402

h.FILE_TIMEOUT = 140  # CTest TIMEOUT of integ_async is 150

# Checks that fail because the server is wrong (see the report); remove when fixed.
KNOWN_FAILURES = {}

DELAY_US = 2000          # accelerator latency for the rate tests: 1/latency = 500/s
RATE_ASYNC_MIN = 600.0   # handshakes/s that a blocking worker cannot reach at 2 ms
RATE_SYNC_MAX = 520.0    # ssl_async off: at most 1/latency (plus measuring noise)
RATE_ATTEMPTS = 3        # the machine may be loaded: the best of up to 3 runs counts
RATE_CEILING_SHARE = 0.6  # (when calibrating) share of the delay_us 0 rate reached at 2 ms
OLD_WORKER_GONE_S = 8
QUIT_BOUND_S = 10
RSS_GROWTH_MAX_KB = 4 * 1024
FD_SLACK = 2
LOAD_ROUNDS = 4            # test_aborts: at most this many rounds of 3000 aborted clients
TLS12 = " ssl_protocols TLSv1.2; ssl_ciphers ECDHE-RSA-AES128-GCM-SHA256;"


# ---------------------------------------------------------------- helpers


def accel_dir():
    d = os.environ.get("FAKEACCEL_DIR") or os.path.dirname(h.binary())
    if not os.path.exists(os.path.join(d, "fakeaccel.so")):
        h.skip("no fakeaccel.so in %s (build the fakeaccel target, or set FAKEACCEL_DIR)" % d)
    return d


def accel_main(delay_us=DELAY_US, notify="callback", fail_every=None, extra="", pause=None):
    params = "delay_us %d; notify %s;" % (delay_us, notify)
    if fail_every is not None:
        params += " fail_every %s;" % fail_every
    if pause is not None:
        params += " pause %d;" % pause
    return ('ssl_provider fakeaccel { path %s; %s }\nssl_propquery "?provider=fakeaccel";\n%s'
            % (accel_dir(), params, extra))


def tls_server(env, port, extra="", certs=("a_rsa",)):
    """A TLS server block for a.test with session resumption off."""
    return env.server(port, "ssl_session_tickets off;", "ssl_session_cache off;", extra,
                      "location = /status { stub_status; }", certs=certs)


def status_server(sport):
    return """
    server {
        listen 127.0.0.1:%d;
        location = /status { stub_status; }
    }""" % sport


def start(env, servers, main, wait_ports, name="tlsgate.conf"):
    env.write("html/empty", b"")
    env.write("html/index.html", "hello\n")
    conf = env.conf("\n".join(servers), main=main, name=name)
    srv = env.start(conf)
    for p in wait_ports:
        srv.wait_port(p)
    return srv, conf


def status(sport):
    """The stub_status page over plain HTTP, parsed."""
    p = h.run(["curl", "-sS", "--max-time", "10", "http://127.0.0.1:%d/status" % sport],
              timeout=15)
    assert p.returncode == 0, "status request failed: %s" % p.stderr
    txt = p.stdout
    m = re.search(r"TLS handshakes: (\d+) failed: (\d+) resumed: (\d+) TLSv1\.2: (\d+) "
                  r"TLSv1\.3: (\d+)", txt)
    r = re.search(r"Responses: 1xx: (\d+) 2xx: (\d+) 3xx: (\d+) 4xx: (\d+) 5xx: (\d+)", txt)
    assert m and r, "unexpected status page:\n" + txt
    st = {"text": txt, "hs": int(m.group(1)), "hs_failed": int(m.group(2)),
          "tls12": int(m.group(4)), "tls13": int(m.group(5)), "2xx": int(r.group(2)),
          "5xx": int(r.group(5)), "workers": {}}
    for w in re.finditer(r"Worker (\d+) generation (\d+): connections: (-?\d+) async paused: "
                         r"(-?\d+) resumed: (\d+) drained: (\d+) want_async_job: (\d+)", txt):
        st["workers"][int(w.group(1))] = {
            "gen": int(w.group(2)), "conns": int(w.group(3)), "paused": int(w.group(4)),
            "resumed": int(w.group(5)), "drained": int(w.group(6)), "want_job": int(w.group(7))}
    return st


def worker_stats(sport, pid):
    st = status(sport)
    assert pid in st["workers"], "worker %d not on the status page:\n%s" % (pid, st["text"])
    return st["workers"][pid]


def wait_idle(sport, pid, timeout=15):
    """Until the worker has no connection but the status request and no paused job."""
    last = {}

    def idle():
        w = worker_stats(sport, pid)
        last["w"] = w
        return w["conns"] <= 1 and w["paused"] == 0
    try:
        h.wait_until(idle, timeout, interval=0.2, what="worker %d to be idle" % pid)
    except AssertionError as e:
        raise AssertionError("%s: last %s" % (e, last.get("w")))
    return last["w"]


class Wrk:
    def __init__(self, out):
        self.out = out
        m = re.search(r"^Requests/sec:\s+([\d.]+)", out, re.M)
        assert m, "no Requests/sec in wrk's output:\n" + out
        self.rps = float(m.group(1))
        n = re.search(r"^\s*(\d+) requests in", out, re.M)
        self.n = int(n.group(1)) if n else 0
        self.socket_errors = re.search(r"^\s*Socket errors:.*$", out, re.M)
        self.non2xx = re.search(r"^\s*Non-2xx or 3xx responses:.*$", out, re.M)

    def check_clean(self, what):
        assert self.n > 0, "%s: wrk made no request:\n%s" % (what, self.out)
        assert not self.socket_errors, "%s: wrk saw socket errors:\n%s" % (what, self.out)
        assert not self.non2xx, "%s: wrk saw non-2xx/3xx responses:\n%s" % (what, self.out)


def wrk_cmd(url, conns, secs, close=True):
    cmd = ["wrk", "-t", "1", "-c", str(conns), "-d", "%ds" % secs, "--timeout", "5s"]
    if close:
        cmd += ["-H", "Connection: close"]
    return cmd + [url]


def fd_count(pid):
    return len(os.listdir("/proc/%d/fd" % pid))


def eventfd_count(pid):
    n = 0
    for f in os.listdir("/proc/%d/fd" % pid):
        try:
            if os.readlink("/proc/%d/fd/%s" % (pid, f)) == "anon_inode:[eventfd]":
                n += 1
        except OSError:
            pass
    return n


def sanitized(pid):
    """True for a sanitizer build (ASan keeps freed memory in its quarantine: RSS says
    nothing about leaks there, LeakSanitizer checks them at exit)."""
    with open("/proc/%d/maps" % pid) as f:
        if re.search(r"lib[at]san", f.read()):
            return True
    with open(h.binary(), "rb") as f:
        data = f.read()
    return b"__asan_init" in data or b"__tsan_init" in data


def rss_kb(pid):
    with open("/proc/%d/status" % pid) as f:
        m = re.search(r"^VmRSS:\s+(\d+) kB", f.read(), re.M)
    return int(m.group(1))


def curl_ok(env, port, path="/"):
    st, _, body = env.get("https://a.test:%d%s" % (port, path))
    assert st == 200, "GET %s: %d %r" % (path, st, body[:200])
    return body


def check_resumes(before, after, what):
    """Every full handshake paused at least once: resumed grew by about the handshakes."""
    d_res = after["w"]["resumed"] - before["w"]["resumed"]
    d_hs = after["hs"] - before["hs"]
    d_fail = after["hs_failed"] - before["hs_failed"]
    print("  %s: handshakes +%d (failed +%d), resumed +%d" % (what, d_hs, d_fail, d_res),
          flush=True)
    assert d_hs > 0, "%s: no handshake counted" % what
    assert d_res >= d_hs, ("%s: resumed grew by %d for %d full handshakes (each pauses at "
                           "least once)" % (what, d_res, d_hs))
    assert d_res <= 2 * (d_hs + d_fail) + 10, (
        "%s: resumed grew by %d for %d handshakes (+%d failed): too many wakes" %
        (what, d_res, d_hs, d_fail))


def snapshot(sport, pid):
    st = status(sport)
    st["w"] = st["workers"][pid]
    return st


def wrk_sampled(url, sport, pid, conns=200, secs=3):
    """wrk while sampling the worker's `async paused` (jobs paused at once) every 0.2 s:
    returns (Wrk, the largest value seen)."""
    p = subprocess.Popen(wrk_cmd(url, conns, secs), stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT)
    most = 0
    try:
        end = time.monotonic() + secs - 0.3
        time.sleep(0.3)
        while time.monotonic() < end and p.poll() is None:
            most = max(most, worker_stats(sport, pid)["paused"])
            time.sleep(0.2)
        out, _ = p.communicate(timeout=secs + 30)
    finally:
        h.reap(p)
    assert p.returncode == 0, "wrk failed (exit %d):\n%s" % (p.returncode, out)
    return Wrk(out.decode("utf-8", "replace")), most


def rate_run(url, sport, pid, what, need_min=None):
    """wrk -c200 -d3 Connection: close; with need_min, retried (best of RATE_ATTEMPTS)
    until the rate is above it. Returns (best Wrk, snapshot before, snapshot after, the
    most jobs seen paused at once)."""
    best, first, most = None, None, 0
    for attempt in range(RATE_ATTEMPTS if need_min else 1):
        before = snapshot(sport, pid)
        first = first or before
        r, m = wrk_sampled(url, sport, pid)
        most = max(most, m)
        after = snapshot(sport, pid)
        print("  %s: %.0f handshakes/s (%d requests in 3 s), up to %d jobs paused at once%s"
              % (what, r.rps, r.n, m, "" if attempt == 0 else " [attempt %d]" % (attempt + 1)),
              flush=True)
        r.check_clean(what)
        if best is None or r.rps > best.rps:
            best = r
        if need_min is None or r.rps > need_min:
            break
    return best, first, after, most


def aux_server(env, delay_us, extra, name):
    """A second server (same pipeline, other accelerator latency): (srv, url, sport, pid)."""
    port, sport = env.port(), env.port()
    srv, _ = start(env, [status_server(sport), tls_server(env, port, "ssl_async on;" + extra)],
                   accel_main(delay_us), [port, sport], name=name)
    return srv, "https://127.0.0.1:%d/empty" % port, sport, srv.wait_workers(1)[0]


def check_rate(env, r, what, url, sport, pid, extra=""):
    """ssl_async on must beat a blocking worker's 1/latency: > RATE_ASYNC_MIN at 2 ms.

    On a loaded machine (other jobs on the 2 cores) even a zero-latency accelerator may
    not reach that rate, and then the rate at 2 ms cannot tell. So when the best of
    RATE_ATTEMPTS runs is below it, calibrate: the same pipeline with delay_us 0 gives
    what the machine can do now (a worker that does not wait for the accelerator gets
    close to it at 2 ms too: 0.7-1.0 of it here). If the machine can clearly do more
    (twice, around a new 2 ms run that fails again) and the 2 ms rate is far below it
    (< RATE_CEILING_SHARE of it: a blocking worker gets 0.3-0.4), the worker blocks:
    fail. Otherwise check 1/latency where the CPU cannot hide it: at delay_us 20000 (a
    blocking worker: at most 50/s) the rate must be above 1.5/latency, with many jobs
    paused at once."""
    if r.rps > RATE_ASYNC_MIN:
        return
    capable = RATE_ASYNC_MIN / 0.9
    cal, cal_url, cal_sport, cal_pid = aux_server(env, 0, extra, "calibrate.conf")
    c1, _ = wrk_sampled(cal_url, cal_sport, cal_pid)
    print("  calibration: delay_us 0 gives %.0f handshakes/s now" % c1.rps, flush=True)
    if c1.rps >= capable:
        r2, _ = wrk_sampled(url, sport, pid)
        print("  %s again: %.0f handshakes/s" % (what, r2.rps), flush=True)
        if r2.rps > RATE_ASYNC_MIN:
            cal.stop(signal.SIGQUIT, timeout=QUIT_BOUND_S)
            return
        c2, _ = wrk_sampled(cal_url, cal_sport, cal_pid)
        print("  calibration: delay_us 0 gives %.0f handshakes/s now" % c2.rps, flush=True)
        cmin, best = min(c1.rps, c2.rps), max(r.rps, r2.rps)
        assert cmin < capable or best >= RATE_CEILING_SHARE * cmin, (
            "%s: %.0f and %.0f handshakes/s at delay_us %d (not above %.0f/s) while the "
            "same server with delay_us 0 does %.0f and %.0f/s: the worker waits for the "
            "accelerator\n%s" % (what, r.rps, r2.rps, DELAY_US, RATE_ASYNC_MIN, c1.rps,
                                  c2.rps, r.out))
    cal.stop(signal.SIGQUIT, timeout=QUIT_BOUND_S)
    slow_delay = 20000
    slow, slow_url, slow_sport, slow_pid = aux_server(env, slow_delay, extra, "slow.conf")
    rs, most_s = wrk_sampled(slow_url, slow_sport, slow_pid)
    limit = 1.5e6 / slow_delay
    print("  %s: RATE CHECK AT %d us INCONCLUSIVE (machine loaded); at delay_us %d: %.0f "
          "handshakes/s (a blocking worker: %.0f/s), up to %d jobs paused at once" %
          (what, DELAY_US, slow_delay, rs.rps, 1e6 / slow_delay, most_s), flush=True)
    rs.check_clean(what + " at delay_us %d" % slow_delay)
    assert rs.rps > limit and most_s >= 10, (
        "%s: %.0f handshakes/s at delay_us %d (need > %.0f/s), %d jobs paused at once" %
        (what, rs.rps, slow_delay, limit, most_s))
    slow.stop(signal.SIGQUIT, timeout=QUIT_BOUND_S)


# ---------------------------------------------------------------- 1. rate


def test_rate(env):
    if os.environ.get("TLSGATE_TSAN"):  # a throughput floor means nothing at TSan's speed
        raise h.SkipTest("ThreadSanitizer build (make tsan): rates are not measured")
    p_on, p_off, p_12, sport = env.port(), env.port(), env.port(), env.port()
    srv, _ = start(env, [
        status_server(sport),
        tls_server(env, p_on, "ssl_async on;"),
        tls_server(env, p_off, "ssl_async off;"),
        tls_server(env, p_12, "ssl_async on;" + TLS12),
    ], accel_main(DELAY_US), [p_on, p_off, p_12, sport])
    pid = srv.wait_workers(1)[0]
    print("  fakeaccel delay_us %d: a blocking worker makes at most %.0f handshakes/s" %
          (DELAY_US, 1e6 / DELAY_US), flush=True)

    # TLS 1.3, ssl_async on
    on, b, a, most = rate_run("https://127.0.0.1:%d/empty" % p_on, sport, pid,
                              "TLS 1.3 ssl_async on", need_min=RATE_ASYNC_MIN)
    assert a["tls13"] > b["tls13"], "no TLS 1.3 handshake counted"
    check_resumes(b, a, "TLS 1.3 ssl_async on")
    assert most > 1, "ssl_async on: never more than %d job paused at once" % most
    wait_idle(sport, pid)

    # TLS 1.3, ssl_async off: the same provider on the synchronous path
    off, b, a, most_off = rate_run("https://127.0.0.1:%d/empty" % p_off, sport, pid,
                                   "TLS 1.3 ssl_async off")
    d_res = a["w"]["resumed"] - b["w"]["resumed"]
    assert d_res == 0 and most_off == 0, (
        "ssl_async off: %d async resumes, %d paused (expected the synchronous path)" %
        (d_res, most_off))
    assert a["hs"] > b["hs"], "ssl_async off: no handshake counted"
    assert off.rps <= RATE_SYNC_MAX, (
        "ssl_async off: %.0f handshakes/s, more than 1/latency (%.0f/s): is the provider "
        "used at all?\n%s" % (off.rps, 1e6 / DELAY_US, off.out))
    wait_idle(sport, pid)

    # TLS 1.2 ECDHE-RSA, ssl_async on
    t12, b, a, most12 = rate_run("https://127.0.0.1:%d/empty" % p_12, sport, pid,
                                 "TLS 1.2 ECDHE-RSA ssl_async on", need_min=RATE_ASYNC_MIN)
    assert a["tls12"] > b["tls12"] and a["tls13"] == b["tls13"], "expected TLS 1.2 only"
    check_resumes(b, a, "TLS 1.2 ECDHE-RSA ssl_async on")
    assert most12 > 1, "TLS 1.2 ssl_async on: never more than %d job paused" % most12
    wait_idle(sport, pid)
    print("  RATES: TLS1.3 async on %.0f/s, async off %.0f/s, TLS1.2 ECDHE-RSA async on "
          "%.0f/s" % (on.rps, off.rps, t12.rps), flush=True)
    assert srv.workers() == [pid], "the worker changed: %s" % srv.workers()
    # the rate checks last: on a loaded machine they may need a calibration run
    check_rate(env, on, "TLS 1.3 ssl_async on", "https://127.0.0.1:%d/empty" % p_on,
               sport, pid)
    check_rate(env, t12, "TLS 1.2 ECDHE-RSA ssl_async on",
               "https://127.0.0.1:%d/empty" % p_12, sport, pid, extra=TLS12)


# ---------------------------------------------------------------- 2. aborts


def test_aborts(env):
    port, sport = env.port(), env.port()
    srv, _ = start(env, [status_server(sport), tls_server(env, port, "ssl_async on;")],
                   accel_main(5000), [port, sport])
    pid = srv.wait_workers(1)[0]
    curl_ok(env, port, "/index.html")  # one full handshake: the accelerator is started
    wait_idle(sport, pid)
    fds0 = fd_count(pid)
    hello = replay_hello.client_hello("a.test")
    asan = sanitized(pid)

    # Memory. The worker's heap keeps the memory of its peak (glibc does not give back the
    # middle of the heap, and OpenSSL's pool keeps every async job that was ever in use
    # at the same time, each with a 32 KB stack: up to worker_connections of them), and
    # the peak of a replay load varies from run to run. A new peak grows the RSS once; a
    # per-connection leak grows it in every round. So: reach the peak of connections
    # first (600 clients held open 1.5 s, the worker takes up to worker_connections),
    # then run rounds of the load (3000 clients) until one grows the RSS by at most a
    # few MB (RSS_GROWTH_MAX_KB); every round growing more means a leak.
    st = replay_hello.replay(port, 600, hello, inflight=600, hold_ms=1500, spread=False)
    wait_idle(sport, pid)
    rss_start = rss0 = rss_kb(pid)
    print("  warm-up, held open: %s: RSS %d kB" % (st, rss0), flush=True)
    growth = []
    for i in range(LOAD_ROUNDS):
        w0 = worker_stats(sport, pid)
        st = replay_hello.replay(port, 3000, hello, inflight=200, hold_ms=5)
        assert st.sent >= 2900 and st.rst >= 1400, "the replay clients did not run: %s" % st
        w = wait_idle(sport, pid)
        rss = rss_kb(pid)
        growth.append(rss - rss0)
        print("  load #%d %s: worker %s, RSS %d kB (%+d kB)" %
              (i + 1, st, w, rss, rss - rss0), flush=True)
        rss0 = rss
        # after every round: no connection, paused job or fd left
        assert w["conns"] <= 1 and w["paused"] == 0, w
        assert w["resumed"] - w0["resumed"] >= 1000, (
            "few jobs paused under the replay load: resumed +%d" %
            (w["resumed"] - w0["resumed"]))
        fds = fd_count(pid)
        assert abs(fds - fds0) <= FD_SLACK, "worker fds %d, baseline %d: %s" % (
            fds, fds0, sorted(os.readlink("/proc/%d/fd/%s" % (pid, f))
                              for f in os.listdir("/proc/%d/fd" % pid)))
        if growth[-1] <= RSS_GROWTH_MAX_KB or asan:
            break
    print("  worker %d: fds %d (baseline %d); RSS growth per round of 3000 aborts: %s kB%s" %
          (pid, fds, fds0, growth, " (sanitizer build: not checked)" if asan else ""),
          flush=True)
    assert asan or growth[-1] <= RSS_GROWTH_MAX_KB, (
        "the worker's RSS grew by more than %d kB in each of %d rounds of 3000 aborted "
        "clients: %s kB (a leak?)" % (RSS_GROWTH_MAX_KB, LOAD_ROUNDS, growth))
    assert asan or rss0 - rss_start <= 24 * 1024, "RSS grew by %d kB in all" % (
        rss0 - rss_start)
    with env.known("drained"):
        assert w["drained"] > 0, "no connection was drained (closed while its job was " \
                                 "paused) after %d aborted clients: %s" % (st.sent, w)
    curl_ok(env, port, "/index.html")
    assert srv.workers() == [pid], "the worker changed: %s" % srv.workers()


def test_drain_on_timeout(env):
    """The drain path: the handshake timer fires while the job is paused (accelerator
    slower than client_header_timeout): the connection is kept until the job ends."""
    port, sport = env.port(), env.port()
    srv, _ = start(env, [status_server(sport),
                         tls_server(env, port, "ssl_async on; client_header_timeout 1s;")],
                   accel_main(2000000), [port, sport])
    pid = srv.wait_workers(1)[0]
    hello = replay_hello.client_hello("a.test")
    socks = []
    for _ in range(5):
        s = socket.create_connection(("127.0.0.1", port), timeout=5)
        s.sendall(hello)
        socks.append(s)
    try:
        time.sleep(1.4)  # the 1 s timer has fired, the 2 s operation is still paused
        w = worker_stats(sport, pid)
        print("  after the timeout: %s" % w, flush=True)
        assert w["paused"] == 5 and w["drained"] == 5 and w["conns"] == 6, w
        w = wait_idle(sport, pid, timeout=10)
        assert w["drained"] == 5, w
        for s in socks:  # closed by the server once the job has finished
            _, eof = h.recv_all(s, timeout=5)
            assert eof, "a drained connection was not closed"

    finally:
        for s in socks:
            s.close()
    assert srv.workers() == [pid]


# ---------------------------------------------------------------- 3. reload and quit


def test_reload_quit_under_load(env):
    port, sport = env.port(), env.port()

    def servers(v):
        return [status_server(sport), tls_server(
            env, port, 'ssl_async on; location = /v { return 200 "%s"; }' % v)]
    srv, conf = start(env, servers("v1"), accel_main(DELAY_US), [port, sport])
    senv = dict(os.environ, TLSGATE_STATE_DIR=env.state)
    gen = srv.wait_workers(1)
    # the load of the issue (keep-alive), plus a few Connection: close clients so that
    # handshakes (paused jobs) are in flight when the reloads happen
    wrk_ps = [subprocess.Popen(wrk_cmd("https://127.0.0.1:%d/index.html" % port, c, 6,
                                       close=close),
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
              for c, close in ((100, False), (20, True))]
    outs = []
    try:
        for i, v in ((1, "v2"), (2, "v3")):
            time.sleep(1.5)
            env.conf("\n".join(servers(v)), main=accel_main(DELAY_US))
            w = status(sport)["workers"].get(gen[0])
            p = h.run([h.binary(), "-s", "reload", "-c", conf], timeout=20, env=senv)
            assert p.returncode == 0, "reload #%d: %s%s" % (i, p.stdout, p.stderr)
            h.wait_until(lambda: env.get("https://a.test:%d/v" % port)[2] == v.encode(), 8,
                         what="/v to answer %s" % v)
            old = gen
            t0 = time.monotonic()
            h.wait_until(lambda: not any(h.pid_alive(x) for x in old), OLD_WORKER_GONE_S,
                         what="old worker %s to exit after reload #%d" % (old, i))
            print("  reload #%d (old worker just before: %s): gone after %.1fs" %
                  (i, w, time.monotonic() - t0), flush=True)
            gen = srv.wait_workers(1)
            assert not set(gen) & set(old), (old, gen)
        for wp in wrk_ps:
            outs.append(wp.communicate(timeout=30)[0])
    finally:
        h.reap(*wrk_ps)
    for wp, out, what in zip(wrk_ps, outs, ("keep-alive -c100", "Connection: close -c20")):
        r = Wrk(out.decode("utf-8", "replace"))
        print("  wrk %s across the reloads: %.0f requests/s, %d requests" % (what, r.rps, r.n),
              flush=True)
        assert wp.returncode == 0, r.out
        r.check_clean("wrk %s across two reloads" % what)
    wait_idle(sport, gen[0])

    # quit while replay clients abort their handshakes (jobs paused at delay 2 ms)
    rp = subprocess.Popen([sys.executable, os.path.join(h.HERE, "replay_hello.py"), str(port),
                           "3000", "--deadline", "20"],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        # quit as soon as jobs are paused (replay clients in flight)
        last = {}

        def paused():
            last["w"] = status(sport)["workers"].get(gen[0])
            return last["w"] and last["w"]["paused"] > 0
        time.sleep(0.3)
        h.wait_until(paused, 5, interval=0.02, what="paused jobs under the replay load")
        print("  before quit: %s" % last["w"], flush=True)
        p = h.run([h.binary(), "-s", "quit", "-c", conf], timeout=20, env=senv)
        assert p.returncode == 0, "-s quit: %s%s" % (p.stdout, p.stderr)
        t0 = time.monotonic()
        try:
            rc = srv.proc.wait(timeout=QUIT_BOUND_S)
        except subprocess.TimeoutExpired:
            raise AssertionError("the master did not exit within %ds of -s quit" %
                                 QUIT_BOUND_S)
        print("  master exited %.1fs after -s quit (status %s)" % (time.monotonic() - t0, rc),
              flush=True)
        assert rc == 0, "tlsgate exited with %s after -s quit" % rc
        left = h.children_in_group(srv.pid)
        assert not left, "tlsgate processes left after quit: %s" % left
        out, _ = rp.communicate(timeout=30)
        print("  replay during quit: %s" % out.decode().strip(), flush=True)
    finally:
        h.reap(rp)


# ---------------------------------------------------------------- 4. injected failures


def handshake_get(port, sni="a.test"):
    """One full TLS handshake + GET /: (status line, None) or (None, error text)."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    raw = socket.create_connection(("127.0.0.1", port), timeout=5)
    try:
        try:
            s = ctx.wrap_socket(raw, server_hostname=sni)
        except (ssl.SSLError, OSError) as e:
            return None, "%s: %s" % (type(e).__name__, e)
        s.settimeout(5)
        s.sendall(b"GET / HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n")
        data, _ = h.recv_all(s, timeout=5)
        s.close()
        return data.split(b"\r\n", 1)[0].decode("latin-1"), None
    finally:
        raw.close()


def test_injected_failures(env):
    port, sport = env.port(), env.port()
    srv, _ = start(env, [status_server(sport), tls_server(env, port, "ssl_async on;")],
                   accel_main(DELAY_US, fail_every=5), [port, sport])
    pid = srv.wait_workers(1)[0]
    st0 = status(sport)
    ok, failed, other = 0, [], []
    for i in range(50):
        line, err = handshake_get(port)
        if err:
            failed.append((i + 1, err))
        elif line.startswith("HTTP/1.1 200"):
            ok += 1
        else:
            other.append((i + 1, line))
    print("  fail_every 5: %d ok, %d failed: %s" % (ok, len(failed), failed[:3]), flush=True)
    assert not other, "handshakes that completed without HTTP 200: %s" % other
    assert 7 <= len(failed) <= 13, "expected about 10 of 50 handshakes to fail: %d (%s)" % (
        len(failed), failed)
    no_alert = [f for f in failed if "alert" not in f[1].lower()]
    assert not no_alert, "failed handshakes without an alert: %s" % no_alert
    assert ok + len(failed) == 50
    w = wait_idle(sport, pid)
    assert srv.workers() == [pid], "the worker changed: %s -> %s" % (pid, srv.workers())
    st = status(sport)
    assert (st["hs_failed"] - st0["hs_failed"] == len(failed) and st["hs"] - st0["hs"] == ok
            and st["2xx"] - st0["2xx"] >= ok), st["text"]
    print("  worker after: %s" % w, flush=True)


def test_job_pool_exhausted(env):
    """ssl_async_jobs 4 with 50 clients and 5 ms operations: SSL_ERROR_WANT_ASYNC_JOB is
    answered by waiting for a job, never by spinning or failing: every request is served,
    and a waiter is retried about once per freed job (not once per wake of any job)."""
    port, sport = env.port(), env.port()
    srv, _ = start(env, [status_server(sport), tls_server(env, port, "ssl_async on;")],
                   accel_main(5000, extra="ssl_async_jobs 4;"), [port, sport])
    pid = srv.wait_workers(1)[0]
    st0 = status(sport)
    out = h.run(wrk_cmd("https://127.0.0.1:%d/empty" % port, 50, 3), timeout=30).stdout
    w = Wrk(out)
    w.check_clean("ssl_async_jobs 4")
    st = status(sport)
    ws = st["workers"][pid]
    hs = st["hs"] - st0["hs"]
    print("  ssl_async_jobs 4: %.0f hs/s, %d handshakes, want_async_job %d" %
          (w.rps, hs, ws["want_job"]), flush=True)
    assert ws["want_job"] > 0, "the pool of 4 jobs was never exhausted:\n" + st["text"]
    # 4 jobs x 5 ms: at most ~800 handshakes/s; each waiter is retried about once per job
    # that completes, so failed retries stay within a small multiple of the handshakes
    assert ws["want_job"] < 10 * max(hs, 1), "retry storm: %d WANT_ASYNC_JOB for %d " \
        "handshakes" % (ws["want_job"], hs)
    assert w.rps < 1000, "more than 4 jobs x 5 ms allow: %.0f/s" % w.rps
    wait_idle(sport, pid)
    assert srv.workers() == [pid]


def test_poll_hook(env):
    """A provider that completes operations only when polled (fakeaccel notify poll, like
    accelerators that need polling): the worker reads the provider's "poll" parameter after
    each pass of events while jobs are paused, so handshakes complete without any timer."""
    port, sport = env.port(), env.port()
    srv, _ = start(env, [status_server(sport), tls_server(env, port, "ssl_async on;")],
                   accel_main(1000, notify="poll"), [port, sport])
    pid = srv.wait_workers(1)[0]
    assert curl_ok(env, port), "a request through a polled accelerator failed"
    out = h.run(wrk_cmd("https://127.0.0.1:%d/empty" % port, 50, 2), timeout=30).stdout
    w = Wrk(out)
    w.check_clean("notify poll")
    ws = wait_idle(sport, pid)
    print("  notify poll: %.0f hs/s, worker %s" % (w.rps, ws), flush=True)
    assert ws["resumed"] >= w.n, "fewer resumes than handshakes: %s for %d" % (ws, w.n)


def test_wake_without_pause(env):
    """A provider may notify a job that never paused: its answer came after the job queued
    the request but before it paused (tlsgate's own provider, when its timer thread
    completes the batch in that window), and the job goes on without pausing. fakeaccel
    pause 0 does that on every operation. The connection is in the wake queue while it is
    not paused; a client that sent its ClientHello and closed makes the worker free it in
    the same pass, before the wake queue is processed. The worker must not touch it then
    (a use-after-free found by bench/replay.sh under perf; the sanitizer build of this
    test fails on it)."""
    port, sport = env.port(), env.port()
    srv, _ = start(env, [status_server(sport), tls_server(env, port, "ssl_async on;")],
                   accel_main(0, pause=0), [port, sport])
    pid = srv.wait_workers(1)[0]
    curl_ok(env, port, "/index.html")
    hello = replay_hello.client_hello("a.test")
    for _ in range(50):
        s = socket.create_connection(("127.0.0.1", port), timeout=5)
        try:
            s.sendall(hello)
            s.shutdown(socket.SHUT_WR)  # the hello and the FIN: one read for the worker
            while s.recv(65536):
                pass
        except OSError:
            pass
        finally:
            s.close()
    w = wait_idle(sport, pid)
    print("  50 hellos then FIN, accelerator without pauses: worker %s" % w, flush=True)
    assert srv.workers() == [pid], "the worker died: %s" % srv.workers()
    curl_ok(env, port, "/index.html")  # (the harness fails the test on an [alert] line)


# ---------------------------------------------------------------- 5. notify modes


def test_notify_modes(env):
    results = []
    for server_notify, prov_notify in (("fd", "fd"), ("callback", "callback"),
                                       ("fd", "callback")):
        port, sport = env.port(), env.port()
        what = "ssl_async_notify %s, provider notify %s" % (server_notify, prov_notify)
        srv, _ = start(env, [status_server(sport), tls_server(
            env, port, "ssl_async on; ssl_async_notify %s;" % server_notify)],
            accel_main(DELAY_US, notify=prov_notify), [port, sport],
            name="tlsgate-%s-%s.conf" % (server_notify, prov_notify))
        pid = srv.wait_workers(1)[0]
        curl_ok(env, port, "/index.html")
        b = snapshot(sport, pid)
        p = subprocess.Popen(wrk_cmd("https://127.0.0.1:%d/empty" % port, 200, 2),
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        evfds = 0
        try:
            end = time.monotonic() + 1.8
            while time.monotonic() < end and p.poll() is None:
                evfds = max(evfds, eventfd_count(pid))
                time.sleep(0.1)
            out, _ = p.communicate(timeout=30)
        finally:
            h.reap(p)
        r = Wrk(out.decode("utf-8", "replace"))
        a = snapshot(sport, pid)
        print("  %s: %.0f handshakes/s, up to %d eventfds in the worker" %
              (what, r.rps, evfds), flush=True)
        assert p.returncode == 0, r.out
        r.check_clean(what)
        check_resumes(b, a, what)
        if server_notify == "fd":
            # the provider has no callback: it must hand out wait fds (one per SSL)
            assert evfds > 2, "%s: no async wait fds seen in the worker" % what
        else:
            assert evfds <= 1, "%s: %d eventfds: wait fds used in callback mode" % (what,
                                                                                   evfds)
        wait_idle(sport, pid)
        curl_ok(env, port, "/index.html")
        rc = srv.stop(signal.SIGQUIT, timeout=QUIT_BOUND_S)
        assert rc == 0, "%s: exit status %s after SIGQUIT" % (what, rc)
        results.append("%s %.0f/s" % (what, r.rps))
    print("  NOTIFY RATES: " + "; ".join(results), flush=True)


# ---------------------------------------------------------------- 6. -t errors


def config_test(env, main, name, directive):
    """`tlsgate -t` of a config with main-context lines `main`: (the "file:line:" of the
    line holding `directive`, exit status, output)."""
    port = env.port()
    conf = env.conf(tls_server(env, port, "ssl_async on;"), main=main, name=name)
    with open(conf) as f:
        line = [i + 1 for i, ln in enumerate(f.read().split("\n")) if directive in ln][0]
    p = h.run([h.binary(), "-t", "-c", conf], timeout=30,
              env=dict(os.environ, TLSGATE_STATE_DIR=env.state))
    return "%s:%d:" % (conf, line), p.returncode, p.stdout + p.stderr


def test_config_errors(env):
    d = accel_dir()
    # the good one passes
    where, rc, out = config_test(env, accel_main(DELAY_US), "good.conf", "ssl_provider")
    assert rc == 0, "-t with a valid ssl_provider failed:\n" + out

    where, rc, out = config_test(env, "ssl_provider nosuchprov;\n", "noprov.conf",
                                 "ssl_provider")
    print("  nosuchprov: " + out.strip().replace("\n", " | "), flush=True)
    assert rc != 0, "-t accepted ssl_provider nosuchprov:\n" + out
    assert where in out and "nosuchprov" in out, out

    where, rc, out = config_test(
        env, "ssl_provider fakeaccel { path %s; fail_every notanumber; }\n" % d, "badparam.conf",
        "ssl_provider")
    print("  fail_every notanumber: exit %d: %s" % (rc, out.strip().replace("\n", " | ")),
          flush=True)
    if rc != 0:  # the provider rejects the value: the failure must be clear
        assert where in out and "fakeaccel" in out, out
        with env.known("bad_param_named"):
            assert "fail_every" in out, "-t does not name the bad parameter:\n" + out

    where, rc, out = config_test(env, "ssl_engine nosuchengine;\n", "noengine.conf",
                                 "ssl_engine")
    print("  nosuchengine: exit %d: %s" % (rc, out.strip()[:200]), flush=True)
    assert rc != 0, "-t accepted ssl_engine nosuchengine:\n" + out
    assert where in out and "nosuchengine" in out, out


if __name__ == "__main__":
    h.main(globals())
