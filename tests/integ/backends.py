"""Upstream servers for the proxy tests (standard library only).

Backend: a threaded HTTP/1.1 origin on 127.0.0.1:<random>, keep-alive, that records every
connection and request (head fields, body length and SHA-256, read streaming so 100 MB
bodies cost no memory) and answers by path:
  /echo...        200, JSON of the request as the backend saw it
  /stallbody...   as /echo, but the body is read only after 1.5 s
  /big?n=N        N bytes of a fixed pattern, Content-Length
  /chunked?n=N    the same pattern, chunked (random chunk sizes)
  /eof?n=N        the same pattern, HTTP/1.0-style: no length, ends with the close
  /slow?ms=M      waits M ms, then 200 "slow"
  /garbage        a response that is not HTTP
  /head-garbage   a valid status line, then a malformed header (obs-fold)
  /reset          closes the connection (RST) without answering
  /drip?n=N       N bytes, 64 KiB every 20 ms (a long response, for aborts)
  /status/NNN     that status, empty body
  anything else   200 "ok <path>"
kill_second: answer the first request of each connection, then close it on reading the
second one without answering (a keep-alive connection closed as a request is sent).

EchoServer: a TCP echo server that also answers "half" by echoing then closing its side
after the client's half-close.

ThreadedServer: what they share (and the tests' own small servers): the listening socket,
the accept thread, one thread a connection, close(), `with`.
"""
import hashlib
import json
import socket
import struct
import threading
import time
import urllib.parse

PATTERN = bytes(range(256)) * 4096  # 1 MiB


def pattern_bytes(n):
    """The first n bytes of the repeated PATTERN (as the backend sends them)."""
    out = bytearray()
    while len(out) < n:
        out += PATTERN[:n - len(out)]
    return bytes(out)


def pattern_sha(n):
    h = hashlib.sha256()
    left = n
    while left:
        k = min(left, len(PATTERN))
        h.update(PATTERN[:k])
        left -= k
    return h.hexdigest()


class _Conn:
    def __init__(self, sock):
        self.sock = sock
        self.buf = b""

    def fill(self):
        d = self.sock.recv(262144)
        if not d:
            raise EOFError
        self.buf += d

    def line(self):
        while b"\n" not in self.buf:
            if len(self.buf) > (1 << 20):
                raise ValueError("line too long")
            self.fill()
        ln, self.buf = self.buf.split(b"\n", 1)
        return ln.rstrip(b"\r")

    def take(self, n, h):
        """Read n body bytes into hash h."""
        while n:
            if not self.buf:
                self.fill()
            k = min(n, len(self.buf))
            h.update(self.buf[:k])
            self.buf = self.buf[k:]
            n -= k


class ThreadedServer:
    """A TCP server on 127.0.0.1 at a port the kernel picks (self.port): an accept thread
    hands each connection to self._serve(sock) in a thread of its own, counts them (conns)
    and keeps them, so that close() ends the connections too. A context manager:
    `with Backend() as b:` closes it at the end of the block. A subclass sets its own
    attributes before calling __init__ (the accept thread starts in it)."""

    backlog = 128

    def __init__(self):
        self.lock = threading.Lock()
        self.conns = 0
        self.socks = []
        self.stop = False
        self.ls = socket.socket()
        self.ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.ls.bind(("127.0.0.1", 0))
        self.ls.listen(self.backlog)
        self.port = self.ls.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        self.stop = True
        try:
            self.ls.close()
        except OSError:
            pass
        with self.lock:
            socks = list(self.socks)
        for s in socks:
            try:
                s.close()
            except OSError:
                pass

    def _accept(self):
        while not self.stop:
            try:
                s, _ = self.ls.accept()
            except OSError:
                return
            with self.lock:
                self.conns += 1
                self.socks.append(s)
            threading.Thread(target=self._serve, args=(s,), daemon=True).start()

    def _serve(self, s):
        raise NotImplementedError


class Backend(ThreadedServer):
    def __init__(self, kill_second=False):
        self.kill_second = kill_second
        self.requests = []
        self.aborted = []  # paths of responses whose write failed (client went away)
        super().__init__()

    def _serve(self, s):
        c = _Conn(s)
        n = 0
        try:
            while True:
                req = self._read_request(c)
                n += 1
                if self.kill_second and n == 2:
                    s.close()
                    return
                with self.lock:
                    self.requests.append(req)
                if not self._answer(s, req):
                    s.close()
                    return
        except (EOFError, OSError, ValueError):
            try:
                s.close()
            except OSError:
                pass

    def _read_request(self, c):
        while True:
            first = c.line()
            if first:
                break
        method, target, version = first.decode("latin-1").split(" ")
        headers = []
        while True:
            ln = c.line()
            if not ln:
                break
            k, v = ln.decode("latin-1").split(":", 1)
            headers.append((k.strip().lower(), v.strip()))
        hd = {}
        for k, v in headers:
            hd.setdefault(k, []).append(v)
        if "/stallbody" in target:
            time.sleep(1.5)  # the body waits: the proxy must stop reading the client
        h = hashlib.sha256()
        length = 0
        te = hd.get("transfer-encoding")
        if te:
            assert te == ["chunked"], te
            while True:
                size = int(c.line().split(b";")[0], 16)
                if size == 0:
                    while c.line():
                        pass
                    break
                c.take(size, h)
                length += size
                assert c.line() == b""
        elif "content-length" in hd:
            length = int(hd["content-length"][0])
            c.take(length, h)
        return {"method": method, "target": target, "version": version, "headers": hd,
                "body_len": length, "body_sha": h.hexdigest(), "time": time.monotonic()}

    def _answer(self, s, req):
        path, _, query = req["target"].partition("?")
        q = dict(urllib.parse.parse_qsl(query))
        keep = True
        try:
            if "/echo" in path:
                body = json.dumps(req).encode()
                s.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                          b"Content-Length: %d\r\nX-Backend: yes\r\nKeep-Alive: timeout=5\r\n"
                          b"Connection: keep-alive, X-Hop\r\nX-Hop: secret\r\n\r\n"
                          % len(body) + body)
            elif path == "/big":
                n = int(q["n"])
                s.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % n)
                self._send_pattern(s, n, None)
            elif path == "/chunked":
                n = int(q["n"])
                s.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
                self._send_pattern(s, n, "chunked")
                s.sendall(b"0\r\nX-Trailer: t\r\n\r\n")
            elif path == "/eof":
                n = int(q["n"])
                s.sendall(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n")
                self._send_pattern(s, n, None)
                keep = False
            elif path == "/slow":
                time.sleep(int(q.get("ms", "1000")) / 1000)
                s.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nslow")
            elif path.endswith("/fields"):
                # fields nginx hides by default (proxy_hide_header), and two of its own
                s.sendall(b"HTTP/1.1 200 OK\r\nServer: UpServer/1.0\r\n"
                          b"Date: Thu, 01 Jan 1970 00:00:00 GMT\r\nX-Pad: avoid browser bug\r\n"
                          b"X-Accel-Redirect: /internal\r\nX-Accel-Buffering: no\r\n"
                          b"X-Secret: s\r\nX-Kept: k\r\nContent-Length: 2\r\n\r\nok")
            elif path.endswith("/truncate"):  # Content-Length 100000, n bytes, then close
                s.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n" +
                          b"x" * int(q["n"]))
                keep = False
            elif path.endswith("/bodystall"):  # n bytes of 100000, then 2 s of silence
                s.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n" +
                          b"x" * int(q["n"]))
                time.sleep(2)
                keep = False
            elif path == "/garbage":
                s.sendall(b"THIS IS NOT HTTP\r\n\r\n")
                keep = False
            elif path == "/head-garbage":
                s.sendall(b"HTTP/1.1 200 OK\r\nX-A: 1\r\n folded\r\nContent-Length: 0\r\n\r\n")
                keep = False
            elif path == "/reset":
                s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                keep = False
            elif path == "/drip":
                n = int(q["n"])
                s.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % n)
                sent = 0
                while sent < n:
                    k = min(65536, n - sent)
                    s.sendall(PATTERN[:k])
                    sent += k
                    time.sleep(0.02)
            elif path.startswith("/status/"):
                code = int(path[8:])
                s.sendall(b"HTTP/1.1 %d X\r\nContent-Length: 0\r\n\r\n" % code)
            else:
                body = b"ok " + path.encode()
                s.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
        except OSError:
            with self.lock:
                self.aborted.append(path)
            return False
        return keep

    def _send_pattern(self, s, n, framing):
        import random
        rnd = random.Random(n)
        sent = 0
        while sent < n:
            k = min(len(PATTERN), n - sent)
            if framing == "chunked":
                k = min(k, rnd.randint(1, 200000))
                o = sent % 256  # continue the pattern where the last chunk stopped
                s.sendall(b"%x\r\n" % k + PATTERN[o:o + k] + b"\r\n")
            else:
                s.sendall(PATTERN[:k])
            sent += k


class EchoServer(ThreadedServer):
    """TCP echo; after the client's half-close it sends "bye" and closes its side; on
    "quit" it sends "bye" and closes first."""

    backlog = 64

    def _serve(self, s):
        try:
            while True:
                d = s.recv(65536)
                if not d:
                    s.sendall(b"bye")
                    s.shutdown(socket.SHUT_WR)
                    break
                if d == b"quit":  # the server ends first
                    s.sendall(b"bye")
                    break
                s.sendall(d)
        except OSError:
            pass
        finally:
            s.close()


def wait_for(pred, timeout=5):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(0.02)
    return pred()
