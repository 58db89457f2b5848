"""What a matrix of clients negotiates with tlsgate, against a recorded reference (#11).

The handshake-capacity work of issue #11 (prebuilt certificate chains, the provider's
timer, socket options) must not change what clients get. Each client of MATRIX (openssl
s_client with one protocol, cipher, group, signature-algorithm, SNI or ALPN choice) runs
against tlsgate serving RSA-2048 and ECDSA P-256 certificates side by side, twice: with
OpenSSL's default provider and with the tlsgate provider (`ssl_provider tlsgate;
ssl_async on;`). Each run is reduced to one line: protocol, cipher, server temp key,
signature type and digest, certificate (CN, key type), chain length, ALPN, number of
session tickets, or the alert of a failed handshake. Both servers must give the lines of
tests/integ/negotiation.golden, recorded with tlsgate as of commit 0e288ca (before #11's
changes): NEGOTIATION_WRITE_GOLDEN=1 rewrites it from the binary under test (do that only
for an intended change, and say so in the commit).

Usage: python3 tests/integ/test_negotiation.py BIN [test...]
"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

GOLDEN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "negotiation.golden")

# name -> s_client options (besides -connect, -servername a.test unless -noservername)
MATRIX = [
    ("tls13-default", ["-tls1_3"]),
    ("tls13-aes128", ["-tls1_3", "-ciphersuites", "TLS_AES_128_GCM_SHA256"]),
    ("tls13-chacha", ["-tls1_3", "-ciphersuites", "TLS_CHACHA20_POLY1305_SHA256"]),
    ("tls13-p256", ["-tls1_3", "-groups", "P-256"]),
    ("tls13-p384", ["-tls1_3", "-groups", "P-384"]),
    ("tls13-x448", ["-tls1_3", "-groups", "X448"]),
    ("tls13-ffdhe2048", ["-tls1_3", "-groups", "ffdhe2048"]),
    ("tls13-p521-p256", ["-tls1_3", "-groups", "P-521:P-256"]),
    ("tls13-sig-ecdsa", ["-tls1_3", "-sigalgs", "ecdsa_secp256r1_sha256"]),
    ("tls13-sig-pss", ["-tls1_3", "-sigalgs", "rsa_pss_rsae_sha256"]),
    ("tls13-sig-pss384", ["-tls1_3", "-sigalgs", "rsa_pss_rsae_sha384:ecdsa_secp384r1_sha384"]),
    ("tls13-sig-pkcs1-only", ["-tls1_3", "-sigalgs", "rsa_pkcs1_sha256"]),
    ("tls13-no-sni", ["-tls1_3", "-noservername"]),
    ("tls13-alpn-h11", ["-tls1_3", "-alpn", "h2,http/1.1"]),
    ("tls13-alpn-h2-only", ["-tls1_3", "-alpn", "h2"]),
    ("tls12-default", ["-tls1_2"]),
    ("tls12-ecdhe-rsa-aes128", ["-tls1_2", "-cipher", "ECDHE-RSA-AES128-GCM-SHA256"]),
    ("tls12-ecdhe-rsa-aes256", ["-tls1_2", "-cipher", "ECDHE-RSA-AES256-GCM-SHA384"]),
    ("tls12-ecdhe-ecdsa", ["-tls1_2", "-cipher", "ECDHE-ECDSA-AES256-GCM-SHA384"]),
    ("tls12-ecdhe-ecdsa-chacha", ["-tls1_2", "-cipher", "ECDHE-ECDSA-CHACHA20-POLY1305"]),
    ("tls12-rsa-kx", ["-tls1_2", "-cipher", "AES256-GCM-SHA384"]),
    ("tls12-dhe", ["-tls1_2", "-cipher", "DHE-RSA-AES256-GCM-SHA384"]),
    ("tls12-cbc", ["-tls1_2", "-cipher", "ECDHE-RSA-AES128-SHA"]),
    ("tls12-p256", ["-tls1_2", "-groups", "P-256"]),
    ("tls12-sig-pkcs1", ["-tls1_2", "-sigalgs", "RSA+SHA256"]),
    ("tls12-sig-ecdsa-sha1", ["-tls1_2", "-sigalgs", "ECDSA+SHA1", "-cipher", "ECDHE-ECDSA-AES128-GCM-SHA256"]),
    ("tls11", ["-tls1_1", "-cipher", "DEFAULT:@SECLEVEL=0"]),
]

KEYS = [
    ("Protocol", re.compile(r"^\s*Protocol\s*:\s*(\S+)", re.M)),
    ("cipher", re.compile(r"^New, \S+, Cipher is (\S+)", re.M)),
    ("temp key", re.compile(r"^Server Temp Key: (.+)$", re.M)),
    ("sig", re.compile(r"^Peer signature type: (\S+)", re.M)),
    ("digest", re.compile(r"^Peer signing digest: (\S+)", re.M)),
    ("cert", re.compile(r"^Server public key is (\d+) bit", re.M)),
    ("alpn", re.compile(r"^ALPN protocol: (\S+)", re.M)),
]


def summarize(out):
    """One line of what an s_client run negotiated, from its output."""
    if not re.search(r"^New, \S+, Cipher is (?!\(NONE\))", out, re.M):
        alert = re.search(r"(alert [a-z ]+|no protocols available|no shared cipher|"
                          r"wrong version number|unsupported protocol|sslv3 alert [a-z ]+|"
                          r"tlsv1 alert [a-z ]+)", out)
        return "failed: " + (alert.group(1).strip() if alert else "no handshake")
    parts = []
    for name, rx in KEYS:
        m = rx.search(out)
        parts.append("%s=%s" % (name, m.group(1).strip() if m else "-"))
    subj = re.search(r"^subject=.*?CN ?= ?([^,\n]+)", out, re.M)
    parts.append("cn=%s" % (subj.group(1).strip() if subj else "-"))
    depth = len(re.findall(r"^ ?\d+ s:", out, re.M))
    parts.append("chain=%d" % depth)
    parts.append("tickets=%d" % len(re.findall(r"Post-Handshake New Session Ticket arrived", out)
                                      if "TLSv1.3" in out else
                                      re.findall(r"TLS session ticket lifetime hint", out)))
    return " ".join(parts)


def run_matrix(env, port):
    lines = []
    for name, args in MATRIX:
        cmd = ["openssl", "s_client", "-connect", "127.0.0.1:%d" % port, "-ign_eof"] + args
        if "-noservername" not in args:
            cmd += ["-servername", "a.test"]
        p = harness.run(cmd, timeout=20,
                        input="GET /1kb.bin HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n")
        lines.append("%s: %s" % (name, summarize(p.stdout + p.stderr)))
    return lines


def server(env, extra_main="", extra_server=""):
    port = env.port()
    conf = env.simple_conf(port, certs=("a_rsa", "a_ec"), main=extra_main,
                           server_extra="ssl_protocols TLSv1.1 TLSv1.2 TLSv1.3; " + extra_server)
    env.write("html/1kb.bin", b"x" * 1024)
    env.start(conf, port=port)
    return port


def check(lines, what):
    if os.environ.get("NEGOTIATION_WRITE_GOLDEN") == "1":
        with open(GOLDEN, "w") as f:
            f.write("# tests/integ/test_negotiation.py: what each client negotiates (see its docstring)\n")
            f.write("\n".join(lines) + "\n")
        return
    with open(GOLDEN) as f:
        want = [ln.rstrip("\n") for ln in f if ln.strip() and not ln.startswith("#")]
    diff = ["  %s\n    want %s\n    got  %s" % (w.split(":")[0], w, g)
            for w, g in zip(want, lines) if w != g]
    assert len(want) == len(lines), "%s: %d lines, golden has %d" % (what, len(lines), len(want))
    assert not diff, "%s negotiates differently from negotiation.golden:\n%s" % (what, "\n".join(diff))


def test_default_provider(env):
    port = server(env)
    lines = run_matrix(env, port)
    # the matrix exercises what it claims: TLS 1.3 and 1.2 handshakes of both key types
    assert any("Protocol=TLSv1.3" in ln and "sig=ECDSA" in ln for ln in lines), lines
    assert any("Protocol=TLSv1.2" in ln and "sig=RSA-PSS" in ln for ln in lines), lines
    assert any(ln.endswith("failed: " + ln.split("failed: ")[-1]) and "failed:" in ln
               for ln in lines), "no client of the matrix was refused: %s" % lines
    check(lines, "tlsgate (default provider)")


def test_tlsgate_provider(env):
    if os.environ.get("NEGOTIATION_WRITE_GOLDEN") == "1":
        harness.skip("the golden file is written from the default provider only")
    port = server(env, extra_main='ssl_provider tlsgate;\nssl_propquery "?provider=tlsgate";',
                  extra_server="ssl_async on;")
    check(run_matrix(env, port), "tlsgate + provider (ssl_async on)")


if __name__ == "__main__":
    harness.main(globals())
