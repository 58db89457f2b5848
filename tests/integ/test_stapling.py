#!/usr/bin/env python3
"""OCSP stapling from files (ssl_stapling, ssl_stapling_file): a response made offline by
`openssl ocsp -index` is stapled to clients that ask (`s_client -status`), only with the
certificate it is for (RSA + ECDSA in one server); after the file is replaced and a
reload (HUP) the new response is stapled; a malformed file, a response for another
certificate and two responses for one certificate are clear `-t` errors; a revoked
status, an unsuccessful responseStatus, a signature that does not verify with the chain's
CA, an expired response (not stapled) and one from the future are warnings.

Usage: python3 tests/integ/test_stapling.py BIN [TEST...]
"""
import os
import re
import signal
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness as h  # noqa: E402

KNOWN_FAILURES = {}


def ossl(*args, cwd=None):
    p = h.run(["openssl", *args], timeout=60, cwd=cwd)
    assert p.returncode == 0, "openssl %s: %s" % (" ".join(args), p.stderr)
    return p


class PKI:
    """A CA (ECDSA) and a leaf for a.test (RSA, serial 0x1234, issued by the CA), in d."""

    def __init__(self, d, serial="1234"):
        self.d = d
        self.serial = serial
        os.makedirs(d, exist_ok=True)
        self.ca, self.ca_key = os.path.join(d, "ca.crt"), os.path.join(d, "ca.key")
        self.leaf, self.leaf_key = os.path.join(d, "leaf.crt"), os.path.join(d, "leaf.key")
        self.chain = os.path.join(d, "chain.crt")
        ossl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
             "-keyout", self.ca_key, "-out", self.ca, "-subj", "/CN=tlsgate test CA",
             "-days", "2", "-addext", "basicConstraints=critical,CA:TRUE",
             "-addext", "keyUsage=critical,keyCertSign,cRLSign")
        csr = os.path.join(d, "leaf.csr")
        ossl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", self.leaf_key, "-out", csr,
             "-subj", "/CN=a.test")
        ext = os.path.join(d, "ext")
        with open(ext, "w") as f:
            f.write("subjectAltName=DNS:a.test\n")
        ossl("x509", "-req", "-in", csr, "-CA", self.ca, "-CAkey", self.ca_key,
             "-set_serial", "0x" + serial, "-out", self.leaf, "-days", "2", "-extfile", ext)
        with open(self.chain, "w") as f:
            f.write(open(self.leaf).read() + open(self.ca).read())

    def response(self, out, status="V", signer=None):
        """Answer for the leaf with status V (good) or R (revoked) into out (DER), signed
        by this CA or by signer (another PKI's CA: a signature that does not verify)."""
        signer = signer or self
        index = os.path.join(self.d, "index-%s.txt" % status)
        rev = "261101000000Z" if status == "R" else ""
        with open(index, "w") as f:
            f.write("%s\t301231235959Z\t%s\t%s\tunknown\t/CN=a.test\n" % (status, rev,
                                                                          self.serial))
        ossl("ocsp", "-index", index, "-rsigner", signer.ca, "-rkey", signer.ca_key, "-CA", self.ca,
             "-issuer", self.ca, "-cert", self.leaf, "-no_nonce", "-ndays", "1",
             "-respout", out)
        return out


def status_of(port, *args):
    p = h.run(["openssl", "s_client", "-connect", "127.0.0.1:%d" % port, "-servername",
               "a.test", "-status", *args], input="", timeout=20)
    out = p.stdout + p.stderr
    assert "CONNECTED" in out and "Cipher is" in out, out
    if "OCSP response: no response sent" in out:
        return None
    m = re.search(r"Cert Status: (\w+)", out)
    assert m, "no OCSP response status in:\n" + out
    sn = re.search(r"Serial Number: (\w+)", out)
    return m.group(1), sn.group(1) if sn else None


def conf(env, port, pki, files, stapling="on", extra_certs="", name="tlsgate.conf"):
    lines = "ssl_stapling %s;\n" % stapling
    lines += "".join("        ssl_stapling_file %s;\n" % f for f in files)
    return env.conf("""
    server {
        listen 127.0.0.1:%d ssl;
        server_name a.test;
        ssl_certificate %s; ssl_certificate_key %s;
        %s
        %s
        root %s;
    }""" % (port, pki.chain, pki.leaf_key, extra_certs, lines, env.html), name=name)


def check(conf_path, env):
    return h.run([h.binary(), "-t", "-c", conf_path], timeout=30,
                 env=dict(os.environ, TLSGATE_STATE_DIR=env.state))


def test_staple_and_reload(env):
    pki = PKI(env.path("pki"))
    resp = pki.response(env.path("ocsp.der"))
    port = env.port()
    # the ECDSA certificate of a.test (self-signed) has no response: it staples nothing
    c = conf(env, port, pki, [resp], extra_certs=env.tls("a_ec"))
    t = check(c, env)
    assert t.returncode == 0, t.stderr
    assert "[warn]" not in t.stderr, t.stderr  # signature checked against the chain's CA
    srv = env.start(c, port=port)
    for v in ("-tls1_3", "-tls1_2"):
        assert status_of(port, v, "-sigalgs", "RSA-PSS+SHA256:RSA+SHA256") == ("good", "1234"), v
    assert status_of(port, "-tls1_3", "-sigalgs", "ECDSA+SHA256") is None
    assert status_of(port, "-tls1_2", "-sigalgs", "ECDSA+SHA256") is None
    # replace the file (atomically, as an updater would) and reload: the new one is stapled
    pki.response(env.path("ocsp.new"), status="R")
    os.rename(env.path("ocsp.new"), resp)
    srv.send(signal.SIGHUP)
    h.wait_until(lambda: status_of(port, "-sigalgs", "RSA-PSS+SHA256") == ("revoked", "1234"),
                 10, interval=0.2, what="the revoked response to be stapled after HUP")
    assert "is revoked" in srv.log_text() + srv.output(), srv.log_text()
    # a broken file on reload: the old configuration keeps stapling
    env.write(resp, b"\x30\x03\x0a\x01")
    srv.send(signal.SIGHUP)
    h.wait_until(lambda: "reload failed" in srv.log_text(), 10, what="the reload to fail")
    assert "is not a DER OCSP response" in srv.log_text(), srv.log_text()
    assert status_of(port, "-sigalgs", "RSA-PSS+SHA256") == ("revoked", "1234")
    env.allow_log = True  # the failed reload logs [emerg]


def test_not_asked_off_and_inherited(env):
    pki = PKI(env.path("pki"))
    resp = pki.response(env.path("ocsp.der"))
    port = env.port()
    # ssl_stapling off: the file is ignored (as nginx), even a missing one is not read
    c = conf(env, port, pki, [env.path("missing.der")], stapling="off")
    assert check(c, env).returncode == 0
    # given at http level, inherited by the server
    port2 = env.port()
    c2 = env.conf("""
    ssl_stapling on;
    ssl_stapling_file %s;
    server {
        listen 127.0.0.1:%d ssl;
        ssl_certificate %s; ssl_certificate_key %s;
        root %s;
    }""" % (resp, port2, pki.chain, pki.leaf_key, env.html), name="http.conf")
    env.start(c2, port=port2)
    assert status_of(port2) == ("good", "1234")
    # without -status the client gets a normal handshake (no status_request, no staple)
    p = h.run(["openssl", "s_client", "-connect", "127.0.0.1:%d" % port2, "-msg"], input="",
              timeout=20)
    assert "Cipher is" in p.stdout and "CertificateStatus" not in p.stdout, p.stdout


def test_http_level_file_and_other_servers(env):
    """An http-level ssl_stapling_file goes with every server: one whose certificates the
    response is not for staples nothing (no error, as nginx accepts it), the one it is
    for staples it. A server's own file without ssl_stapling on is warned about."""
    pki = PKI(env.path("pki"))
    resp = pki.response(env.path("ocsp.der"))
    port, port_b = env.port(), env.port()
    c = env.conf("""
    ssl_stapling on;
    ssl_stapling_file %s;
    server {
        listen 127.0.0.1:%d ssl;
        server_name a.test;
        ssl_certificate %s; ssl_certificate_key %s;
        root %s;
    }
    server {
        listen 127.0.0.1:%d ssl;
        server_name b.test;
        %s
        root %s;
    }""" % (resp, port, pki.chain, pki.leaf_key, env.html, port_b, env.tls("b_rsa"), env.html),
                 name="two.conf")
    t = check(c, env)
    assert t.returncode == 0, t.stderr
    env.start(c, port=port)
    h.wait_until(lambda: h.port_accepts(port_b), 10, what="b.test's port")
    assert status_of(port) == ("good", "1234")
    assert status_of(port_b) is None
    c2 = conf(env, env.port(), pki, [resp], stapling="off", name="off.conf")
    t = check(c2, env)
    assert t.returncode == 0 and "ignored without" in t.stderr, t.stderr


def test_sni_switch(env):
    """The response of the server chosen by SNI, not of the default server of the port."""
    pki = PKI(env.path("pki"))
    resp = pki.response(env.path("ocsp.der"))
    port = env.port()
    c = env.conf("""
    server {
        listen 127.0.0.1:%d ssl default_server;
        server_name b.test;
        %s
        root %s;
    }
    server {
        listen 127.0.0.1:%d ssl;
        server_name a.test;
        ssl_certificate %s; ssl_certificate_key %s;
        ssl_stapling on;
        ssl_stapling_file %s;
        root %s;
    }""" % (port, env.tls("b_rsa"), env.html, port, pki.chain, pki.leaf_key, resp, env.html))
    env.start(c, port=port)
    for v in ("-tls1_3", "-tls1_2"):
        assert status_of(port, v) == ("good", "1234"), v  # SNI a.test
        p = h.run(["openssl", "s_client", "-connect", "127.0.0.1:%d" % port, "-servername",
                   "b.test", "-status", v], input="", timeout=20)
        assert "CN = b.test" in p.stdout and "OCSP response: no response sent" in p.stdout, \
            p.stdout


def test_config_errors(env):
    pki = PKI(env.path("pki"))
    other = PKI(env.path("other"), serial="99")
    good = pki.response(env.path("good.der"))
    port = env.port()
    cases = [
        (env.write("garbage.der", b"not an OCSP response at all\n"),
         "is not a DER OCSP response"),
        (env.write("empty.der", b""), "empty file"),
        (env.write("trailing.der", open(good, "rb").read() + b"\0"),
         "1 bytes after the DER OCSP response"),
        (env.path("missing.der"), "cannot open: No such file or directory"),
        (other.response(env.path("other.der")),
         "the OCSP response is for none of the server's certificates"),
    ]
    for path, want in cases:
        c = conf(env, port, pki, [path])
        p = check(c, env)
        assert p.returncode == 1, (path, p.stderr)
        assert want in p.stderr and "ssl_stapling_file" in p.stderr and path in p.stderr, \
            (want, p.stderr)
        assert "test failed" in p.stderr
    c = conf(env, port, pki, [good, good])
    p = check(c, env)
    assert p.returncode == 1 and "a second OCSP response for the certificate" in p.stderr, \
        p.stderr
    # warnings, not errors: a revoked status, an unsuccessful responseStatus ("tryLater":
    # OCSPResponse { responseStatus 3 }), ssl_stapling on without a file
    revoked = pki.response(env.path("revoked.der"), status="R")
    p = check(conf(env, port, pki, [revoked]), env)
    assert p.returncode == 0 and "[warn]" in p.stderr and "is revoked" in p.stderr, p.stderr
    forged = pki.response(env.path("forged.der"), signer=other)
    p = check(conf(env, port, pki, [forged]), env)
    assert p.returncode == 0 and "the signature does not verify with the issuer" in p.stderr, \
        p.stderr
    trylater = env.write("trylater.der", b"\x30\x03\x0a\x01\x03")
    p = check(conf(env, port, pki, [trylater]), env)
    assert p.returncode == 0 and "responseStatus is trylater: not stapled" in p.stderr, p.stderr
    p = check(conf(env, port, pki, []), env)
    assert p.returncode == 0 and "no \"ssl_stapling_file\" given" in p.stderr, p.stderr
    # and the server starts with the unsuccessful response, stapling nothing
    srv = env.start(conf(env, port, pki, [trylater]), port=port)
    assert status_of(port) is None
    assert "not stapled" in srv.output(), srv.output()


def test_expired_and_future(env):
    """Times `openssl ocsp` cannot make, from the ocsp_resp helper (OCSP_RESP, CTest sets
    it): an expired response is a warning and is not stapled; thisUpdate in the future is
    a warning (clock skew) and is stapled."""
    tool = os.environ.get("OCSP_RESP") or os.path.join(os.path.dirname(h.binary()), "ocsp_resp")
    if not os.access(tool, os.X_OK):
        raise h.SkipTest("no ocsp_resp helper (build the ocsp_resp target)")
    pki = PKI(env.path("pki"))
    def make(name, this_s, next_s):
        out = env.path(name)
        p = h.run([tool, pki.ca, pki.ca_key, pki.leaf, out, str(this_s), str(next_s)])
        assert p.returncode == 0, p.stderr
        return out
    expired = make("expired.der", -7200, -3600)
    future = make("future.der", 3600, 7200)
    port = env.port()
    p = check(conf(env, port, pki, [expired]), env)
    assert p.returncode == 0 and "expired (nextUpdate" in p.stderr, p.stderr
    srv = env.start(conf(env, port, pki, [expired]), port=port)
    assert status_of(port) is None
    p = check(conf(env, port, pki, [future], name="future.conf"), env)
    assert p.returncode == 0 and "is in the future" in p.stderr, p.stderr
    os.rename(future, expired)
    srv.send(signal.SIGHUP)
    h.wait_until(lambda: status_of(port) == ("good", "1234"), 10, interval=0.2,
                 what="the response from the future to be stapled after HUP")


if __name__ == "__main__":
    h.main(globals())
