#!/usr/bin/env python3
"""Mutual TLS (issue #23): ssl_verify_client on | optional | optional_no_ca,
ssl_client_certificate, ssl_trusted_certificate, ssl_verify_depth, ssl_crl.

A CA, an intermediate, client certificates (signed by the CA, by the intermediate,
self-signed, revoked) are made per run with openssl. Checks: with `on`, no certificate and
a bad one get nginx's 400 page, a good one 200; `optional` lets a client without one in;
`optional_no_ca` lets a self-signed one in; the depth limit; a CRL revokes; the CA names
are sent in the CertificateRequest (ssl_client_certificate) or not
(ssl_trusted_certificate); SNI picks the block's policy; $ssl_client_* reach the log and
an upstream; config errors.
"""
import json
import os
import re
import socket
import ssl
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness as H  # noqa: E402
import backends as be  # noqa: E402

_pki = {}


def ossl(*args, cwd):
    H.run(["openssl", *args], timeout=60, cwd=cwd, check=True)


def pki(env):
    """CA, intermediate and client certificates in a directory shared by the tests."""
    if _pki:
        return _pki
    d = H.shared_dir("tlsgate-integ-mtls-pki-")
    ext = os.path.join(d, "ext.cnf")
    with open(ext, "w") as f:
        f.write("[ca]\nbasicConstraints=critical,CA:TRUE\nkeyUsage=critical,keyCertSign,cRLSign\n"
                "[leaf]\nbasicConstraints=CA:FALSE\nextendedKeyUsage=clientAuth\n")

    def key(name):
        ossl("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out",
             name + ".key", cwd=d)

    def req(name, cn):
        key(name)
        ossl("req", "-new", "-key", name + ".key", "-subj", "/O=tlsgate test/CN=" + cn, "-out",
             name + ".csr", cwd=d)

    def sign(name, issuer, section):
        ossl("x509", "-req", "-in", name + ".csr", "-CA", issuer + ".crt", "-CAkey",
             issuer + ".key", "-CAcreateserial", "-days", "2", "-extfile", ext, "-extensions",
             section, "-out", name + ".crt", cwd=d)

    key("ca")
    ossl("req", "-x509", "-new", "-key", "ca.key", "-subj", "/O=tlsgate test/CN=Test CA",
         "-days", "2", "-addext", "basicConstraints=critical,CA:TRUE", "-addext",
         "keyUsage=critical,keyCertSign,cRLSign", "-out", "ca.crt", cwd=d)
    req("inter", "Test Intermediate")
    sign("inter", "ca", "ca")
    req("alice", "alice")
    sign("alice", "ca", "leaf")
    req("bob", "bob")
    sign("bob", "inter", "leaf")
    with open(os.path.join(d, "bob-chain.crt"), "w") as f:
        f.write(open(os.path.join(d, "bob.crt")).read() + open(os.path.join(d, "inter.crt")).read())
    req("eve", "eve")  # revoked
    sign("eve", "ca", "leaf")
    key("self")
    ossl("req", "-x509", "-new", "-key", "self.key", "-subj", "/CN=self", "-days", "2",
         "-out", "self.crt", cwd=d)
    # a CRL of the CA revoking eve (openssl ca needs its little database)
    with open(os.path.join(d, "index.txt"), "w"):
        pass
    with open(os.path.join(d, "crlnumber"), "w") as f:
        f.write("01\n")
    with open(os.path.join(d, "ca.cnf"), "w") as f:
        f.write("[ca]\ndefault_ca=d\n[d]\ndatabase=index.txt\ncrlnumber=crlnumber\n"
                "default_md=sha256\ndefault_crl_days=2\n")
    ossl("ca", "-config", "ca.cnf", "-keyfile", "ca.key", "-cert", "ca.crt", "-revoke",
         "eve.crt", cwd=d)
    ossl("ca", "-config", "ca.cnf", "-keyfile", "ca.key", "-cert", "ca.crt", "-gencrl",
         "-out", "ca.crl", cwd=d)
    _pki.update({k: os.path.join(d, k) for k in os.listdir(d)})
    _pki["dir"] = d
    return _pki


def get(port, cert=None, sni="a.test", path="/"):
    """One request with an optional client certificate ('alice' ...): (status, body)."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    if cert:
        crt = _pki.get(cert + "-chain.crt") or _pki[cert + ".crt"]
        ctx.load_cert_chain(crt, _pki[cert + ".key"])
    raw = socket.create_connection(("127.0.0.1", port), timeout=5)
    with ctx.wrap_socket(raw, server_hostname=sni) as s:
        s.sendall(b"GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n" %
                  (path.encode(), sni.encode()))
        data, _ = H.recv_all(s)
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split()[1]), body


def server(env, port, name, extra, root=None):
    return """server { listen 127.0.0.1:%d ssl; server_name %s; %s root %s; %s }""" % (
        port, name, env.tls("a_rsa"), root or env.html, extra)


def start(env, *blocks, http=""):
    """Start tlsgate with the http-level lines `http`, then one server() block per
    (server_name, directives) of blocks, all on one new port; the root holds index.html
    ("hello\\n"). Returns the port."""
    port = env.port()
    env.write("html/index.html", "hello\n")
    env.start(env.conf(http + "\n".join(server(env, port, n, x) for n, x in blocks)),
              port=port)
    return port


def test_verify_on(env):
    p = pki(env)
    log = env.path("access.log")
    port = start(env, ("a.test", "ssl_verify_client on; ssl_client_certificate %s;"
                       " ssl_verify_depth 2; access_log %s m;" % (p["ca.crt"], log)), http="""
        log_format m '$ssl_client_verify|$ssl_client_s_dn|$ssl_client_i_dn|'
                     '$ssl_client_fingerprint|$status';
        """)
    st, body = get(port)
    assert st == 400 and b"No required SSL certificate was sent" in body, (st, body)
    assert b"<center><h1>400 Bad Request</h1></center>" in body, body
    st, body = get(port, "self")
    assert st == 400 and b"The SSL certificate error" in body, (st, body)
    st, body = get(port, "alice")
    assert st == 200 and body == b"hello\n", (st, body)
    st, body = get(port, "bob")  # through the intermediate: depth 1 is enough
    assert st == 200, (st, body)
    def four():
        ls = open(log).read().splitlines() if os.path.exists(log) else []
        return ls if len(ls) >= 4 else None
    lines = H.wait_until(four, 5, what="4 access log lines")
    f = [ln.split("|") for ln in lines]
    assert f[0][0] == "NONE" and f[0][4] == "400", f[0]
    assert f[1][0].startswith("FAILED:") and f[1][4] == "400", f[1]
    assert f[2][0] == "SUCCESS" and f[2][1] == "CN=alice,O=tlsgate test", f[2]
    assert f[2][2] == "CN=Test CA,O=tlsgate test" and re.match(r"^[0-9a-f]{40}$", f[2][3]), f[2]
    fp = subprocess.run(["openssl", "x509", "-in", p["alice.crt"], "-noout", "-fingerprint",
                         "-sha1"], capture_output=True, text=True).stdout
    assert f[2][3] == fp.strip().split("=")[1].replace(":", "").lower(), (f[2][3], fp)
    assert f[3][0] == "SUCCESS" and f[3][2] == "CN=Test Intermediate,O=tlsgate test", f[3]


def test_depth_crl_optional(env):
    p = pki(env)
    port = start(
        env,
        ("a.test", "ssl_verify_client on; ssl_client_certificate %s; ssl_verify_depth 0;"
         % p["ca.crt"]),
        ("b.test", "ssl_verify_client optional; ssl_trusted_certificate %s; "
         "ssl_verify_depth 2; ssl_crl %s;" % (p["ca.crt"], p["ca.crl"])),
        ("c.test", "ssl_verify_client optional_no_ca;"),
        ("d.test", ""))
    assert get(port, "alice")[0] == 200
    # OpenSSL's depth (as nginx's): N intermediates allowed; bob has one
    assert get(port, "bob")[0] == 400
    # optional: none is fine, bad is not; the CRL revokes eve
    assert get(port, None, "b.test")[0] == 200
    assert get(port, "alice", "b.test")[0] == 200
    assert get(port, "bob", "b.test")[0] == 400, "no CRL for the intermediate (CRL_CHECK_ALL)"
    assert get(port, "eve", "b.test")[0] == 400
    assert get(port, "self", "b.test")[0] == 400
    # optional_no_ca: a self-signed certificate is let through for the backend to judge
    assert get(port, "self", "c.test")[0] == 200
    assert get(port, None, "c.test")[0] == 200
    # a block without mTLS on the same address asks nothing
    assert get(port, None, "d.test")[0] == 200


def ca_names(port, sni):
    p = H.run(["openssl", "s_client", "-connect", "127.0.0.1:%d" % port, "-servername", sni],
              input="", timeout=20)
    out = p.stdout
    m = re.search(r"Acceptable client certificate CA names\n(.*?)\n(?:Requested|Client Certificate|Peer)",
                  out, re.S)
    return out, (m.group(1) if m else "")


def test_ca_names_sent(env):
    p = pki(env)
    port = start(env, ("a.test", "ssl_verify_client on; ssl_client_certificate %s;" % p["ca.crt"]),
                 ("b.test", "ssl_verify_client on; ssl_trusted_certificate %s;" % p["ca.crt"]))
    out, names = ca_names(port, "a.test")
    assert "Test CA" in names, out[-1500:]
    out, names = ca_names(port, "b.test")
    assert "Test CA" not in names, out[-1500:]
    assert "No client certificate CA names sent" in out, out[-1500:]


def test_client_vars_upstream(env):
    p = pki(env)
    port = env.port()
    with be.Backend() as b:
        env.start(env.conf("""
            upstream app { server 127.0.0.1:%d; }
            server { listen 127.0.0.1:%d ssl; server_name a.test; %s
              ssl_verify_client optional; ssl_client_certificate %s;
              location / { proxy_pass http://app;
                proxy_set_header X-Client-Verify $ssl_client_verify;
                proxy_set_header X-Client-DN $ssl_client_s_dn; } }
        """ % (b.port, port, env.tls("a_rsa"), p["ca.crt"])), port=port)
        st, body = get(port, "alice", path="/echo")
        seen = json.loads(body)["headers"]
        assert seen["x-client-verify"] == ["SUCCESS"], seen
        assert seen["x-client-dn"] == ["CN=alice,O=tlsgate test"], seen
        st, body = get(port, None, path="/echo")
        seen = json.loads(body)["headers"]
        # an empty value is not passed (nginx)
        assert seen["x-client-verify"] == ["NONE"] and "x-client-dn" not in seen, seen


def test_config_errors(env):
    port = env.port()
    c = env.conf(server(env, port, "a.test", "ssl_verify_client on;"))
    p = H.run([H.binary(), "-t", "-c", c], timeout=30)
    assert p.returncode != 0
    assert "ssl_verify_client: no ssl_client_certificate or ssl_trusted_certificate" in \
        p.stdout + p.stderr, p.stdout + p.stderr
    c = env.conf(server(env, port, "a.test", "ssl_verify_client maybe;"))
    p = H.run([H.binary(), "-t", "-c", c], timeout=30)
    assert "must be on, off, optional or optional_no_ca" in p.stdout + p.stderr
    c = env.conf(server(env, port, "a.test", "ssl_verify_client on; ssl_client_certificate "
                        "%s/missing.pem;" % env.dir))
    p = H.run([H.binary(), "-t", "-c", c], timeout=30)
    assert p.returncode != 0 and "ssl_client_certificate: cannot load" in p.stdout + p.stderr, \
        p.stdout + p.stderr


if __name__ == "__main__":
    H.main(globals())
