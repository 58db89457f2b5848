#!/usr/bin/env python3
"""Regressions of faults found by review (named after them), each reproduced as reported.

Usage: python3 tests/integ/test_regress.py BIN [TEST...]
"""
import os
import signal
import socket
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness as h  # noqa: E402

KNOWN_FAILURES = {}


def serve(env, locations="", server_extra="", main=""):
    port = env.port()
    env.start(env.simple_conf(port, locations=locations, server_extra=server_extra, main=main),
              port=port)
    return port


def status_of(env, port, path):
    p = h.run(["curl", "-sk", "--path-as-is", "--max-time", "10", "-o", "/dev/null", "-w",
               "%{http_code}", "--resolve", "a.test:%d:127.0.0.1" % port,
               "https://a.test:%d%s" % (port, path)], timeout=15)
    return p.stdout


def test_location_matches_normalised_path(env):
    """review #1: encoded or un-normalised paths bypassed `location /private`."""
    env.write("html/private/p.txt", "private data\n")
    env.write("html/sub/x.txt", "x\n")
    port = serve(env, locations="location /private { return 403; }")
    for path in ("/private/p.txt", "/%70rivate/p.txt", "//private/p.txt", "/./private/p.txt",
                 "/sub/../private/p.txt", "/sub/..%2fprivate/p.txt", "/PRIVATE/../private/p.txt"):
        assert status_of(env, port, path) == "403", path
    assert status_of(env, port, "/sub/x.txt") == "200"


def test_return_204_has_no_body(env):
    """review #2: `return 204 "text"` sent a body and desynchronised keep-alive."""
    port = serve(env, locations='location = /nc { return 204 "should-not-be-sent"; }\n'
                                'location = /t { return 200 "teapot"; }')
    s = env.tls_socket(port)
    try:
        s.sendall(b"GET /nc HTTP/1.1\r\nHost: a.test\r\n\r\nGET /t HTTP/1.1\r\nHost: a.test\r\n\r\n")
        r1, rest = h.read_response(s)
        assert r1.status == 204 and r1.body == b"", r1
        r2, _ = h.read_response(s, rest)
        assert r2.status == 200 and r2.body == b"teapot", r2
    finally:
        s.close()


def test_pipelined_answer_kept_when_next_body_fails(env):
    """review #3: a bad chunked body of a later pipelined request dropped the earlier answer."""
    port = serve(env, locations='location = /t { return 200 "teapot"; }')
    s = env.tls_socket(port)
    try:
        s.sendall(b"GET /t HTTP/1.1\r\nHost: a.test\r\n\r\n"
                  b"POST /t HTTP/1.1\r\nHost: a.test\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n")
        r1, rest = h.read_response(s)
        assert r1.status == 200 and r1.body == b"teapot", r1
        r2, _ = h.read_response(s, rest)
        assert r2.status == 400, r2
    finally:
        s.close()


def test_long_redirect_is_414_not_malformed(env):
    """review #5: a directory redirect with a 4 KiB query produced a broken header."""
    os.makedirs(env.path("html", "sub"))
    port = serve(env)
    s = env.tls_socket(port)
    try:
        s.sendall(b"GET /sub?" + b"q" * 4200 + b" HTTP/1.1\r\nHost: a.test\r\n\r\n"
                  b"GET /sub/ HTTP/1.1\r\nHost: a.test\r\n\r\n")
        r1, rest = h.read_response(s)
        assert r1.status == 414, r1
    finally:
        s.close()


def test_quit_refuses_new_connections_at_once(env):
    """review #6: during a graceful stop the master kept the listening sockets open, so new
    clients hung instead of being refused."""
    env.write("html/big.bin", b"\0" * (32 << 20))
    port = serve(env, server_extra="send_timeout 20s;")
    s = env.tls_socket(port, timeout=20)
    try:
        s.sendall(b"GET /big.bin HTTP/1.1\r\nHost: a.test\r\n\r\n")
        got = len(s.recv(1000))  # the download is in flight; we read no more for now
        srv = env.servers[-1]
        srv.send(signal.SIGQUIT)
        def refused():
            try:
                c = socket.create_connection(("127.0.0.1", port), timeout=1)
                c.close()
                return False
            except ConnectionRefusedError:
                return True
            except OSError:
                return False
        h.wait_until(refused, 5, what="connection refused after SIGQUIT")
        while True:  # the in-flight download still completes
            d = s.recv(1 << 20)
            if not d:
                break
            got += len(d)
        assert got >= 32 << 20, got
    finally:
        s.close()


def test_keepalive_timeout_0_disables_keepalive(env):
    """review #9: keepalive_timeout 0 said keep-alive, then closed."""
    env.write("html/x.txt", "x\n")
    port = serve(env, server_extra="keepalive_timeout 0;")
    status, headers, _ = env.get("https://a.test:%d/x.txt" % port)
    assert status == 200 and headers.get("connection") == "close", headers


def test_plain_http_on_tls_port_gets_400(env):
    """review #12: a plain HTTP request on a TLS port was closed silently (nginx: 400)."""
    port = serve(env)
    c = socket.create_connection(("127.0.0.1", port), timeout=5)
    try:
        c.sendall(b"GET / HTTP/1.1\r\nHost: a.test\r\n\r\n")
        data, _ = h.recv_all(c, timeout=5)
    finally:
        c.close()
    assert data.startswith(b"HTTP/1.1 400 "), data[:200]
    assert b"plain HTTP request was sent to HTTPS port" in data


def test_status_gauges_forget_a_killed_worker(env):
    """review #8: after kill -9 of a worker, its connections stayed in the status page."""
    port = serve(env, locations="location = /status { stub_status; }",
                 main="worker_processes 1;")
    socks = [env.tls_socket(port) for _ in range(10)]
    try:
        srv = env.servers[-1]
        old = srv.workers()
        env.allow_log = True  # the worker's death is logged as [alert]
        os.kill(old[0], signal.SIGKILL)
        h.wait_until(lambda: srv.workers() and srv.workers() != old, 10, what="respawn")
        _, _, body = env.get("https://a.test:%d/status" % port)
        first = body.decode().splitlines()[0]
        assert first.strip() in ("Active connections: 1", "Active connections: 0"), body
    finally:
        for s in socks:
            s.close()


if __name__ == "__main__":
    h.main(globals())
