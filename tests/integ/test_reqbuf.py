#!/usr/bin/env python3
"""proxy_request_buffering (issue #23), on by default as in nginx.

- a chunked upload arrives at the backend with Content-Length and the whole body (the
  issue's case: Python's http.server does not read chunked bodies); off: chunked, streamed;
- a body larger than client_body_buffer_size goes through the temporary file intact;
- a chunked body with a bad size line, or over client_max_body_size, is refused (400, 413)
  before its head reaches the backend (the backend sees no request at all);
- Expect: 100-continue is answered by tlsgate before it reads the body;
- with the body buffered, a POST whose first server refuses the connection goes to the next.
"""
import hashlib
import json
import os
import socket
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness as H  # noqa: E402
import backends as be  # noqa: E402


def chunked(body, size=1000):
    out = b""
    for i in range(0, len(body), size):
        part = body[i:i + size]
        out += b"%x\r\n%s\r\n" % (len(part), part)
    return out + b"0\r\n\r\n"


def post(env, port, path, body, extra=b"", raw=None, close=True):
    with env.tls_socket(port, timeout=10) as s:
        head = (b"POST %s HTTP/1.1\r\nHost: a.test\r\nTransfer-Encoding: chunked\r\n%s%s\r\n"
                % (path.encode(), b"Connection: close\r\n" if close else b"", extra))
        s.sendall(head + (raw if raw is not None else chunked(body)))
        r, _ = H.read_response(s, timeout=10)
        return r


def dead_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def start(env, b, extra_loc=""):
    port = env.port()
    env.start(env.conf("""
        upstream two { server 127.0.0.1:%d; server 127.0.0.1:%d; }
        server { listen 127.0.0.1:%d ssl; server_name a.test; %s
            client_max_body_size 300k;
            location /buf/ { proxy_pass http://127.0.0.1:%d; client_body_buffer_size 4k; }
            location /stream/ { proxy_pass http://127.0.0.1:%d; proxy_request_buffering off; }
            location /two/ { proxy_pass http://two; }
            %s
        }""" % (dead_port(), b.port, port, env.tls("a_rsa"), b.port, b.port, extra_loc)),
              port=port)
    return port


def test_chunked_upload_gets_content_length(env):
    with be.Backend() as b:
        port = start(env, b)
        body = os.urandom(3000)
        r = post(env, port, "/buf/echo", body)
        assert r.status == 200, r
        seen = json.loads(r.body)
        assert seen["headers"].get("content-length") == ["3000"], seen["headers"]
        assert "transfer-encoding" not in seen["headers"], seen["headers"]
        assert seen["body_sha"] == hashlib.sha256(body).hexdigest()
        # off: streamed, chunked as it came
        r = post(env, port, "/stream/echo", body)
        seen = json.loads(r.body)
        assert seen["headers"].get("transfer-encoding") == ["chunked"], seen["headers"]
        assert seen["body_sha"] == hashlib.sha256(body).hexdigest()
        # larger than the 4k memory part: through the temporary file, then keep-alive
        big = os.urandom(200 * 1024)
        r = post(env, port, "/buf/echo", big, close=False)
        seen = json.loads(r.body)
        assert seen["body_len"] == len(big), seen["body_len"]
        assert seen["body_sha"] == hashlib.sha256(big).hexdigest()
        assert seen["headers"]["content-length"] == [str(len(big))]
        assert "buffered to a temporary file" in env.servers[0].log_text()
        # an empty chunked body: Content-Length: 0
        r = post(env, port, "/buf/echo", b"")
        assert json.loads(r.body)["headers"]["content-length"] == ["0"]


def test_bad_chunk_refused_before_upstream(env):
    with be.Backend() as b:
        port = start(env, b)
        n0 = len(b.requests)
        r = post(env, port, "/buf/echo", None, raw=b"5\r\nhello\r\nzz\r\n")
        assert r.status == 400, r
        r = post(env, port, "/buf/echo", None, raw=b"fffffffffffffffffffff\r\n")
        assert r.status in (400, 413), r
        r = post(env, port, "/buf/echo", os.urandom(301 * 1024))  # over client_max_body_size
        assert r.status == 413, r
        time.sleep(0.3)
        assert len(b.requests) == n0 and b.conns == 0, (b.requests[n0:], b.conns)
        # without buffering the head goes up first (the old behaviour, as nginx's `off`)
        post(env, port, "/stream/echo", None, raw=b"5\r\nhello\r\nzz\r\n")
        time.sleep(0.3)
        assert b.conns == 1


def test_expect_continue_and_retry(env):
    with be.Backend() as b:
        port = start(env, b)
        with env.tls_socket(port, timeout=10) as s:
            s.sendall(b"POST /buf/echo HTTP/1.1\r\nHost: a.test\r\nContent-Length: 5\r\n"
                      b"Expect: 100-continue\r\nConnection: close\r\n\r\n")
            got = s.recv(100)
            assert got == b"HTTP/1.1 100 Continue\r\n\r\n", got
            s.sendall(b"hello")
            r, _ = H.read_response(s)
            assert r.status == 200 and json.loads(r.body)["body_len"] == 5, r
        # the first server of `two` refuses: the buffered POST goes to the second
        env.allow_log = True
        for i in range(2):
            r = post(env, port, "/two/echo", b"x" * 100)
            assert r.status == 200 and json.loads(r.body)["body_len"] == 100, r


if __name__ == "__main__":
    H.main(globals())
