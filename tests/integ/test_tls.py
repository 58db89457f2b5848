#!/usr/bin/env python3
"""openssl s_client against tlsgate: TLS 1.2/1.3, SNI and the default server, RSA vs
ECDSA certificate selection, ALPN, ssl_protocols, client-initiated renegotiation.

Usage: python3 tests/integ/test_tls.py BIN [TEST...]
"""
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness as h  # noqa: E402

# Checks that fail because the server is wrong (see the report); remove when fixed.
KNOWN_FAILURES = {}

RSA_SIGALGS = "RSA-PSS+SHA256:rsa_pkcs1_sha256"
EC_SIGALGS = "ECDSA+SHA256"


def serve(env, http_extra=""):
    """b.test first, a.test (RSA + ECDSA) second with default_server; a TLS 1.3-only
    server on a second port. Returns (port, port13)."""
    port, port13 = env.port(), env.port()
    conf = env.conf("""
    %s
    server {
        listen 127.0.0.1:%d ssl;
        server_name b.test;
        %s
        location = /who { return 200 "b"; }
    }
    server {
        listen 127.0.0.1:%d ssl default_server;
        server_name a.test;
        %s
        location = /who { return 200 "a"; }
    }
    server {
        listen 127.0.0.1:%d ssl;
        server_name a.test;
        ssl_protocols TLSv1.3;
        %s
        location = /who { return 200 "13"; }
    }
""" % (http_extra, port, env.tls("b_rsa"), port, env.tls("a_rsa", "a_ec"), port13,
       env.tls("a_rsa")))
    env.start(conf, port=port)
    h.wait_until(lambda: h.port_accepts(port13), 5, what="second port")
    return port, port13


def sclient(port, *args, request="/who", host="a.test", timeout=15):
    """Handshake, send one request with Connection: close, read until the server closes.
    Returns (exit code, stdout+stderr)."""
    stdin = ("GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n" % (request, host)
             if request else "")
    cmd = ["openssl", "s_client", "-connect", "127.0.0.1:%d" % port]
    if request:
        cmd.append("-ign_eof")
    p = h.run(cmd + list(args), input=stdin, timeout=timeout)
    return p.returncode, p.stdout + p.stderr


def field(out, name):
    m = re.search(r"^\s*%s\s*:\s*(.+?)\s*$" % re.escape(name), out, re.M)
    return m.group(1) if m else None


def subject_cn(out):
    m = re.search(r"^subject=.*CN\s*=\s*([^,/\s]+)", out, re.M)
    return m.group(1) if m else None


def body_of(out):
    """(status, body) of the HTTP response s_client printed, or (None, None)."""
    m = re.search(r"^HTTP/1\.1 (\d{3}) [^\n]*\n(.*?)\r?\n\r?\n", out, re.S | re.M)
    if not m:
        return None, None
    cl = re.search(r"^Content-Length: (\d+)", m.group(2), re.M | re.I)
    start = m.end()
    return int(m.group(1)), out[start:start + int(cl.group(1) if cl else 0)]


def short(out):
    """s_client output without certificate PEM and session ticket dumps, for messages."""
    out = re.sub(r"-----BEGIN CERTIFICATE-----.*?-----END CERTIFICATE-----\n", "", out,
                 flags=re.S)
    out = re.sub(r"(?m)^    [0-9a-f]{4} - .*\n", "", out)
    return "\n" + out[-3000:]


def test_tls12_and_tls13(env):
    port, _ = serve(env)
    rc, out = sclient(port, "-servername", "a.test", "-tls1_2")
    assert rc == 0, short(out)
    assert field(out, "Protocol") == "TLSv1.2", short(out)
    cipher = field(out, "Cipher")
    assert cipher and cipher.startswith("ECDHE-") and ("GCM" in cipher or "CHACHA" in cipher), \
        short(out)
    assert re.search(r"^Server Temp Key: X25519\b", out, re.M), short(out)
    assert body_of(out) == (200, "a"), short(out)
    rc, out = sclient(port, "-servername", "a.test", "-tls1_3")
    assert rc == 0, short(out)
    assert field(out, "Protocol") == "TLSv1.3", short(out)
    assert field(out, "Cipher") in ("TLS_AES_256_GCM_SHA384", "TLS_AES_128_GCM_SHA256",
                                    "TLS_CHACHA20_POLY1305_SHA256"), out
    assert re.search(r"^Server Temp Key: X25519\b", out, re.M), short(out)
    assert body_of(out) == (200, "a"), short(out)


def test_sni_selects_server(env):
    port, _ = serve(env)
    for ver in ("-tls1_2", "-tls1_3"):
        rc, out = sclient(port, "-servername", "b.test", ver, host="b.test")
        assert rc == 0 and subject_cn(out) == "b.test", (ver, short(out))
        assert body_of(out) == (200, "b"), (ver, short(out))
        rc, out = sclient(port, "-servername", "a.test", ver)
        assert rc == 0 and subject_cn(out) == "a.test", (ver, short(out))
        assert body_of(out) == (200, "a"), (ver, short(out))


def test_no_sni_default_server(env):
    port, _ = serve(env)
    # a.test is second in the file but says default_server
    rc, out = sclient(port, "-noservername", "-tls1_3")
    assert rc == 0 and subject_cn(out) == "a.test", short(out)
    assert body_of(out) == (200, "a"), short(out)
    # an unknown name: the default server as well
    rc, out = sclient(port, "-servername", "c.test", "-tls1_2", host="a.test")
    assert rc == 0 and subject_cn(out) == "a.test", short(out)


def test_rsa_vs_ecdsa_selection(env):
    port, _ = serve(env)
    for ver in ("-tls1_2", "-tls1_3"):
        rc, out = sclient(port, "-servername", "a.test", ver, "-sigalgs", RSA_SIGALGS)
        assert rc == 0, (ver, short(out))
        assert "Server public key is 2048 bit" in out, (ver, short(out))
        assert field(out, "Peer signature type") in ("RSA-PSS", "RSA"), (ver, short(out))
        if ver == "-tls1_2":
            assert field(out, "Cipher").startswith("ECDHE-RSA-"), short(out)
        rc, out = sclient(port, "-servername", "a.test", ver, "-sigalgs", EC_SIGALGS)
        assert rc == 0, (ver, short(out))
        assert "Server public key is 256 bit" in out, (ver, short(out))
        assert field(out, "Peer signature type") == "ECDSA", (ver, short(out))
        if ver == "-tls1_2":
            assert field(out, "Cipher").startswith("ECDHE-ECDSA-"), short(out)
        assert body_of(out) == (200, "a"), (ver, short(out))


def test_alpn(env):
    port, _ = serve(env)
    for ver in ("-tls1_2", "-tls1_3"):
        rc, out = sclient(port, "-servername", "a.test", ver, "-alpn", "http/1.1")
        assert rc == 0 and "ALPN protocol: http/1.1" in out, (ver, short(out))
        rc, out = sclient(port, "-servername", "a.test", ver, "-alpn", "h2,http/1.1")
        assert rc == 0 and "ALPN protocol: http/1.1" in out, (ver, short(out))
        rc, out = sclient(port, "-servername", "a.test", ver, "-alpn", "h2", request=None)
        assert rc != 0, (ver, short(out))
        assert re.search(r"no application protocol|alert number 120", out), (ver, short(out))
        assert "ALPN protocol: h2" not in out, short(out)
    # no ALPN at all is fine
    rc, out = sclient(port, "-servername", "a.test", "-tls1_3")
    assert rc == 0 and "No ALPN negotiated" in out, short(out)


def test_tls13_only_refuses_tls12(env):
    _, port13 = serve(env)
    rc, out = sclient(port13, "-servername", "a.test", "-tls1_2", request=None)
    assert rc != 0, short(out)
    assert re.search(r"protocol version|unsupported protocol|alert number 70", out), short(out)
    assert not re.search(r"^New, TLSv1\.2, Cipher is (?!\(NONE\))", out, re.M), short(out)
    rc, out = sclient(port13, "-servername", "a.test", "-tls1_3")
    assert rc == 0 and field(out, "Protocol") == "TLSv1.3", short(out)
    assert body_of(out) == (200, "13"), short(out)


def test_client_renegotiation_refused(env):
    port, _ = serve(env)
    p = subprocess.Popen(["openssl", "s_client", "-connect", "127.0.0.1:%d" % port,
                          "-servername", "a.test", "-tls1_2"],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        time.sleep(0.5)  # the handshake
        p.stdin.write(b"R\n")
        p.stdin.flush()
        try:
            p.wait(timeout=5)  # refused: s_client fails and exits by itself
        except subprocess.TimeoutExpired:
            pass
        out, _ = p.communicate(timeout=10)
    finally:
        h.reap(p)
    out = out.decode("utf-8", "replace")
    assert "RENEGOTIATING" in out, short(out)
    # the server must answer the new ClientHello with no_renegotiation (or close); a
    # second handshake would verify the certificate again (s_client's callback runs twice
    # per handshake)
    assert out.count("verify return:") <= 2, short(out)
    assert re.search(r"no renegotiation|alert number 100|^closed$", out, re.M), short(out)


if __name__ == "__main__":
    h.main(globals())
