#!/usr/bin/env python3
"""PROXY protocol (issue #23): `listen ... proxy_protocol` (v1 and v2, http and stream),
`proxy_protocol on` toward stream upstreams, the deadline, and malformed headers.

- a v2 header then TLS: $proxy_protocol_addr in the log; with `set_real_ip_from` and
  `real_ip_header proxy_protocol` it is $remote_addr (allow/deny, X-Real-IP upstream);
- a v1 header on a plain listener; v2 LOCAL (a balancer's health check) keeps the peer;
- a malformed header, or a TLS ClientHello where the header should be: closed, with an
  error log line naming the reason; a header that never ends: closed at the deadline;
- stream: a v1 header to the upstream before the client's bytes (TCP peer, or the
  client's PROXY address when the listener had one); header bytes never reach the relay.
"""
import os
import socket
import ssl
import struct
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness as H  # noqa: E402
import backends as be  # noqa: E402

SIG = b"\r\n\r\n\x00\r\nQUIT\n"


def v2(src, sport, dst="127.0.0.1", dport=443, local=False, tlv=b""):
    if local:
        return SIG + b"\x20\x00" + struct.pack(">H", len(tlv)) + tlv
    if ":" in src:
        body = socket.inet_pton(socket.AF_INET6, src) + socket.inet_pton(socket.AF_INET6, dst)
        fam = 0x21
    else:
        body = socket.inet_pton(socket.AF_INET, src) + socket.inet_pton(socket.AF_INET, dst)
        fam = 0x11
    body += struct.pack(">HH", sport, dport) + tlv
    return SIG + bytes([0x21, fam]) + struct.pack(">H", len(body)) + body


def v1(src, sport, dst="127.0.0.1", dport=443):
    fam = "TCP6" if ":" in src else "TCP4"
    return ("PROXY %s %s %s %d %d\r\n" % (fam, src, dst, sport, dport)).encode()


def tls_after(port, header, path="/", sni="a.test"):
    """Send header, then one HTTPS request over the same connection: the response bytes."""
    raw = socket.create_connection(("127.0.0.1", port), timeout=5)
    raw.sendall(header)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    with ctx.wrap_socket(raw, server_hostname=sni) as s:
        s.sendall(b"GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n" %
                  (path.encode(), sni.encode()))
        data, _ = H.recv_all(s)
    return data


def log_lines(path, n, timeout=5):
    def get():
        ls = open(path).read().splitlines() if os.path.exists(path) else []
        return ls if len(ls) >= n else None
    return H.wait_until(get, timeout, what="%d lines in %s" % (n, path))


def test_http_v2_v1_real_ip(env):
    port, pport = env.port(), env.port()
    env.write("html/index.html", "hello\n")
    log = env.path("access.log")
    with be.Backend() as b:
        env.start(env.conf("""
            log_format pp '$proxy_protocol_addr|$proxy_protocol_port|$remote_addr|$status';
            upstream app { server 127.0.0.1:%d; }
            server { listen 127.0.0.1:%d ssl proxy_protocol; server_name a.test; %s root %s;
                access_log %s pp;
                set_real_ip_from 127.0.0.1; real_ip_header proxy_protocol;
                location = /denied { deny 203.0.113.0/24; }
                location /app/ { proxy_pass http://app; } }
            server { listen 127.0.0.1:%d proxy_protocol; server_name a.test; root %s;
                access_log %s pp; }
        """ % (b.port, port, env.tls("a_rsa"), env.html, log, pport, env.html, log)))
        H.wait_until(lambda: H.port_accepts(pport), 10, what="tlsgate")
        data = tls_after(port, v2("203.0.113.7", 4444))
        assert data.startswith(b"HTTP/1.1 200") and data.endswith(b"hello\n"), data[:200]
        data = tls_after(port, v2("203.0.113.7", 4444), "/denied")
        assert data.startswith(b"HTTP/1.1 403"), data[:100]
        data = tls_after(port, v2("2001:db8::5", 5555, "::1"), "/app/echo")
        assert data.startswith(b"HTTP/1.1 200") and b'"x-real-ip": ["2001:db8::5"]' in data, \
            data[-400:]
        data = tls_after(port, v2("", 0, local=True))  # LOCAL: the peer's own address
        assert data.startswith(b"HTTP/1.1 200"), data[:100]
        # v1 on a plain listener, with the request in the same segment
        s = socket.create_connection(("127.0.0.1", pport), timeout=5)
        s.sendall(v1("198.51.100.9", 1234) + b"GET / HTTP/1.1\r\nHost: a.test\r\n"
                  b"Connection: close\r\n\r\n")
        data, _ = H.recv_all(s)
        s.close()
        assert data.startswith(b"HTTP/1.1 200") and data.endswith(b"hello\n"), data[:200]
        lines = log_lines(log, 5)
        assert lines[0] == "203.0.113.7|4444|203.0.113.7|200", lines
        assert lines[1] == "203.0.113.7|4444|203.0.113.7|403", lines
        assert lines[2] == "2001:db8::5|5555|2001:db8::5|200", lines
        assert lines[3] == "-|-|127.0.0.1|200", lines
        # no set_real_ip_from on the plain server: $remote_addr stays the peer
        assert lines[4] == "198.51.100.9|1234|127.0.0.1|200", lines


def closed_quickly(port, payload, timeout=3):
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    try:
        s.sendall(payload)
        t0 = time.monotonic()
        try:
            d = s.recv(100)
        except ConnectionResetError:
            d = b""
        return d == b"" and time.monotonic() - t0 < timeout, d
    finally:
        s.close()


def test_malformed_and_deadline(env):
    port = env.port()
    env.write("html/index.html", "hello\n")
    s = env.start(env.conf("""
        server { listen 127.0.0.1:%d ssl proxy_protocol; server_name a.test; %s root %s;
                 ssl_handshake_timeout 1s; }
    """ % (port, env.tls("a_rsa"), env.html)), port=port)
    cases = [
        (b"PROXY TCP4 1.2.3.4 5.6.7.8 99999 1\r\n", "bad port"),
        (b"PROXY TCP9 x\r\n", "not TCP4, TCP6 or UNKNOWN"),
        (b"\x16\x03\x01\x00\xc8\x01\x00\x00\xc4\x03\x03", "not a PROXY protocol header"),
        (SIG + b"\x31\x11\x00\x0c" + b"\x00" * 12, "version is not 2"),
        (SIG + b"\x21\x11\x00\x04" + b"\x00" * 4, "address block shorter"),
        (SIG + b"\x21\x11\xff\xff", "longer than 4096"),
        (b"PROXY " + b"A" * 200, "longer than 107"),
    ]
    for payload, why in cases:
        ok, d = closed_quickly(port, payload)
        assert ok, (payload, d)
        H.wait_until(lambda: why in s.log_text(), 3, what="log line %r" % why)
    assert s.log_text().count("broken PROXY protocol header") >= len(cases)
    # a header that never completes: closed at the deadline (1 s), not before
    c = socket.create_connection(("127.0.0.1", port), timeout=5)
    c.sendall(b"PROXY TCP4 1.2.3.4")
    t0 = time.monotonic()
    d = c.recv(100)
    took = time.monotonic() - t0
    c.close()
    assert d == b"" and 0.7 < took < 3, (d, took)
    H.wait_until(lambda: "timed out sending the PROXY protocol header" in s.log_text(), 3,
                 what="the timeout's log line")
    # still serving
    assert tls_after(port, v1("1.2.3.4", 1)).startswith(b"HTTP/1.1 200")


class FirstLine(be.ThreadedServer):
    """A TCP backend that records everything a connection sends and echoes it back."""

    def __init__(self):
        self.got = []
        super().__init__()

    def _serve(self, c):
        buf = b""
        with c:
            while True:
                d = c.recv(65536)
                if not d:
                    break
                buf += d
                c.sendall(d)
        self.got.append(buf)


def test_stream_proxy_protocol(env):
    with FirstLine() as b:
        port, pport = env.port(), env.port()
        env.start(env.write("tlsgate.conf", env.main_conf() + """
            stream {
              server { listen 127.0.0.1:%d ssl; %s proxy_pass 127.0.0.1:%d;
                       proxy_protocol on; }
              server { listen 127.0.0.1:%d proxy_protocol; proxy_pass 127.0.0.1:%d;
                       proxy_protocol on; }
            }
        """ % (port, env.tls("a_rsa"), b.port, pport, b.port)))
        H.wait_until(lambda: H.port_accepts(port) and H.port_accepts(pport), 10, what="tlsgate")
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        raw = socket.create_connection(("127.0.0.1", port), timeout=5)
        cport = raw.getsockname()[1]
        with ctx.wrap_socket(raw, server_hostname="a.test") as s:
            s.sendall(b"ping")
            # the echo may come back in more than one record (the header, then the data)
            want = b"PROXY TCP4 127.0.0.1 127.0.0.1 %d %d\r\nping" % (cport, port)
            got = H.recv_until(s, len(want))
            assert got == want, got
        # a PROXY header in, the client it names out; its bytes are not relayed as data
        raw = socket.create_connection(("127.0.0.1", pport), timeout=5)
        raw.sendall(v2("192.0.2.33", 6000, "192.0.2.1", 443) + b"data")
        got = H.recv_until(raw, b"data")
        raw.close()
        assert got == b"PROXY TCP4 192.0.2.33 127.0.0.1 6000 %d\r\ndata" % pport, got


if __name__ == "__main__":
    H.main(globals())
