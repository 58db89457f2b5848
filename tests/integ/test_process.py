#!/usr/bin/env python3
"""Processes and logs: worker count, respawn after kill -9, graceful stop with a request in
flight, log reopening, the access log's nginx "combined" format.

Usage: python3 tests/integ/test_process.py BIN [TEST...]
"""
import os
import re
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness as h  # noqa: E402

# Checks that fail because the server is wrong (see the report); remove when fixed.
KNOWN_FAILURES = {}

BIG = 24 * 1024 * 1024


def serve(env, main="worker_processes 2;", server_extra=""):
    port = env.port()
    conf = env.simple_conf(port, main=main, server_extra=server_extra,
                           locations='location = /x { return 200 "hi"; }')
    srv = env.start(conf, port=port)
    return srv, port, conf


def get_x(env, port):
    st, _, body = env.get("https://a.test:%d/x" % port)
    assert (st, body) == (200, b"hi"), (st, body)


def test_two_workers(env):
    srv, port, _ = serve(env)
    ws = srv.wait_workers(2)
    assert len(ws) == 2 and srv.pid not in ws, ws
    for w in ws:
        with open("/proc/%d/cmdline" % w, "rb") as f:
            assert os.path.basename(f.read().split(b"\0")[0]) == b"tlsgate", w
    for _ in range(4):
        get_x(env, port)
    assert srv.workers() == ws


def test_worker_killed_is_respawned(env):
    srv, port, _ = serve(env)
    ws = srv.wait_workers(2)
    victim = ws[0]
    os.kill(victim, signal.SIGKILL)
    for _ in range(3):  # the other worker keeps serving before the respawn
        get_x(env, port)
    new = h.wait_until(lambda: (lambda w: len(w) == 2 and victim not in w and w)(srv.workers()),
                       6, what="a new worker after kill -9 of %d" % victim)
    assert ws[1] in new, (ws, new)
    for _ in range(6):
        get_x(env, port)
    assert srv.proc.poll() is None
    log = srv.log_text()
    # the master reports the crash as an alert: that one line is expected, nothing else
    env.allow_log = True
    bad = [ln for ln in log.splitlines() if h.BAD_LOG.search(ln)]
    assert len(bad) == 1 and str(victim) in bad[0] and "signal 9" in bad[0], bad


def test_sigquit_waits_for_inflight(env):
    env.write("html/big.bin", b"\x5a" * BIG)
    srv, port, _ = serve(env, main="worker_processes 1;")
    srv.wait_workers(1)
    s = env.tls_socket(port, timeout=10)
    idle = env.tls_socket(port)
    try:
        idle.sendall(b"GET /x HTTP/1.1\r\nHost: a.test\r\n\r\n")
        r, _ = h.read_response(idle)
        assert r.status == 200
        s.sendall(b"GET /big.bin HTTP/1.1\r\nHost: a.test\r\n\r\n")
        got = b""
        while b"\r\n\r\n" not in got:
            got += s.recv(65536)
        srv.send(signal.SIGQUIT)
        time.sleep(1.5)
        assert srv.proc.poll() is None, "the master exited with a response in flight"
        # the idle keep-alive connection is closed meanwhile
        assert h.closed_by_peer(idle, 2), "idle connection not closed on SIGQUIT"
        head, body = got.split(b"\r\n\r\n", 1)
        n = len(body)
        while n < BIG:
            c = s.recv(1 << 20)
            if not c:
                break
            n += len(c)
        assert n == BIG, "the in-flight response was cut at %d of %d bytes" % (n, BIG)
        assert b"content-length: %d" % BIG in head.lower(), head
    finally:
        s.close()
        idle.close()
    rc = srv.stop(signal.SIGQUIT, timeout=5)  # already stopping: must end promptly
    assert rc == 0, rc
    assert not os.path.exists(env.pidfile), "pid file left behind"


def test_sigterm_fast_stop(env):
    srv, port, _ = serve(env)
    ws = srv.wait_workers(2)
    s = env.tls_socket(port)  # an idle connection does not delay a fast stop
    try:
        t0 = time.monotonic()
        rc = srv.stop(signal.SIGTERM, timeout=5)
        assert rc == 0 and time.monotonic() - t0 < 3, (rc, time.monotonic() - t0)
        assert not any(h.pid_alive(w) for w in ws), ws
        assert not os.path.exists(env.pidfile)
    finally:
        s.close()


ACCESS_RE = re.compile(r'^127\.0\.0\.1 - - \[(\d{2})/([A-Z][a-z]{2})/(\d{4}):\d{2}:\d{2}:\d{2} '
                       r'[+-]\d{4}\] "([^"]*)" (\d{3}) (\d+) "([^"]*)" "([^"]*)"$')


def access_lines(path):
    with open(path) as f:
        return [ln for ln in f.read().split("\n") if ln]


def test_access_log_combined(env):
    alog = env.path("access.log")
    srv, port, _ = serve(env, server_extra="access_log %s;" % alog)
    env.write("html/f.txt", "12345")
    base = "https://a.test:%d" % port
    env.get(base + "/x")
    env.get(base + "/f.txt", "-e", "https://ref.test/p", "-A", "agent \"q\" 1")
    env.get(base + "/missing")
    env.get(base + "/f.txt", "-I")
    lines = h.wait_until(lambda: len(access_lines(alog)) >= 4 and access_lines(alog), 5,
                         what="4 access log lines")
    assert len(lines) == 4, lines
    ms = [ACCESS_RE.match(ln) for ln in lines]
    assert all(ms), "not nginx combined format:\n" + "\n".join(lines)
    curl_ver = h.run(["curl", "--version"], timeout=10).stdout.split()[1]
    m = ms[0]
    assert m.group(4) == "GET /x HTTP/1.1" and m.group(5) == "200" and m.group(6) == "2", lines[0]
    assert m.group(7) == "-" and m.group(8) == "curl/" + curl_ver, lines[0]
    m = ms[1]
    assert m.group(4) == "GET /f.txt HTTP/1.1" and m.group(6) == "5", lines[1]
    assert m.group(7) == "https://ref.test/p", lines[1]
    assert m.group(8) in ('agent \\"q\\" 1', 'agent \\x22q\\x22 1'), lines[1]
    assert ms[2].group(4) == "GET /missing HTTP/1.1" and ms[2].group(5) == "404", lines[2]
    assert ms[3].group(4) == "HEAD /f.txt HTTP/1.1" and ms[3].group(6) == "0", lines[3]
    t = time.gmtime()
    assert ms[0].group(3) == str(t.tm_year), lines[0]


def test_reopen_logs(env):
    alog = env.path("access.log")
    srv, port, conf = serve(env, server_extra="access_log %s;" % alog)
    get_x(env, port)
    h.wait_until(lambda: len(access_lines(alog)) == 1, 5, what="the first access log line")
    os.rename(alog, alog + ".1")
    os.rename(env.log, env.log + ".1")
    p = h.run([h.binary(), "-s", "reopen", "-c", conf], timeout=20,
              env=dict(os.environ, TLSGATE_STATE_DIR=env.state))
    assert p.returncode == 0, p.stderr
    h.wait_until(lambda: os.path.exists(env.log), 5, what="a new error log after reopen")
    # workers reopen on their own signal: wait until a request lands in the new file
    def logged():
        get_x(env, port)
        return os.path.exists(alog) and len(access_lines(alog)) >= 1
    h.wait_until(logged, 5, interval=0.2, what="a new access log after reopen")
    n_old = len(access_lines(alog + ".1"))
    time.sleep(0.3)
    get_x(env, port)
    h.wait_until(lambda: len(access_lines(alog + ".1")) == n_old and
                 any("GET /x" in ln for ln in access_lines(alog)), 5,
                 what="requests logged to the new file only")
    assert access_lines(alog + ".1")[0].find('"GET /x HTTP/1.1" 200 2') > 0


if __name__ == "__main__":
    h.main(globals())
