#!/usr/bin/env python3
"""curl against tlsgate: static files, HEAD, keep-alive, errors, index, return,
conditional and range requests, the stub_status page.

Usage: python3 tests/integ/test_static.py BIN [TEST...]
"""
import email.utils
import os
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness as h  # noqa: E402

# Checks that fail because the server is wrong (see the report); remove when fixed.
KNOWN_FAILURES = {}

HELLO = b"hello, tlsgate\n"
KB = bytes((i * 7 + 3) % 256 for i in range(1024))
LOCATIONS = """
        location = /t { return 200 "hi there"; }
        location = /r { return 302 https://a.test/dest; }
        location = /m { return 301 /moved; }
        location = /x444 { return 444; }
        location = /status { stub_status; }
"""


def serve(env, **kw):
    env.write("html/index.html", "<h1>index</h1>\n")
    env.write("html/hello.txt", HELLO)
    env.write("html/style.css", "body{}\n")
    env.write("html/data.json", "{}\n")
    env.write("html/page.html", "<p>page</p>\n")
    env.write("html/1kb.bin", KB)
    env.write("html/noext", "x")
    env.write("html/PHOTO.PNG", "p")
    env.write("html/font.Woff2", "w")
    env.write("html/x.htmlx", "h")
    env.write("html/dir/index.html", "<p>dir index</p>\n")
    os.makedirs(env.path("html", "empty"))
    port = env.port()
    conf = env.simple_conf(port, locations=LOCATIONS, **kw)
    env.start(conf, port=port)
    return "https://a.test:%d" % port


def http_date(hdr):
    return email.utils.parsedate_to_datetime(hdr).timestamp()


def test_get_static_file(env):
    base = serve(env)
    st, hd, body = env.get(base + "/hello.txt")
    assert st == 200, (st, hd)
    assert body == HELLO, body
    assert hd.get("content-length") == str(len(HELLO)), hd
    assert hd.get("content-type", "").startswith("text/plain"), hd
    assert hd.get("server", "").startswith("tlsgate"), hd
    assert re.fullmatch(r'(W/)?"[^"]+"', hd.get("etag", "")), hd
    mtime = os.stat(env.path("html", "hello.txt")).st_mtime
    assert "last-modified" in hd, hd
    assert abs(http_date(hd["last-modified"]) - int(mtime)) < 1, (hd, mtime)
    assert hd["last-modified"].endswith(" GMT"), hd
    assert abs(http_date(hd["date"]) - time.time()) < 5, hd
    assert re.fullmatch(r"[A-Z][a-z]{2}, \d\d [A-Z][a-z]{2} \d{4} \d\d:\d\d:\d\d GMT",
                        hd["date"]), hd["date"]
    for path, ctype, data in (("/style.css", "text/css", b"body{}\n"),
                              ("/data.json", "application/json", b"{}\n"),
                              ("/page.html", "text/html", b"<p>page</p>\n"),
                              ("/1kb.bin", "application/octet-stream", KB),
                              ("/noext", "application/octet-stream", b"x"),
                              # extensions match in any case, whole: not by a prefix
                              ("/PHOTO.PNG", "image/png", b"p"),
                              ("/font.Woff2", "font/woff2", b"w"),
                              ("/x.htmlx", "application/octet-stream", b"h")):
        st, hd, body = env.get(base + path)
        assert st == 200 and body == data, (path, st, body[:50])
        assert hd.get("content-type", "").split(";")[0] == ctype, (path, hd)
        assert hd.get("content-length") == str(len(data)), (path, hd)


def test_head_static_file(env):
    base = serve(env)
    _, g, _ = env.get(base + "/hello.txt")
    st, hd, _ = env.get(base + "/hello.txt", "-I")  # curl -I: the body file gets the head
    assert st == 200, (st, hd)
    assert hd.get("content-length") == str(len(HELLO)), hd
    assert hd.get("content-type", "").startswith("text/plain"), hd
    for k in ("etag", "last-modified"):
        assert hd.get(k) == g.get(k), (k, hd, g)
    assert "date" in hd and hd.get("server", "").startswith("tlsgate"), hd
    # no body after the head: a HEAD and a GET pipelined on one connection come back
    # as exactly two responses
    port = int(base.rsplit(":", 1)[1])
    with env.tls_socket(port) as s:
        s.sendall(b"HEAD /hello.txt HTTP/1.1\r\nHost: a.test\r\n\r\n"
                  b"GET /t HTTP/1.1\r\nHost: a.test\r\n\r\n")
        r1, rest = h.read_response(s, head_request=True)
        assert r1.status == 200 and r1.headers.get("content-length") == str(len(HELLO)), r1
        r2, rest = h.read_response(s, rest)
        assert r2.status == 200 and r2.body == b"hi there", \
            "HEAD response followed by unexpected bytes: %r" % (r2,)


def test_keepalive_reuse(env):
    base = serve(env)
    p = env.curl("-v", "--resolve", "a.test:%s:127.0.0.1" % base.rsplit(":", 1)[1],
                 "-o", "/dev/null", "-o", "/dev/null", "-w", "%{http_code} %{num_connects}\\n",
                 base + "/hello.txt", base + "/1kb.bin")
    assert p.returncode == 0, p.stderr
    lines = p.stdout.split()
    assert lines == ["200", "1", "200", "0"], \
        "expected two 200s over one connection (num_connects 1 then 0), got %r" % p.stdout
    assert re.search(r"Re-using existing connection", p.stderr), p.stderr[-2000:]


def test_not_found(env):
    base = serve(env)
    st, hd, body = env.get(base + "/nope.txt")
    assert st == 404, (st, hd)
    assert b"404" in body, body
    assert hd.get("content-length") == str(len(body)), hd


def test_post_static_405(env):
    base = serve(env)
    st, hd, _ = env.get(base + "/hello.txt", "-X", "POST", "--data", "a=b")
    assert st == 405, (st, hd)
    allow = [m.strip() for m in hd.get("allow", "").split(",")]
    assert "GET" in allow and "HEAD" in allow, hd


def test_directory_index_and_redirect(env):
    base = serve(env)
    st, hd, body = env.get(base + "/")
    assert st == 200 and body == b"<h1>index</h1>\n", (st, body)
    assert hd.get("content-type", "").startswith("text/html"), hd
    st, hd, body = env.get(base + "/dir/")
    assert st == 200 and body == b"<p>dir index</p>\n", (st, body)
    st, hd, body = env.get(base + "/dir")
    assert st == 301, (st, hd)
    loc = hd.get("location", "")
    # nginx sends an absolute URL, a relative reference is valid too (RFC 9110 10.2.2)
    assert loc in ("/dir/", base + "/dir/"), hd
    st, hd, _ = env.get(base + "/dir?x=1")
    assert st == 301 and hd.get("location", "").endswith("/dir/?x=1"), hd
    st, hd, _ = env.get(base + "/empty/")
    assert st == 403, (st, hd)  # a directory without index (nginx: forbidden)


def test_return(env):
    base = serve(env)
    st, hd, body = env.get(base + "/t")
    assert st == 200 and body == b"hi there", (st, body)
    assert hd.get("content-length") == "8", hd
    st, hd, _ = env.get(base + "/r")
    assert st == 302 and hd.get("location") == "https://a.test/dest", (st, hd)
    st, hd, _ = env.get(base + "/m")
    assert st == 301 and hd.get("location", "").endswith("/moved"), (st, hd)
    port = base.rsplit(":", 1)[1]
    p = env.curl("--resolve", "a.test:%s:127.0.0.1" % port, base + "/x444")
    assert p.returncode == 52 and "Empty reply" in p.stderr, \
        "return 444 must close without a response: exit %d %r %r" % (p.returncode, p.stdout,
                                                                     p.stderr)


def test_conditional_get(env):
    base = serve(env)
    _, hd, _ = env.get(base + "/hello.txt")
    etag, lm = hd["etag"], hd["last-modified"]
    st, h2, body = env.get(base + "/hello.txt", "-H", "If-None-Match: " + etag)
    assert st == 304 and body == b"", (st, h2, body)
    assert h2.get("etag") == etag, h2
    st, h2, body = env.get(base + "/hello.txt", "-H", 'If-None-Match: "other", ' + etag)
    assert st == 304, (st, h2)
    st, h2, body = env.get(base + "/hello.txt", "-H", "If-Modified-Since: " + lm)
    assert st == 304 and body == b"", (st, h2, body)
    st, h2, body = env.get(base + "/hello.txt", "-H", 'If-None-Match: "nope"')
    assert st == 200 and body == HELLO, (st, h2)
    st, h2, body = env.get(base + "/hello.txt", "-H",
                           "If-Modified-Since: Thu, 01 Jan 1998 00:00:00 GMT")
    assert st == 200 and body == HELLO, (st, h2)
    # If-None-Match wins over If-Modified-Since (RFC 9110 13.2.2)
    st, h2, body = env.get(base + "/hello.txt", "-H", 'If-None-Match: "nope"', "-H",
                           "If-Modified-Since: " + lm)
    assert st == 200, (st, h2)


def test_range(env):
    base = serve(env)
    st, hd, body = env.get(base + "/1kb.bin", "-r", "10-19")
    assert st == 206, (st, hd)
    assert body == KB[10:20], body
    assert hd.get("content-range") == "bytes 10-19/1024", hd
    assert hd.get("content-length") == "10", hd
    st, hd, body = env.get(base + "/1kb.bin", "-H", "Range: bytes=-4")
    assert st == 206 and body == KB[-4:] and hd.get("content-range") == "bytes 1020-1023/1024", \
        (st, hd)
    st, hd, body = env.get(base + "/1kb.bin", "-H", "Range: bytes=1000-")
    assert st == 206 and body == KB[1000:], (st, hd)
    st, hd, body = env.get(base + "/1kb.bin", "-H", "Range: bytes=2000-3000")
    assert st == 416, (st, hd)
    assert hd.get("content-range") == "bytes */1024", hd


def test_no_path_traversal(env):
    base = serve(env)
    port = int(base.rsplit(":", 1)[1])
    env.write("secret.txt", "SECRET\n")  # next to the root, outside it
    for target in ("/../secret.txt", "/%2e%2e/secret.txt", "/dir/../../secret.txt",
                   "/dir/%2E%2E/%2e%2e/secret.txt", "/..%2fsecret.txt"):
        with env.tls_socket(port) as s:
            s.sendall(b"GET %s HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n"
                      % target.encode())
            r, _ = h.read_response(s)
            assert r.status in (400, 403, 404) and b"SECRET" not in r.body, (target, r)
    # dot segments inside the root are resolved (RFC 3986 5.2.4)
    st, _, body = env.get(base + "/dir/%2e%2e/hello.txt", "--path-as-is")
    assert st == 200 and body == HELLO, (st, body)


STATUS_RE = re.compile(r"Active connections: (\d+) \n"
                       r"server accepts handled requests\n"
                       r" (\d+) (\d+) (\d+) \n"
                       r"Reading: (\d+) Writing: (\d+) Waiting: (\d+) \n")


def test_stub_status(env):
    base = serve(env)
    for _ in range(3):
        env.get(base + "/hello.txt")
    st, hd, body = env.get(base + "/status")
    assert st == 200, (st, hd)
    assert hd.get("content-type", "").startswith("text/plain"), hd
    text = body.decode()
    m = STATUS_RE.match(text)
    assert m, "status page does not start with nginx's four lines:\n" + text
    active, acc, handled, reqs, rd, wr, wt = map(int, m.groups())
    assert active >= 1 and wr >= 1, text
    assert acc >= 4 and handled == acc and reqs >= 4, text


if __name__ == "__main__":
    h.main(globals())
