#!/usr/bin/env python3
"""Limits and hostile clients: worker_connections back-pressure, the fd limit (EMFILE at
ulimit -n 256), limit_conn_per_ip, absolute handshake and header deadlines, slowloris,
ssl_reject_handshake, odd SNI values, ClientHellos fragmented over records and segments.

Usage: python3 tests/integ/test_hostile.py BIN [TEST...]
"""
import os
import re
import resource
import select
import socket
import ssl
import statistics
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness as h  # noqa: E402
import replay_hello  # noqa: E402

KNOWN_FAILURES = {}

WHO = """
        location = /who { return 200 "%s"; }
"""


def serve(env, server_extra="", http_extra="", main="", events="", preexec=None,
          certs=("a_ec",)):
    """One server a.test (location /who answers "a") on a fresh port."""
    port = env.port()
    conf = env.write("tlsgate.conf", (
        h.USER_LINE + "error_log %s info;\npid %s;\n%s\nevents { %s }\nhttp {\n%s\n"
        "server { listen 127.0.0.1:%d ssl; server_name a.test; %s root %s; %s %s }\n}\n") % (
            env.log, env.pidfile, main, events or "worker_connections 512;", http_extra, port,
            env.tls(*certs), env.html, server_extra, WHO % "a"))
    env.start(conf, port=port, preexec=preexec)
    return port


def get_who(env, port, sni="a.test", timeout=5):
    with env.tls_socket(port, sni=sni, timeout=timeout) as s:
        s.sendall(b"GET /who HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n" %
                  (sni or "a.test").encode())
        r, _ = h.read_response(s, timeout=timeout)
        return r.status, r.body


def tls_ok(env, port, timeout=3):
    try:
        return get_who(env, port, timeout=timeout) == (200, b"a")
    except (OSError, EOFError, AssertionError, ssl.SSLError):
        return False


def worker_of(srv):
    return srv.wait_workers(1)[0]


def fd_count(pid):
    return len(os.listdir("/proc/%d/fd" % pid))


# ---------------------------------------------------------------- worker_connections


def test_worker_connections_backpressure(env):
    port = serve(env, events="worker_connections 8;")
    srv = env.servers[0]
    w = worker_of(srv)
    time.sleep(0.2)  # wait_port's probe connection is closed by now
    idle = fd_count(w)
    held = []
    try:
        for _ in range(8):
            held.append(socket.create_connection(("127.0.0.1", port), timeout=2))
        # the worker accepts them (they count) and then stops accepting
        h.wait_until(lambda: fd_count(w) == idle + 8, 5, what="the worker to accept 8 sockets")
        base = fd_count(w)
        t0 = time.monotonic()
        assert not tls_ok(env, port, timeout=1), "a 9th connection was served"
        assert time.monotonic() - t0 >= 0.9
        assert fd_count(w) == base, "the worker accepted past worker_connections"
        # one closes: the worker resumes accepting (the waiting client is accepted too)
        held.pop().close()
        h.wait_until(lambda: tls_ok(env, port, timeout=2), 5, what="accepting to resume")
        assert srv.workers() == [w], "the worker was replaced"
    finally:
        for s in held:
            s.close()


def _nofile_256():
    resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256))


def test_fd_limit_256(env):
    """ulimit -n 256 with worker_connections 1024: accept4() hits EMFILE; the worker pauses
    accepting (logged), keeps serving its connections, never crashes, and accepts again
    once descriptors are free."""
    env.allow_log = True  # the EMFILE pause is an [alert], checked below
    port = serve(env, events="worker_connections 1024;", preexec=_nofile_256)
    srv = env.servers[0]
    w = worker_of(srv)
    with open("/proc/%d/limits" % w) as f:
        assert re.search(r"Max open files\s+256\s+256", f.read()), "ulimit not applied"
    # an established client before the flood keeps being served during it
    early = env.tls_socket(port, timeout=5)
    held = []
    try:
        for _ in range(300):
            held.append(socket.create_connection(("127.0.0.1", port), timeout=3))
        h.wait_until(lambda: "accept4() failed, pausing accepts" in srv.log_text(), 5,
                     what="the EMFILE pause in the error log")
        assert fd_count(w) <= 256
        for i in range(3):
            early.sendall(b"GET /who HTTP/1.1\r\nHost: a.test\r\n\r\n")
            r, _ = h.read_response(early, timeout=5)
            assert r.status == 200 and r.body == b"a", (i, r)
        for s in held[:200]:
            s.close()
        del held[:200]
        h.wait_until(lambda: tls_ok(env, port, timeout=2), 10, what="service after EMFILE")
        assert srv.workers() == [w], "the worker crashed or was replaced"
    finally:
        early.close()
        for s in held:
            s.close()
    h.wait_until(lambda: tls_ok(env, port), 10, what="service after the flood")
    bad = [ln for ln in srv.log_text().splitlines() if h.BAD_LOG.search(ln) and
           "accept4() failed, pausing accepts" not in ln]
    assert not bad, "unexpected error-log lines:\n" + "\n".join(bad)


# ---------------------------------------------------------------- limit_conn_per_ip


def test_limit_conn_per_ip(env):
    port = serve(env, http_extra="limit_conn_per_ip 3;")
    held = [env.tls_socket(port) for _ in range(3)]
    try:
        # the 4th is closed at the accept: the handshake fails
        try:
            with env.tls_socket(port, timeout=3):
                ok = True
        except (OSError, ssl.SSLError):
            ok = False
        assert not ok, "a 4th connection from 127.0.0.1 was accepted"
        assert "limiting connections of client 127.0.0.1" in env.servers[0].log_text()
        # the held ones still work
        held[0].sendall(b"GET /who HTTP/1.1\r\nHost: a.test\r\n\r\n")
        r, _ = h.read_response(held[0])
        assert r.status == 200, r
        held.pop().close()
        h.wait_until(lambda: tls_ok(env, port), 5, what="a slot to free up")
    finally:
        for s in held:
            s.close()
    # the count follows closes: 3 at once work again, then the limit holds again
    h.wait_until(lambda: tls_ok(env, port), 5, what="recovery")
    again = [env.tls_socket(port) for _ in range(3)]
    try:
        assert not tls_ok(env, port, timeout=2)
    finally:
        for s in again:
            s.close()


# ---------------------------------------------------------------- deadlines


def trickle_until_closed(sock, data, every, limit):
    """Send data one byte every `every` s until the peer closes; returns seconds taken
    (None when still open after `limit` s). sock is a raw socket or a TLS socket."""
    t0 = time.monotonic()
    i = 0
    while time.monotonic() - t0 < limit:
        try:
            if i < len(data):
                sock.sendall(data[i:i + 1])
                i += 1
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError):
            return time.monotonic() - t0
        r, _, _ = select.select([sock], [], [], every)
        if r:
            try:
                got = sock.recv(65536)
            except (ConnectionResetError, ssl.SSLError):
                return time.monotonic() - t0
            except ssl.SSLWantReadError:
                continue
            if not got:
                return time.monotonic() - t0
            if b" 408 " in got:  # a 408 answer is the end of the head deadline
                return time.monotonic() - t0
    return None


def test_handshake_deadline_absolute(env):
    port = serve(env, server_extra="ssl_handshake_timeout 1s; client_header_timeout 10s;")
    hello = python_client_hello("a.test")[3]
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    try:
        dt = trickle_until_closed(s, hello, 0.2, 5)
    finally:
        s.close()
    assert dt is not None and 0.8 <= dt <= 2.5, "handshake deadline after %r s (want ~1 s)" % dt
    assert "timed out in the TLS handshake" in env.servers[0].log_text()
    # a handshake made in time is not cut
    assert tls_ok(env, port)


def test_header_deadline_absolute(env):
    """client_header_timeout is counted from the accept (first request) and from the
    first byte (later requests), whatever the client trickles."""
    port = serve(env, server_extra="client_header_timeout 1500ms; ssl_handshake_timeout 1s;")
    head = b"GET /who HTTP/1.1\r\nHost: a.test\r\nX-Slow: " + b"x" * 200
    s = env.tls_socket(port, timeout=5)
    try:
        dt = trickle_until_closed(s, head, 0.1, 5)
    finally:
        s.close()
    # measured from after the handshake: about 1.5 s less the handshake
    assert dt is not None and 1.0 <= dt <= 2.5, "head deadline after %r s (want ~1.5 s)" % dt
    s = env.tls_socket(port, timeout=5)
    try:
        s.sendall(b"GET /who HTTP/1.1\r\nHost: a.test\r\n\r\n")
        r, _ = h.read_response(s)
        assert r.status == 200, r
        dt = trickle_until_closed(s, head, 0.1, 5)
    finally:
        s.close()
    assert dt is not None and 1.2 <= dt <= 2.5, "2nd head deadline after %r s" % dt


# ---------------------------------------------------------------- slowloris


def curl_time(port, path="/who"):
    p = h.run(["curl", "-sk", "--max-time", "5", "--resolve", "a.test:%d:127.0.0.1" % port,
               "-o", "/dev/null", "-w", "%{http_code} %{time_total}",
               "https://a.test:%d%s" % (port, path)], timeout=10)
    code, t = p.stdout.split()
    assert code == "200", (code, p.stderr)
    return float(t)


def test_slowloris(env):
    """2,000 trickling connections (1,800 sending a ClientHello one byte at a time, 200
    sending a request head one byte at a time after a handshake) do not stop a normal
    client: each of its new connections (handshake + request, curl's time_total) is
    served within 100 ms (median; the worst is printed)."""
    N_RAW, N_TLS = 1800, 200
    port = serve(env, events="worker_connections 4096;", main="worker_rlimit_nofile 8192;")
    hello = python_client_hello("a.test")[3]
    raw, tlss = [], []
    stop = threading.Event()
    try:
        for _ in range(N_RAW):
            raw.append(socket.create_connection(("127.0.0.1", port), timeout=5))
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        for _ in range(N_TLS):
            s = ctx.wrap_socket(socket.create_connection(("127.0.0.1", port), timeout=5),
                                server_hostname="a.test")
            tlss.append(s)
        head = b"GET /who HTTP/1.1\r\nHost: a.test\r\nX-Slow: " + b"y" * 4000
        pos = [0]
        sent = [0]

        def trickle():
            while not stop.is_set():
                i = pos[0]
                for s in raw:
                    if i < len(hello):
                        s.send(hello[i:i + 1])
                        sent[0] += 1
                for s in tlss:
                    s.send(head[i:i + 1])
                    sent[0] += 1
                pos[0] += 1
                stop.wait(0.05)

        t = threading.Thread(target=trickle, daemon=True)
        t.start()
        time.sleep(0.3)
        times = [curl_time(port) for _ in range(15)]
        stop.set()
        t.join(5)
        w = worker_of(env.servers[0])
        open_fds = fd_count(w)
    finally:
        stop.set()
        for s in raw + tlss:
            s.close()
    med = statistics.median(times)
    print("slowloris: %d trickling connections (%d bytes trickled, %d rounds), worker fds %d;"
          " normal client ms: median %.1f, max %.1f, all %s" %
          (N_RAW + N_TLS, sent[0], pos[0], open_fds, med * 1e3, max(times) * 1e3,
           " ".join("%.0f" % (x * 1e3) for x in times)), flush=True)
    assert open_fds >= N_RAW + N_TLS, "the trickling connections were not all held (%d)" % open_fds
    assert pos[0] >= 5, "the trickle did not run (%d rounds)" % pos[0]
    assert med < 0.100, "median %.1f ms >= 100 ms" % (med * 1e3)


# ---------------------------------------------------------------- ClientHello forms


def python_client_hello(sni, tls12=False):
    """A real ClientHello from Python's ssl (OpenSSL): (sslobj, inbio, outbio, bytes)."""
    return replay_hello.client_hello_obj(sni, tls12)


def records(data):
    """Split TLS records: [(type, version bytes, payload)]."""
    out, i = [], 0
    while i + 5 <= len(data):
        n = int.from_bytes(data[i + 3:i + 5], "big")
        out.append((data[i], data[i + 1:i + 3], data[i + 5:i + 5 + n]))
        i += 5 + n
    assert i == len(data), "trailing bytes"
    return out


def rerecord(data, size):
    """The same handshake bytes in records of at most size bytes each."""
    out = b""
    for typ, ver, payload in records(data):
        for j in range(0, len(payload), size):
            chunk = payload[j:j + size]
            out += bytes([typ]) + ver + len(chunk).to_bytes(2, "big") + chunk
    return out


def handshake_with(port, hello_bytes, obj, inc, out, per_send=None, timeout=5):
    """Send hello_bytes (optionally per_send bytes per send() with TCP_NODELAY and a
    short pause, so each goes out as its own segment), then finish the handshake of
    obj over the socket. Returns (version, cipher, first server record header)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        if per_send:
            for j in range(0, len(hello_bytes), per_send):
                s.sendall(hello_bytes[j:j + per_send])
                time.sleep(0.001)
        else:
            s.sendall(hello_bytes)
        first = None
        end = time.monotonic() + timeout
        while True:
            try:
                obj.do_handshake()
                break
            except ssl.SSLWantReadError:
                pass
            d = out.read()
            if d:
                s.sendall(d)
            s.settimeout(max(0.1, end - time.monotonic()))
            got = s.recv(65536)
            if not got:
                raise AssertionError("server closed during the handshake")
            if first is None:
                first = got[:6]
            inc.write(got)
            if time.monotonic() > end:
                raise AssertionError("handshake timed out")
        d = out.read()
        if d:
            s.sendall(d)
        obj.write(b"GET /who HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n")
        s.sendall(out.read())
        resp = b""
        while b"\r\n\r\n" not in resp or not resp.endswith(b"a"):
            got = s.recv(65536)
            if not got:
                break
            inc.write(got)
            try:
                while True:
                    chunk = obj.read(65536)
                    if not chunk:
                        break
                    resp += chunk
            except ssl.SSLWantReadError:
                pass
            except (ssl.SSLZeroReturnError, ssl.SSLEOFError):
                break
            if time.monotonic() > end + timeout:
                raise AssertionError("no response; got %r" % resp[:200])
        assert resp.startswith(b"HTTP/1.1 200") and resp.endswith(b"a"), resp[:200]
        return obj.version(), obj.cipher()[0], first[:1] + first[5:6]
    finally:
        s.close()


def test_fragmented_client_hello(env):
    port = serve(env)
    for tls12 in (False, True):
        obj, inc, out, hello = python_client_hello("a.test", tls12)
        ref = handshake_with(port, hello, obj, inc, out)
        assert ref[2] == b"\x16\x02", "first server record is not a ServerHello: %r" % ref[2]
        cases = [("1-byte records", 1, None), ("7-byte records", 7, None),
                 ("1 record, 1-byte segments", 0, 1), ("1-byte records, 3-byte segments", 1, 3)]
        for what, rsize, seg in cases:
            obj, inc, out, hello = python_client_hello("a.test", tls12)
            data = rerecord(hello, rsize) if rsize else hello
            got = handshake_with(port, data, obj, inc, out, per_send=seg)
            assert got == ref, "%s (tls12=%s): %r != unfragmented %r" % (what, tls12, got, ref)


# ---------------------------------------------------------------- SNI


def two_servers(env, default_extra=""):
    """Port with a default server "d" (b_rsa certificate or ssl_reject_handshake) and a.test
    (a_ec); /who says which one answered."""
    port = env.port()
    env.write("tlsgate.conf", (
        h.USER_LINE + "error_log %s info;\npid %s;\nevents { worker_connections 64; }\nhttp {\n"
        "server { listen 127.0.0.1:%d ssl default_server; server_name d.test; %s %s }\n"
        "server { listen 127.0.0.1:%d ssl; server_name a.test; %s root %s; %s }\n}\n") % (
            env.log, env.pidfile, port, default_extra, WHO % "d", port, env.tls("a_ec"),
            env.html, WHO % "a"))
    env.start(env.path("tlsgate.conf"), port=port)
    return port


def hello_with_sni_bytes(name_bytes, tls12=True):
    """Python's ClientHello with its host_name replaced by name_bytes (same length as the
    placeholder, so no length field changes)."""
    ph = "p" * len(name_bytes) if name_bytes else "p"
    obj, inc, out, hello = python_client_hello(ph, tls12)
    i = hello.find(ph.encode())
    assert i > 0 and hello.count(ph.encode()) == 1
    return hello[:i] + name_bytes + hello[i + len(ph):]


def ext_block(hello):
    """Offset of the extensions-length field of a one-record ClientHello."""
    p = 5 + 4 + 2 + 32
    p += 1 + hello[p]                                  # session id
    p += 2 + int.from_bytes(hello[p:p + 2], "big")     # cipher suites
    p += 1 + hello[p]                                  # compression methods
    return p


def sni_ext_span(hello):
    """(start, end) of the server_name extension's body inside a one-record ClientHello."""
    p = ext_block(hello)
    end = p + 2 + int.from_bytes(hello[p:p + 2], "big")
    p += 2
    while p < end:
        typ, n = int.from_bytes(hello[p:p + 2], "big"), int.from_bytes(hello[p + 2:p + 4], "big")
        if typ == 0:
            return p + 4, p + 4 + n
        p += 4 + n
    raise AssertionError("no server_name extension")


def with_sni_body(hello, body):
    """hello with its server_name extension body replaced (every length fixed up)."""
    a, b = sni_ext_span(hello)
    delta = len(body) - (b - a)
    e = ext_block(hello)
    m = bytearray(hello[:a] + body + hello[b:])
    m[a - 2:a] = len(body).to_bytes(2, "big")
    m[e:e + 2] = (int.from_bytes(m[e:e + 2], "big") + delta).to_bytes(2, "big")
    m[3:5] = (len(m) - 5).to_bytes(2, "big")
    m[6:9] = (len(m) - 9).to_bytes(3, "big")
    return bytes(m)


def first_flight(port, data, timeout=3):
    """Send raw ClientHello bytes; return what the server sends until it stops or closes
    (TLS 1.2: ServerHello, Certificate... in clear; or an alert)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    try:
        s.sendall(data)
        buf = b""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            r, _, _ = select.select([s], [], [], 0.3)
            if not r:
                if buf:
                    break
                continue
            try:
                got = s.recv(65536)
            except ConnectionResetError:
                break
            if not got:
                break
            buf += got
        return buf
    finally:
        s.close()


def picked(flight):
    """'a' or 'd' from the certificate in a TLS 1.2 first flight; 'alert:N' for an alert."""
    if flight[:1] == b"\x15":
        return "alert:%d" % flight[6]
    if b"a.test" in flight:
        return "a"
    if b"b.test" in flight:
        return "d"
    return "?%r" % flight[:20]


def test_sni_odd_values(env):
    port = two_servers(env, env.tls("b_rsa") + " root %s;" % env.html)
    cases = {
        b"a.test": "a",
        b"A.TEST": "a",                  # names are case-insensitive
        b"unknown.test": "d",
        b"127.0.0.1": "d",               # IP literal (RFC 6066 forbids it): default server
        b"[::1]": "d",
        b"a.test.": "a",                 # trailing dot: the same name
        b"a..test": "d",                 # unusable names: the default server
        b"a test": "d",
        b"\xff\xfe.test": "d",
    }
    for name, want in cases.items():
        got = [picked(first_flight(port, hello_with_sni_bytes(name))) for _ in range(2)]
        assert got == [want, want], "SNI %r picked %r, want %r" % (name, got, want)
    # absent SNI: the default server (and a full exchange works)
    obj, inc, out, hello = python_client_hello(None, tls12=True)
    assert picked(first_flight(port, hello)) == "d"
    # malformed server_name extensions: decode_error (50), deterministic, no crash
    _, _, _, hello = python_client_hello("a.test", tls12=True)
    a, b = sni_ext_span(hello)
    body = hello[a:b]
    bad = {
        "empty host_name": body[:3] + b"\x00\x00",              # HostName<1..2^16-1>
        "list length too long": (int.from_bytes(body[:2], "big") + 1).to_bytes(2, "big")
        + body[2:],
        "name length too long": body[:3] + (int.from_bytes(body[3:5], "big") + 9).to_bytes(
            2, "big") + body[5:],
        "NUL in the name": body[:5] + b"a\x00test",
    }
    for what, nb in bad.items():
        m = with_sni_body(hello, nb)
        got = [picked(first_flight(port, bytes(m))) for _ in range(2)]
        assert got[0] == got[1] and got[0].startswith("alert:"), (what, got)
        assert got[0] in ("alert:50", "alert:112"), (what, got)
    assert tls_ok(env, port), "the server stopped serving"
    assert env.servers[0].workers(), "no worker"


def test_ssl_reject_handshake(env):
    port = two_servers(env, "ssl_reject_handshake on;")
    # no SNI, unknown SNI, IP literal: the default server rejects with unrecognized_name
    for name in (None, b"unknown.test", b"127.0.0.1", b"d.test"):
        if name is None:
            hello = python_client_hello(None, tls12=True)[3]
        else:
            hello = hello_with_sni_bytes(name)
        got = picked(first_flight(port, hello))
        assert got == "alert:112", "SNI %r: %r, want the unrecognized_name alert" % (name, got)
    # the same through a real client
    try:
        env.tls_socket(port, sni="unknown.test").close()
        raise AssertionError("handshake for unknown.test succeeded")
    except ssl.SSLError as e:
        assert "UNRECOGNIZED_NAME" in str(e).upper(), e
    # a.test is served with its own certificate, TLS 1.2 and 1.3
    assert get_who(env, port, sni="a.test") == (200, b"a")
    assert picked(first_flight(port, hello_with_sni_bytes(b"a.test"))) == "a"
    assert "handshake rejected (ssl_reject_handshake)" in env.servers[0].log_text()


def test_reject_handshake_config(env):
    """A certificate-less server is accepted only with ssl_reject_handshake on."""
    port = env.port()
    base = h.USER_LINE + ("error_log %s info;\npid %s;\nevents { }\nhttp { server { listen 127.0.0.1:%d ssl;"
            " %%s } }\n") % (env.log, env.pidfile, port)
    good = env.write("good.conf", base % "ssl_reject_handshake on;")
    p = h.run([h.binary(), "-t", "-c", good])
    assert p.returncode == 0, p.stdout + p.stderr
    bad = env.write("bad.conf", base % "ssl_reject_handshake off;")
    p = h.run([h.binary(), "-t", "-c", bad])
    assert p.returncode != 0 and "no ssl_certificate" in p.stdout + p.stderr, p


if __name__ == "__main__":
    h.main(globals())
