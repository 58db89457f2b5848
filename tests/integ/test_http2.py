#!/usr/bin/env python3
"""HTTP/2 (issue #22) with the clients people use: curl --http2, nghttp, h2load.

ALPN (h2 preferred, http/1.1 kept, h2 only where `http2 on` / `listen ... http2`), static
files with ranges, ETag and 304, `return`, stub_status, status and metrics pages, limits
(431, 413, concurrent streams), the access log, GOAWAY and a graceful drain on quit and
reload, and async TLS (fakeaccel) on h2 connections.

Usage: python3 tests/integ/test_http2.py BIN [TEST...]
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness as h  # noqa: E402

KNOWN_FAILURES = {}

KB = bytes((i * 7 + 3) % 256 for i in range(1024))
BIG = bytes((i * 13 + 5) % 251 for i in range(3 * 1024 * 1024 + 17))
LOCATIONS = """
        location = /t { return 200 "hi there"; }
        location = /r { return 302 https://a.test/dest; }
        location = /x444 { return 444; }
        location = /stub { stub_status; }
        location = /status { status; }
        location = /metrics { metrics; }
"""


def need(tool):
    if not shutil.which(tool):
        h.skip("%s missing (scripts/deps.sh test installs nghttp2-client)" % tool)


def serve(env, listen_extra="", server_extra="", main="", http_extra=""):
    env.write("html/index.html", "<h1>index</h1>\n")
    env.write("html/1kb.bin", KB)
    env.write("html/big.bin", BIG)
    port = env.port()
    conf = env.conf("""
    %s
    access_log %s;
    server {
        listen 127.0.0.1:%d ssl %s;
        server_name a.test;
        %s
        root %s;
        %s
        %s
    }""" % (http_extra, env.path("access.log"), port, listen_extra, env.tls("a_rsa"), env.html,
            server_extra, LOCATIONS), main=main)
    srv = env.start(conf, port=port)
    return port, srv


def curl2(env, port, path, *args):
    """curl --http2 one URL: (http version, status, headers, body)."""
    hfile, bfile = env.path("c.h"), env.path("c.b")
    for f in (hfile, bfile):
        if os.path.exists(f):
            os.unlink(f)
    p = h.run(["curl", "-sS", "-k", "--http2", "--max-time", "15", "--resolve",
               "a.test:%d:127.0.0.1" % port, "-D", hfile, "-o", bfile,
               "-w", "%{http_version}", *args, "https://a.test:%d%s" % (port, path)],
              timeout=20)
    assert p.returncode == 0, p.stderr
    raw = open(hfile, "rb").read().decode("latin-1")
    lines = raw.strip("\r\n").split("\r\n")
    status = int(lines[0].split()[1])
    hd = {}
    for line in lines[1:]:
        k, _, v = line.partition(":")
        hd[k.strip().lower()] = v.strip()
    body = open(bfile, "rb").read() if os.path.exists(bfile) else b""
    return p.stdout.strip(), status, hd, body


def test_alpn_prefers_h2(env):
    port, _ = serve(env, "http2")
    ver, st, hd, body = curl2(env, port, "/1kb.bin")
    assert ver == "2" and st == 200 and body == KB, (ver, st)
    # http/1.1 only clients still get HTTP/1.1 on the same port
    s = env.tls_socket(port, alpn=["http/1.1"])
    assert s.selected_alpn_protocol() == "http/1.1"
    s.close()
    s = env.tls_socket(port, alpn=["h2"])
    assert s.selected_alpn_protocol() == "h2"
    s.close()


def test_http2_directive_and_off(env):
    env.write("html/x", "x")
    p1, p2 = env.port(), env.port()
    conf = env.conf("""
    server { listen 127.0.0.1:%d ssl; server_name a.test; http2 on; %s root %s; }
    server { listen 127.0.0.1:%d ssl; server_name a.test; %s root %s; }
    """ % (p1, env.tls("a_rsa"), env.html, p2, env.tls("a_rsa"), env.html))
    env.start(conf, port=p1)
    h.wait_until(lambda: h.port_accepts(p2), 5, what="second port")
    assert curl2(env, p1, "/x")[0] == "2"
    assert curl2(env, p2, "/x")[0] == "1.1"  # no http2: curl falls back
    s = env.tls_socket(p2, alpn=["h2", "http/1.1"])
    assert s.selected_alpn_protocol() == "http/1.1"
    s.close()


def test_plain_prior_knowledge(env):
    """`listen ... http2` without ssl: the HTTP/2 preface (RFC 9113 §3.3) or HTTP/1.1."""
    env.write("html/1kb.bin", KB)
    port = env.port()
    env.start(env.conf("server { listen 127.0.0.1:%d http2; root %s; }" % (port, env.html)),
              port=port)
    p = h.run(["curl", "-sS", "--http2-prior-knowledge", "-o", env.path("o"), "-w",
               "%{http_version} %{http_code}", "http://127.0.0.1:%d/1kb.bin" % port], timeout=20)
    assert p.stdout == "2 200" and open(env.path("o"), "rb").read() == KB, p.stdout + p.stderr
    p = h.run(["curl", "-sS", "-o", "/dev/null", "-w", "%{http_version} %{http_code}",
               "http://127.0.0.1:%d/1kb.bin" % port], timeout=20)
    assert p.stdout == "1.1 200", p.stdout
    need("h2load")
    p = h.run(["h2load", "-n", "500", "-c", "2", "-m", "10",
               "http://127.0.0.1:%d/1kb.bin" % port], timeout=60)
    assert "500 succeeded" in p.stdout, p.stdout


def test_static_range_etag_304(env):
    port, _ = serve(env, "http2")
    ver, st, hd, body = curl2(env, port, "/big.bin")
    assert (ver, st, body == BIG) == ("2", 200, True), (ver, st, len(body))
    assert hd["content-length"] == str(len(BIG))
    etag = hd["etag"]
    assert "connection" not in hd and "keep-alive" not in hd, hd
    ver, st, hd, body = curl2(env, port, "/big.bin", "-r", "1000-1999")
    assert st == 206 and body == BIG[1000:2000], (st, len(body))
    assert hd["content-range"] == "bytes 1000-1999/%d" % len(BIG), hd
    ver, st, hd, body = curl2(env, port, "/big.bin", "-H", "If-None-Match: " + etag)
    assert st == 304 and body == b"", st
    ver, st, hd, body = curl2(env, port, "/big.bin", "-r", "%d-" % (len(BIG) + 5))
    assert st == 416, st
    ver, st, hd, body = curl2(env, port, "/1kb.bin", "-I")  # curl writes the head as body
    assert st == 200 and KB[:64] not in body and hd["content-length"] == "1024", (st, hd)
    ver, st, hd, body = curl2(env, port, "/nope")
    assert st == 404 and b"404" in body, st
    ver, st, hd, body = curl2(env, port, "/")
    assert st == 200 and body == b"<h1>index</h1>\n"


def test_return_and_pages(env):
    port, _ = serve(env, "http2")
    assert curl2(env, port, "/t")[1:4:2] == (200, b"hi there")
    ver, st, hd, body = curl2(env, port, "/r")
    assert st == 302 and hd["location"] == "https://a.test/dest", hd
    p = h.run(["curl", "-sS", "-k", "--http2", "--resolve", "a.test:%d:127.0.0.1" % port,
               "https://a.test:%d/x444" % port], timeout=20)
    assert p.returncode != 0  # the stream is reset: no answer
    ver, st, hd, body = curl2(env, port, "/stub")
    assert st == 200 and b"Active connections" in body
    ver, st, hd, body = curl2(env, port, "/status")
    assert st == 200 and isinstance(json.loads(body), dict), body[:100]
    ver, st, hd, body = curl2(env, port, "/metrics")
    assert st == 200 and b"tlsgate_handshakes_total" in body
    ver, st, hd, body = curl2(env, port, "/t", "-X", "POST", "--data", "x" * 100)
    assert st == 200, st


def test_allow_deny(env):
    """allow/deny (#23) applies to HTTP/2 streams as to HTTP/1.1 requests: the address is
    the connection's client."""
    port, _ = serve(env, "http2", server_extra="""
        location /private { deny 127.0.0.1; return 200 "secret"; }
        location /open { allow 127.0.0.1; deny all; return 200 "open"; }""")
    ver, st, hd, body = curl2(env, port, "/private")
    assert ver == "2" and st == 403 and b"secret" not in body, (ver, st, body)
    ver, st, hd, body = curl2(env, port, "/open")
    assert ver == "2" and st == 200 and body == b"open", (ver, st, body)


def test_nghttp_many_streams(env):
    need("nghttp")
    port, _ = serve(env, "http2")
    urls = ["https://127.0.0.1:%d/1kb.bin?%d" % (port, i) for i in range(40)]
    p = h.run(["nghttp", "-ns", "--no-verify-peer"] + urls, timeout=30)
    assert p.returncode == 0, p.stdout + p.stderr
    ok = [ln for ln in p.stdout.splitlines() if "/1kb.bin?" in ln and " 200 " in ln]
    assert len(ok) == 40, p.stdout
    p = h.run(["nghttp", "-nv", "--no-verify-peer", "https://127.0.0.1:%d/t" % port], timeout=20)
    assert "MAX_CONCURRENT_STREAMS(0x03):128" in p.stdout, p.stdout
    assert ":status: 200" in p.stdout


def test_h2load(env):
    need("h2load")
    port, _ = serve(env, "http2")
    p = h.run(["h2load", "-n", "2000", "-c", "4", "-m", "20",
               "https://127.0.0.1:%d/1kb.bin" % port], timeout=60)
    assert "2000 succeeded" in p.stdout and "2000 2xx" in p.stdout, p.stdout
    # h2 only, as the first report (nghttp, h2load --npn-list=h2)
    p = h.run(["h2load", "-n", "100", "-c", "2", "--npn-list=h2",
               "https://127.0.0.1:%d/1kb.bin" % port], timeout=60)
    assert "100 succeeded" in p.stdout, p.stdout


def test_limits(env):
    port, _ = serve(env, "http2", server_extra="client_max_body_size 1k; "
                    "large_client_header_buffers 2 1k; http2_max_concurrent_streams 7;")
    # (a header list over SETTINGS_MAX_HEADER_LIST_SIZE: curl refuses to send it; the
    # server's 431 is tested with a client that sends it anyway, test_h2defence.py)
    ver, st, hd, body = curl2(env, port, "/t", "-H", "X-Ok: " + "a" * 900)
    assert st == 200, st
    ver, st, hd, body = curl2(env, port, "/t", "--data-binary", "@" + env.path("html/1kb.bin"),
                              "-H", "Content-Type: x")
    assert st == 200, st  # 1 KiB is within client_max_body_size 1k
    env.write("big.post", b"y" * 5000)
    ver, st, hd, body = curl2(env, port, "/t", "--data-binary", "@" + env.path("big.post"))
    assert st == 413, st
    need("nghttp")
    p = h.run(["nghttp", "-nv", "--no-verify-peer", "https://127.0.0.1:%d/t" % port], timeout=20)
    assert "MAX_CONCURRENT_STREAMS(0x03):7" in p.stdout, p.stdout


def test_access_log(env):
    port, _ = serve(env, "http2")
    curl2(env, port, "/1kb.bin", "-A", "agent-h2")
    h.wait_until(lambda: os.path.exists(env.path("access.log")) and
                 b"agent-h2" in open(env.path("access.log"), "rb").read(), 5, what="log line")
    line = open(env.path("access.log")).read().splitlines()[-1]
    assert '"GET /1kb.bin HTTP/2.0" 200 1024' in line, line


def test_goaway_on_quit(env):
    """SIGQUIT: GOAWAY(NO_ERROR) on an idle h2 connection, a stream in flight finishes."""
    need("nghttp")
    port, srv = serve(env, "http2")
    # a long download in flight while the worker stops: it completes
    p = subprocess.Popen(["curl", "-sS", "-k", "--http2", "--limit-rate", "2M", "-o",
                          env.path("dl"), "https://127.0.0.1:%d/big.bin" % port],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    time.sleep(0.5)
    s = env.tls_socket(port, alpn=["h2"])
    s.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\x00\x00\x00\x04\x00\x00\x00\x00\x00")
    time.sleep(0.2)
    srv.send(signal.SIGQUIT)
    data, _ = h.recv_all(s, timeout=5)
    # frames: type 7 = GOAWAY; its error code (last 4 bytes of 8) NO_ERROR
    i, saw = 0, False
    while i + 9 <= len(data):
        ln = int.from_bytes(data[i:i + 3], "big")
        if data[i + 3] == 7:
            saw = int.from_bytes(data[i + 13:i + 17], "big") == 0
        i += 9 + ln
    assert saw, data[:200]
    p.wait(timeout=30)
    assert p.returncode == 0, p.stderr.read()
    assert open(env.path("dl"), "rb").read() == BIG
    srv.proc.wait(timeout=15)


def test_reload_keeps_h2(env):
    port, srv = serve(env, "http2")
    assert curl2(env, port, "/t")[0] == "2"
    srv.send(signal.SIGHUP)
    time.sleep(1)
    assert curl2(env, port, "/t")[0:2] == ("2", 200)


def test_chromium_20_subresources(env):
    """Headless Chromium loads a page with 20 subresources (10 scripts, 10 images): all 21
    requests over HTTP/2 (the access log), on one connection."""
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if not chromium:
        h.skip("chromium missing")
    for i in range(1, 21):
        env.write("html/sub/s%d.js" % i, "document.title = 's%d';\n" % i)
    page = "<html><head>%s</head><body>%s</body></html>\n" % (
        "".join('<script src="/sub/s%d.js"></script>' % i for i in range(1, 11)),
        "".join('<img src="/sub/s%d.js">' % i for i in range(11, 21)))
    env.write("html/page.html", page)
    port, _ = serve(env, "http2", server_extra="location = /favicon.ico { return 204; }")
    p = h.run([chromium, "--headless=new", "--no-sandbox", "--disable-gpu",
               "--ignore-certificate-errors", "--user-data-dir=" + env.path("chromium"),
               "--host-resolver-rules=MAP a.test 127.0.0.1", "--dump-dom",
               "https://a.test:%d/page.html" % port], timeout=90)
    assert "<title>s10</title>" in p.stdout, p.stdout[:300] + p.stderr[-300:]
    h.wait_until(lambda: open(env.path("access.log")).read().count("/sub/") >= 20, 5,
                 what="21 log lines")
    lines = [ln.split('"')[1] + " " + ln.split('"')[2].split()[0]
             for ln in open(env.path("access.log")).read().splitlines()
             if '"GET /page.html ' in ln or '"GET /sub/' in ln]
    assert len(lines) == 21, lines
    assert all(ln.endswith("HTTP/2.0 200") for ln in lines), lines
    ver, st, hd, body = curl2(env, port, "/stub")
    hs = int(re.search(r"TLS handshakes: (\d+)", body.decode()).group(1))
    assert hs - 1 <= 2, body  # chromium: one connection (and a preconnect); 1: this curl


def test_async_tls_h2(env):
    fa = os.environ.get("FAKEACCEL_DIR")
    if not fa or not os.path.exists(os.path.join(fa, "fakeaccel.so")):
        h.skip("no fakeaccel.so (FAKEACCEL_DIR)")
    main = ('ssl_provider fakeaccel { path %s; delay_us 2000; notify callback; }\n'
            'ssl_propquery "?provider=fakeaccel";\n' % fa)
    port, _ = serve(env, "http2", main=main, http_extra="ssl_async on;")
    need("h2load")
    p = h.run(["h2load", "-n", "400", "-c", "20", "-m", "5",
               "https://127.0.0.1:%d/1kb.bin" % port], timeout=60)
    assert "400 succeeded" in p.stdout, p.stdout
    ver, st, hd, body = curl2(env, port, "/big.bin")
    assert ver == "2" and body == BIG
    ver, st, hd, body = curl2(env, port, "/stub")
    # the handshakes' jobs paused on the accelerator and were resumed by their wakes
    resumed = int(re.search(r"async paused: \d+ resumed: (\d+)", body.decode()).group(1))
    assert resumed >= 20, body  # at least one pause per handshake of h2load's 20


if __name__ == "__main__":
    h.main(globals())
