#!/usr/bin/env python3
"""Issue #23's "done when": the tlsgate configuration of docs/migrating-from-nginx.md, with
its paths and addresses replaced by this run's files and ports, passes `tlsgate -t`, and
then serves what it promises: a PROXY v2 client address and the TLS variables in the log,
mutual TLS (optional) with the client's DN passed upstream, an HTTPS upstream whose
certificate is verified (name and CA), HSTS on a proxied 404 (`always`), allow/deny on the
real client address, include with a glob, and a stream server with PROXY protocol both
ways.
"""
import json
import os
import re
import socket
import ssl
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness as H  # noqa: E402
import test_mtls as M  # noqa: E402
import test_upstream_tls as U  # noqa: E402
from test_proxyproto import FirstLine, v2  # noqa: E402

DOC = os.path.join(H.SRC, "docs", "migrating-from-nginx.md")


def tlsgate_block():
    text = open(DOC).read()
    part = text.split("## tlsgate", 1)[1]
    return re.search(r"```nginx\n(.*?)```", part, re.S).group(1)


def test_migration_config(env):
    mp, up = M.pki(env), U.pki()
    be = U.TLSBackend(want_client_cert=True)
    echo = FirstLine()
    try:
        port, sport = env.port(), env.port()
        log = env.path("access.log")
        env.write("html/errors/404.html", "<h1>not here</h1>\n")
        env.write("html/errors/50x.html", "<h1>down</h1>\n")
        env.write("conf.d/10-limits.conf", "client_max_body_size 2m;\n")
        crt, key = env.certs["a_rsa"]
        subst = [
            ("user tlsgate;\n", H.USER_LINE),
            ("worker_processes auto;", "worker_processes 1; error_log %s info; pid %s;"
             % (env.log, env.pidfile)),
            ("/etc/tlsgate/conf.d/*.conf", env.path("conf.d") + "/*.conf"),
            ("/var/log/tlsgate/access.log", log),
            ("set_real_ip_from 10.0.0.0/8;", "set_real_ip_from 127.0.0.1;"),
            ("server 10.1.0.10:8443; server 10.1.0.11:8443;", "server 127.0.0.1:%d;" % be.port),
            ("0.0.0.0:443", "127.0.0.1:%d" % port),
            ("0.0.0.0:5432", "127.0.0.1:%d" % sport),
            ("10.2.0.5:5432", "127.0.0.1:%d" % echo.port),
            ("/etc/tlsgate/tls/api.crt", crt), ("/etc/tlsgate/tls/api.key", key),
            ("/etc/tlsgate/tls/db.crt", crt), ("/etc/tlsgate/tls/db.key", key),
            ("/etc/tlsgate/tls/clients-ca.pem", mp["ca.crt"]),
            ("/etc/tlsgate/tls/clients.crl", mp["ca.crl"]),
            ("/etc/tlsgate/tls/internal-ca.pem", up["ca.crt"]),
            ("/etc/tlsgate/tls/gateway.crt", up["client.crt"]),
            ("/etc/tlsgate/tls/gateway.key", up["client.key"]),
            ("api.internal", "backend.test"),
            ("/srv/www", env.html),
            ("api.example.com", "a.test"),
        ]
        conf = tlsgate_block()
        for a, b in subst:
            assert a in conf, "the page's configuration no longer has %r" % a
            conf = conf.replace(a, b)
        path = env.write("gateway.conf", conf)
        p = H.run([H.binary(), "-t", "-c", path], timeout=30)
        assert p.returncode == 0, p.stdout + p.stderr
        env.start(path)
        H.wait_until(lambda: H.port_accepts(port) and H.port_accepts(sport), 10,
                     what="tlsgate on both ports")

        def request(path, cert=None, src="203.0.113.7"):
            raw = socket.create_connection(("127.0.0.1", port), timeout=5)
            raw.sendall(v2(src, 40000))
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
            if cert:
                ctx.load_cert_chain(mp[cert + ".crt"], mp[cert + ".key"])
            with ctx.wrap_socket(raw, server_hostname="a.test") as s:
                s.sendall(b"GET %s HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n"
                          % path.encode())
                data, _ = H.recv_all(s)
            head, _, body = data.partition(b"\r\n\r\n")
            st, hd = H.parse_head(head.decode("latin-1"))
            return st, hd, body

        st, hd, body = request("/app", "alice")
        assert st == 200, (st, body)
        assert hd["strict-transport-security"] == "max-age=63072000; includeSubDomains", hd
        info = json.loads(body)
        assert info["sni"] == "backend.test" and info["client"] == "gateway", info
        st, hd, body = request("/missing")  # the backend's 404: HSTS is `always`
        assert st == 404 and "strict-transport-security" in hd, (st, hd)
        st, hd, body = request("/admin/x")  # 203.0.113.7 is not in 10.0.0.0/8
        assert st == 403 and hd["x-content-type-options"] == "nosniff", (st, hd)
        st, hd, body = request("/admin/x", src="10.9.8.7")
        assert st == 200, (st, body)
        st, hd, body = request("/healthz")
        assert body == b"ok a.test\n", body
        st, hd, body = request("/app", "self")  # optional: a bad certificate is refused
        assert st == 400 and b"The SSL certificate error" in body, (st, body)
        def six():
            ls = open(log).read().splitlines() if os.path.exists(log) else []
            return ls if len(ls) >= 6 else None
        lines = H.wait_until(six, 5, what="6 access log lines")
        first = lines[0]
        assert first.startswith("203.0.113.7 - ["), first
        assert '"GET /app HTTP/1.1" 200' in first, first
        assert " TLSv1.3/TLS_" in first and " X25519 . sni=a.test" in first, first
        assert 'client="CN=alice,O=tlsgate test"' in first, first
        assert "up=127.0.0.1:%d/200/" % be.port in first, first
        assert lines[3].startswith("10.9.8.7 - ["), lines[3]
        # stream: PROXY header in, TLS, PROXY header out naming the same client
        raw = socket.create_connection(("127.0.0.1", sport), timeout=5)
        raw.sendall(v2("198.51.100.4", 5555))
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        with ctx.wrap_socket(raw, server_hostname="a.test") as s:
            s.sendall(b"select 1")
            got = H.recv_until(s, b"select 1")
        assert got == b"PROXY TCP4 198.51.100.4 127.0.0.1 5555 %d\r\nselect 1" % sport, got
    finally:
        be.close()
        echo.close()


if __name__ == "__main__":
    try:
        H.main(globals())
    finally:
        import shutil
        for d in (M._pki.get("dir"), U._pki.get("dir")):
            if d:
                shutil.rmtree(d, ignore_errors=True)
