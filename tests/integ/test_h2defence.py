#!/usr/bin/env python3
"""HTTP/2 defences (issue #22), each with an adversarial client built from raw frames
(hyperframe, hpack: Debian python3-h2 and its dependencies):

- rapid reset (CVE-2023-44487): 20,000 HEADERS + RST_STREAM pairs on one connection;
  another connection's request is answered in under 1 s meanwhile, and the flooder gets
  GOAWAY(ENHANCE_YOUR_CALM) and is closed;
- CONTINUATION flood (CVE-2024-27316 family): a header block that never ends;
- HPACK bomb: a 4 KB dynamic-table entry referenced 4,000 times (16 MB decoded): 431;
- SETTINGS, PING and WINDOW_UPDATE floods: GOAWAY(ENHANCE_YOUR_CALM);
- a stream that never reads its answer (flow control window 0): reset at send_timeout
  while another stream of the same connection completes;
- too large a header list: 431; streams over http2_max_concurrent_streams: refused.

Usage: python3 tests/integ/test_h2defence.py BIN [TEST...]
"""
import os
import socket
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness as h  # noqa: E402

try:
    import hpack
    import hyperframe.frame as hf
except ImportError:  # a python3 other than Debian's: its packages are pure Python
    sys.path.append("/usr/lib/python3/dist-packages")
    try:
        import hpack
        import hyperframe.frame as hf
    except ImportError:
        hpack = hf = None

KNOWN_FAILURES = {}

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
ENHANCE_YOUR_CALM = 0xB
REFUSED_STREAM = 0x7
CANCEL = 0x8


def need():
    if hf is None:
        h.skip("python3-h2 (hpack, hyperframe) missing: scripts/deps.sh test")


def serve(env, server_extra=""):
    env.write("html/1kb.bin", b"k" * 1024)
    env.write("html/big.bin", b"b" * (2 * 1024 * 1024))
    port = env.port()
    conf = env.conf(env.server(port, server_extra, 'location = /t { return 200 "ok"; }',
                               listen="ssl http2"))
    srv = env.start(conf, port=port)
    return port, srv


class Raw:
    """An HTTP/2 client speaking raw frames over TLS (ALPN h2)."""

    def __init__(self, env, port, settings=None):
        self.s = env.tls_socket(port, alpn=["h2"], timeout=10)
        assert self.s.selected_alpn_protocol() == "h2"
        self.enc = hpack.Encoder()
        self.dec = hpack.Decoder()
        self.buf = b""
        self.closed = False
        sf = hf.SettingsFrame(0, settings=settings or {})
        self.send(PREFACE + sf.serialize())

    def send(self, data):
        try:
            self.s.sendall(data)
            return True
        except (BrokenPipeError, ConnectionResetError, OSError):
            self.closed = True
            return False

    def headers(self, sid, path="/t", end_stream=True, extra=(), end_headers=True):
        block = self.enc.encode([(":method", "GET"), (":scheme", "https"), (":path", path),
                                 (":authority", "a.test")] + list(extra))
        flags = (["END_STREAM"] if end_stream else []) + (["END_HEADERS"] if end_headers
                                                          else [])
        return hf.HeadersFrame(sid, data=block, flags=flags).serialize()

    def frames(self, timeout=5, until=None):
        """Read frames until the peer closes, the timeout passes or until(frame) is true."""
        out = []
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            while len(self.buf) >= 9:
                ln = int.from_bytes(self.buf[:3], "big")
                if len(self.buf) < 9 + ln:
                    break
                f, _ = hf.Frame.parse_frame_header(memoryview(self.buf[:9]))
                f.parse_body(memoryview(self.buf[9:9 + ln]))
                if isinstance(f, hf.HeadersFrame):  # in order: one dynamic table
                    f.fields = dict((k.decode() if isinstance(k, bytes) else k,
                                     v.decode() if isinstance(v, bytes) else v)
                                    for k, v in self.dec.decode(f.data))
                self.buf = self.buf[9 + ln:]
                out.append(f)
                if until and until(f):
                    return out
            if self.closed:
                break
            self.s.settimeout(max(0.01, end - time.monotonic()))
            try:
                chunk = self.s.recv(65536)
            except (socket.timeout, TimeoutError):
                break
            except OSError:
                chunk = b""
            if not chunk:
                self.closed = True
            self.buf += chunk
        return out

    def close(self):
        self.s.close()


def goaway_code(frames):
    for f in frames:
        if isinstance(f, hf.GoAwayFrame):
            return f.error_code
    return None


def answer_status(frames, sid):
    for f in frames:
        if isinstance(f, hf.HeadersFrame) and f.stream_id == sid:
            return int(f.fields[":status"])
    return None


def timed_get(port):
    t = time.monotonic()
    p = subprocess.run(["curl", "-sS", "-k", "--http2", "--max-time", "5", "-o", "/dev/null",
                        "-w", "%{http_code}", "https://127.0.0.1:%d/1kb.bin" % port],
                       capture_output=True, text=True, timeout=10)
    return p.stdout.strip(), time.monotonic() - t


def calmed(c, port, srv, logged):
    """The connection c got GOAWAY(ENHANCE_YOUR_CALM) and was closed, the error log has
    `logged`, and the server still answers others."""
    fr = c.frames(timeout=5)
    assert goaway_code(fr) == ENHANCE_YOUR_CALM, [type(f).__name__ for f in fr][-5:]
    assert c.closed, "the attacking connection stays open"
    assert logged in srv.log_text(), "no %r in the error log" % logged
    still_serves(port)


def still_serves(port):
    code, _ = timed_get(port)
    assert code == "200", code


def test_rapid_reset(env):
    """20,000 HEADERS+RST_STREAM pairs; a normal request meanwhile takes < 1 s."""
    need()
    port, srv = serve(env)
    c = Raw(env, port)
    pairs = []
    for i in range(20000):
        sid = 1 + 2 * i
        pairs.append(c.headers(sid) + hf.RstStreamFrame(sid, error_code=CANCEL).serialize())
    blob = b"".join(pairs)
    done = threading.Event()

    def flood():
        for k in range(0, len(blob), 1 << 16):
            if not c.send(blob[k:k + (1 << 16)]):
                break
        done.set()

    th = threading.Thread(target=flood)
    th.start()
    worst = 0.0
    while not done.is_set():
        code, dt = timed_get(port)
        assert code == "200", code
        worst = max(worst, dt)
    th.join()
    assert worst < 1.0, "a normal request took %.2fs during the flood" % worst
    calmed(c, port, srv, "rapid reset")


def test_continuation_flood(env):
    need()
    port, srv = serve(env)
    c = Raw(env, port)
    data = c.headers(1, end_headers=False)
    for i in range(2000):
        blk = c.enc.encode([("x-c%d" % (i % 50), "v" * 100)])
        data += hf.ContinuationFrame(1, data=blk).serialize()
    c.send(data)
    calmed(c, port, srv, "CONTINUATION flood")


def test_hpack_bomb(env):
    need()
    port, srv = serve(env)
    c = Raw(env, port)
    # a 4,000-byte value added to the dynamic table (literal with incremental indexing,
    # new name), then referenced 4,000 times: 16 MB decoded from ~8 KB on the wire
    big = b"\x40" + bytes([6]) + b"x-bomb" + b"\x7f" + encode_int(4000 - 127) + b"v" * 4000
    first = b"\x82\x87" + b"\x04\x02/t" + b"\x01\x06a.test"  # no dynamic entries
    c.send(hf.HeadersFrame(1, data=first + big, flags=["END_STREAM", "END_HEADERS"]).serialize())
    fr = c.frames(timeout=5, until=lambda f: isinstance(f, hf.DataFrame) and f.stream_id == 1)
    assert answer_status(fr, 1) in (200, 431), answer_status(fr, 1)
    # the pseudo-header fields from the static table only (indexing them would evict the
    # 4 KB entry from the 4 KB table), then index 62 (the bomb) 4,000 times
    block = b"\x82\x87" + b"\x04\x02/t" + b"\x01\x06a.test" + b"\xbe" * 4000
    t = time.monotonic()
    c.send(hf.HeadersFrame(3, data=block, flags=["END_STREAM", "END_HEADERS"]).serialize())
    fr = c.frames(timeout=5, until=lambda f: getattr(f, "stream_id", 0) == 3 and
                  "END_STREAM" in getattr(f, "flags", ()))
    assert answer_status(fr, 3) == 431, [type(f).__name__ for f in fr]
    assert time.monotonic() - t < 2
    still_serves(port)


def encode_int(v):
    """HPACK integer continuation bytes (RFC 7541 §5.1) after a full prefix."""
    out = b""
    while v >= 128:
        out += bytes([(v & 127) | 128])
        v >>= 7
    return out + bytes([v])


def flood_case(env, frame, n, logged):
    port, srv = serve(env)
    c = Raw(env, port)
    c.send(frame * n)
    calmed(c, port, srv, logged)


def test_settings_flood(env):
    need()
    flood_case(env, hf.SettingsFrame(0).serialize(), 5000, "SETTINGS flood")


def test_ping_flood(env):
    need()
    flood_case(env, hf.PingFrame(0, opaque_data=b"12345678").serialize(), 5000, "PING flood")


def test_window_update_flood(env):
    need()
    flood_case(env, hf.WindowUpdateFrame(0, window_increment=1).serialize(), 5000,
               "WINDOW_UPDATE flood")


def test_stream_never_reads(env):
    """Window 0 on every stream: stream 1 (2 MB) never progresses and is reset at
    send_timeout; stream 3, given a window, completes meanwhile."""
    need()
    port, srv = serve(env, "send_timeout 1s;")
    c = Raw(env, port, settings={hf.SettingsFrame.INITIAL_WINDOW_SIZE: 0})
    c.send(c.headers(1, path="/big.bin") + c.headers(3, path="/1kb.bin") +
           hf.WindowUpdateFrame(3, window_increment=65535).serialize())
    t = time.monotonic()
    fr = c.frames(timeout=5, until=lambda f: isinstance(f, hf.RstStreamFrame) and
                  f.stream_id == 1)
    got3 = sum(len(f.data) for f in fr if isinstance(f, hf.DataFrame) and f.stream_id == 3)
    assert got3 == 1024, got3
    rst = [f for f in fr if isinstance(f, hf.RstStreamFrame) and f.stream_id == 1]
    assert rst and rst[0].error_code == CANCEL, [type(f).__name__ for f in fr]
    assert 0.8 < time.monotonic() - t < 4
    assert "timed out on HTTP/2 stream 1" in srv.log_text()
    still_serves(port)


def test_header_list_too_large(env):
    need()
    port, srv = serve(env, "large_client_header_buffers 2 1k;")
    c = Raw(env, port)
    c.send(c.headers(1, extra=[("x-big", "a" * 3000)]))
    fr = c.frames(timeout=5, until=lambda f: isinstance(f, hf.HeadersFrame))
    assert answer_status(fr, 1) == 431
    c.send(c.headers(3))
    fr = c.frames(timeout=5, until=lambda f: isinstance(f, hf.HeadersFrame))
    assert answer_status(fr, 3) == 200  # the connection goes on


def test_concurrent_streams_limit(env):
    need()
    port, srv = serve(env, "http2_max_concurrent_streams 4;")
    c = Raw(env, port)
    c.frames(timeout=0.5)  # our SETTINGS arrive and are acknowledged
    c.send(hf.SettingsFrame(0, flags=["ACK"]).serialize())
    data = b"".join(c.headers(1 + 2 * i, end_stream=False) for i in range(6))
    c.send(data)
    fr = c.frames(timeout=3, until=lambda f: isinstance(f, (hf.RstStreamFrame, hf.GoAwayFrame)))
    # RFC 9113 §5.1.2: a stream error (REFUSED_STREAM) or, as nghttp2 does once the client
    # acknowledged the limit, a connection error (PROTOCOL_ERROR); streams 1-7 were taken
    rst = [f for f in fr if isinstance(f, hf.RstStreamFrame)]
    ga = [f for f in fr if isinstance(f, hf.GoAwayFrame)]
    assert (rst and rst[0].error_code == REFUSED_STREAM and rst[0].stream_id == 9) or \
        (ga and ga[0].error_code == 1 and ga[0].last_stream_id == 7), (rst, ga)
    still_serves(port)


def test_keepalive_requests(env):
    """keepalive_requests 5: GOAWAY(NO_ERROR) after the 5th stream; the 5 are answered."""
    need()
    port, srv = serve(env, "keepalive_requests 5;")
    c = Raw(env, port)
    c.send(b"".join(c.headers(1 + 2 * i) for i in range(5)))
    fr = c.frames(timeout=5)
    ga = [f for f in fr if isinstance(f, hf.GoAwayFrame)]
    assert ga and ga[0].error_code == 0 and ga[0].last_stream_id == 9, ga
    assert sorted(f.stream_id for f in fr if isinstance(f, hf.HeadersFrame)) == [1, 3, 5, 7, 9]
    assert c.closed


if __name__ == "__main__":
    h.main(globals())
