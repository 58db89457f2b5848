#!/usr/bin/env python3
"""HTTP/1.1 edge cases over raw TLS sockets (Python ssl, no verification): pipelining,
connection handling, framing errors, limits, timeouts, Host/SNI mismatch.

Usage: python3 tests/integ/test_edge.py BIN [TEST...]
"""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness as h  # noqa: E402

# Checks that fail because the server is wrong (see the report); remove when fixed.
KNOWN_FAILURES = {}

LOCATIONS = """
        location = /a { return 200 "AAA"; }
        location = /b { return 200 "BBBB"; }
        location = /c { return 200 "CCCCC"; }
"""
HELLO = b"hello\n"


def serve(env, server_extra="", http_extra=""):
    env.write("html/hello.txt", HELLO)
    port = env.port()
    conf = env.conf(http_extra + env.server(port, server_extra, LOCATIONS) +
                    env.server(port, 'location = /a { return 200 "b-server"; }', name="b.test",
                               certs=("b_rsa",), root=False))
    env.start(conf, port=port)
    return port


def req(path="/a", host="a.test", extra="", version="1.1"):
    return ("GET %s HTTP/%s\r\n%s%s\r\n" % (path, version, "Host: %s\r\n" % host if host
                                             else "", extra)).encode()


def expect_close(s, what, timeout=3):
    assert h.closed_by_peer(s, timeout), "the server did not close the connection: " + what


def test_pipelined_in_order(env):
    port = serve(env)
    with env.tls_socket(port) as s:
        s.sendall(req("/a") + req("/b") + req("/hello.txt") + req("/c"))
        rest = b""
        got = []
        for _ in range(4):
            r, rest = h.read_response(s, rest)
            got.append((r.status, r.body))
        assert got == [(200, b"AAA"), (200, b"BBBB"), (200, HELLO), (200, b"CCCCC")], got
        assert rest == b"", rest


def test_pipelined_one_write(env):
    """Pipelined requests that arrive together are answered in one write (one TLS record
    for small responses), as nginx does."""
    port = serve(env)
    c = h.RecordTLS(port)
    try:
        c.send(req("/a") + req("/b") + req("/c"))
        data = c.read_until(lambda d: d.count(b"HTTP/1.1 200") == 3 and d.endswith(b"CCCCC"))
        assert data.count(b"HTTP/1.1 200") == 3 and data.endswith(b"CCCCC"), data
        app = [n for t, n in c.records if t == 23]
        assert len(app) == 1, \
            "3 pipelined responses came in %d TLS records (%s), expected 1 write" % (len(app), app)
    finally:
        c.close()


def test_http10_closes(env):
    port = serve(env)
    with h.answered(env, port, req("/a", host=None, version="1.0")) as (s, r, rest):
        assert r.status == 200 and r.body == b"AAA", r
        assert r.headers.get("connection", "close").lower() == "close", r.headers
        expect_close(s, "HTTP/1.0 without keep-alive")
    # HTTP/1.0 with Connection: keep-alive stays open (nginx)
    with h.answered(env, port, req("/a", host="a.test", version="1.0",
                                   extra="Connection: keep-alive\r\n")) as (s, r, rest):
        assert r.status == 200 and r.headers.get("connection", "").lower() == "keep-alive", r
        s.sendall(req("/b", version="1.0", extra="Connection: keep-alive\r\n"))
        r, rest = h.read_response(s, rest)
        assert r.status == 200 and r.body == b"BBBB", r


def test_connection_close(env):
    port = serve(env)
    with h.answered(env, port, req("/a", extra="Connection: close\r\n")) as (s, r, rest):
        assert r.status == 200 and r.headers.get("connection", "").lower() == "close", r
        assert rest == b""
        expect_close(s, "Connection: close")


def test_missing_host_400(env):
    port = serve(env)
    with h.answered(env, port, req("/a", host=None)) as (s, r, rest):
        assert r.status == 400, r
        expect_close(s, "400 for a missing Host")


def test_content_length_and_chunked_400(env):
    port = serve(env)
    with h.answered(env, port, b"POST /a HTTP/1.1\r\nHost: a.test\r\nContent-Length: 5\r\n"
                    b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n" + req("/b")) as (s, r, rest):
        assert r.status == 400, r
        assert r.headers.get("connection", "").lower() == "close", r.headers
        assert b"BBBB" not in rest
        data, eof = h.recv_all(s, 3)
        assert b"BBBB" not in data and eof, (data, eof)


def test_chunked_body_discarded(env):
    port = serve(env)
    with h.answered(env, port, b"GET /hello.txt HTTP/1.1\r\nHost: a.test\r\n"
                    b"Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n3;ext=1\r\nabc\r\n"
                    b"0\r\nTrailer: x\r\n\r\n" + req("/b")) as (s, r, rest):
        assert r.status == 200 and r.body == HELLO, r
        r, rest = h.read_response(s, rest)
        assert r.status == 200 and r.body == b"BBBB", r
        # and once more, body sent in pieces after the head
        s.sendall(b"GET /a HTTP/1.1\r\nHost: a.test\r\nTransfer-Encoding: chunked\r\n\r\n4\r\n")
        time.sleep(0.1)
        s.sendall(b"wxyz\r\n0\r\n\r\n" + req("/c"))
        r, rest = h.read_response(s, rest)
        assert r.status == 200 and r.body == b"AAA", r
        r, rest = h.read_response(s, rest)
        assert r.status == 200 and r.body == b"CCCCC", r


def test_body_too_large_413(env):
    port = serve(env, server_extra="client_max_body_size 1k;")
    with h.answered(env, port, b"POST /a HTTP/1.1\r\nHost: a.test\r\nContent-Length: 5000\r\n\r\n"
                    + b"x" * 5000) as (s, r, _):
        assert r.status == 413, r
        expect_close(s, "413")
    # chunked, too large once decoded
    with h.answered(env, port, b"POST /a HTTP/1.1\r\nHost: a.test\r\n"
                    b"Transfer-Encoding: chunked\r\n\r\n800\r\n" + b"y" * 2048 +
                    b"\r\n0\r\n\r\n") as (s, r, _):
        assert r.status == 413, r
    # within the limit: fine, and the connection goes on
    with h.answered(env, port, b"POST /a HTTP/1.1\r\nHost: a.test\r\nContent-Length: 1000\r\n\r\n"
                    + b"z" * 1000 + req("/b")) as (s, r, rest):
        assert r.status == 200 and r.body == b"AAA", r
        r, rest = h.read_response(s, rest)
        assert r.status == 200 and r.body == b"BBBB", r


def test_long_request_line_414(env):
    port = serve(env)
    with h.answered(env, port, req("/" + "a" * 10000)) as (s, r, _):
        assert r.status == 414, r
        expect_close(s, "414")
    # 6000 bytes are within the default 8k buffers
    with h.answered(env, port, req("/a?" + "q" * 6000)) as (s, r, _):
        assert r.status == 200 and r.body == b"AAA", r


def test_headers_too_large_431(env):
    port = serve(env)
    cases = {
        "one 10k field": "X-Big: %s\r\n" % ("v" * 10000),
        "200 fields": "".join("X-H%d: v\r\n" % i for i in range(200)),
        "40k of fields": "".join("X-H%d: %s\r\n" % (i, "v" * 7000) for i in range(6)),
    }
    for what, extra in cases.items():
        with h.answered(env, port, req("/a", extra=extra)) as (s, r, _):
            assert r.status == 431, (what, r)
            expect_close(s, "431 " + what)
    # 50 small fields are fine
    fifty = "".join("X-H%d: v\r\n" % i for i in range(50))
    with h.answered(env, port, req("/a", extra=fifty)) as (s, r, _):
        assert r.status == 200, r


def test_header_timeout_408(env):
    port = serve(env, server_extra="client_header_timeout 1s;")
    with env.tls_socket(port, timeout=6) as s:
        t0 = time.monotonic()
        s.sendall(b"GET /a HTTP/1.1\r\nHost: a.te")
        r, _ = h.read_response(s, timeout=5)
        dt = time.monotonic() - t0
        assert r.status == 408, r
        assert 0.7 <= dt <= 3.0, "408 after %.2fs, expected about 1s" % dt
        expect_close(s, "408")
    # also on a kept-alive connection's second request
    with env.tls_socket(port, timeout=6) as s:
        s.sendall(req("/a"))
        r, _ = h.read_response(s)
        assert r.status == 200, r
        t0 = time.monotonic()
        s.sendall(b"GET /b HTTP/1.1\r\n")
        r, _ = h.read_response(s, timeout=5)
        dt = time.monotonic() - t0
        assert r.status == 408 and 0.7 <= dt <= 3.0, (r, dt)


def test_keepalive_timeout(env):
    port = serve(env, server_extra="keepalive_timeout 1s;")
    with env.tls_socket(port, timeout=6) as s:
        s.sendall(req("/a"))
        r, _ = h.read_response(s)
        assert r.status == 200 and r.headers.get("connection", "").lower() == "keep-alive", r
        t0 = time.monotonic()
        data, eof = h.recv_all(s, 5)
        dt = time.monotonic() - t0
        assert data == b"" and eof, "idle keep-alive connection not closed (%r)" % data[:100]
        assert 0.7 <= dt <= 3.0, "closed after %.2fs, expected about 1s" % dt


def test_keepalive_requests(env):
    port = serve(env, server_extra="keepalive_requests 3;")
    with env.tls_socket(port) as s:
        rest = b""
        for i in range(3):
            s.sendall(req("/a"))
            r, rest = h.read_response(s, rest)
            assert r.status == 200, (i, r)
            want = "close" if i == 2 else "keep-alive"
            assert r.headers.get("connection", "").lower() == want, (i, r.headers)
        expect_close(s, "after the 3rd response with keepalive_requests 3")


def test_host_sni_mismatch_421(env):
    port = serve(env)
    with h.answered(env, port, req("/a", host="b.test"), sni="a.test") as (s, r, rest):
        assert r.status == 421, r
    with h.answered(env, port, req("/a", host="b.test:%d" % port), sni="b.test") as (s, r, rest):
        assert r.status == 200 and r.body == b"b-server", r
        s.sendall(req("/a", host="a.test"))
        r, rest = h.read_response(s, rest)
        assert r.status == 421, r
    with h.answered(env, port, req("/a", host="A.TEST:%d" % port), sni="a.test") as (s, r, rest):
        assert r.status == 200 and r.body == b"AAA", r


if __name__ == "__main__":
    h.main(globals())
