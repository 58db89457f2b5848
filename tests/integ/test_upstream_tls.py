#!/usr/bin/env python3
"""HTTPS upstreams (issue #23): proxy_pass https://, proxy_ssl_verify,
proxy_ssl_trusted_certificate, proxy_ssl_verify_depth, proxy_ssl_server_name,
proxy_ssl_name, proxy_ssl_session_reuse, proxy_ssl_protocols, proxy_ssl_ciphers,
proxy_ssl_certificate(_key).

The backend is Python's ssl over a threaded HTTP/1.1 server that records, per request,
the SNI it got, whether the TLS session was resumed, the protocol and the client
certificate's subject. Certificates (a CA, the backend's for backend.test and 127.0.0.1,
a client certificate) are made per run.
"""
import json
import os
import shutil
import socket
import ssl
import sys
import threading
import http.server

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness as H  # noqa: E402
import backends as be  # noqa: E402

_pki = {}


def pki():
    if _pki:
        return _pki
    d = H.shared_dir("tlsgate-integ-uptls-")

    def o(*a):
        H.run(["openssl", *a], timeout=60, cwd=d, check=True)
    for ca in ("ca", "other"):
        o("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
          "-keyout", ca + ".key", "-out", ca + ".crt", "-days", "2", "-subj", "/CN=%s CA" % ca,
          "-addext", "basicConstraints=critical,CA:TRUE", "-addext",
          "keyUsage=critical,keyCertSign,cRLSign")
    with open(os.path.join(d, "ext.cnf"), "w") as f:
        f.write("[srv]\nsubjectAltName=DNS:backend.test,IP:127.0.0.1\n"
                "[cli]\nextendedKeyUsage=clientAuth\n")
    for name, cn, sec in (("backend", "backend.test", "srv"), ("client", "gateway", "cli")):
        o("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout",
          name + ".key", "-out", name + ".csr", "-subj", "/CN=" + cn)
        o("x509", "-req", "-in", name + ".csr", "-CA", "ca.crt", "-CAkey", "ca.key",
          "-CAcreateserial", "-days", "2", "-extfile", "ext.cnf", "-extensions", sec, "-out",
          name + ".crt")
    _pki.update({n: os.path.join(d, n) for n in os.listdir(d)})
    _pki["dir"] = d
    return _pki


class TLSBackend:
    def __init__(self, want_client_cert=False, tls13=True, threaded_handshakes=False):
        p = pki()
        self.seen = []
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(p["backend.crt"], p["backend.key"])
        if not tls13:
            ctx.maximum_version = ssl.TLSVersion.TLSv1_2
        if want_client_cert:
            ctx.verify_mode = ssl.CERT_OPTIONAL
            ctx.load_verify_locations(p["ca.crt"])
        snis = {}

        def sni_cb(sock, name, c):
            snis[id(sock)] = name
        ctx.sni_callback = sni_cb
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def do_GET(self):
                s = self.connection
                cert = s.getpeercert()
                info = {"path": self.path, "sni": snis.get(id(s)),
                        "reused": s.session_reused, "version": s.version(),
                        "conn": self.client_address[1],
                        "client": dict(x[0] for x in cert["subject"])["commonName"]
                        if cert else None}
                outer.seen.append(info)
                body = json.dumps(info).encode()
                self.send_response(404 if "missing" in self.path else 200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        class Server(http.server.ThreadingHTTPServer):
            daemon_threads = True
            request_queue_size = 128  # handshakes run in the accept loop: concurrent
            # clients (test_upstream_async.py) wait in the listen queue, not SYN retries

            def get_request(self):
                s, a = self.socket.accept()
                if threaded_handshakes:  # in the request's thread (finish_request)
                    return s, a
                try:
                    return ctx.wrap_socket(s, server_side=True), a
                except (ssl.SSLError, OSError):
                    s.close()
                    raise OSError("handshake failed")

            def finish_request(self, request, client_address):
                if not threaded_handshakes:
                    return super().finish_request(request, client_address)
                try:
                    request = ctx.wrap_socket(request, server_side=True)
                except (ssl.SSLError, OSError):
                    request.close()
                    return
                try:
                    super().finish_request(request, client_address)
                finally:
                    request.close()

            def handle_error(self, request, client_address):
                pass

        self.httpd = Server(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def get(env, port, path):
    with env.tls_socket(port) as s:
        s.sendall(b"GET %s HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n" % path.encode())
        data, _ = H.recv_all(s)
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split()[1]), body


def gateway(env, locations, http_extra=""):
    port = env.port()
    env.start(env.conf("""
        %s
        server { listen 127.0.0.1:%d ssl; server_name a.test; %s
        %s }""" % (http_extra, port, env.tls("a_rsa"), locations)), port=port)
    return port


def test_https_upstream_verified(env):
    p = pki()
    b = TLSBackend()
    try:
        port = gateway(env, """
            location /plain/ { proxy_pass https://127.0.0.1:%d; }
            location /verified/ { proxy_pass https://127.0.0.1:%d;
                proxy_ssl_verify on; proxy_ssl_trusted_certificate %s;
                proxy_ssl_name backend.test; proxy_ssl_server_name on; }
            location /by-ip/ { proxy_pass https://127.0.0.1:%d;
                proxy_ssl_verify on; proxy_ssl_trusted_certificate %s; }
            location /wrong-ca/ { proxy_pass https://127.0.0.1:%d;
                proxy_ssl_verify on; proxy_ssl_trusted_certificate %s; }
            location /wrong-name/ { proxy_pass https://127.0.0.1:%d;
                proxy_ssl_verify on; proxy_ssl_trusted_certificate %s;
                proxy_ssl_name other.test; }
            location /tls12/ { proxy_pass https://127.0.0.1:%d; proxy_ssl_protocols TLSv1.2;
                proxy_ssl_ciphers ECDHE-ECDSA-AES128-GCM-SHA256; }
        """ % (b.port, b.port, p["ca.crt"], b.port, p["ca.crt"], b.port, p["other.crt"],
               b.port, p["ca.crt"], b.port))
        st, body = get(env, port, "/plain/x")
        assert st == 200, (st, body)
        info = json.loads(body)
        assert info["sni"] is None and info["version"] == "TLSv1.3", info  # SNI off (nginx)
        st, body = get(env, port, "/verified/x")
        assert st == 200, (st, body)
        assert json.loads(body)["sni"] == "backend.test", body
        st, body = get(env, port, "/by-ip/x")  # the IP SAN is checked
        assert st == 200, (st, body)
        env.allow_log = True  # the failures below are logged at [error]
        st, body = get(env, port, "/wrong-ca/x")
        assert st == 502, (st, body)
        st, body = get(env, port, "/wrong-name/x")
        assert st == 502, (st, body)
        log = env.servers[0].log_text()
        assert "SSL certificate verify error: (20:unable to get local issuer certificate)" in log
        assert "SSL certificate verify error: (62:hostname mismatch)" in log, log[-2000:]
        st, body = get(env, port, "/tls12/x")
        assert st == 200 and json.loads(body)["version"] == "TLSv1.2", body
    finally:
        b.close()


def test_https_upstream_from_http2_client(env):
    """An HTTP/2 client's stream proxied to an HTTPS upstream (the h2 merge: the stream's
    request goes through the same TLS upstream I/O)."""
    if not shutil.which("curl"):
        H.skip("curl missing")
    b = TLSBackend()
    try:
        port = gateway(env, """
            location /plain/ { proxy_pass https://127.0.0.1:%d; }
        """ % b.port, http_extra="http2 on;")
        p = H.run(["curl", "-sS", "-k", "--http2", "--max-time", "15", "--resolve",
                   "a.test:%d:127.0.0.1" % port, "-w", "\\n%{http_version} %{http_code}\\n",
                   "https://a.test:%d/plain/x" % port, "https://a.test:%d/plain/y" % port],
                  timeout=20)
        assert p.returncode == 0, p.stderr
        out = p.stdout.strip().split("\n")
        assert out[1] == "2 200" and out[3] == "2 200", out
        assert json.loads(out[0])["version"] == "TLSv1.3", out
    finally:
        b.close()


def test_session_reuse_and_keepalive(env):
    b = TLSBackend()
    try:
        port = gateway(env, """
            location /reuse/ { proxy_pass https://127.0.0.1:%d; }
            location /noreuse/ { proxy_pass https://127.0.0.1:%d;
                                 proxy_ssl_session_reuse off; }
            location /pool/ { proxy_pass https://pool; }
        """ % (b.port, b.port), http_extra="upstream pool { server 127.0.0.1:%d; keepalive 4; }"
                                          % b.port)
        reused = [json.loads(get(env, port, "/reuse/%d" % i)[1])["reused"] for i in range(4)]
        assert reused[0] is False and all(reused[1:]), reused  # on by default (nginx)
        reused = [json.loads(get(env, port, "/noreuse/%d" % i)[1])["reused"] for i in range(3)]
        assert not any(reused), reused
        n0 = len(b.seen)
        for i in range(4):
            assert get(env, port, "/pool/%d" % i)[0] == 200
        assert len(b.seen) == n0 + 4
        # one pooled TLS connection served the four requests
        assert len({s["conn"] for s in b.seen[n0:]}) == 1, b.seen[n0:]
    finally:
        b.close()


def test_client_certificate_to_upstream(env):
    p = pki()
    b = TLSBackend(want_client_cert=True)
    try:
        port = gateway(env, """
            location /mtls/ { proxy_pass https://127.0.0.1:%d;
                proxy_ssl_certificate %s; proxy_ssl_certificate_key %s; }
            location /anon/ { proxy_pass https://127.0.0.1:%d; }
        """ % (b.port, p["client.crt"], p["client.key"], b.port))
        st, body = get(env, port, "/mtls/x")
        assert st == 200 and json.loads(body)["client"] == "gateway", body
        st, body = get(env, port, "/anon/x")
        assert st == 200 and json.loads(body)["client"] is None, body
    finally:
        b.close()


class TLSEcho(be.ThreadedServer):
    """A TLS echo server that first reads a PROXY v1 line in the clear (when sent)."""

    def __init__(self):
        p = pki()
        self.ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.ctx.load_cert_chain(p["backend.crt"], p["backend.key"])
        self.sni = []
        self.ctx.sni_callback = lambda sock, name, c: self.sni.append(name)
        self.pp = []
        super().__init__()

    def _serve(self, c):
        try:
            first = c.recv(5, socket.MSG_PEEK)
            if first == b"PROXY":
                line = b""
                while not line.endswith(b"\r\n"):
                    line += c.recv(1)
                self.pp.append(line)
            with self.ctx.wrap_socket(c, server_side=True) as s:
                while True:
                    d = s.recv(65536)
                    if not d:
                        break
                    s.sendall(d)
        except (OSError, ssl.SSLError):
            pass


def test_stream_proxy_ssl(env):
    p = pki()
    e, e2 = TLSEcho(), TLSEcho()
    try:
        port, bad = env.port(), env.port()
        env.start(env.write("tlsgate.conf", env.main_conf() + """
            stream {
              server { listen 127.0.0.1:%d; proxy_pass 127.0.0.1:%d; proxy_protocol on;
                       proxy_ssl on; proxy_ssl_verify on; proxy_ssl_trusted_certificate %s;
                       proxy_ssl_name backend.test; proxy_ssl_server_name on; }
              server { listen 127.0.0.1:%d; proxy_pass 127.0.0.1:%d;
                       proxy_ssl on; proxy_ssl_verify on; proxy_ssl_trusted_certificate %s; }
            }""" % (port, e.port, p["ca.crt"], bad, e2.port, p["other.crt"])))
        H.wait_until(lambda: H.port_accepts(port) and H.port_accepts(bad), 10, what="tlsgate")
        s = socket.create_connection(("127.0.0.1", port), timeout=5)
        cport = s.getsockname()[1]
        s.sendall(b"ping")
        got = H.recv_until(s, 4)
        s.shutdown(socket.SHUT_WR)  # the half-close passes on (close_notify), then EOF
        assert s.recv(100) == b""
        s.close()
        assert got == b"ping", got
        # the harness's port probe made a connection too, whose line may come in after ours
        assert b"PROXY TCP4 127.0.0.1 127.0.0.1 %d %d\r\n" % (cport, port) in e.pp, e.pp
        assert e.sni[-1] == "backend.test", e.sni
        # an upstream certificate the CA did not sign: the connection is closed
        env.allow_log = True
        s = socket.create_connection(("127.0.0.1", bad), timeout=5)
        s.sendall(b"ping")
        try:
            assert s.recv(100) == b""
        except ConnectionResetError:  # closed with "ping" unread: a reset is a close too
            pass
        s.close()
        H.wait_until(lambda: "SSL certificate verify error" in env.servers[0].log_text(), 3,
                     what="the verify error's log line")
    finally:
        e.close()
        e2.close()


def test_config_errors(env):
    port = env.port()
    for loc, want in (
        ("proxy_pass https://127.0.0.1:1; proxy_ssl_verify on;",
         "no proxy_ssl_trusted_certificate for proxy_ssl_verify"),
        ("proxy_pass https://127.0.0.1:1; proxy_ssl_certificate /x.crt;",
         "a certificate needs its key"),
        ("proxy_pass https://127.0.0.1:1; proxy_ssl_verify on; proxy_ssl_trusted_certificate "
         "/nonexistent.pem;", "proxy_ssl_trusted_certificate: cannot load"),
        ("proxy_pass https://127.0.0.1:1; proxy_ssl_ciphers NOPE-NOTHING;",
         "proxy_ssl_ciphers: invalid cipher list"),
    ):
        c = env.conf("server { listen 127.0.0.1:%d ssl; server_name a.test; %s "
                     "location / { %s } }" % (port, env.tls("a_rsa"), loc))
        r = H.run([H.binary(), "-t", "-c", c], timeout=30)
        out = r.stdout + r.stderr
        assert r.returncode != 0 and want in out, (loc, out)


if __name__ == "__main__":
    H.main(globals())
