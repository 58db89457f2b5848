#!/usr/bin/env python3
"""proxy_pass for HTTP/2 clients (issue #22): HTTP/1.1 upstreams (backends.py) behind a
server block with `http2 on`; request bodies (Content-Length and of unknown length) and
answers (Content-Length, chunked, close-delimited) under flow control both ways.

Usage: python3 tests/integ/test_h2proxy.py BIN [TEST...]
"""
import hashlib
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import backends as be  # noqa: E402
import harness as h  # noqa: E402
import test_h2defence as raw  # noqa: E402  (the raw-frame client)

KNOWN_FAILURES = {}


def serve(env, backend, server_extra=""):
    port = env.port()
    conf = env.conf("""
    upstream be { server 127.0.0.1:%d; keepalive 8; }
    server {
        listen 127.0.0.1:%d ssl;
        http2 on;
        server_name a.test;
        client_max_body_size 0;
        %s
        %s
        location / { proxy_pass http://be; }
    }""" % (backend.port, port, env.tls("a_rsa"), server_extra))
    srv = env.start(conf, port=port)
    return port, srv


def curl(env, port, path, *args):
    out = env.path("out")
    p = h.run(["curl", "-sS", "-k", "--http2", "--max-time", "30", "-o", out, "-w",
               "%{http_version} %{http_code}", *args, "https://127.0.0.1:%d%s" % (port, path)],
              timeout=40)
    assert p.returncode == 0, p.stderr
    return p.stdout, open(out, "rb").read()


def test_answers_all_framings(env):
    with be.Backend() as b:
        port, _ = serve(env, b)
        for path, n in (("/big?n=%d", 3000000), ("/chunked?n=%d", 1000003),
                        ("/eof?n=%d", 500001), ("/big?n=%d", 0)):
            ver, body = curl(env, port, path % n)
            assert ver == "2 200", (path, ver)
            assert body == be.pattern_bytes(n), (path, len(body))
        ver, body = curl(env, port, "/status/404")
        assert ver == "2 404", ver
        ver, body = curl(env, port, "/status/204")
        assert ver == "2 204" and body == b"", ver
        ver, body = curl(env, port, "/big?n=1000", "-I")
        assert ver == "2 200" and b"content-length: 1000" in body.lower(), body


def test_request_bodies(env):
    """Streamed bodies (proxy_request_buffering off; `on`, the default, is
    test_h2parity.py's)."""
    with be.Backend() as b:
        port, _ = serve(env, b, "proxy_request_buffering off;")
        data = os.urandom(5 * 1024 * 1024 + 7)
        env.write("up.bin", data)
        ver, body = curl(env, port, "/echo", "--data-binary", "@" + env.path("up.bin"))
        seen = json.loads(body)
        assert ver == "2 200", ver
        assert seen["body_len"] == len(data), seen
        assert seen["body_sha"] == hashlib.sha256(data).hexdigest()
        assert seen["headers"]["content-length"] == [str(len(data))], seen["headers"]
        # no Content-Length (curl -T - sends none over HTTP/2): chunked to the upstream
        p = subprocess.run(["curl", "-sS", "-k", "--http2", "--max-time", "30", "-T", "-",
                            "https://127.0.0.1:%d/echo" % port], input=data,
                           capture_output=True, timeout=40)
        seen = json.loads(p.stdout)
        assert seen["body_sha"] == hashlib.sha256(data).hexdigest(), seen
        assert seen["headers"]["transfer-encoding"] == ["chunked"], seen["headers"]
        # the upstream reads the body only after 1.5 s: the client waits under its window
        ver, body = curl(env, port, "/stallbody/echo", "--data-binary", "@" + env.path("up.bin"))
        assert json.loads(body)["body_len"] == len(data)


def test_response_flow_control(env):
    """A client that gives no window: at most its 65,535 bytes arrive, the upstream is not
    read ahead without bound; once it opens its window the whole answer arrives intact."""
    raw.need()
    with be.Backend() as b:
        port, srv = serve(env, b)
        c = raw.Raw(env, port)
        n = 8 * 1024 * 1024
        c.send(c.headers(1, path="/big?n=%d" % n))
        fr = c.frames(timeout=1.5)
        got = sum(len(f.data) for f in fr if isinstance(f, raw.hf.DataFrame))
        assert got <= 65535, got
        assert raw.answer_status(fr, 1) == 200
        body = b"".join(f.data for f in fr if isinstance(f, raw.hf.DataFrame))
        inc = raw.hf.WindowUpdateFrame(0, window_increment=(1 << 30)).serialize() + \
            raw.hf.WindowUpdateFrame(1, window_increment=(1 << 30)).serialize()
        c.send(inc)
        end = time.monotonic() + 20
        while len(body) < n and time.monotonic() < end:
            for f in c.frames(timeout=1):
                if isinstance(f, raw.hf.DataFrame):
                    body += f.data
        assert body == be.pattern_bytes(n), len(body)
        c.close()


def test_many_streams(env):
    with be.Backend() as b:
        port, _ = serve(env, b)
        p = h.run(["h2load", "-n", "1000", "-c", "4", "-m", "16",
                   "https://127.0.0.1:%d/echo" % port], timeout=60)
        assert "1000 succeeded" in p.stdout and "1000 2xx" in p.stdout, p.stdout
        assert b.conns < 1000, b.conns  # pooled upstream connections were reused


def test_client_resets_proxied_stream(env):
    raw.need()
    with be.Backend() as b:
        port, srv = serve(env, b)
        c = raw.Raw(env, port)
        c.send(c.headers(1, path="/drip?n=%d" % (64 << 20)))
        c.frames(timeout=0.5)
        c.send(raw.hf.RstStreamFrame(1, error_code=raw.CANCEL).serialize())
        h.wait_until(lambda: "reset its HTTP/2 stream" in srv.log_text(), 5, what="cancel")
        c.send(c.headers(3, path="/big?n=10"))
        fr = c.frames(timeout=5, until=lambda f: isinstance(f, raw.hf.DataFrame) and
                      f.stream_id == 3)
        assert raw.answer_status(fr, 3) == 200
        c.close()


def test_slow_upstream_not_send_timeout(env):
    """A stream waiting for its upstream is timed by proxy_read_timeout, not send_timeout."""
    with be.Backend() as b:
        port, srv = serve(env, b, "send_timeout 1s;")
        ver, body = curl(env, port, "/slow?ms=2500")
        assert (ver, body) == ("2 200", b"slow"), (ver, body)


def test_upstream_down(env):
    class Down:
        port = env.port()  # nothing listens there
    port, _ = serve(env, Down)
    ver, body = curl(env, port, "/x")
    assert ver == "2 502", ver


if __name__ == "__main__":
    h.main(globals())
