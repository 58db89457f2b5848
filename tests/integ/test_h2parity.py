#!/usr/bin/env python3
"""Issue #23's request features for HTTP/2 clients (`http2 on`, ALPN h2), as for
HTTP/1.1 ones (test_gwconf.py, test_reqbuf.py):

- add_header: HSTS with `always` on a 404 (static and proxied), none without `always`,
  variables in values ($ssl_protocol $scheme $server_protocol), names lower-case and no
  connection-specific field (RFC 9113 §8.2.2);
- error_page: a custom 404 page with its status, =CODE redirects;
- log_format with the TLS variables, $request ("... HTTP/2.0"), $status, $bytes_sent,
  $connection (the same for two streams of one connection) and $upstream_addr /
  $upstream_status / $upstream_response_time of a proxied stream;
- set_real_ip_from / real_ip_header X-Forwarded-For per stream: two streams of one
  connection with different X-Forwarded-For get their own client address (allow/deny,
  $remote_addr in the log, X-Real-IP upstream);
- proxy_request_buffering on (default): an h2 body of unknown length reaches a backend
  that reads only Content-Length (Python's http.server) whole, with Content-Length; over
  client_max_body_size it is refused before the backend sees a request;
- request variables in proxy_set_header and return ($http_NAME $request_uri $host
  $ssl_protocol $server_protocol $remote_addr).

Usage: python3 tests/integ/test_h2parity.py BIN [TEST...]
"""
import contextlib
import hashlib
import http.server
import json
import os
import re
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import backends as be  # noqa: E402
import harness as h  # noqa: E402
import test_h2defence as raw  # noqa: E402  (the raw-frame client)
from test_gwconf import wait_log  # noqa: E402

KNOWN_FAILURES = {}


def curl(env, port, path, *args):
    """GET over HTTP/2: (version, status, {lower-case name: [values]}, body)."""
    out, hdr = env.path("out"), env.path("hdr")
    p = h.run(["curl", "-sS", "-k", "--http2", "--max-time", "20", "-o", out, "-D", hdr,
               "-w", "%{http_version} %{http_code}", "--resolve", "a.test:%d:127.0.0.1" % port,
               *args, "https://a.test:%d%s" % (port, path)], timeout=30)
    assert p.returncode == 0, p.stderr
    ver, code = p.stdout.split()
    fields = {}
    for ln in open(hdr, "rb").read().decode("latin-1").split("\r\n")[1:]:
        if ":" in ln:
            k, v = ln.split(":", 1)
            fields.setdefault(k, []).append(v.strip())
    return ver, int(code), fields, open(out, "rb").read()


@contextlib.contextmanager
def served(env, server, *more, http=""):
    """A backend (backends.py) as `upstream app` and an HTTP/2 server a.test whose block
    ends with the directives `server` formatted with more; `http` goes before them at the
    http level (log_format). The root has index.html. Yields (backend, port)."""
    b = be.Backend()
    try:
        env.write("html/index.html", "hello\n")
        port = env.port()
        env.start(env.conf(http + """
        upstream app { server 127.0.0.1:%d; }
        server { listen 127.0.0.1:%d ssl; http2 on; server_name a.test; %s root %s;""" %
                           (b.port, port, env.tls("a_rsa"), env.html) + server % more + "}"),
                  port=port)
        yield b, port
    finally:
        b.close()


def answers(c, sids, timeout=10):
    """Read until every stream of sids ended: {sid: (its response fields, its body)}."""
    fields, body, left = {}, {sid: b"" for sid in sids}, set(sids)
    end = time.monotonic() + timeout
    while left and time.monotonic() < end:
        for f in c.frames(timeout=0.5, until=lambda f: "END_STREAM" in f.flags and
                          f.stream_id in left and len(left) == 1):
            if f.stream_id not in body:
                continue
            if isinstance(f, raw.hf.HeadersFrame):
                fields[f.stream_id] = f.fields
            elif isinstance(f, raw.hf.DataFrame):
                body[f.stream_id] += f.data
            if "END_STREAM" in f.flags:
                left.discard(f.stream_id)
    assert not left, "streams %s did not end" % sorted(left)
    return {sid: (fields.get(sid), body[sid]) for sid in sids}


def stream_answer(c, sid, timeout=10):
    return answers(c, [sid], timeout)[sid]


def post_unknown_length(c, sid, path, total, chunk=16000, timeout=10):
    """POST total bytes on stream sid without content-length, under the server's flow
    control windows; stops when the answer's HEADERS arrive. Returns (status, bytes sent,
    RST_STREAM code or None)."""
    blk = c.enc.encode([(":method", "POST"), (":scheme", "https"), (":path", path),
                        (":authority", "a.test")])
    c.send(raw.hf.HeadersFrame(sid, data=blk, flags=["END_HEADERS"]).serialize())
    conn_w = stream_w = 65535
    sent, status, rst = 0, None, None
    end = time.monotonic() + timeout
    while status is None and time.monotonic() < end:
        while sent < total and min(conn_w, stream_w) > 0:
            n = min(chunk, total - sent, conn_w, stream_w)
            flags = ["END_STREAM"] if sent + n == total else []
            c.send(raw.hf.DataFrame(sid, data=b"x" * n, flags=flags).serialize())
            sent, conn_w, stream_w = sent + n, conn_w - n, stream_w - n
        for f in c.frames(timeout=0.5, until=lambda f: isinstance(
                f, (raw.hf.WindowUpdateFrame, raw.hf.HeadersFrame))):
            if isinstance(f, raw.hf.WindowUpdateFrame):
                if f.stream_id == 0:
                    conn_w += f.window_increment
                elif f.stream_id == sid:
                    stream_w += f.window_increment
            elif isinstance(f, raw.hf.HeadersFrame) and f.stream_id == sid:
                status = int(f.fields[":status"])
            elif isinstance(f, raw.hf.RstStreamFrame) and f.stream_id == sid:
                rst = f.error_code
    return status, sent, rst


def test_add_header_and_error_page(env):
    env.write("html/errors/404.html", "<p>our own 404</p>\n")
    with served(env, """
            add_header Strict-Transport-Security "max-age=63072000" always;
            add_header X-Plain plain;
            add_header X-Proto "$ssl_protocol $scheme $server_protocol";
            error_page 404 /errors/404.html;
            location /app/ { proxy_pass http://app/; }
            location /old/ { error_page 404 =301 https://example.com/new; }
        """) as (b, port):
        ver, st, f, body = curl(env, port, "/index.html")
        assert (ver, st, body) == ("2", 200, b"hello\n"), (ver, st, body)
        assert f["strict-transport-security"] == ["max-age=63072000"], f
        assert f["x-plain"] == ["plain"] and f["x-proto"] == ["TLSv1.3 https HTTP/2.0"], f
        for k in ("connection", "keep-alive", "transfer-encoding"):
            assert k not in f, f  # RFC 9113 §8.2.2
        # a 404: only `always` fields, and error_page's own page with its status
        ver, st, f, body = curl(env, port, "/missing")
        assert (ver, st) == ("2", 404) and body == b"<p>our own 404</p>\n", (st, body)
        assert f["strict-transport-security"] == ["max-age=63072000"], f
        assert "x-plain" not in f, f
        # =301 to a URL
        ver, st, f, body = curl(env, port, "/old/x")
        assert st == 301 and f["location"] == ["https://example.com/new"], (st, f)
        # a proxied 404 gets the `always` field too; a proxied 200 all of them
        ver, st, f, body = curl(env, port, "/app/status/404")
        assert st == 404 and f["strict-transport-security"] == ["max-age=63072000"], f
        assert "x-plain" not in f, f
        ver, st, f, body = curl(env, port, "/app/echo")
        assert st == 200 and f["x-plain"] == ["plain"] and "x-hop" not in f, f
        assert f["strict-transport-security"] == ["max-age=63072000"], f


def test_log_format_and_upstream_vars(env):
    log = env.path("access.log")
    with served(env, """
            access_log %s tls;
            location /app/ { proxy_pass http://app; }
        """, log, http="""
        log_format tls '$remote_addr|$request|$status|$ssl_protocol|$ssl_cipher|$ssl_curve|'
                       '$server_protocol|$http_user_agent|$host|$body_bytes_sent|$bytes_sent|'
                       '$connection|$upstream_addr|$upstream_status|$upstream_response_time|'
                       '$request_uri|$scheme|$ssl_server_name';""") as (b, port):
        c = raw.Raw(env, port)
        c.send(c.headers(1, path="/index.html?x=1", extra=[("user-agent", "h2 \"ua\"")]))
        fields, body = stream_answer(c, 1)
        assert fields[":status"] == "200" and body == b"hello\n", (fields, body)
        c.send(c.headers(3, path="/app/echo?q=2"))
        fields, body = stream_answer(c, 3)
        assert fields[":status"] == "200", fields
        c.close()
        lines = wait_log(log, 2)
        f = lines[0].split("|")
        assert f[0] == "127.0.0.1" and f[1] == "GET /index.html?x=1 HTTP/2.0", f
        assert f[2] == "200" and f[3] == "TLSv1.3" and f[4].startswith("TLS_"), f
        assert f[5] == "X25519" and f[6] == "HTTP/2.0" and f[7] == "h2 \\x22ua\\x22", f
        assert f[8] == "a.test" and f[9] == "6" and int(f[10]) > 6 + 9, f
        assert f[12] == "-" and f[13] == "-" and f[14] == "-", f  # not proxied
        assert f[15] == "/index.html?x=1" and f[16] == "https" and f[17] == "a.test", f
        g = lines[1].split("|")
        assert g[1] == "GET /app/echo?q=2 HTTP/2.0" and g[2] == "200", g
        assert g[11] == f[11] and g[11].isdigit(), (f, g)  # one connection, two streams
        assert g[12] == "127.0.0.1:%d" % b.port and g[13] == "200", g
        assert re.match(r"^\d+\.\d{3}$", g[14]), g


def test_real_ip_per_stream(env):
    log = env.path("access.log")
    with served(env, """
            access_log %s ip;
            set_real_ip_from 127.0.0.1; real_ip_header X-Forwarded-For;
            location = /denied { deny 10.9.9.9; return 200 "in $remote_addr"; }
            location /app/ { proxy_pass http://app; }
        """, log, http="log_format ip '$remote_addr $status $request_uri';") as (b, port):
        c = raw.Raw(env, port)
        # three streams of one connection, each with its own client
        c.send(c.headers(1, path="/denied", extra=[("x-forwarded-for", "10.9.9.9")]) +
               c.headers(3, path="/denied", extra=[("x-forwarded-for", "10.1.1.1")]) +
               c.headers(5, path="/denied"))
        ans = answers(c, (1, 3, 5))
        assert ans[1][0][":status"] == "403", ans[1]
        assert ans[3][0][":status"] == "200" and ans[3][1] == b"in 10.1.1.1", ans[3]
        assert ans[5][0][":status"] == "200" and ans[5][1] == b"in 127.0.0.1", ans[5]
        c.send(c.headers(7, path="/app/echo", extra=[("x-forwarded-for", "10.2.2.2")]))
        fields, body = stream_answer(c, 7)
        seen = json.loads(body)["headers"]
        assert seen["x-real-ip"] == ["10.2.2.2"], seen
        assert seen["x-forwarded-for"] == ["10.2.2.2, 10.2.2.2"], seen
        c.close()
        lines = sorted(wait_log(log, 4))
        assert lines == sorted(["10.9.9.9 403 /denied", "10.1.1.1 200 /denied",
                                "127.0.0.1 200 /denied", "10.2.2.2 200 /app/echo"]), lines


def test_real_ip_elements(env):
    """X-Forwarded-For elements as nginx's realip takes them, the same over HTTP/1.1 and
    HTTP/2: with a port (ngx_parse_addr_port; it is $remote_port, empty without one),
    separated by spaces as by commas, and with real_ip_recursive a garbage element left
    of a trusted proxy leaves that proxy the client (ngx_http_get_forwarded_addr_internal
    keeps the last address found)."""
    cases = [("192.0.2.1:5555", "192.0.2.1|5555"),
             ("[2001:db8::7]:443", "2001:db8::7|443"),
             ("198.51.100.1, 10.0.0.3:80", "198.51.100.1|"),
             ("unknown, 10.0.0.3:8080", "10.0.0.3|8080"),
             ("203.0.113.9 10.0.0.2", "203.0.113.9|"),
             ("192.0.2.1:65536", "127.0.0.1|peer"),
             ("10.0.0.3, unknown", "127.0.0.1|peer")]
    with served(env, """
            set_real_ip_from 127.0.0.1; set_real_ip_from 10.0.0.0/8;
            real_ip_header X-Forwarded-For; real_ip_recursive on;
            location = /ip { return 200 "$remote_addr|$remote_port"; }
        """) as (b, port):
        for proto in ("--http1.1", "--http2"):
            for xff, want in cases:
                ver, code, _, body = curl(env, port, "/ip", proto,
                                          "-H", "X-Forwarded-For: " + xff)
                assert code == 200 and ver == ("1.1" if proto == "--http1.1" else "2"), ver
                addr, _, rport = body.decode().partition("|")
                if want.endswith("|peer"):  # the TCP peer and its port
                    assert addr == "127.0.0.1" and int(rport) > 0, (proto, xff, body)
                else:
                    assert body == want.encode(), (proto, xff, body)


def test_aborted_streams_logged(env):
    """Streams that end without a whole answer are logged once each, with nginx's status
    conventions, and the error log names the side that failed: an upstream truncating its
    body (200 and the body bytes as sent, RST_STREAM, the upstream blamed), a client resetting its
    stream in the request body (400, buffered and streamed) or while the upstream works
    (499), and a client closing its connection in a request body (400)."""
    log = env.path("access.log")
    with served(env, """
            access_log %s t;
            location /app/ { proxy_pass http://app/; }
            location /streamed/ { proxy_pass http://app/; proxy_request_buffering off; }
        """, log, http="log_format t '$request $status $body_bytes_sent $upstream_status';") \
            as (b, port):
        c = raw.Raw(env, port)
        c.send(c.headers(1, path="/app/truncate?n=1000"))
        got, rst = b"", None
        for f in c.frames(timeout=5, until=lambda f: isinstance(f, raw.hf.RstStreamFrame)):
            if isinstance(f, raw.hf.DataFrame) and f.stream_id == 1:
                got += f.data
            elif isinstance(f, raw.hf.RstStreamFrame) and f.stream_id == 1:
                rst = f.error_code
        # INTERNAL_ERROR; the DATA queued before it goes out or not, as the timing falls
        assert rst == 2 and got in (b"", b"x" * 1000), (rst, len(got))
        post = [(":method", "POST"), (":scheme", "https"), (":authority", "a.test"),
                ("content-length", "40000")]
        for sid, path in ((3, "/app/echo/buffered"), (5, "/streamed/echo/streamed")):
            blk = c.enc.encode(post[:2] + [(":path", path)] + post[2:])
            c.send(raw.hf.HeadersFrame(sid, data=blk, flags=["END_HEADERS"]).serialize() +
                   raw.hf.DataFrame(sid, data=b"x" * 3000).serialize())
            time.sleep(0.3)
            c.send(raw.hf.RstStreamFrame(sid, error_code=8).serialize())  # CANCEL
        c.send(c.headers(7, path="/app/slow?ms=1500"))
        time.sleep(0.3)
        c.send(raw.hf.RstStreamFrame(7, error_code=8).serialize())
        time.sleep(0.3)
        c.close()
        c = raw.Raw(env, port)
        blk = c.enc.encode(post[:2] + [(":path", "/app/echo/closed")] + post[2:])
        c.send(raw.hf.HeadersFrame(1, data=blk, flags=["END_HEADERS"]).serialize() +
               raw.hf.DataFrame(1, data=b"x" * 3000).serialize())
        time.sleep(0.3)
        c.close()
        wait_log(log, 5)
        time.sleep(0.3)  # a second line for one stream would show
        with open(log) as f:
            lines = f.read().splitlines()
        assert lines == ["GET /app/truncate?n=1000 HTTP/2.0 200 %d 200" % len(got),
                         "POST /app/echo/buffered HTTP/2.0 400 0 -",
                         "POST /streamed/echo/streamed HTTP/2.0 400 0 -",
                         "GET /app/slow?ms=1500 HTTP/2.0 499 0 -",
                         "POST /app/echo/closed HTTP/2.0 400 0 -"], lines
        text = env.servers[-1].log_text()
        assert "upstream 127.0.0.1:%d closed the connection in the middle of the response" \
            % b.port in text, text
        # streams 5 and 7 were cancelled by the client with an upstream request going on;
        # the truncated stream 1 is not blamed on it
        assert text.count("reset its HTTP/2 stream") == 2, text


class LengthOnly(http.server.BaseHTTPRequestHandler):
    """Python's http.server, as the issue's backend: it reads Content-Length bytes and
    nothing else (a chunked body would arrive as an empty one)."""
    protocol_version = "HTTP/1.1"
    seen = []

    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0"))
        data = self.rfile.read(n)
        LengthOnly.seen.append((self.headers.get("Content-Length"),
                                self.headers.get("Transfer-Encoding")))
        out = json.dumps({"len": len(data), "sha": hashlib.sha256(data).hexdigest(),
                          "cl": self.headers.get("Content-Length"),
                          "te": self.headers.get("Transfer-Encoding")}).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, *a):
        pass


def test_request_buffering(env):
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), LengthOnly)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    LengthOnly.seen = []
    try:
        port = env.port()
        env.start(env.conf("""
        server { listen 127.0.0.1:%d ssl; http2 on; server_name a.test; %s
            client_max_body_size 400k; client_body_buffer_size 8k;
            location / { proxy_pass http://127.0.0.1:%d; }
        }""" % (port, env.tls("a_rsa"), srv.server_address[1])), port=port)
        for n in (0, 5000, 300 * 1024):  # in memory, then through the temporary file
            data = os.urandom(n)
            # curl -T - over HTTP/2 sends no content-length: a body of unknown length
            p = subprocess.run(["curl", "-sS", "-k", "--http2", "--max-time", "20", "-T", "-",
                                "-X", "POST", "https://127.0.0.1:%d/up" % port],
                               input=data, capture_output=True, timeout=30)
            assert p.returncode == 0, p.stderr
            got = json.loads(p.stdout)
            assert got == {"len": n, "sha": hashlib.sha256(data).hexdigest(),
                           "cl": str(n), "te": None}, (n, got)
        # over client_max_body_size: 413 once the 400k passed, and the backend never sees
        # the request (curl reports the RST_STREAM(NO_ERROR) that refuses the rest of the
        # upload as an error: a raw client)
        before = len(LengthOnly.seen)
        c = raw.Raw(env, port)
        status, sent, rst = post_unknown_length(c, 1, "/up", 600 * 1024)
        c.close()
        assert status == 413 and 400 * 1024 < sent < 600 * 1024, (status, sent, rst)
        time.sleep(0.3)
        assert len(LengthOnly.seen) == before, LengthOnly.seen
    finally:
        srv.shutdown()
        srv.server_close()


def test_variables_in_proxy_set_header_and_return(env):
    b = be.Backend()
    try:
        port = env.port()
        env.start(env.conf("""
        server { listen 127.0.0.1:%d ssl; http2 on; server_name a.test; %s
            location /app/ { proxy_pass http://127.0.0.1:%d;
                proxy_set_header X-Vars
                    "$http_x_test|$request_uri|$host|$ssl_protocol|$server_protocol|$remote_addr";
                proxy_set_header X-Empty "$http_x_none"; }
            location = /ret { return 200 "$http_x_test $request_uri $request_method\\n"; }
            location = /go { return 302 "https://$host/to?$args"; }
        }""" % (port, env.tls("a_rsa"), b.port)), port=port)
        ver, st, f, body = curl(env, port, "/app/echo?q=1", "-H", "X-Test: hello")
        assert (ver, st) == ("2", 200), (ver, st)
        seen = json.loads(body)["headers"]
        assert seen["x-vars"] == ["hello|/app/echo?q=1|a.test|TLSv1.3|HTTP/2.0|127.0.0.1"], seen
        assert "x-empty" not in seen, seen  # an empty value: no field (nginx)
        # Host $proxy_host stays with proxy_set_header (nginx); proxy_pass ADDR:PORT
        assert seen["host"] == ["127.0.0.1:%d" % b.port], seen
        ver, st, f, body = curl(env, port, "/ret?a=b", "-H", "X-Test: hi")
        assert (ver, st, body) == ("2", 200, b"hi /ret?a=b GET\n"), (ver, st, body)
        ver, st, f, body = curl(env, port, "/go?x=y")
        assert st == 302 and f["location"] == ["https://a.test/to?x=y"], (st, f)
    finally:
        b.close()


if __name__ == "__main__":
    raw.need()
    h.main(globals())
