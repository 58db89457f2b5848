#!/usr/bin/env python3
"""Upstream TLS handshakes in async jobs (issue #23): with `ssl_async on` in the server
that proxies, `proxy_pass https://` and `proxy_ssl on` handshakes run in OpenSSL async jobs,
so the key share, the key exchange and a client certificate's signature go through the
accelerator as the client side's do; with `ssl_async off` nothing changes.

- tlsgate provider (batching): a plain-HTTP gateway (no client-side TLS, so every provider
  operation is an upstream handshake's) proxies many concurrent requests to an HTTPS
  backend that asks for a client certificate, and a stream server relays to a TLS echo:
  every request answered, and /status shows X25519 key generation and derivation and
  ECDSA P-256 signing queued in async jobs, batches of more than one lane, paused and
  resumed jobs; with `ssl_async off` the same load runs synchronously (no async request,
  no pause);
- fake accelerator (tests/fakeaccel, the client certificate's signature answered after
  delay_us): concurrent handshakes complete with wait-fd wakes (ssl_async_notify fd) and
  with a pool of two jobs (ssl_async_jobs 2: the others wait for one);
  proxy_connect_timeout while the job is paused (504, the job drained, the next request
  served); the client leaving while the job is paused; the upstream closing while the job
  is paused (502); a worker stopped (SIGQUIT) and killed fast (SIGTERM) with jobs paused;
  a drained job still paused at worker_shutdown_timeout (named in the warning).

Usage: python3 tests/integ/test_upstream_async.py BIN [TEST...]
"""
import json
import os
import signal
import socket
import socketserver
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness as H  # noqa: E402
import test_upstream_tls as U  # noqa: E402

H.FILE_TIMEOUT = 110

N_CLIENTS = 48
TLSGATE = ('ssl_provider tlsgate { adaptive off; pool_size 0; }\n'
           'ssl_propquery "?provider=tlsgate";\nworker_processes 1;\n')


def http_get(port, path, timeout=20):
    """One HTTP/1.1 request on its own plain connection: (status, body)."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(b"GET %s HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n"
                  % path.encode())
        data, _ = H.recv_all(s, timeout=timeout)
    head, _, body = data.partition(b"\r\n\r\n")
    if not head:
        return 0, b"no answer within %d s" % timeout
    return int(head.split()[1]), body


def concurrent_gets(port, paths):
    """All paths at once, one connection each: the list of (status, body)."""
    out = [None] * len(paths)
    go = threading.Barrier(len(paths))

    def one(i):
        try:
            go.wait(10)
            out[i] = http_get(port, paths[i])
        except Exception as e:  # noqa: BLE001 (reported below)
            out[i] = (0, repr(e).encode())
    ts = [threading.Thread(target=one, args=(i,)) for i in range(len(paths))]
    for t in ts:
        t.start()
    for t in ts:
        t.join(60)
    return out


def status(port):
    st, body = http_get(port, "/status")
    assert st == 200, (st, body)
    return json.loads(body)


def worker_async(js):
    """The workers' async job counters: paused now, resumed, drained."""
    a = js["async"]
    return {k: int(a[k]) for k in ("paused", "resumed", "drained")}


def wait_paused(port, n=1):
    """Until n upstream handshake jobs are paused (the accelerator holds them)."""
    H.wait_until(lambda: worker_async(status(port))["paused"] >= n, 10,
                 what="%d paused upstream job(s)" % n)


def echo_once(port, msg=b"ping"):
    """msg through the stream server to the TLS echo; the half-close passes on, then EOF."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(msg)
        s.shutdown(socket.SHUT_WR)
        return H.recv_all(s, timeout=10)[0]


def provider_gateway(env, b, e, async_on):
    p = U.pki()
    port, sport = env.port(), env.port()
    flag = "ssl_async %s;" % ("on" if async_on else "off")
    conf = env.write("tlsgate.conf", env.main_conf(TLSGATE) + """
        http {
          server { listen 127.0.0.1:%d; server_name a.test; %s
            location = /status { status; }
            location / { proxy_pass https://127.0.0.1:%d; proxy_ssl_session_reuse off;
                         proxy_ssl_certificate %s; proxy_ssl_certificate_key %s; } }
        }
        stream {
          server { listen 127.0.0.1:%d; proxy_pass 127.0.0.1:%d; proxy_ssl on;
                   proxy_ssl_session_reuse off; %s }
        }""" % (port, flag, b.port, p["client.crt"], p["client.key"], sport, e.port, flag))
    srv = env.start(conf)
    srv.wait_port(port)
    srv.wait_port(sport)
    return srv, port, sport


def run_load(env, async_on):
    b = U.TLSBackend(want_client_cert=True, threaded_handshakes=True)
    e = U.TLSEcho()
    try:
        srv, port, sport = provider_gateway(env, b, e, async_on)
        srv.wait_workers(1)
        n0 = len(b.seen)
        res = concurrent_gets(port, ["/r%d" % i for i in range(N_CLIENTS)])
        bad = [(i, r) for i, r in enumerate(res) if not r or r[0] != 200]
        assert not bad, "lost or failed requests: %s" % bad[:5]
        for i, (st, body) in enumerate(res):
            info = json.loads(body)
            assert info["path"] == "/r%d" % i and info["client"] == "gateway", info
            assert info["reused"] is False, info  # a full handshake each
        assert len(b.seen) - n0 == N_CLIENTS, len(b.seen) - n0
        for i in range(4):  # proxy_ssl on in a stream server
            assert echo_once(sport, b"ping%d" % i) == b"ping%d" % i
        return status(port)
    finally:
        b.close()
        e.close()


def test_provider_batches_upstream_handshakes(env):
    js = run_load(env, True)
    alg = js["provider"]["alg"]
    ks, dh, sig = alg["keygen_x25519"], alg["x25519"], alg["ecdsa_p256"]
    multi = sum(sum(a["fill"][1:]) for a in (ks, dh, sig))
    aw = worker_async(js)
    print("  keygen_x25519 async=%d x25519 async=%d ecdsa_p256 async=%d multi-lane batches=%d"
          " paused/resumed=%s" % (ks["requests_async"], dh["requests_async"],
                                  sig["requests_async"], multi, aw), flush=True)
    hs = N_CLIENTS + 4 + 1  # the http requests, the stream connections, the port probe
    # every upstream handshake's key share and key exchange went through async jobs (the
    # stream's too); the client certificate was signed in one for every http request
    assert ks["requests_async"] >= N_CLIENTS + 4, ks
    assert dh["requests_async"] >= N_CLIENTS + 4, dh
    assert sig["requests_async"] >= N_CLIENTS, sig
    assert ks["requests"] <= hs and dh["requests"] <= hs, (ks, dh)
    assert multi > 0, "no batch of more than one lane under %d upstream handshakes: %s" % (
        N_CLIENTS, {"keygen_x25519": ks, "x25519": dh})
    assert aw["paused"] == 0 and aw["resumed"] > 0, aw


def test_async_off_unchanged(env):
    js = run_load(env, False)
    alg = js["provider"]["alg"]
    for name in ("keygen_x25519", "x25519", "ecdsa_p256"):
        a = alg[name]
        assert a["requests"] >= N_CLIENTS and a["requests_async"] == 0 and a["batches"] == 0, \
            (name, a)
    aw = worker_async(js)
    assert aw["resumed"] == 0, aw


# ---------------------------------------------------------------- fake accelerator

def accel_gateway(env, b, delay_us, notify="callback", extra="", backend_port=None, main=""):
    import test_async as A
    p = U.pki()
    port = env.port()
    conf = env.write("tlsgate.conf", env.main_conf(A.accel_main(delay_us, notify) +
                                                   "worker_processes 1;\n" + main) + """
        http {
          server { listen 127.0.0.1:%d; server_name a.test; ssl_async on;
                   ssl_async_notify %s;
            location = /status { status; }
            location / { proxy_pass https://127.0.0.1:%d; proxy_ssl_session_reuse off;
                         proxy_ssl_certificate %s; proxy_ssl_certificate_key %s; %s } }
        }""" % (port, notify, backend_port or b.port, p["client.crt"], p["client.key"], extra))
    srv = env.start(conf)
    srv.wait_port(port)
    srv.wait_workers(1)
    return srv, port


def test_fd_wakes_concurrent(env):
    """ssl_async_notify fd: the jobs' wait fds in epoll; 24 concurrent handshakes whose
    client-certificate signatures take 20 ms each all complete."""
    b = U.TLSBackend(want_client_cert=True, threaded_handshakes=True)
    try:
        srv, port = accel_gateway(env, b, 20000, notify="fd")
        t0 = time.monotonic()
        res = concurrent_gets(port, ["/f%d" % i for i in range(24)])
        took = time.monotonic() - t0
        assert all(r and r[0] == 200 for r in res), res
        assert all(json.loads(r[1])["client"] == "gateway" for r in res)
        aw = worker_async(status(port))
        print("  24 handshakes in %.2f s, %s" % (took, aw), flush=True)
        assert aw["resumed"] >= 24 and aw["paused"] == 0, aw
    finally:
        b.close()


def test_job_pool_exhausted(env):
    """ssl_async_jobs 2: 12 concurrent upstream handshakes, each paused 20 ms on its
    signature, share two jobs; the others wait on the retry list (WANT_ASYNC_JOB) and
    all complete."""
    b = U.TLSBackend(want_client_cert=True, threaded_handshakes=True)
    try:
        srv, port = accel_gateway(env, b, 20000, main="ssl_async_jobs 2;\n")
        res = concurrent_gets(port, ["/j%d" % i for i in range(12)])
        assert all(r and r[0] == 200 for r in res), res
        js = status(port)
        print("  want_async_job=%s" % js["async"]["want_async_job"], flush=True)
        assert int(js["async"]["want_async_job"]) > 0, js["async"]
        assert worker_async(js)["paused"] == 0
    finally:
        b.close()


def test_timeout_while_paused(env):
    """proxy_connect_timeout passes while the signature is paused: 504, the job drained
    (the SSL kept until the accelerator answers), and the worker serves on."""
    b = U.TLSBackend(want_client_cert=True)
    try:
        srv, port = accel_gateway(env, b, 1500000, extra="proxy_connect_timeout 200ms;")
        env.allow_log = False
        t0 = time.monotonic()
        st, body = http_get(port, "/slow")
        took = time.monotonic() - t0
        assert st == 504 and took < 1.2, (st, took, body)
        assert "timed out in the TLS handshake" in srv.log_text()
        aw = worker_async(status(port))
        assert aw["drained"] >= 1, aw
        H.wait_until(lambda: worker_async(status(port))["paused"] == 0, 5,
                     what="the drained job to end")
        assert http_get(port, "/status")[0] == 200
    finally:
        b.close()


def test_client_leaves_while_paused(env):
    b = U.TLSBackend(want_client_cert=True)
    try:
        srv, port = accel_gateway(env, b, 1000000)
        for i in range(2):
            H.wait_until(lambda: worker_async(status(port))["paused"] == 0, 5,
                         what="no paused job")
            s = socket.create_connection(("127.0.0.1", port), timeout=5)
            s.sendall(b"GET /gone HTTP/1.1\r\nHost: a.test\r\n\r\n")
            wait_paused(port)  # the upstream handshake's signature is paused now
            s.close()
            H.wait_until(lambda: worker_async(status(port))["drained"] >= i + 1, 5,
                         what="a drained upstream job")
        H.wait_until(lambda: worker_async(status(port))["paused"] == 0, 5,
                     what="the drained job to end")
        st, body = http_get(port, "/after")
        assert st == 200 and json.loads(body)["path"] == "/after", (st, body)
    finally:
        b.close()


class Cutter(socketserver.ThreadingTCPServer):
    """Relays one TLS connection to a backend and closes both sides once the backend's
    first flight went through: the gateway's handshake loses its upstream while its
    client-certificate signature is paused."""
    daemon_threads = True

    def __init__(self, backend_port):
        self.bport = backend_port
        self.cut = 0
        outer = self

        class Relay(socketserver.BaseRequestHandler):
            def handle(self):
                c = self.request
                try:
                    with socket.create_connection(("127.0.0.1", outer.bport), timeout=5) as u:
                        c.settimeout(5)
                        hello = c.recv(65536)
                        if not hello:
                            return
                        u.sendall(hello)
                        time.sleep(0.1)  # the server's flight has arrived by now
                        c.sendall(u.recv(65536))
                        outer.cut += 1
                except OSError:
                    pass
        super().__init__(("127.0.0.1", 0), Relay)
        self.port = self.server_address[1]
        threading.Thread(target=self.serve_forever, daemon=True).start()

    def close(self):
        self.shutdown()
        self.server_close()


def test_upstream_fails_while_paused(env):
    b = U.TLSBackend(want_client_cert=True)
    cut = Cutter(b.port)
    try:
        # TLS 1.2: after its signed CertificateVerify the client still waits for the
        # server's Finished, which never comes (in TLS 1.3 the client's flight ends it)
        srv, port = accel_gateway(env, b, 300000, backend_port=cut.port,
                                  extra="proxy_ssl_protocols TLSv1.2;")
        st, body = http_get(port, "/cut")
        assert st == 502, (st, body)
        assert cut.cut >= 1
        log = srv.log_text()
        assert "failed the TLS handshake" in log, log[-1500:]
        aw = worker_async(status(port))
        assert aw["paused"] == 0 and aw["resumed"] >= 1, aw
    finally:
        cut.close()
        b.close()


def test_drained_job_outlives_shutdown_timeout(env):
    """SIGQUIT while only a drained job (its client gone) is paused, answered after the
    worker_shutdown_timeout: the worker waits for it until the timeout, says why, exits."""
    b = U.TLSBackend(want_client_cert=True)
    try:
        srv, port = accel_gateway(env, b, 4000000, main="worker_shutdown_timeout 1s;\n")
        s = socket.create_connection(("127.0.0.1", port), timeout=5)
        s.sendall(b"GET /gone HTTP/1.1\r\nHost: a.test\r\n\r\n")
        wait_paused(port)
        s.close()
        H.wait_until(lambda: worker_async(status(port))["drained"] >= 1, 5,
                     what="a drained upstream job")
        t0 = time.monotonic()
        srv.stop(signal.SIGQUIT, timeout=10)
        took = time.monotonic() - t0
        assert 0.8 <= took < 3.5, took
        log = srv.log_text()
        assert "closing 0 connections, 1 async jobs still paused" in log, log[-1500:]
    finally:
        b.close()


def test_worker_stop_while_paused(env):
    """SIGQUIT with handshakes paused: the requests are answered, then the worker exits;
    SIGTERM with handshakes paused: the gateway exits within its bound."""
    b = U.TLSBackend(want_client_cert=True)
    try:
        srv, port = accel_gateway(env, b, 1000000)
        out = []
        t = threading.Thread(target=lambda: out.append(concurrent_gets(port, ["/q1", "/q2"])))
        t.start()
        wait_paused(port)
        srv.stop(signal.SIGQUIT, timeout=10)
        t.join(20)
        assert out and all(r and r[0] == 200 for r in out[0]), out
        srv2, port2 = accel_gateway(env, b, 1000000)
        t = threading.Thread(target=lambda: concurrent_gets(port2, ["/t1", "/t2"]))
        t.start()
        wait_paused(port2)
        t0 = time.monotonic()
        srv2.stop(signal.SIGTERM, timeout=10)
        print("  SIGTERM with paused upstream jobs: exited in %.2f s" % (time.monotonic() - t0),
              flush=True)
        t.join(20)
    finally:
        b.close()


if __name__ == "__main__":
    try:
        H.main(globals())
    finally:
        if U._pki:
            import shutil
            shutil.rmtree(U._pki["dir"], ignore_errors=True)
