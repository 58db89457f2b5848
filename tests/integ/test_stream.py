#!/usr/bin/env python3
"""TCP termination (`stream { server { listen ... ssl; proxy_pass ...; } }`) in front of a
TCP echo server started here: relay both ways, half-close, timeouts, dead upstreams.

Usage: python3 tests/integ/test_stream.py BIN [TEST...]
"""
import os
import socket
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import backends as be  # noqa: E402
import harness as h  # noqa: E402

KNOWN_FAILURES = {}


def start(env, stream_body, http_port=None):
    http_port = http_port or env.port()
    conf = env.write("tlsgate.conf", env.main_conf() + """
stream {
%s
}
http {
    server { listen 127.0.0.1:%d; location / { return 200 "http"; } }
}
""" % (stream_body, http_port))
    env.start(conf, port=http_port)


def test_tls_echo(env):
    with be.EchoServer() as e:
        port = env.port()
        start(env, """
    upstream echo { server 127.0.0.1:%d; }
    server { listen 127.0.0.1:%d ssl; %s proxy_pass echo; ssl_async on; }
""" % (e.port, port, env.tls("a_ec")))
        h.wait_until(lambda: h.port_accepts(port), 5)
        with env.tls_socket(port) as s:
            for size in (1, 1000, 300000):
                msg = os.urandom(size)
                s.sendall(msg)
                assert h.recv_until(s, size) == msg, size
        assert e.conns == 1


def test_upstream_closes_first_tls(env):
    """The upstream's EOF reaches a TLS client as close_notify after the last bytes."""
    with be.EchoServer() as e:
        port = env.port()
        start(env, """
    server { listen 127.0.0.1:%d ssl; %s proxy_pass 127.0.0.1:%d; }
""" % (port, env.tls("a_rsa"), e.port))
        with env.tls_socket(port) as s:
            s.sendall(b"hello")
            assert h.recv_until(s, 5) == b"hello"
            s.sendall(b"quit")
            data, eof = h.recv_all(s, 5)
            assert data == b"bye" and eof, (data, eof)


def test_plain_half_close(env):
    with be.EchoServer() as e:
        port = env.port()
        start(env, """
    server { listen 127.0.0.1:%d; proxy_pass 127.0.0.1:%d; }
""" % (port, e.port))
        h.wait_until(lambda: h.port_accepts(port), 5)
        s = socket.create_connection(("127.0.0.1", port), timeout=5)
        s.sendall(b"x" * 100000)
        s.shutdown(socket.SHUT_WR)  # our direction ends; the answer must still arrive
        data, eof = h.recv_all(s, 5)
        s.close()
        assert eof and data == b"x" * 100000 + b"bye", (len(data), data[-10:], eof)


def test_upstream_down_and_next_server(env):
    e = be.EchoServer()
    dead = socket.socket()
    dead.bind(("127.0.0.1", 0))
    dport = dead.getsockname()[1]
    dead.close()
    try:
        port, port2 = env.port(), env.port()
        start(env, """
    upstream two { server 127.0.0.1:%d; server 127.0.0.1:%d; }
    server { listen 127.0.0.1:%d ssl; %s proxy_pass two; }
    server { listen 127.0.0.1:%d ssl; %s proxy_pass 127.0.0.1:%d; }
""" % (dport, e.port, port, env.tls("a_rsa"), port2, env.tls("a_rsa"), dport))
        env.allow_log = True
        for _ in range(3):
            with env.tls_socket(port) as s:
                s.sendall(b"ping")
                assert h.recv_until(s, 4) == b"ping"
        with env.tls_socket(port2) as s:
            assert h.closed_by_peer(s), "a dead upstream must close the client"
    finally:
        e.close()


def test_proxy_timeout(env):
    with be.EchoServer() as e:
        port = env.port()
        start(env, """
    server { listen 127.0.0.1:%d ssl; %s proxy_pass 127.0.0.1:%d; proxy_timeout 400ms; }
""" % (port, env.tls("a_rsa"), e.port))
        with env.tls_socket(port) as s:
            s.sendall(b"a")
            assert h.recv_until(s, 1) == b"a"
            t0 = time.monotonic()
            assert h.closed_by_peer(s, 5)
            dt = time.monotonic() - t0
            assert 0.3 <= dt <= 2.0, dt


def test_config_errors(env):
    bad = [
        ("server { listen 127.0.0.1:1; }", "no proxy_pass"),
        ("server { listen 127.0.0.1:1; proxy_pass nowhere; }", "no upstream of this name"),
        ("server { listen 127.0.0.1:1 ssl; proxy_pass 127.0.0.1:2; }", "no ssl_certificate"),
        ("server { listen 127.0.0.1:1; proxy_pass 127.0.0.1:2; root /; }", "not allowed"),
        ("upstream u { } server { listen 127.0.0.1:1; proxy_pass u; }", "no servers"),
    ]
    for body, want in bad:
        conf = env.write("bad.conf", env.main_conf() + "stream {\n%s\n}\n" % body)
        p = h.run([h.binary(), "-t", "-c", conf])
        assert p.returncode != 0 and want in p.stderr, (body, p.stderr)


if __name__ == "__main__":
    h.main(globals())
