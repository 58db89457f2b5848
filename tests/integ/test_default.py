#!/usr/bin/env python3
"""The embedded default: `tlsgate` without -c serves https://127.0.0.1:8443/ with
self-signed certificates created in $TLSGATE_STATE_DIR, reused on the next start; SIGINT
stops it cleanly. Skipped (exit 0, "SKIPPED") when port 8443 is taken.

Usage: python3 tests/integ/test_default.py BIN [TEST...]
"""
import hashlib
import os
import re
import signal
import socket
import ssl
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness as h  # noqa: E402

# Checks that fail because the server is wrong (see the report); remove when fixed.
KNOWN_FAILURES = {}

PORT = 8443
FILES = ("default-rsa.crt", "default-rsa.key", "default-ecdsa.crt", "default-ecdsa.key")


def port_free():
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as servers do: TIME_WAIT is ok
    try:
        s.bind(("127.0.0.1", PORT))
        return True
    except OSError:
        return False
    finally:
        s.close()


def start(env):
    if not port_free() or h.port_accepts(PORT):
        h.skip("port 8443 is taken: the embedded default cannot be tested here")
    if os.path.exists("/etc/tlsgate/tlsgate.conf"):
        h.skip("/etc/tlsgate/tlsgate.conf exists: tlsgate would not use its default")
    cwd = env.path("cwd")
    os.makedirs(cwd, exist_ok=True)
    srv = env.start(None, cwd=cwd, log="")
    srv.log = srv.out.name  # the default logs to stderr: check that for [crit] etc.
    srv.wait_port(PORT, timeout=20)  # RSA key generation on the first start
    return srv


def digests(env):
    out = {}
    for f in FILES:
        with open(os.path.join(env.state, f), "rb") as fh:
            out[f] = hashlib.sha256(fh.read()).hexdigest()
    return out


def served_cert_der():
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    with socket.create_connection(("127.0.0.1", PORT), timeout=5) as raw:
        with ctx.wrap_socket(raw, server_hostname="localhost") as s:
            return s.getpeercert(binary_form=True)


def pem_der(path):
    with open(path) as f:
        return ssl.PEM_cert_to_DER_cert(f.read())


def check_serving(env):
    base = "https://127.0.0.1:%d" % PORT
    st, hd, body = env.get(base + "/")
    assert st == 200 and b"tlsgate is serving" in body, (st, body[:200])
    assert hd.get("content-type", "").startswith("text/html"), hd
    st, hd, body = env.get(base + "/0kb.bin")
    assert st == 200 and body == b"" and hd.get("content-length") == "0", (st, hd)
    st, hd, body = env.get(base + "/1kb.bin")
    assert st == 200 and len(body) == 1024 and hd.get("content-length") == "1024", (st, hd)
    st, hd, body = env.get(base + "/status")
    assert st == 200 and re.match(r"Active connections: \d+ \nserver accepts handled requests\n",
                                  body.decode()), body
    der = served_cert_der()
    assert der in (pem_der(os.path.join(env.state, "default-rsa.crt")),
                   pem_der(os.path.join(env.state, "default-ecdsa.crt"))), \
        "the served certificate is not one of the state directory's"


def stop_sigint(env, srv):
    rc = srv.stop(signal.SIGINT, timeout=10)
    assert rc == 0, "exit status %s after SIGINT:\n%s" % (rc, srv.output())
    assert not os.path.exists(os.path.join(env.state, "tlsgate.pid")), "pid file left behind"
    assert not h.children_in_group(srv.pid), "processes left behind"


def test_embedded_default(env):
    srv = start(env)
    check_serving(env)
    for f in FILES:
        assert os.path.isfile(os.path.join(env.state, f)), "missing %s in the state dir" % f
    for f in ("default-rsa.key", "default-ecdsa.key"):
        mode = os.stat(os.path.join(env.state, f)).st_mode & 0o777
        assert mode == 0o600, "%s has mode %o, expected 600" % (f, mode)
    p = h.run(["openssl", "x509", "-noout", "-text", "-in",
               os.path.join(env.state, "default-rsa.crt")], timeout=10, check=True)
    assert "2048 bit" in p.stdout, p.stdout
    p = h.run(["openssl", "x509", "-noout", "-text", "-in",
               os.path.join(env.state, "default-ecdsa.crt")], timeout=10, check=True)
    assert "prime256v1" in p.stdout or "P-256" in p.stdout, p.stdout
    with open(os.path.join(env.state, "tlsgate.pid")) as f:
        assert int(f.read()) == srv.pid
    before = digests(env)
    stop_sigint(env, srv)

    # the second start reuses the certificates and keys
    srv = start(env)
    check_serving(env)
    assert digests(env) == before, "the certificates were regenerated on the second start"
    stop_sigint(env, srv)


if __name__ == "__main__":
    h.main(globals())
