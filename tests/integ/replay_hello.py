#!/usr/bin/env python3
"""ClientHello replay client for the async-TLS abort tests (standard library only).

Builds one real TLS ClientHello with ssl.SSLContext + ssl.MemoryBIO (the bytes that
SSLObject.do_handshake() writes), then opens many raw TCP connections to the server,
sends those bytes and closes without reading the answer: every second connection is
closed with SO_LINGER {1, 0} (the close is a TCP RST), the others with a normal close
(FIN). Up to `inflight` connections are open at once. Each connection is held open for
`hold_ms` after the hello is sent (0..hold_ms, spread evenly), so that the server has
read it and started the handshake (a private-key operation that an accelerator pauses)
when the client goes away.

    python3 tests/integ/replay_hello.py PORT COUNT [--inflight N] [--hold-ms MS]
                                        [--no-spread] [--sni NAME] [--tls12] [--host ADDR]
                                        [--deadline S]

prints one line "replayed: sent=S rst=R fin=F refused=X errors=E seconds=T" and exits 0
(connection failures are counted, not fatal: the server may be stopping).
"""
import argparse
import errno
import selectors
import socket
import ssl
import struct
import sys
import time

LINGER_RST = struct.pack("ii", 1, 0)


def client_hello_obj(sni="a.test", tls12=False, alpn=None, ciphers=None):
    """A real client (Python's ssl, OpenSSL; no certificate check) over memory BIOs that has
    written its ClientHello: (sslobj, inbio, outbio, the ClientHello's bytes). TLS 1.2+1.3
    offer; tls12: TLS 1.2 only; alpn: the protocols offered (a list), none by default;
    ciphers: the TLS 1.2 cipher list offered (OpenSSL's syntax), the default by default.
    Also used by test_hostile.py and tests/fuzz/gen_tls_hello_seeds.py."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    if tls12:
        ctx.maximum_version = ssl.TLSVersion.TLSv1_2
    if alpn:
        ctx.set_alpn_protocols(alpn)
    if ciphers:
        ctx.set_ciphers(ciphers)
    inc, out = ssl.MemoryBIO(), ssl.MemoryBIO()
    obj = ctx.wrap_bio(inc, out, server_hostname=sni)
    try:
        obj.do_handshake()
    except ssl.SSLWantReadError:
        pass
    return obj, inc, out, out.read()


def client_hello(sni="a.test", tls12=False, alpn=None):
    """The bytes of one real ClientHello (TLS 1.2+1.3 offer; tls12: TLS 1.2 only)."""
    data = client_hello_obj(sni, tls12, alpn)[3]
    if not data or data[0] != 0x16:
        raise RuntimeError("no ClientHello produced: %r" % data[:16])
    return data


class Stats:
    def __init__(self):
        self.sent = self.rst = self.fin = self.refused = self.errors = 0
        self.seconds = 0.0

    def __str__(self):
        return ("replayed: sent=%d rst=%d fin=%d refused=%d errors=%d seconds=%.2f" %
                (self.sent, self.rst, self.fin, self.refused, self.errors, self.seconds))


def replay(port, count, hello=None, inflight=200, hold_ms=5.0, host="127.0.0.1",
           deadline_s=60.0, stop=None, spread=True):
    """Run `count` replay clients against host:port; returns a Stats.

    Each connection is closed 0..hold_ms after its hello was sent (spread evenly), or
    exactly hold_ms after with spread=False.
    stop: an optional callable; when it returns true no new connection is started."""
    hello = hello or client_hello()
    st = Stats()
    sel = selectors.DefaultSelector()
    started = 0
    pending = {}  # fd -> [sock, index, state, close_at]; state "connecting" or "holding"
    t0 = time.monotonic()
    end = t0 + deadline_s

    def finish(ent, ok):
        sock, i = ent[0], ent[1]
        try:
            sel.unregister(sock)
        except (KeyError, ValueError):
            pass
        pending.pop(sock.fileno(), None)
        if ok:
            if i % 2 == 0:
                try:
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, LINGER_RST)
                    st.rst += 1
                except OSError:
                    st.fin += 1
            else:
                st.fin += 1
        sock.close()

    while (started < count or pending) and time.monotonic() < end:
        while started < count and len(pending) < inflight and not (stop and stop()):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.setblocking(False)
            i = started
            started += 1
            rc = s.connect_ex((host, port))
            if rc not in (0, errno.EINPROGRESS):
                if rc == errno.ECONNREFUSED:
                    st.refused += 1
                else:
                    st.errors += 1
                s.close()
                continue
            ent = [s, i, "connecting", 0.0]
            pending[s.fileno()] = ent
            sel.register(s, selectors.EVENT_WRITE, ent)
        if stop and stop() and started < count:
            count = started  # stop starting new ones; finish those in flight
        now = time.monotonic()
        timeout = 0.05
        holds = [e[3] for e in pending.values() if e[2] == "holding"]
        if holds:
            timeout = max(0.0, min(timeout, min(holds) - now))
        for key, _ in sel.select(timeout) if pending else ():
            ent = key.data
            sock = ent[0]
            if ent[2] != "connecting":
                continue
            err = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
            if err:
                if err == errno.ECONNREFUSED:
                    st.refused += 1
                else:
                    st.errors += 1
                finish(ent, False)
                continue
            try:
                n = sock.send(hello)
            except OSError:
                st.errors += 1
                finish(ent, False)
                continue
            if n != len(hello):
                st.errors += 1
                finish(ent, False)
                continue
            st.sent += 1
            sel.unregister(sock)
            ent[2] = "holding"
            # spread the hold times over 0..hold_ms (deterministically)
            frac = ((ent[1] * 37) % 100) / 100.0 if spread else 1.0
            ent[3] = time.monotonic() + hold_ms * frac / 1000.0
        now = time.monotonic()
        for ent in [e for e in pending.values() if e[2] == "holding" and e[3] <= now]:
            finish(ent, True)
    for ent in list(pending.values()):
        st.errors += 1
        finish(ent, False)
    sel.close()
    st.seconds = time.monotonic() - t0
    return st


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("port", type=int)
    ap.add_argument("count", type=int)
    ap.add_argument("--inflight", type=int, default=200)
    ap.add_argument("--hold-ms", type=float, default=5.0)
    ap.add_argument("--sni", default="a.test")
    ap.add_argument("--tls12", action="store_true")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--deadline", type=float, default=60.0)
    ap.add_argument("--no-spread", action="store_true",
                    help="hold every connection exactly --hold-ms")
    a = ap.parse_args()
    hello = client_hello(a.sni, a.tls12)
    st = replay(a.port, a.count, hello, inflight=a.inflight, hold_ms=a.hold_ms, host=a.host,
                deadline_s=a.deadline, spread=not a.no_spread)
    print(st, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
