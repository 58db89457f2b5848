#!/usr/bin/env python3
"""Post-quantum hybrid key exchange in the gateway (issue #24): `ssl_ecdh_curve`, the
X25519MLKEM768 group of the built-in tlsgate provider, handshakes counted by group.

- default (`ssl_ecdh_curve auto`) with `ssl_provider tlsgate`: an OpenSSL client that loads
  the provider and offers only X25519MLKEM768 gets it, a plain client gets X25519, headless
  Chromium (when installed) gets X25519MLKEM768; /status `by_group` and /metrics
  `tlsgate_handshakes_by_group_total{group=...}` count each;
- an explicit list: `X25519:P-256` refuses a client that offers only X25519MLKEM768,
  `SecP256r1MLKEM768:X25519` negotiates SecP256r1MLKEM768;
- without the provider, `auto` gives X25519 to a client offering X25519MLKEM768:X25519;
- an unknown group is a clear `-t` error naming ssl_ecdh_curve.

Usage: python3 tests/integ/test_pq.py BIN [TEST...]
"""
import http.client
import json
import os
import re
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness as h  # noqa: E402

h.FILE_TIMEOUT = 110
KNOWN_FAILURES = {}

MAIN_PROV = 'ssl_provider tlsgate;\nssl_propquery "?provider=tlsgate";\nworker_processes 1;\n'


def start(env, extra, main=MAIN_PROV, http_extra=""):
    env.write("html/index.html", "hello\n")
    port, pplain = env.port(), env.port()
    conf = env.conf(http_extra + """
    server {
        listen 127.0.0.1:%d ssl;
        server_name a.test;
        %s
        root %s;
        ssl_async on;
        %s
    }
    server {
        listen 127.0.0.1:%d;
        location = /status { status; }
        location = /metrics { metrics; }
    }""" % (port, env.tls("a_ec"), env.html, extra, pplain), main=main)
    srv = env.start(conf)
    srv.wait_port(port)
    srv.wait_port(pplain)
    return srv, port, pplain


def s_client(port, groups, provider):
    """(exit code, output, TLS group id of the ServerHello's key_share or None)."""
    args = ["openssl", "s_client", "-connect", "127.0.0.1:%d" % port, "-servername", "a.test",
            "-tls1_3", "-ign_eof", "-trace", "-groups", groups]
    if provider:
        args[2:2] = ["-provider-path", os.path.dirname(h.binary()), "-provider", "tlsgate",
                     "-provider", "default"]
    p = h.run(args, input="GET / HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n",
              timeout=20)
    out = p.stdout + p.stderr
    m = re.search(r"ServerHello.*?NamedGroup: \S+ \((\d+)\)", out, re.S)
    return p.returncode, out, int(m.group(1)) if m else None


def by_group(pplain):
    c = http.client.HTTPConnection("127.0.0.1", pplain, timeout=10)
    c.request("GET", "/status", headers={"Host": "a.test"})
    js = json.loads(c.getresponse().read().decode())
    c.close()
    c = http.client.HTTPConnection("127.0.0.1", pplain, timeout=10)
    c.request("GET", "/metrics", headers={"Host": "a.test"})
    prom = c.getresponse().read().decode()
    c.close()
    groups = js["handshakes"]["by_group"]
    for g, n in groups.items():
        line = 'tlsgate_handshakes_by_group_total{group="%s"} %d' % (g, n)
        assert line in prom, "/metrics lacks %r" % line
    return {g: n for g, n in groups.items() if n}


def chromium_get(port, tmp):
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if not exe:
        return None
    p = h.run([exe, "--headless=new", "--no-sandbox", "--disable-gpu",
               "--ignore-certificate-errors", "--user-data-dir=" + tmp,
               "--host-resolver-rules=MAP a.test 127.0.0.1",
               "--dump-dom", "https://a.test:%d/" % port], timeout=60)
    return p.stdout


def test_default_auto(env):
    curve_log = env.path("curve.log")
    srv, port, pplain = start(env, "access_log %s curve;" % curve_log,
                              http_extra="log_format curve '$ssl_curve';\n")
    rc, out, gid = s_client(port, "X25519MLKEM768", True)
    assert rc == 0 and gid == 0x11EC and "hello" in out, out[-3000:]
    print("  s_client (provider) X25519MLKEM768: group 0x%04x" % gid, flush=True)
    rc, out, gid = s_client(port, "X25519:P-256", False)
    assert rc == 0 and gid == 29 and "hello" in out, out[-3000:]
    print("  plain s_client: X25519", flush=True)
    h.wait_until(lambda: by_group(pplain) == {"X25519MLKEM768": 1, "X25519": 1}, 5,
                 what="by_group: one X25519MLKEM768 and one X25519 handshake")
    # $ssl_curve names the provider's group (SSL_group_to_name), as the built-in one
    h.wait_until(lambda: os.path.exists(curve_log) and
                 open(curve_log).read().split() == ["X25519MLKEM768", "X25519"], 5,
                 what="$ssl_curve lines X25519MLKEM768 then X25519")
    page = chromium_get(port, env.path("chromium"))
    if page is None:
        print("  chromium: not installed, skipped", flush=True)
    else:
        assert "hello" in page, "Chromium got no page: %r" % page[:500]
        # Chromium may open more than one connection (a page and a favicon): each is an
        # X25519MLKEM768 handshake; nothing else moves
        g = by_group(pplain)
        assert g.get("X25519MLKEM768", 0) >= 2 and set(g) == {"X25519MLKEM768", "X25519"} and \
            g["X25519"] == 1, g
        print("  headless Chromium: page loaded", flush=True)
    print("  by_group: %s" % by_group(pplain), flush=True)


def test_explicit_list(env):
    srv, port, _ = start(env, "ssl_ecdh_curve X25519:P-256;")
    rc, out, gid = s_client(port, "X25519MLKEM768", True)
    assert rc != 0 or "hello" not in out, "handshake with a group the server does not list"
    rc, out, gid = s_client(port, "X25519MLKEM768:X25519", True)
    assert rc == 0 and gid == 29, out[-3000:]
    srv.stop()
    srv, port, _ = start(env, "ssl_ecdh_curve SecP256r1MLKEM768:X25519;")
    rc, out, gid = s_client(port, "SecP256r1MLKEM768", True)
    assert rc == 0 and gid == 0x11EB and "hello" in out, out[-3000:]
    print("  SecP256r1MLKEM768: ok", flush=True)


def test_auto_without_provider(env):
    srv, port, pplain = start(env, "", main="worker_processes 1;\n")
    rc, out, gid = s_client(port, "X25519MLKEM768:X25519", True)
    assert rc == 0 and gid == 29 and "hello" in out, out[-3000:]
    h.wait_until(lambda: by_group(pplain) == {"X25519": 1}, 5, what="one X25519 handshake")


def test_bad_group(env):
    env.write("html/index.html", "hello\n")
    conf = env.conf("""
    server {
        listen 127.0.0.1:%d ssl;
        %s
        root %s;
        ssl_ecdh_curve X25519:nosuchgroup;
    }""" % (env.port(), env.tls("a_ec"), env.html), main=MAIN_PROV, name="bad.conf")
    p = h.run([h.binary(), "-t", "-c", conf], timeout=20)
    out = p.stdout + p.stderr
    assert p.returncode != 0 and "ssl_ecdh_curve" in out, out


if __name__ == "__main__":
    h.main(globals())
