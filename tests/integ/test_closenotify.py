#!/usr/bin/env python3
"""A client's close_notify is answered by tlsgate's own before the FIN (RFC 5246 §7.2.1,
RFC 8446 §6.1): TLS 1.2 and 1.3, on an idle keep-alive connection, after a response, with
the close_notify pipelined behind a request (the response is not lost), on a proxied
request and on a stream (TCP) server; no RST, and the session stays resumable.

Clients: Python's ssl over memory BIOs (every byte the server sends is seen, then FIN or
RST; unwrap() = SSL_shutdown succeeds only when the server's close_notify arrived before
its FIN), and a libssl client through ctypes for a close_notify sent right behind a
request (it reads the response that follows its close_notify).

Usage: python3 tests/integ/test_closenotify.py BIN [TEST...]
"""
import ctypes
import ctypes.util
import os
import socket
import ssl
import struct
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import backends as be  # noqa: E402
import harness as h  # noqa: E402

KNOWN_FAILURES = {}
VERSIONS = (("1.2", ssl.TLSVersion.TLSv1_2), ("1.3", ssl.TLSVersion.TLSv1_3))
BODY = 20000  # the static file: larger than one TLS record


class Client:
    """One TLS connection driven over memory BIOs."""

    def __init__(self, port, version, session=None, ctx=None, timeout=5):
        if ctx is None:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
            ctx.minimum_version = ctx.maximum_version = version
        self.ctx = ctx
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.timeout = timeout
        self.inc, self.out = ssl.MemoryBIO(), ssl.MemoryBIO()
        self.obj = ctx.wrap_bio(self.inc, self.out, server_hostname="a.test",
                                session=session)
        self.end = None  # "fin" or "rst" once the server closed
        self._io(self.obj.do_handshake)

    def flush(self):
        d = self.out.read()
        if d:
            self.sock.sendall(d)

    def recv_some(self):
        assert self.end is None, "read after the server closed (%s)" % self.end
        self.sock.settimeout(self.timeout)
        try:
            d = self.sock.recv(65536)
        except ConnectionResetError:
            self.end = "rst"
            self.inc.write_eof()
            return
        if not d:
            self.end = "fin"
            self.inc.write_eof()
            return
        self.inc.write(d)

    def _io(self, fn, *a):
        while True:
            try:
                r = fn(*a)
                self.flush()
                return r
            except ssl.SSLWantReadError:
                self.flush()
                self.recv_some()

    def request(self, path="/f", extra=""):
        self.obj.write(("GET %s HTTP/1.1\r\nHost: a.test\r\n%s\r\n" % (path, extra)).encode())
        self.flush()

    def response(self):
        buf = b""
        while b"\r\n\r\n" not in buf:
            buf += self._io(self.obj.read, 65536)
        head, body = buf.split(b"\r\n\r\n", 1)
        status, hdrs = h.parse_head(head.decode("latin-1"))
        n = int(hdrs.get("content-length", "0"))
        while len(body) < n:
            body += self._io(self.obj.read, 65536)
        return status, body

    def send_close_notify(self):
        """SSL_shutdown once: our close_notify goes out; we do not wait for the answer."""
        try:
            self.obj.unwrap()
        except ssl.SSLWantReadError:
            pass
        self.flush()

    def wait_close_notify(self):
        """Read until the server's close_notify (True) or its FIN/RST without one (False).
        (Application data after our close_notify is an error for OpenSSL's client: the
        libssl client below covers that case.)"""
        while True:
            try:
                self.obj.unwrap()
                return True
            except ssl.SSLWantReadError:
                if self.end:
                    return False
                self.recv_some()
            except (ssl.SSLEOFError, ssl.SSLSyscallError):
                return False
            except ssl.SSLError as e:
                if "EOF" in str(e):
                    return False
                raise

    def wait_end(self):
        """After the close_notify exchange: the server's FIN (or RST) must follow."""
        deadline = time.monotonic() + self.timeout
        try:
            while self.end is None and time.monotonic() < deadline:
                self.recv_some()
        except (socket.timeout, TimeoutError):
            return "timeout (the connection stayed open)"
        return self.end

    def close(self):
        self.sock.close()


# ---- a libssl client (ctypes) that keeps reading after its close_notify ----
# Python's ssl refuses application data once it sent close_notify (OpenSSL:
# APPLICATION_DATA_AFTER_CLOSE_NOTIFY), so it cannot show that a response sent after the
# client's close_notify (a TLS 1.3 half-close) arrives whole. This client clears
# SSL_SENT_SHUTDOWN after sending its close_notify and reads on with SSL_read.
_L = None


def libssl():
    global _L
    if _L is None:
        name = ctypes.util.find_library("ssl") or "libssl.so.3"
        L = ctypes.CDLL(name)
        vp = ctypes.c_void_p
        for fn, res, args in (("TLS_client_method", vp, []), ("SSL_CTX_new", vp, [vp]),
                              ("SSL_CTX_free", None, [vp]),
                              ("SSL_CTX_ctrl", ctypes.c_long, [vp, ctypes.c_int,
                                                               ctypes.c_long, vp]),
                              ("SSL_new", vp, [vp]), ("SSL_free", None, [vp]),
                              ("SSL_set_fd", ctypes.c_int, [vp, ctypes.c_int]),
                              ("SSL_ctrl", ctypes.c_long, [vp, ctypes.c_int, ctypes.c_long,
                                                           vp]),
                              ("SSL_connect", ctypes.c_int, [vp]),
                              ("SSL_write", ctypes.c_int, [vp, vp, ctypes.c_int]),
                              ("SSL_read", ctypes.c_int, [vp, vp, ctypes.c_int]),
                              ("SSL_shutdown", ctypes.c_int, [vp]),
                              ("SSL_get_shutdown", ctypes.c_int, [vp]),
                              ("SSL_set_shutdown", None, [vp, ctypes.c_int]),
                              ("SSL_get_error", ctypes.c_int, [vp, ctypes.c_int])):
            f = getattr(L, fn)
            f.restype = res
            f.argtypes = args
        _L = L
    return _L


SSL_CTRL_SET_TLSEXT_HOSTNAME = 55
SSL_CTRL_SET_MIN_PROTO_VERSION, SSL_CTRL_SET_MAX_PROTO_VERSION = 123, 124
SSL_ERROR_ZERO_RETURN = 6
SSL_RECEIVED_SHUTDOWN = 2
PROTO = {"1.2": 0x0303, "1.3": 0x0304}


def half_close(port, version, data, first=b"", gap=0.0, timeout=5):
    """Connect (TLS `version`), send `first`, read it echoed back when given (stream), then
    send `data` and our close_notify in one segment (or `gap` seconds apart), and read on. Returns (plaintext
    received after the close_notify, the server's close_notify came, "fin"/"rst"/"timeout"
    for the TCP end that followed)."""
    L = libssl()
    ctx = L.SSL_CTX_new(L.TLS_client_method())
    assert ctx
    L.SSL_CTX_ctrl(ctx, SSL_CTRL_SET_MIN_PROTO_VERSION, PROTO[version], None)
    L.SSL_CTX_ctrl(ctx, SSL_CTRL_SET_MAX_PROTO_VERSION, PROTO[version], None)
    sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    sock.settimeout(None)  # a blocking fd for libssl, reads bounded by SO_RCVTIMEO
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, struct.pack("ll", timeout, 0))
    ssl_ = L.SSL_new(ctx)
    try:
        L.SSL_set_fd(ssl_, sock.fileno())
        L.SSL_ctrl(ssl_, SSL_CTRL_SET_TLSEXT_HOSTNAME, 0, ctypes.c_char_p(b"a.test"))
        assert L.SSL_connect(ssl_) == 1, "handshake failed"
        buf = ctypes.create_string_buffer(65536)

        def write(b):
            if b:
                assert L.SSL_write(ssl_, b, len(b)) == len(b)

        if first:
            write(first)
            got = b""
            while len(got) < len(first):
                n = L.SSL_read(ssl_, buf, len(buf))
                assert n > 0, "no echo"
                got += buf.raw[:n]
        # request and close_notify in one segment: cork the socket while both are written
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_CORK, 1)
        write(data)
        if gap:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_CORK, 0)
            time.sleep(gap)
        assert L.SSL_shutdown(ssl_) == 0
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_CORK, 0)
        L.SSL_set_shutdown(ssl_, 0)  # read on (see above)
        out = b""
        while True:
            n = L.SSL_read(ssl_, buf, len(buf))
            if n <= 0:
                break
            out += buf.raw[:n]
        answered = L.SSL_get_error(ssl_, n) == SSL_ERROR_ZERO_RETURN and \
            bool(L.SSL_get_shutdown(ssl_) & SSL_RECEIVED_SHUTDOWN)
        end = "timeout"
        try:
            while True:
                d = sock.recv(4096)
                if not d:
                    end = "fin"
                    break
        except ConnectionResetError:
            end = "rst"
        except (BlockingIOError, socket.timeout, TimeoutError):
            pass
        return out, answered, end
    finally:
        L.SSL_free(ssl_)
        L.SSL_CTX_free(ctx)
        sock.close()


def serve(env, server_extra="", http_extra=""):
    port = env.port()
    env.write(os.path.join(env.html, "f"), os.urandom(BODY))
    conf = env.simple_conf(port, locations="location / { }", server_extra=server_extra,
                           http_extra=http_extra)
    env.start(conf, port=port)
    return port


def assert_answered(c, what):
    got = c.wait_close_notify()
    end = c.wait_end() if got else c.end
    assert got, "%s: the server closed (%s) without answering our close_notify" % (what, end)
    assert end == "fin", "%s: after the close_notify exchange the server sent %s" % (what, end)


def test_idle_keepalive(env):
    port = serve(env)
    for name, v in VERSIONS:
        c = Client(port, v)
        try:
            time.sleep(0.05)  # the server sits in keep-alive wait (TLS 1.3: tickets sent)
            c.send_close_notify()
            assert_answered(c, "TLS %s idle" % name)
        finally:
            c.close()


def test_after_response(env):
    port = serve(env)
    for name, v in VERSIONS:
        c = Client(port, v)
        try:
            for _ in range(2):  # a keep-alive connection: answered, then idle again
                c.request()
                st, body = c.response()
                assert st == 200 and len(body) == BODY, (st, len(body))
            c.send_close_notify()
            assert_answered(c, "TLS %s after a response" % name)
        finally:
            c.close()


def test_pipelined_close_notify(env):
    """Request and close_notify in one segment: the whole response comes first, then the
    server's close_notify, then the FIN."""
    port = serve(env)
    with open(os.path.join(env.html, "f"), "rb") as f:
        want = f.read()
    for name, _ in VERSIONS:
        out, answered, end = half_close(port, name, b"GET /f HTTP/1.1\r\nHost: a.test\r\n\r\n")
        assert out.endswith(want) and out.startswith(b"HTTP/1.1 200"), \
            "TLS %s: %d bytes: %r" % (name, len(out), out[:200])
        assert answered, "TLS %s: no close_notify from the server (TCP end: %s)" % (name, end)
        assert end == "fin", "TLS %s: %s after the close_notify" % (name, end)


def test_session_resumable(env):
    """A session of a connection closed by the close_notify exchange resumes: TLS 1.3 with
    a ticket, TLS 1.2 from the shared cache (tickets off: a session ID)."""
    port, port2 = env.port(), env.port()
    env.write(os.path.join(env.html, "f"), b"x")
    conf = env.conf("""
    ssl_session_cache shared:S:1m;
    server { listen 127.0.0.1:%d ssl; %s root %s; }
    server { listen 127.0.0.1:%d ssl; %s root %s; ssl_session_tickets off; }
""" % (port, env.tls("a_rsa"), env.html, port2, env.tls("a_rsa"), env.html))
    env.start(conf, port=port)
    for p, (name, v) in ((port, VERSIONS[1]), (port2, VERSIONS[0]), (port, VERSIONS[0])):
        c = Client(p, v)
        try:
            c.request()
            c.response()
            sess = c.obj.session
            c.send_close_notify()
            assert_answered(c, "TLS %s" % name)
        finally:
            c.close()
        assert sess is not None
        c2 = Client(p, v, session=sess, ctx=c.ctx)
        try:
            assert c2.obj.session_reused, "TLS %s: the session did not resume" % name
            c2.request()
            st, _ = c2.response()
            assert st == 200
        finally:
            c2.close()


def test_proxy_close_notify(env):
    """A proxied request with the close_notify right behind it (a TLS half-close): the
    upstream's response still arrives, then the server's close_notify."""
    with be.Backend() as b:
        port = env.port()
        conf = env.conf("""
    upstream app { server 127.0.0.1:%d; }
    server {
        listen 127.0.0.1:%d ssl;
        server_name a.test;
        %s
        location / { proxy_pass http://app; }
    }""" % (b.port, port, env.tls("a_rsa")))
        env.start(conf, port=port)
        for name, _ in VERSIONS:
            # close_notify with the request, and while the upstream is still answering
            for path, want, gap in (("/slow?ms=150", b"slow", 0),
                                    ("/slow?ms=300", b"slow", 0.1),
                                    ("/big?n=300000", be.pattern_bytes(300000), 0)):
                out, answered, end = half_close(
                    port, name, b"GET %s HTTP/1.1\r\nHost: a.test\r\n\r\n" % path.encode(),
                    gap=gap)
                assert out.startswith(b"HTTP/1.1 200") and out.endswith(want), \
                    "TLS %s %s: %d bytes: %r" % (name, path, len(out), out[:200])
                assert answered and end == "fin", (name, path, answered, end)
        with open(env.log, errors="replace") as f:
            assert "closed the connection while its request was proxied" not in f.read()


def test_stream_close_notify(env):
    """stream server: the close_notify is passed on as a half-close; the upstream's last
    bytes ("bye") and then the server's close_notify come back. An upstream that never
    closes its side: the close_notify is answered when proxy_timeout ends the connection."""
    e = be.EchoServer()
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)  # accepts (backlog), never reads nor closes
    try:
        port, port2, http_port = env.port(), env.port(), env.port()
        conf = env.write("tlsgate.conf", env.main_conf() + """
stream {
    server { listen 127.0.0.1:%d ssl; %s proxy_pass 127.0.0.1:%d; }
    server { listen 127.0.0.1:%d ssl; %s proxy_pass 127.0.0.1:%d; proxy_timeout 500ms; }
}
http {
    server { listen 127.0.0.1:%d; location / { return 200 "http"; } }
}
""" % (port, env.tls("a_ec"), e.port, port2, env.tls("a_ec"), silent.getsockname()[1],
       http_port))
        env.start(conf, port=http_port)
        h.wait_until(lambda: h.port_accepts(port) and h.port_accepts(port2), 5)
        for name, _ in VERSIONS:
            out, answered, end = half_close(port, name, b"last", first=b"ping")
            assert out == b"lastbye" and answered and end == "fin", (name, out, answered, end)
            t0 = time.monotonic()
            out, answered, end = half_close(port2, name, b"x")
            assert answered and end == "fin", ("silent", name, out, answered, end)
            assert time.monotonic() - t0 < 3
    finally:
        e.close()
        silent.close()


if __name__ == "__main__":
    h.main(globals())
