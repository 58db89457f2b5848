#!/usr/bin/env python3
"""The reverse proxy (proxy_pass, upstream) in front of real upstreams started here: the
Python backend of backends.py, Debian's nginx (when installed) and dead/slow/garbage ones.

Usage: python3 tests/integ/test_proxy.py BIN [TEST...]
"""
import hashlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import backends as be  # noqa: E402
import harness as h  # noqa: E402
from test_gwconf import wait_log  # noqa: E402

KNOWN_FAILURES = {}
BIG = 100 * 1024 * 1024


def proxy_conf(env, upstream_block="", locations="", http_extra="", server_extra="",
               max_body="0", start_env=None):
    port = env.port()
    conf = env.conf(http_extra + "\n" + upstream_block +
                    env.server(port, "client_max_body_size %s;" % max_body, server_extra,
                               locations, root=False))
    env.start(conf, port=port, env=start_env)
    return port


def simple(env, backend, extra="", keepalive=8, http_extra="", server_extra="", max_body="0",
           start_env=None):
    return proxy_conf(env, """
    upstream app {
        server 127.0.0.1:%d;
        keepalive %d;
    }""" % (backend.port, keepalive), """
        location / {
            proxy_pass http://app;
            %s
        }""" % extra, http_extra=http_extra, server_extra=server_extra, max_body=max_body,
                      start_env=start_env)


req = h.request
one = h.exchange


def dead_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()  # nobody listens: connect() is refused
    return p


# ------------------------------------------------------------------------------ headers


def test_headers_both_ways(env):
    with be.Backend() as b:
        port = simple(env, b)
        r = one(env, port, req("/echo/x?q=1", extra="X-Forwarded-For: 10.0.0.1\r\n"
                               "Connection: keep-alive, X-Private\r\nX-Private: p\r\n"
                               "Keep-Alive: 300\r\nTE: trailers\r\nUpgrade: h2c\r\n"
                               "X-Custom: c\r\n"))
        assert r.status == 200, r
        seen = json.loads(r.body)
        hd = seen["headers"]
        assert seen["version"] == "HTTP/1.1" and seen["target"] == "/echo/x?q=1", seen
        assert hd["host"] == ["app"], hd  # $proxy_host, as nginx's default
        assert hd["x-real-ip"] == ["127.0.0.1"], hd
        assert hd["x-forwarded-for"] == ["10.0.0.1, 127.0.0.1"], hd
        assert hd["x-forwarded-proto"] == ["https"], hd
        assert hd["x-custom"] == ["c"], hd
        for hop in ("connection", "keep-alive", "te", "upgrade", "x-private",
                    "transfer-encoding", "content-length"):
            assert hop not in hd, (hop, hd)
        # response: hop-by-hop fields of the upstream are not passed down
        assert r.headers.get("x-backend") == "yes", r.headers
        assert "x-hop" not in r.headers and "keep-alive" not in r.headers, r.headers
        assert r.headers["connection"] == "keep-alive", r.headers


def test_proxy_set_header_and_uri(env):
    with be.Backend() as b:
        port = proxy_conf(env, "", """
        location /api/ {
            proxy_pass http://127.0.0.1:%d/v2/;
            proxy_set_header Host $host;
            proxy_set_header X-Real-IP "";
            proxy_set_header X-Who "$remote_addr via $scheme";
        }""" % b.port)
        r = one(env, port, req("/api/echo%20me?a=b", host="A.test:443"))
        assert r.status == 200, r
        seen = json.loads(r.body)
        assert seen["target"] == "/v2/echo%20me?a=b", seen
        hd = seen["headers"]
        assert hd["host"] == ["a.test"], hd
        assert "x-real-ip" not in hd and "x-forwarded-for" not in hd, hd
        assert hd["x-who"] == ["127.0.0.1 via https"], hd
        # no upstream block: no keep-alive to the upstream (nginx)
        assert hd.get("connection") == ["close"], hd


def test_hide_and_pass_header(env):
    # nginx: the upstream's Date, Server, X-Pad and X-Accel-* are hidden by default and the
    # gateway's own Server and Date are sent (once); proxy_hide_header adds to the list,
    # proxy_pass_header takes from it; a level with neither inherits both
    with be.Backend() as b:
        port = proxy_conf(env, "", """
        location / { proxy_pass http://127.0.0.1:%d; }
        location /pass/ {
            proxy_pass http://127.0.0.1:%d;
            proxy_pass_header Server;
            proxy_pass_header X-Accel-Buffering;
        }""" % (b.port, b.port), server_extra="http2 on; proxy_hide_header X-Secret;")
        url = "https://a.test:%d" % port
        for proto in ("--http1.1", "--http2"):
            st, hd, body = env.get(url + "/fields", proto)
            assert st == 200 and body == b"ok", (proto, st, body)
            assert hd["server"] == "tlsgate", (proto, hd)
            assert "1970" not in hd["date"] and "," not in hd["date"][4:], (proto, hd)
            for f in ("x-pad", "x-accel-redirect", "x-accel-buffering", "x-secret"):
                assert f not in hd, (proto, f, hd)
            assert hd["x-kept"] == "k", (proto, hd)
            st, hd, body = env.get(url + "/pass/fields", proto)
            assert st == 200 and body == b"ok", (proto, st, body)
            assert hd["server"] == "UpServer/1.0", (proto, hd)
            assert "1970" not in hd["date"] and "," not in hd["date"][4:], (proto, hd)
            assert hd["x-accel-buffering"] == "no" and hd["x-secret"] == "s", (proto, hd)
            assert "x-pad" not in hd and "x-accel-redirect" not in hd, (proto, hd)


def test_keepalive_reuse(env):
    with be.Backend() as b:
        port = simple(env, b, keepalive=8)
        with env.tls_socket(port) as s:
            rest = b""
            for i in range(20):
                s.sendall(req("/n%d" % i))
                r, rest = h.read_response(s, rest)
                assert r.status == 200 and r.body == b"ok /n%d" % i, r
        for i in range(5):
            assert one(env, port, req("/m%d" % i)).status == 200
        assert b.conns == 1, "25 sequential requests used %d upstream connections" % b.conns
        # 8 clients at once, 40 requests each: at most 8 upstream connections, reused
        errors = []

        def client(k):
            try:
                with env.tls_socket(port) as s:
                    rest = b""
                    for i in range(40):
                        s.sendall(req("/c%d-%d" % (k, i)))
                        r, rest = h.read_response(s, rest)
                        assert r.status == 200, r
            except Exception as e:  # noqa: BLE001 (reported below)
                errors.append(e)
        ts = [threading.Thread(target=client, args=(k,)) for k in range(8)]
        for t in ts:
            t.start()
        for t in ts:
            t.join(30)
        assert not errors, errors
        assert b.conns <= 9, "320 concurrent requests used %d upstream connections" % b.conns


def test_pipelined_in_order(env):
    with be.Backend() as b:
        port = simple(env, b)
        with env.tls_socket(port) as s:
            s.sendall(b"".join(req("/slow?ms=%d&i=%d" % (200 - 40 * i, i)) if i < 3 else
                               req("/p%d" % i) for i in range(6)))
            rest = b""
            bodies = []
            for i in range(6):
                r, rest = h.read_response(s, rest)
                bodies.append(r.body)
            assert bodies == [b"slow"] * 3 + [b"ok /p3", b"ok /p4", b"ok /p5"], bodies


# ------------------------------------------------------------------------------ bodies


def _stream_upload(s, n, chunked):
    """Send n pattern bytes as a body; returns the sha256."""
    hsh = hashlib.sha256()
    sent = 0
    while sent < n:
        k = min(len(be.PATTERN), n - sent)
        part = be.PATTERN[:k]
        hsh.update(part)
        s.sendall(b"%x\r\n" % k + part + b"\r\n" if chunked else part)
        sent += k
    if chunked:
        s.sendall(b"0\r\n\r\n")
    return hsh.hexdigest()


def test_big_bodies_both_ways(env):
    with be.Backend() as b:
        port = simple(env, b)
        with env.tls_socket(port, timeout=60) as s:
            # 100 MB up, Content-Length
            s.sendall(req("/echo", "PUT", extra="Content-Length: %d\r\n" % BIG))
            sha = _stream_upload(s, BIG, False)
            r, rest = h.read_response(s, timeout=60)
            seen = json.loads(r.body)
            assert r.status == 200 and seen["body_len"] == BIG and seen["body_sha"] == sha, seen
            # 100 MB down, Content-Length: hashed while read
            s.sendall(req("/big?n=%d" % BIG))
            buf = rest
            while b"\r\n\r\n" not in buf:
                buf += s.recv(65536)
            head, buf = buf.split(b"\r\n\r\n", 1)
            assert b" 200 " in head.split(b"\r\n")[0] and b"Content-Length: %d" % BIG in head, head
            hsh = hashlib.sha256(buf)
            got = len(buf)
            while got < BIG:
                d = s.recv(min(1 << 20, BIG - got))
                assert d, "EOF after %d bytes" % got
                hsh.update(d)
                got += len(d)
            assert hsh.hexdigest() == be.pattern_sha(BIG)


def _rss_kb(pid):
    with open("/proc/%d/status" % pid) as f:
        for ln in f:
            if ln.startswith("VmRSS:"):
                return int(ln.split()[1])
    return 0


def test_backpressure_both_ways(env):
    """A stalled reader on either side stops the other side: the worker's memory does not
    grow with the body (48 MB pending each way, at most a few buffers held)."""
    N = 48 * 1024 * 1024  # far above what the kernel's socket buffers hold
    with be.Backend() as b:
        # under ASan, freed memory sits in a quarantine (256 MB by default): OpenSSL frees
        # its record buffer after every write (SSL_MODE_RELEASE_BUFFERS), so keep the
        # quarantine small or RSS measures it instead of our buffers
        asan = os.environ.get("ASAN_OPTIONS", "")
        port = simple(env, b, start_env={"ASAN_OPTIONS": (asan + ":" if asan else "") +
                                         "quarantine_size_mb=4"})
        worker = env.servers[0].wait_workers(1)[0]
        one(env, port, req("/warm"))
        base = _rss_kb(worker)
        # upload to a backend that does not read for 1.5 s
        with env.tls_socket(port, timeout=60) as s:
            s.sendall(req("/stallbody/echo", "PUT", extra="Content-Length: %d\r\n" % N))
            box = {}
            t = threading.Thread(target=lambda: box.update(sha=_stream_upload(s, N, False)))
            t.start()
            time.sleep(1.0)
            up_rss = _rss_kb(worker)
            t.join(60)
            r, rest = h.read_response(s, timeout=60)
            seen = json.loads(r.body)
            assert seen["body_len"] == N and seen["body_sha"] == box["sha"], seen
            # download to a client that does not read for 1 s
            s.sendall(req("/big?n=%d" % N))
            time.sleep(1.0)
            down_rss = _rss_kb(worker)
            got, hsh, buf = 0, hashlib.sha256(), rest
            while b"\r\n\r\n" not in buf:
                buf += s.recv(65536)
            buf = buf.split(b"\r\n\r\n", 1)[1]
            hsh.update(buf)
            got = len(buf)
            while got < N:
                d = s.recv(1 << 20)
                assert d
                hsh.update(d)
                got += len(d)
            assert hsh.hexdigest() == be.pattern_sha(N)
        print("worker RSS growth: upload %d KiB, download %d KiB" % (up_rss - base,
                                                                     down_rss - base))
        for what, rss in (("upload", up_rss), ("download", down_rss)):
            assert rss - base < 16 * 1024, "%s: worker RSS grew by %d KiB" % (what, rss - base)


def test_chunked_upload_and_download(env):
    with be.Backend() as b:
        # streamed as it comes (buffered, the default, is tests/integ/test_reqbuf.py)
        port = simple(env, b, extra="proxy_request_buffering off;")
        n = 3 * 1024 * 1024 + 17
        with env.tls_socket(port, timeout=30) as s:
            s.sendall(req("/echo", "POST", extra="Transfer-Encoding: chunked\r\n"))
            sha = _stream_upload(s, n, True)
            r, rest = h.read_response(s, timeout=30)
            seen = json.loads(r.body)
            assert seen["body_len"] == n and seen["body_sha"] == sha, seen
            assert seen["headers"]["transfer-encoding"] == ["chunked"], seen
            # an upstream chunked response is re-framed chunked for an HTTP/1.1 client
            s.sendall(req("/chunked?n=%d" % n, extra="Connection: close\r\n"))
            data, _ = h.recv_all(s, 5)
            data = rest + data
        head, body = data.split(b"\r\n\r\n", 1)
        assert b"Transfer-Encoding: chunked" in head, head
        out, pos = b"", 0
        while True:
            eol = body.index(b"\r\n", pos)
            size = int(body[pos:eol], 16)
            if size == 0:
                break
            out += body[eol + 2:eol + 2 + size]
            pos = eol + 2 + size + 2
        assert out == be.pattern_bytes(n)
        # HTTP/1.0 client: body until close; EOF-delimited upstream, too
        with env.tls_socket(port) as s:
            s.sendall(b"GET /eof?n=70000 HTTP/1.0\r\nHost: a.test\r\n\r\n")
            data, eof = h.recv_all(s, 5)
        head, body = data.split(b"\r\n\r\n", 1)
        assert eof and body == be.pattern_bytes(70000), (head, len(body))
        assert b"Connection: close" in head, head


def test_large_head_then_body(env):
    """A head that grew the client buffer past the upstream buffer (large header buffers),
    then a body arriving in big reads: forwarded intact."""
    with be.Backend() as b:
        port = simple(env, b, server_extra="large_client_header_buffers 4 256k;")
        n = 3 * 1024 * 1024
        with env.tls_socket(port, timeout=30) as s:
            s.sendall(req("/echo", "PUT", extra="X-Big: %s\r\nContent-Length: %d\r\n" %
                          ("a" * 200000, n)) + be.pattern_bytes(n))
            r, _ = h.read_response(s, timeout=30)
        seen = json.loads(r.body)
        assert seen["body_len"] == n and seen["body_sha"] == be.pattern_sha(n), seen
        assert len(seen["headers"]["x-big"][0]) == 200000


def test_client_max_body_size(env):
    with be.Backend() as b:
        port = simple(env, b, max_body="1k")
        r = one(env, port, req("/echo", "POST", extra="Content-Length: 2000\r\n"))
        assert r.status == 413, r
        with env.tls_socket(port) as s:
            s.sendall(req("/echo", "POST", extra="Transfer-Encoding: chunked\r\n") +
                      b"400\r\n" + b"x" * 1024 + b"\r\n1\r\nx\r\n0\r\n\r\n")
            r, _ = h.read_response(s)
            assert r.status == 413, r


def test_client_max_body_size_in_location(env):
    # nginx: client_max_body_size in a location (the usual `location /upload/`), inherited
    # from the server by the others; checked once the location is chosen, for proxied
    # bodies (buffered or not, with or without a length) and discarded ones, HTTP/1.1 and 2
    env.write("b10k", b"x" * 10000)
    env.write("b30k", b"y" * 30000)
    with be.Backend() as b:
        port = proxy_conf(env, "", """
        location /up/ { client_max_body_size 20k; proxy_pass http://127.0.0.1:%d; }
        location /upoff/ {
            client_max_body_size 20k;
            proxy_request_buffering off;
            proxy_pass http://127.0.0.1:%d;
        }
        location /small/ { proxy_pass http://127.0.0.1:%d; }
        location /static/ { client_max_body_size 20k; }""" % (b.port, b.port, b.port),
                          server_extra="http2 on;", max_body="1k")
        url = "https://a.test:%d" % port
        b10, b30 = "@" + env.path("b10k"), "@" + env.path("b30k")

        def post(path, body, *args):
            return env.get(url + path, "--data-binary", body, *args)[::2]

        for proto in ("--http1.1", "--http2"):
            for framing in ((), ("-H", "Transfer-Encoding: chunked")):
                args = (proto,) + framing
                for loc in ("/up/", "/upoff/"):
                    st, body = post(loc + "echo", b10, *args)
                    assert st == 200 and json.loads(body)["body_len"] == 10000, (args, loc, st)
                    st, _ = post(loc + "echo", b30, *args)
                    assert st == 413, (args, loc, st)
                st, _ = post("/small/echo", b10, *args)
                assert st == 413, (args, st)  # the server's 1k
                st, _ = post("/static/x", b10, *args)
                assert st == 405, (args, st)  # read and discarded within 20k
                st, _ = post("/static/x", b30, *args)
                assert st == 413, (args, st)


def test_expect_continue(env):
    with be.Backend() as b:
        port = simple(env, b)
        with env.tls_socket(port) as s:
            s.sendall(req("/echo", "POST", extra="Content-Length: 5\r\nExpect: 100-continue\r\n"))
            r, rest = h.read_response(s)
            assert r.status == 100, r
            s.sendall(b"hello")
            r, rest = h.read_response(s, rest)
            seen = json.loads(r.body)
            assert seen["body_len"] == 5 and "expect" not in seen["headers"], seen


# ------------------------------------------------------------------------------ failures


def test_upstream_down_502(env):
    port = proxy_conf(env, "", "location / { proxy_pass http://127.0.0.1:%d; }" % dead_port())
    env.allow_log = True
    r = one(env, port, req("/"))
    assert r.status == 502, r


def test_upstream_garbage_502(env):
    with be.Backend() as b:
        port = simple(env, b)
        for path in ("/garbage", "/head-garbage", "/reset"):
            r = one(env, port, req(path, "POST", extra="Content-Length: 0\r\n"))
            assert r.status == 502, (path, r)


def test_upstream_slow_504(env):
    with be.Backend() as b:
        port = simple(env, b, "proxy_read_timeout 300ms;")
        t0 = time.monotonic()
        r = one(env, port, req("/slow?ms=1500"))
        dt = time.monotonic() - t0
        assert r.status == 504 and dt < 1.2, (r, dt)
        # no retry after a read timeout: the slow request reached the backend once
        assert be.wait_for(lambda: len(b.requests) >= 1)
        time.sleep(0.1)
        assert sum(1 for q in b.requests if q["target"].startswith("/slow")) == 1
        assert one(env, port, req("/slow?ms=10")).status == 200


def test_send_timeout_504(env):
    b = be.Backend()
    N = 48 * 1024 * 1024  # more than every socket buffer on the way holds
    try:
        port = simple(env, b, "proxy_send_timeout 300ms;")
        with env.tls_socket(port, timeout=20) as s:
            t0 = time.monotonic()
            s.sendall(req("/stallbody/echo", "PUT", extra="Content-Length: %d\r\n" % N))
            try:  # blocks once the upstream stops reading; the lingering close drains it
                _stream_upload(s, N, False)
            except OSError:
                pass
            r, _ = h.read_response(s, timeout=5)
            dt = time.monotonic() - t0
            assert r.status == 504 and dt < 6, (r, dt)
            assert r.headers.get("connection") == "close", r.headers
    finally:
        b.close()


def test_connect_timeout_504(env):
    # a listener whose accept queue is full: SYNs go unanswered
    ls = socket.socket()
    ls.bind(("127.0.0.1", 0))
    ls.listen(0)
    fillers = []
    try:
        for _ in range(8):
            f = socket.socket()
            f.setblocking(False)
            try:
                f.connect(("127.0.0.1", ls.getsockname()[1]))
            except BlockingIOError:
                pass
            fillers.append(f)
        time.sleep(0.2)
        port = proxy_conf(env, "", """location / { proxy_pass http://127.0.0.1:%d;
                                  proxy_connect_timeout 300ms; }""" % ls.getsockname()[1])
        t0 = time.monotonic()
        r = one(env, port, req("/"))
        dt = time.monotonic() - t0
        assert r.status == 504 and dt < 2.0, (r, dt)
    finally:
        for f in fillers:
            f.close()
        ls.close()


def test_keepalive_closed_as_sent_retry(env):
    with be.Backend(kill_second=True) as b:
        port = simple(env, b)
        assert one(env, port, req("/a")).status == 200
        # the pooled connection is closed by the backend on reading the next request:
        # a GET is retried once on a new connection
        r = one(env, port, req("/b"))
        assert r.status == 200 and r.body == b"ok /b", r
        assert b.conns == 2, b.conns
        # a POST is not idempotent: 502, not repeated
        assert one(env, port, req("/c")).status == 200  # retried too: conn 3
        r = one(env, port, req("/d", "POST", extra="Content-Length: 1\r\n", body=b"x"))
        assert r.status == 502, r
        assert [q["target"] for q in b.requests].count("/d") == 0, b.requests


def test_client_abort_cancels_upstream(env):
    with be.Backend() as b:
        port = simple(env, b)
        s = env.tls_socket(port)
        s.sendall(req("/drip?n=%d" % (64 * 1024 * 200)))
        s.recv(1000)
        s.close()
        # the upstream connection is closed: the backend's writes fail soon
        assert be.wait_for(lambda: "/drip" in b.aborted, 5), "upstream request not cancelled"
        assert one(env, port, req("/after")).status == 200


def test_client_abort_mid_upload(env):
    with be.Backend() as b:
        port = simple(env, b, extra="proxy_request_buffering off;")  # streamed upload
        s = env.tls_socket(port)
        s.sendall(req("/echo", "PUT", extra="Content-Length: 10000000\r\n") + b"x" * 100000)
        time.sleep(0.3)
        s.close()
        # the upstream connection is closed, not reused with half a body in it
        assert be.wait_for(lambda: b.conns == 1, 3)
        r = one(env, port, req("/after"))
        assert r.status == 200 and r.body == b"ok /after", r
        assert b.conns == 2, "a connection with half a body was reused (%d)" % b.conns
        assert [q["target"] for q in b.requests] == ["/after"], b.requests


def _logged(env, backend, extra="", name="access.log"):
    """A proxy to backend whose access log reads "$request $status $body_bytes_sent
    $upstream_status"; (port, log path)."""
    log = env.path(name)
    port = simple(env, backend, extra, http_extra="log_format t '$request $status "
                  "$body_bytes_sent $upstream_status';",
                  server_extra="access_log %s t;" % log)
    return port, log


def _log_lines(log, n, settle=0.3):
    """The access log once it has n lines, after settle seconds more (a second line for
    one request would show)."""
    wait_log(log, n)
    time.sleep(settle)
    with open(log) as f:
        return f.read().splitlines()


def test_upstream_truncated_logged(env):
    """An upstream that closes in the middle of its body (Content-Length 100000, 1000 bytes
    sent): the client gets the head and the 1000 bytes, then the connection closes (nginx);
    the request is logged once with 200 and the bytes sent, and the error log blames the
    upstream, not the client."""
    with be.Backend() as b:
        port, log = _logged(env, b)
        with env.tls_socket(port) as s:
            s.sendall(req("/truncate?n=1000"))
            data, _ = h.recv_all(s)
        head, _, body = data.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 200") and b"content-length: 100000" in head.lower(), \
            head
        assert body == b"x" * 1000, len(body)
        assert _log_lines(log, 1) == ["GET /truncate?n=1000 HTTP/1.1 200 1000 200"]
        text = env.servers[-1].log_text()
        assert "upstream 127.0.0.1:%d closed the connection in the middle of the response" \
            % b.port in text, text
        assert "went away" not in text and "reset its" not in text, text
        # the next request is served (a new upstream connection)
        assert one(env, port, req("/after")).status == 200
        assert _log_lines(log, 2)[1] == "GET /after HTTP/1.1 200 9 200"


def test_upstream_read_timeout_after_head_logged(env):
    """The upstream stalls in its body past proxy_read_timeout: as a truncation, the bytes
    received go out, the request is logged once with 200, the upstream is blamed."""
    with be.Backend() as b:
        port, log = _logged(env, b, "proxy_read_timeout 300ms;")
        with env.tls_socket(port) as s:
            s.sendall(req("/bodystall?n=500"))
            data, _ = h.recv_all(s)
        assert data.startswith(b"HTTP/1.1 200") and data.endswith(b"\r\n\r\n" + b"x" * 500), \
            data[-600:]
        assert _log_lines(log, 1) == ["GET /bodystall?n=500 HTTP/1.1 200 500 200"]
        text = env.servers[-1].log_text()
        assert "upstream 127.0.0.1:%d timed out" % b.port in text, text
        assert "went away" not in text, text


def _send_and_leave(env, port, raw):
    """Send raw on a new connection, wait 0.3 s, close it."""
    s = env.tls_socket(port)
    s.sendall(raw)
    time.sleep(0.3)
    s.close()


def test_client_abort_mid_body_logged(env):
    """A client that closes in its request body is logged once with 400 (buffered and
    streamed uploads), one that closes while the upstream works with 499 (nginx)."""
    upload = dict(method="PUT", extra="Content-Length: 100000\r\n", body=b"x" * 3000)
    with be.Backend() as b:
        port, log = _logged(env, b)
        _send_and_leave(env, port, req("/echo/buffered", **upload))
        assert _log_lines(log, 1) == ["PUT /echo/buffered HTTP/1.1 400 0 -"]
        _send_and_leave(env, port, req("/slow?ms=1500"))
        assert _log_lines(log, 2)[1] == "GET /slow?ms=1500 HTTP/1.1 499 0 -"
        assert "client 127.0.0.1 went away" in env.servers[-1].log_text()
    with be.Backend() as b:
        port, log = _logged(env, b, "proxy_request_buffering off;", "streamed.log")
        _send_and_leave(env, port, req("/echo/streamed", **upload))
        assert _log_lines(log, 1) == ["PUT /echo/streamed HTTP/1.1 400 0 -"]


def test_round_robin_health_backup(env):
    b1, b2, bk = be.Backend(), be.Backend(), be.Backend()
    dead = dead_port()
    try:
        port = proxy_conf(env, """
    upstream app {
        server 127.0.0.1:%d weight=2;
        server 127.0.0.1:%d;
        server 127.0.0.1:%d max_fails=1 fail_timeout=30s;
        server 127.0.0.1:%d backup;
    }""" % (b1.port, b2.port, dead, bk.port), "location / { proxy_pass http://app; }")
        env.allow_log = True
        for i in range(12):
            assert one(env, port, req("/r%d" % i)).status == 200
        n1, n2 = len(b1.requests), len(b2.requests)
        # the dead server failed once, then is skipped: 2:1 between the live ones
        assert n1 + n2 == 12 and abs(n1 - 2 * n2) <= 2, (n1, n2)
        assert len(bk.requests) == 0
        b1.close()
        b2.close()
        for i in range(3):
            assert one(env, port, req("/k%d" % i)).status == 200
        assert len(bk.requests) >= 1, "backup not used when the primaries are down"
    finally:
        for b in (b1, b2, bk):
            b.close()


# ------------------------------------------------------------------------------ smuggling


SMUGGLING = [
    ("CL and TE", "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n"),
    ("TE and CL", "Transfer-Encoding: chunked\r\nContent-Length: 5\r\n"),
    ("unknown TE", "Transfer-Encoding: gzip\r\n"),
    ("TE not chunked last", "Transfer-Encoding: chunked, identity\r\n"),
    ("malformed TE", "Transfer-Encoding: chunked;x\r\n"),
    ("conflicting CL", "Content-Length: 5\r\nContent-Length: 6\r\n"),
    ("CL list", "Content-Length: 5, 6\r\n"),
    ("empty CL", "Content-Length:\r\n"),
    ("obs-fold", "X-A: 1\r\n folded\r\n"),
    ("folded TE", "X-A: 1\r\n\tTransfer-Encoding: chunked\r\n"),
]


def test_smuggling_400_and_close(env):
    with be.Backend() as b:
        port = simple(env, b)
        for name, fields in SMUGGLING:
            with env.tls_socket(port) as s:
                s.sendall(req("/echo", "POST", extra=fields) + b"0\r\n\r\nGET /smuggled HTTP/1.1"
                          b"\r\nHost: a.test\r\n\r\n")
                r, _ = h.read_response(s)
                assert r.status == 400, (name, r)
                assert r.headers.get("connection") == "close", (name, r.headers)
                assert h.closed_by_peer(s), name
        assert b.requests == [], [q["target"] for q in b.requests]
        # what is forwarded has exactly one framing (ours)
        r = one(env, port, req("/echo", "POST", extra="Content-Length: 3\r\n", body=b"abc"))
        hd = json.loads(r.body)["headers"]
        assert hd["content-length"] == ["3"] and "transfer-encoding" not in hd, hd


# ------------------------------------------------------------------------------ config


def test_config_errors(env):
    bad = [
        ("location / { proxy_pass ftp://127.0.0.1:1; }", "must be http(s)://"),
        ("location / { proxy_pass 127.0.0.1:1; }", "must be http(s)://"),
        ("location / { proxy_pass http://nowhere; }", "host names are not supported"),
        ("location / { proxy_pass http://$host; }", "variables are not supported"),
        ("location / { proxy_set_header Connection x; proxy_pass http://127.0.0.1:1; }",
         "hop-by-hop"),
        ("location / { proxy_hide_header \"X Y\"; proxy_pass http://127.0.0.1:1; }",
         "not a header field name"),
        ("location / { proxy_pass_header a:b; proxy_pass http://127.0.0.1:1; }",
         "not a header field name"),
        ("location / { proxy_read_timeout 0; proxy_pass http://127.0.0.1:1; }", "at least"),
    ]
    ups = [
        ("upstream u { }", "no servers"),
        ("upstream u { server 127.0.0.1:1 backup; }", "only backup"),
        ("upstream u { server 127.0.0.1:1 weight=0; }", "invalid value"),
        ("upstream u { server 127.0.0.1:1 down; }", "unsupported server parameter"),
        ("upstream u { server 127.0.0.1; keepalive 0; }", "between 1 and"),
        ("upstream u { server 127.0.0.1:1; } upstream u { server 127.0.0.1:2; }",
         "duplicate upstream"),
        ("upstream u { server 0.0.0.0:1; }", "not an address to connect to"),
        ("upstream u { zone x 1m; server 127.0.0.1:1; }", "unknown directive in upstream"),
    ]
    cases = [("server { listen 127.0.0.1:1; %s }" % b, w) for b, w in bad] + \
            [("%s server { listen 127.0.0.1:1; }" % b, w) for b, w in ups]
    for body, want in cases:
        conf = env.conf(body, name="bad.conf")
        p = h.run([h.binary(), "-t", "-c", conf])
        assert p.returncode != 0 and want in p.stderr, (body, p.stderr)
    good = env.conf("""upstream u { server 127.0.0.1:1 weight=3 max_fails=0 fail_timeout=1s;
                      server [::1]:2 backup; keepalive 4; keepalive_timeout 5s;
                      keepalive_requests 10; }
                      server { listen 127.0.0.1:1; proxy_read_timeout 1s;
                               location / { proxy_pass http://u/x;
                                            proxy_set_header Connection ""; } }""",
                    name="good.conf")
    p = h.run([h.binary(), "-t", "-c", good])
    assert p.returncode == 0, p.stderr


# ------------------------------------------------------------------------------ nginx


def test_nginx_backend(env):
    nginx = shutil.which("nginx") or ("/usr/sbin/nginx" if os.path.exists("/usr/sbin/nginx")
                                      else None)
    if not nginx:
        raise h.SkipTest("nginx is not installed (apt-get install nginx-light)")
    np = env.port()
    d = env.path("nginx")
    os.makedirs(os.path.join(d, "logs"))
    os.makedirs(os.path.join(d, "html"))
    with open(os.path.join(d, "html", "k1"), "wb") as f:
        f.write(b"k" * 1024)
    with open(os.path.join(d, "nginx.conf"), "w") as f:
        f.write("""daemon off; master_process off; worker_processes 1;
error_log %s/logs/error.log; pid %s/nginx.pid;
events { worker_connections 64; }
http { access_log off; client_body_temp_path %s/tmp;
  server { listen 127.0.0.1:%d; root %s/html;
           location = /echo { client_max_body_size 0; return 200 "$request_method $http_x_real_ip $http_connection"; } } }
""" % (d, d, d, np, d))
    p = subprocess.Popen([nginx, "-p", d, "-c", os.path.join(d, "nginx.conf")],
                         stderr=subprocess.PIPE, start_new_session=True)
    try:
        h.wait_until(lambda: h.port_accepts(np), 10, what="nginx listening")
        port = proxy_conf(env, "upstream ng { server 127.0.0.1:%d; keepalive 2; }" % np,
                          "location / { proxy_pass http://ng; }")
        with env.tls_socket(port) as s:
            rest = b""
            for i in range(5):
                s.sendall(req("/k1"))
                r, rest = h.read_response(s, rest)
                assert r.status == 200 and r.body == b"k" * 1024, r
            s.sendall(req("/echo", "POST", extra="Content-Length: 2\r\n", body=b"hi"))
            r, rest = h.read_response(s, rest)
            assert r.status == 200 and r.body == b"POST 127.0.0.1 ", r
    finally:
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()


if __name__ == "__main__":
    h.main(globals())
