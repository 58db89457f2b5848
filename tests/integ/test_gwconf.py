#!/usr/bin/env python3
"""Issue #23's nginx directives on a running gateway.

- include with a glob: the included servers serve; `tlsgate -t` names the included file
  and line of an error;
- add_header: on 200 only without `always`, also on 404 (and proxied 404s) with it;
  variables in its value; a location's own list replaces the server's;
- error_page: a custom 404 page with its status, =CODE, a redirect;
- allow / deny with CIDR, first match wins, a location's rules replace the server's;
- set_real_ip_from + real_ip_header X-Forwarded-For (and real_ip_recursive): the client
  address of allow/deny, $remote_addr in the log and X-Real-IP upstream; untrusted peers'
  headers are ignored;
- log_format with the TLS variables ($ssl_protocol $ssl_cipher $ssl_curve
  $ssl_session_reused $ssl_server_name ...), escape=default and escape=json; combined
  stays the default;
- proxy_set_header and return with the new variables;
- underscores_in_headers off (default): `Content_Length` and `X_Foo` are not passed
  upstream; on: passed.
"""
import json
import os
import re
import socket
import ssl
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness as H  # noqa: E402
import backends as be  # noqa: E402


req = H.request
one = H.exchange


def start(env, http, main=""):
    conf = env.conf(http, main=main)
    s = env.start(conf)
    return s


def wait_log(path, n=1, timeout=5):
    def lines():
        try:
            with open(path) as f:
                ls = f.read().splitlines()
            return ls if len(ls) >= n else None
        except OSError:
            return None
    return H.wait_until(lines, timeout, what="%d access log line(s) in %s" % (n, path))


def test_include_glob_and_errors(env):
    port = env.port()
    env.write("html/index.html", "hello\n")
    env.write("conf.d/10-a.conf", """
        server { listen 127.0.0.1:%d ssl; server_name a.test; %s root %s;
                 include snippets/*.inc; }
    """ % (port, env.tls("a_rsa"), env.html))
    env.write("snippets/hsts.inc", 'add_header Strict-Transport-Security "max-age=63072000" always;\n')
    conf = env.conf("include %s/conf.d/*.conf;" % env.dir)
    s = env.start(conf, port=port)
    st, hd, body = env.get("https://a.test:%d/" % port)
    assert st == 200 and body == b"hello\n", (st, body)
    assert hd.get("strict-transport-security") == "max-age=63072000", hd
    s.stop()
    # an error in an included file: tlsgate -t names the file and the line
    env.write("conf.d/20-bad.conf", "\n\nserver { listen 127.0.0.1:%d; bogus_thing on; }\n"
              % env.port())
    p = H.run([H.binary(), "-t", "-c", conf], timeout=30)
    out = p.stdout + p.stderr
    assert p.returncode != 0, out
    assert "%s/conf.d/20-bad.conf:3: bogus_thing: unknown directive" % env.dir in out, out


def test_add_header_always_and_404(env):
    port = env.port()
    env.write("html/index.html", "hello\n")
    with be.Backend() as b:
        s = start(env, """
        upstream app { server 127.0.0.1:%d; }
        server { listen 127.0.0.1:%d ssl; server_name a.test; %s root %s;
            add_header Strict-Transport-Security "max-age=63072000" always;
            add_header X-Plain plain;
            add_header X-Proto "$ssl_protocol $scheme";
            add_header X-Empty "$http_x_nothing";
            location /own/ { add_header X-Own own always; }
            location /app/ { proxy_pass http://app; }
            location /status/ { proxy_pass http://app; }
        }""" % (b.port, port, env.tls("a_rsa"), env.html))
        s.wait_port(port)
        r = one(env, port, req("/"))
        assert r.status == 200
        assert r.headers["strict-transport-security"] == "max-age=63072000", r.headers
        assert r.headers["x-plain"] == "plain", r.headers
        assert r.headers["x-proto"] == "TLSv1.3 https", r.headers
        assert "x-empty" not in r.headers, r.headers  # empty value: no field (nginx)
        r = one(env, port, req("/missing"))
        assert r.status == 404
        assert r.headers["strict-transport-security"] == "max-age=63072000", r.headers
        assert "x-plain" not in r.headers, r.headers  # not `always`: not on a 404
        # a location's own add_header replaces the server's list (nginx)
        r = one(env, port, req("/own/missing"))
        assert r.status == 404 and r.headers.get("x-own") == "own", r.headers
        assert "strict-transport-security" not in r.headers, r.headers
        # proxied responses, 200 and 404
        r = one(env, port, req("/app/x"))
        assert r.status == 200 and r.headers["x-plain"] == "plain", r.headers
        assert r.headers["strict-transport-security"] == "max-age=63072000"
        r = one(env, port, req("/status/404"))
        assert r.status == 404, r
        assert r.headers["strict-transport-security"] == "max-age=63072000", r.headers
        assert "x-plain" not in r.headers
        # the HEAD response carries them too, and no body
        with env.tls_socket(port) as sk:
            sk.sendall(req("/", "HEAD"))
            r, _ = H.read_response(sk, head_request=True)
        assert r.headers["x-plain"] == "plain" and r.body == b"", r


def test_error_page(env):
    port = env.port()
    env.write("html/index.html", "hello\n")
    env.write("html/errors/404.html", "<h1>custom not found</h1>\n")
    start(env, """
        server { listen 127.0.0.1:%d ssl; server_name a.test; %s root %s;
            error_page 404 /errors/404.html;
            error_page 403 =404 /errors/404.html;
            location = /gone { return 410; }
            location /old/ { error_page 404 =301 https://example.com/new; }
            location /broken/ { error_page 404 /errors/none.html; }
            location = /private { deny all; }
        }""" % (port, env.tls("a_rsa"), env.html)).wait_port(port)
    r = one(env, port, req("/nothing"))
    assert r.status == 404 and r.body == b"<h1>custom not found</h1>\n", r
    assert r.headers["content-type"] == "text/html", r.headers
    r = one(env, port, req("/private"))
    assert r.status == 404 and b"custom not found" in r.body, r  # 403 =404
    r = one(env, port, req("/gone"))
    assert r.status == 410 and b"410" in r.body  # no page for 410: the built-in one
    r = one(env, port, req("/old/x"))
    assert r.status == 301 and r.headers["location"] == "https://example.com/new", r
    r = one(env, port, req("/broken/x"))  # the page is missing: the built-in 404
    assert r.status == 404 and b"<center><h1>404 Not Found</h1></center>" in r.body, r
    # keep-alive goes on after an error page
    with env.tls_socket(port) as s:
        s.sendall(req("/nothing") + req("/"))
        r1, rest = H.read_response(s)
        r2, _ = H.read_response(s, rest)
        assert r1.status == 404 and r2.status == 200, (r1, r2)


def test_error_page_missing_file_warns(env):
    # an error_page URI is a file under root; nginx redirects internally, so a URI that only
    # a proxy_pass location answers passed -t and failed at run time: -t now warns
    env.write("html/errors/404.html", "custom\n")
    conf = env.conf("""
        server { listen 127.0.0.1:%d ssl; server_name a.test; %s root %s;
            error_page 404 /errors/404.html;
            error_page 502 503 /down502;
            location /down502 { proxy_pass http://127.0.0.1:1; }
            location /app/ { error_page 500 /errors/404.html; proxy_pass http://127.0.0.1:1; }
        }""" % (env.port(), env.tls("a_rsa"), env.html))
    p = H.run([H.binary(), "-t", "-c", conf], timeout=30)
    assert p.returncode == 0, p.stderr
    warns = [ln for ln in p.stderr.splitlines() if "[warn]" in ln and "error_page" in ln]
    assert len(warns) == 1, p.stderr
    assert 'error_page "/down502": no file "%s/down502"' % env.html in warns[0], warns
    assert "internal redirect" in warns[0], warns


def test_allow_deny_cidr(env):
    port = env.port()
    env.write("html/index.html", "hello\n")
    env.write("html/open/index.html", "open\n")
    env.write("html/v6/index.html", "v6\n")
    start(env, """
        server { listen 127.0.0.1:%d ssl; server_name a.test; %s root %s;
            allow 10.0.0.0/8; allow ::1; deny 127.0.0.0/8; allow all;
            location /open/ { allow 127.0.0.1/32; deny all; }
            location /v6/ { allow 2001:db8::/32; deny all; }
        }""" % (port, env.tls("a_rsa"), env.html)).wait_port(port)
    assert one(env, port, req("/")).status == 403  # 127.0.0.1 falls in the deny
    assert one(env, port, req("/open/")).status == 200  # the location's rules replace
    assert one(env, port, req("/v6/")).status == 403


def test_real_ip_and_log_variables(env):
    port, port2 = env.port(), env.port()
    env.write("html/index.html", "hello\n")
    b = be.Backend()
    log = env.path("access.log")
    jlog = env.path("json.log")
    clog = env.path("combined.log")
    try:
        start(env, r"""
        log_format tls '$remote_addr|$remote_port|$request|$request_method|$request_uri|'
                       '$status|$body_bytes_sent|$bytes_sent|$request_time|$msec|'
                       '$time_iso8601|$time_local|$connection|$http_user_agent|$host|'
                       '$server_name|$scheme|$ssl_protocol|$ssl_cipher|$ssl_curve|'
                       '$ssl_session_reused|$ssl_server_name|$ssl_client_s_dn|'
                       '$ssl_client_verify|$upstream_addr|$upstream_status|'
                       '$upstream_response_time|$proxy_protocol_addr|$http_x_quote';
        log_format j escape=json '{"ip":"$remote_addr","ua":"$http_user_agent","s":$status}';
        upstream app { server 127.0.0.1:%d; }
        server { listen 127.0.0.1:%d ssl; server_name a.test; %s root %s;
            access_log %s tls;
            set_real_ip_from 127.0.0.1; real_ip_header X-Forwarded-For;
            real_ip_recursive on; set_real_ip_from 192.168.0.0/16;
            location = /denied { deny 10.9.9.9; }
            location /app/ { proxy_pass http://app;
                proxy_set_header X-Real-IP $remote_addr;
                proxy_set_header X-TLS "$ssl_protocol/$ssl_client_verify/$request_method"; }
            location = /ret { return 200 "proto=$ssl_protocol ip=$remote_addr\n"; }
        }
        server { listen 127.0.0.1:%d ssl; server_name b.test; %s root %s;
            access_log %s j; }
        server { listen 127.0.0.1:%d ssl; server_name c.test; %s root %s;
            access_log %s; }
        """ % (b.port, port, env.tls("a_rsa"), env.html, log, port2, env.tls("b_rsa"),
               env.html, jlog, port2, env.tls("a_rsa"), env.html, clog)).wait_port(port)
        xff = "X-Forwarded-For: 10.9.9.9, 192.168.1.1\r\n"
        r = one(env, port, req("/", extra="User-Agent: ua \"q\"\r\nX-Quote: a\\b\r\n" + xff))
        assert r.status == 200
        r = one(env, port, req("/denied", extra=xff))
        assert r.status == 403, r  # the real client 10.9.9.9 is denied
        r = one(env, port, req("/app/echo", extra=xff))
        assert r.status == 200
        seen = json.loads(r.body)["headers"]
        assert seen["x-real-ip"] == ["10.9.9.9"], seen
        assert seen["x-tls"] == ["TLSv1.3/NONE/GET"], seen
        # proxy_set_header at this level does not drop Host $proxy_host (nginx)
        assert seen["host"] == ["app"], seen
        r = one(env, port, req("/ret"))
        assert r.body == b"proto=TLSv1.3 ip=127.0.0.1\n", r.body  # no XFF: the peer
        lines = wait_log(log, 4)
        f = lines[0].split("|")
        assert f[0] == "10.9.9.9" and f[1] == "-", f  # real_ip: no port
        assert f[2] == "GET / HTTP/1.1" and f[3] == "GET" and f[4] == "/", f
        assert f[5] == "200" and f[6] == "6" and int(f[7]) > 100, f
        assert re.match(r"^\d+\.\d{3}$", f[8]) and float(f[8]) < 5, f
        assert re.match(r"^\d{10}\.\d{3}$", f[9]) and abs(float(f[9]) - time.time()) < 60, f
        assert re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d\d:\d\d$", f[10]), f
        assert re.match(r"^\d\d/\w{3}/\d{4}:\d\d:\d\d:\d\d [+-]\d{4}$", f[11]), f
        assert f[12].isdigit(), f
        assert f[13] == 'ua \\x22q\\x22', f  # escaped as nginx: \x22
        assert f[14] == "a.test" and f[15] == "a.test" and f[16] == "https", f
        assert f[17] == "TLSv1.3" and f[18].startswith("TLS_") and f[19] == "X25519", f
        assert f[20] == "." and f[21] == "a.test" and f[22] == "-", f
        assert f[23] == "NONE" and f[24] == "-" and f[25] == "-" and f[26] == "-", f
        assert f[27] == "-" and f[28] == "a\\x5Cb", f
        f = lines[1].split("|")
        assert f[0] == "10.9.9.9" and f[5] == "403", f
        f = lines[2].split("|")
        assert f[24] == "127.0.0.1:%d" % b.port and f[25] == "200", f
        assert re.match(r"^\d+\.\d{3}$", f[26]), f
        # two X-Forwarded-For fields are one list: a client's own first field must not
        # name the client when the trusted proxy appended the real address in a second
        two = "X-Forwarded-For: 198.51.100.5\r\nX-Forwarded-For: 10.9.9.9, 192.168.1.1\r\n"
        r = one(env, port, req("/denied", extra=two))
        assert r.status == 403, r
        # an untrusted peer's header is not believed: c.test's server has no
        # set_real_ip_from
        one(env, port2, req("/", host="c.test", extra=xff))
        cl = wait_log(clog, 1)
        assert cl[0].startswith("127.0.0.1 - - ["), cl  # combined, the default
        # escape=json
        one(env, port2, req("/", host="b.test", extra="User-Agent: x\"y\\z\tw\r\n"))
        jl = wait_log(jlog, 1)
        d = json.loads(jl[0])
        assert d == {"ip": "127.0.0.1", "ua": "x\"y\\z\tw", "s": 200}, d
        # a resumed TLS 1.3 session logs "r"
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        sess = None
        for _ in range(2):
            raw = socket.create_connection(("127.0.0.1", port), timeout=5)
            with ctx.wrap_socket(raw, server_hostname="a.test", session=sess) as s:
                s.sendall(req("/", extra="Connection: close\r\n"))
                H.recv_all(s)
                sess = s.session
        lines = wait_log(log, 6)
        assert lines[-2].split("|")[20] == "." and lines[-1].split("|")[20] == "r", lines[-2:]
    finally:
        b.close()


def test_underscores_in_headers(env):
    with be.Backend() as b:
        port, port2 = env.port(), env.port()
        start(env, """
        upstream app { server 127.0.0.1:%d; }
        server { listen 127.0.0.1:%d ssl; server_name a.test; %s
            location / { proxy_pass http://app; } }
        server { listen 127.0.0.1:%d ssl; server_name a.test; %s
            underscores_in_headers on;
            location / { proxy_pass http://app; } }
        """ % (b.port, port, env.tls("a_rsa"), port2, env.tls("a_rsa"))).wait_port(port)
        extra = "Content_Length: 41\r\nTransfer_Encoding: chunked\r\nX_Foo: 1\r\nX-Bar: 2\r\n"
        seen = json.loads(one(env, port, req("/echo", extra=extra)).body)["headers"]
        for k in ("content_length", "transfer_encoding", "x_foo"):
            assert k not in seen, seen
        assert seen["x-bar"] == ["2"], seen
        seen = json.loads(one(env, port2, req("/echo", extra=extra)).body)["headers"]
        assert seen.get("x_foo") == ["1"] and seen.get("content_length") == ["41"], seen


if __name__ == "__main__":
    H.main(globals())
