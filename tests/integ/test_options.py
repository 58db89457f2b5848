#!/usr/bin/env python3
"""Directives and options the other files do not reach: reuseport sockets across a
reload, ssl_conf_command, ssl_prefer_server_ciphers, session resumption (builtin cache,
tickets) and its confinement to one server block (nginx#493), plain-HTTP listeners, -g and -p.

Usage: python3 tests/integ/test_options.py BIN [TEST...]
"""
import os
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness as h  # noqa: E402

KNOWN_FAILURES = {}


def sclient(port, *args, timeout=15):
    p = h.run(["openssl", "s_client", "-connect", "127.0.0.1:%d" % port, "-ign_eof", *args],
              input="GET / HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n",
              timeout=timeout)
    return p.stdout + p.stderr


def body(env, port, path):
    status, _, b = env.get("https://a.test:%d%s" % (port, path))
    assert status == 200, (status, b)
    return b


def field(out, name):
    m = re.search(r"^\s*%s\s*:\s*(.+?)\s*$" % re.escape(name), out, re.M)
    return m.group(1) if m else None


def test_reuseport_two_workers_and_reload(env):
    port = env.port()
    conf = env.conf("""
    server {
        listen 127.0.0.1:%d ssl reuseport backlog=1024;
        server_name a.test;
        %s
        location = /v { return 200 "one"; }
    }""" % (port, env.tls("a_rsa")), main="worker_processes 2;")
    s = env.start(conf, port=port)
    s.wait_workers(2)
    for _ in range(20):  # both reuseport sockets answer
        assert body(env, port, "/v") == b"one"
    old = set(s.workers())
    with open(conf) as f:
        text = f.read()
    env.write(conf, text.replace('"one"', '"two"'))
    s.send(h.signal.SIGHUP)
    h.wait_until(lambda: body(env, port, "/v") == b"two", 10, what="new configuration")
    h.wait_until(lambda: not (old & set(s.workers())), 10, what="old workers gone")
    for _ in range(10):
        assert body(env, port, "/v") == b"two"


def test_ssl_conf_command_and_prefer_server_ciphers(env):
    port = env.port()
    conf = env.simple_conf(port, server_extra="""
        ssl_protocols TLSv1.2 TLSv1.3;
        ssl_conf_command Ciphersuites TLS_CHACHA20_POLY1305_SHA256;
        ssl_conf_command Groups P-256;
        ssl_ciphers ECDHE-RSA-AES128-GCM-SHA256:ECDHE-RSA-AES256-GCM-SHA384;
        ssl_prefer_server_ciphers on;
    """)
    env.start(conf, port=port)
    out = sclient(port, "-tls1_3", "-servername", "a.test")
    assert field(out, "Cipher") == "TLS_CHACHA20_POLY1305_SHA256", out[-1500:]
    assert "Server Temp Key: ECDH, prime256v1" in out or "P-256" in out, out[-1500:]
    # the client prefers AES256 first; the server's order wins
    out = sclient(port, "-tls1_2", "-servername", "a.test", "-cipher",
                  "ECDHE-RSA-AES256-GCM-SHA384:ECDHE-RSA-AES128-GCM-SHA256")
    assert field(out, "Cipher") == "ECDHE-RSA-AES128-GCM-SHA256", out[-1500:]
    # a bad command is a configuration error naming the file and line
    bad = env.simple_conf(env.port(), server_extra="ssl_conf_command NoSuchCommand x;",
                          name="bad.conf")
    p = h.run([h.binary(), "-t", "-c", bad], timeout=20)
    assert p.returncode == 1 and "bad.conf:" in p.stderr and "NoSuchCommand" in p.stderr, \
        p.stderr


def resume(env, port, sni1, sni2, *extra):
    sess = env.path("sess-%s-%s.pem" % (sni1, sni2))
    out1 = sclient(port, "-servername", sni1, "-sess_out", sess, *extra)
    assert "New," in out1, out1[-1500:]
    time.sleep(0.2)
    out2 = sclient(port, "-servername", sni2, "-sess_in", sess, *extra)
    return "Reused," in out2, out2


def test_session_resumption_builtin_cache_and_tickets(env):
    port = env.port()
    conf = env.conf("""
    ssl_session_cache builtin:1000;
    server {
        listen 127.0.0.1:%d ssl;
        server_name a.test;
        %s
        ssl_session_tickets off;
    }""" % (port, env.tls("a_rsa")))
    s = env.start(conf, port=port)
    ok, out = resume(env, port, "a.test", "a.test", "-tls1_2")
    assert ok, "TLS 1.2 session id not resumed from the builtin cache: " + out[-1500:]
    ok, out = resume(env, port, "a.test", "a.test", "-tls1_3")
    assert ok, "TLS 1.3 stateful session not resumed: " + out[-1500:]
    s.stop()
    # tickets only, no cache
    port2 = env.port()
    conf2 = env.simple_conf(port2, server_extra="ssl_session_cache off; ssl_session_tickets on;",
                            name="t2.conf")
    env.start(conf2, port=port2)
    ok, out = resume(env, port2, "a.test", "a.test", "-tls1_2")
    assert ok, "TLS 1.2 ticket not resumed: " + out[-1500:]


def test_no_resumption_across_server_blocks(env):
    """nginx#493 (CVE-2025-23419): a session from one server block must not resume under
    another selected by SNI on the same address."""
    port = env.port()
    conf = env.conf("""
    ssl_session_cache builtin:1000;
    server {
        listen 127.0.0.1:%d ssl default_server;
        server_name a.test;
        %s
    }
    server {
        listen 127.0.0.1:%d ssl;
        server_name b.test;
        %s
    }""" % (port, env.tls("a_rsa"), port, env.tls("b_rsa")))
    env.start(conf, port=port)
    for ver in ("-tls1_2", "-tls1_3"):
        ok, out = resume(env, port, "a.test", "a.test", ver)
        assert ok, "same-server resumption should work (%s): %s" % (ver, out[-800:])
        ok, out = resume(env, port, "a.test", "b.test", ver)
        assert not ok, "a.test's session resumed under b.test (%s)" % ver
        assert "New," in out, out[-800:]


def test_plain_http_listener(env):
    port, tport = env.port(), env.port()
    env.write("html/x.txt", "plain\n")
    conf = env.conf("""
    server {
        listen 127.0.0.1:%d;
        listen 127.0.0.1:%d ssl;
        server_name a.test;
        %s
        root %s;
    }""" % (port, tport, env.tls("a_rsa"), env.html))
    env.start(conf, port=port)
    p = h.run(["curl", "-sS", "--max-time", "10", "http://127.0.0.1:%d/x.txt" % port], timeout=15)
    assert p.stdout == "plain\n", p.stdout + p.stderr
    p = h.run(["curl", "-sSk", "--max-time", "10", "https://127.0.0.1:%d/x.txt" % tport],
              timeout=15)
    assert p.stdout == "plain\n", p.stdout + p.stderr


def test_globals_and_prefix(env):
    port = env.port()
    os.makedirs(env.path("site", "html"))
    env.write("site/html/index.html", "prefixed\n")
    # relative root resolves against -p; -g adds main-context directives
    conf = env.conf("""
    server {
        listen 127.0.0.1:%d ssl;
        server_name a.test;
        %s
        root html;
    }""" % (port, env.tls("a_rsa")))
    s = env.start(conf, args=["-p", env.path("site"), "-g", "worker_processes 2;"], port=port)
    s.wait_workers(2)
    assert body(env, port, "/") == b"prefixed\n"
    p = h.run([h.binary(), "-t", "-c", conf, "-g", "no_such_directive 1;"], timeout=20)
    assert p.returncode == 1 and "<command line>:1: no_such_directive" in p.stderr, p.stderr


if __name__ == "__main__":
    h.main(globals())
