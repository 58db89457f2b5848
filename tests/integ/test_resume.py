#!/usr/bin/env python3
"""Session resumption (issue #9) with Python's ssl client (SSLSocket.session / session_reused).

- shared cache between two workers: TLS 1.2 session IDs and TLS 1.3 stateful tickets
  (tickets off) resume on every try while connections land on both workers (reuseport;
  /status per-worker counters prove it); the builtin (per-process) cache does not;
- automatic ticket keys: TLS 1.2 and 1.3 tickets resume across both workers and across a
  reload;
- ssl_session_ticket_key files: rotation by file order (an old key decrypts until it
  leaves the list), 48- and 80-byte files, wrong sizes refused;
- a session of virtual server A offered to virtual server B: full handshake;
- the shared zone survives a reload with the same NAME:SIZE;
- config errors of ssl_session_cache shared:NAME:SIZE.
"""
import json
import os
import socket
import ssl
import sys
import http.client

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness as H  # noqa: E402

TRIES = 24


def client_ctx(version):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    v = ssl.TLSVersion.TLSv1_2 if version == "1.2" else ssl.TLSVersion.TLSv1_3
    ctx.minimum_version = ctx.maximum_version = v
    return ctx


def connect(ctx, port, sni="a.test", session=None):
    """One HTTPS request; returns (session_reused, new session)."""
    raw = socket.create_connection(("127.0.0.1", port), timeout=5)
    s = ctx.wrap_socket(raw, server_hostname=sni, session=session)
    try:
        s.settimeout(5)
        s.sendall(b"GET / HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n" % sni.encode())
        data = b""
        while True:  # reading the response also reads the TLS 1.3 NewSessionTicket
            d = s.recv(65536)
            if not d:
                break
            data += d
        assert data.startswith(b"HTTP/1.1 200"), data[:100]
        return s.session_reused, s.session
    finally:
        s.close()


def status(port):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        c.request("GET", "/status", headers={"Host": "a.test"})
        return json.loads(c.getresponse().read())
    finally:
        c.close()


def resumed_by_worker(st):
    out = []
    for w in st["workers"]:
        out.append(sum(t["count"] for t in w["handshakes"]["by_type"] if t["resumed"]))
    return out


def conf(env, port, sport, cache, extra="", workers=2):
    env.write("html/index.html", "hello\n")
    return env.conf("""
    %s
    server {
        listen 127.0.0.1:%d ssl reuseport;
        server_name a.test;
        %s
        root %s;
        ssl_session_cache %s;
    }
    server {
        listen 127.0.0.1:%d;
        location = /status { status; }
    }""" % (extra, port, env.tls("a_rsa"), env.html, cache, sport),
                    main="worker_processes %d;" % workers)


def tries(ctx, port, first_session, reuse_latest):
    """TRIES connections offering a session; returns how many resumed."""
    n, sess = 0, first_session
    for _ in range(TRIES):
        reused, new = connect(ctx, port, session=sess)
        n += bool(reused)
        if reuse_latest and new is not None:
            sess = new  # TLS 1.3: use the newest ticket
    return n


def start(env, cache, extra=""):
    port, sport = env.port(), env.port()
    srv = env.start(conf(env, port, sport, cache, extra))
    srv.wait_port(port)
    srv.wait_port(sport)
    srv.wait_workers(2)
    return srv, port, sport


def test_shared_cache_two_workers(env):
    srv, port, sport = start(env, "shared:SSL:1m", "ssl_session_tickets off;")
    for version in ("1.2", "1.3"):
        ctx = client_ctx(version)
        _, sess = connect(ctx, port)
        assert sess is not None
        n = tries(ctx, port, sess, reuse_latest=version == "1.3")
        assert n == TRIES, "TLS %s: %d of %d resumed with the shared cache" % (version, n, TRIES)
    st = status(sport)
    sc = st["session_cache"]
    assert sc["hits"] >= 2 * TRIES and sc["stores"] > TRIES, sc  # 1.3: a ticket each
    per = resumed_by_worker(st)
    assert len(per) == 2 and all(x > 0 for x in per), \
        "resumed handshakes per worker %s: the connections did not reach both workers" % per


def keepalive_connect(ctx, port, session, how):
    """One keep-alive request, then the connection ends by `how`: "close_notify" (the
    client shuts TLS down), "drop" (the client closes the socket, no close_notify) or
    "server" (the client waits for keepalive_timeout). Returns (reused, session)."""
    raw = socket.create_connection(("127.0.0.1", port), timeout=5)
    s = ctx.wrap_socket(raw, server_hostname="a.test", session=session)
    s.settimeout(5)
    s.sendall(b"GET / HTTP/1.1\r\nHost: a.test\r\n\r\n")
    data = b""
    while b"hello\n" not in data:
        d = s.recv(65536)
        assert d, data[:100]
        data += d
    assert data.startswith(b"HTTP/1.1 200"), data[:100]
    reused, sess = s.session_reused, s.session
    if how == "close_notify":
        try:
            s.unwrap()  # sends close_notify; the server may close without answering it
        except (ssl.SSLError, OSError):
            pass
        raw.close()
    elif how == "drop":
        raw.close()
    else:
        s.settimeout(5)
        while s.recv(65536):
            pass  # the server closes the idle connection
        s.close()
    return reused, sess


def test_shared_cache_keepalive_connections(env):
    """Sessions of keep-alive connections resume, however the connection ended (a
    connection closed without close_notify used to remove its session: OpenSSL's
    SSL_free treats it as failed unless the server marks it shut, as nginx does)."""
    srv, port, sport = start(env, "shared:SSL:1m",
                             "ssl_session_tickets off; keepalive_timeout 1s;")
    for version in ("1.2", "1.3"):
        ctx = client_ctx(version)
        for how in ("drop", "close_notify", "server"):
            _, sess = keepalive_connect(ctx, port, None, how)
            reused, _ = keepalive_connect(ctx, port, sess, how)
            assert reused, "TLS %s: the session of a keep-alive connection ended by %s " \
                           "was not resumed" % (version, how)


def test_cache_of_a_non_default_server_is_warned_about(env):
    """Sessions follow the address's default server (the context a handshake starts
    with): a non-default server's own ssl_session_cache is not used, and -t says so."""
    port = env.port()
    env.write("html/index.html", "hello\n")
    base = """
    server { listen 127.0.0.1:%d ssl; server_name a.test; %s root %s; %s }
    server { listen 127.0.0.1:%d ssl; server_name b.test; %s root %s; %s }"""
    same = env.conf("ssl_session_cache shared:S:1m;" + base % (
        port, env.tls("a_rsa"), env.html, "", port, env.tls("b_rsa"), env.html, ""),
        name="same.conf")
    diff = env.conf(base % (port, env.tls("a_rsa"), env.html, "",
                            port, env.tls("b_rsa"), env.html,
                            "ssl_session_cache shared:B:1m; ssl_session_tickets off;"),
                    name="diff.conf")
    run = lambda c: H.run([H.binary(), "-t", "-c", c], timeout=30,
                          env=dict(os.environ, TLSGATE_STATE_DIR=env.state))
    t = run(same)
    assert t.returncode == 0 and "are not used" not in t.stderr, t.stderr
    t = run(diff)
    assert t.returncode == 0 and "are not used on 127.0.0.1:%d" % port in t.stderr, t.stderr


def test_builtin_cache_is_per_worker(env):
    """The control: with OpenSSL's per-process cache some tries land on the other worker."""
    srv, port, sport = start(env, "builtin", "ssl_session_tickets off;")
    ctx = client_ctx("1.2")
    _, sess = connect(ctx, port)
    n = tries(ctx, port, sess, reuse_latest=False)
    assert 0 < n < TRIES, "%d of %d resumed with a per-worker cache" % (n, TRIES)


def test_tickets_auto_keys_workers_and_reload(env):
    srv, port, sport = start(env, "none")
    sessions = {}
    for version in ("1.2", "1.3"):
        ctx = client_ctx(version)
        _, sess = connect(ctx, port)
        sessions[version] = (ctx, sess)
        n = tries(ctx, port, sess, reuse_latest=False)
        assert n == TRIES, "TLS %s: %d of %d tickets resumed" % (version, n, TRIES)
    srv.send(H.signal.SIGHUP)
    H.wait_until(lambda: "reloaded" in srv.log_text(), 10, what="reload")
    H.wait_until(lambda: len(resumed_by_worker(status(sport))) == 2, 10, what="new workers")
    for version, (ctx, sess) in sessions.items():
        reused, _ = connect(ctx, port, session=sess)
        assert reused, "TLS %s ticket not accepted after a reload" % version


def sleep_to_period_end(period, lead):
    """Sleep until `lead` seconds before the end of the current `period`-second epoch of
    the clock (int(time) // period), or of the next one when that moment has passed."""
    import time
    now = time.time()
    late = (int(now) // period) * period + period - lead
    if late < now:
        late += period
    time.sleep(late - now)


def test_auto_keys_rotate(env):
    """Automatic keys with a 3 s period: a ticket made late in period e is accepted in
    e + 1 by both workers (its key only decrypts there), and all workers agree."""
    import time
    period = 3
    srv, port, sport = start(env, "none", "ssl_session_timeout %ds;" % period)
    ctx = client_ctx("1.3")
    sleep_to_period_end(period, 1.0)
    _, sess = connect(ctx, port)
    e = int(time.time()) // period
    time.sleep(max(0, (e + 1) * period + 0.2 - time.time()))
    assert int(time.time()) // period == e + 1
    n = 0
    for _ in range(6):  # both workers (reuseport), all within the ticket's lifetime
        n += bool(connect(ctx, port, session=sess)[0])
    assert n == 6, "%d of 6 resumed with the previous period's key" % n


def test_shared_zone_survives_reload(env):
    srv, port, sport = start(env, "shared:Z:64k", "ssl_session_tickets off;")
    ctx = client_ctx("1.2")
    _, sess = connect(ctx, port)
    srv.send(H.signal.SIGHUP)
    H.wait_until(lambda: "reloaded" in srv.log_text(), 10, what="reload")
    for _ in range(6):
        reused, _ = connect(ctx, port, session=sess)
        assert reused, "a cached session was lost across a reload with the same zone"


def test_ticket_key_files_rotation(env):
    k1 = env.write("k1.key", os.urandom(48))
    k2 = env.write("k2.key", os.urandom(80))
    port, sport = env.port(), env.port()

    def write(keys):
        lines = " ".join("ssl_session_ticket_key %s;" % k for k in keys)
        return conf(env, port, sport, "none", lines, workers=1)

    srv = env.start(write([k1]))
    srv.wait_port(port)
    old = {}
    for version in ("1.2", "1.3"):
        ctx = client_ctx(version)
        _, sess = connect(ctx, port)
        old[version] = (ctx, sess)
        assert connect(ctx, port, session=sess)[0], "TLS %s: k1 ticket" % version
    gen = [0]

    def reload(keys):
        write(keys)
        srv.send(H.signal.SIGHUP)
        gen[0] += 1
        H.wait_until(lambda: "generation %d" % gen[0] in srv.log_text(), 10, what="reload")
        H.wait_until(lambda: status(sport)["workers"][0]["generation"] == gen[0], 10,
                     what="new worker")

    reload([k2, k1])  # k2 encrypts, k1 still decrypts
    new = {}
    for version, (ctx, sess) in old.items():
        reused, fresh = connect(ctx, port, session=sess)
        assert reused, "TLS %s: ticket of a decrypt-only key refused" % version
        _, fresh = connect(ctx, port)
        new[version] = fresh
    reload([k2])  # k1 left: its tickets are refused, k2's accepted
    for version, (ctx, sess) in old.items():
        assert not connect(ctx, port, session=sess)[0], \
            "TLS %s: ticket of a removed key accepted" % version
        assert connect(ctx, port, session=new[version])[0], \
            "TLS %s: ticket of the current key refused" % version


def test_ticket_key_file_errors(env):
    for size in (0, 47, 49, 81):
        k = env.write("bad%d.key" % size, os.urandom(size))
        c = conf(env, env.port(), env.port(), "none", "ssl_session_ticket_key %s;" % k)
        p = H.run([H.binary(), "-t", "-c", c], timeout=20)
        assert p.returncode != 0 and "must hold 48 or 80 bytes" in p.stderr, (size, p.stderr)
    c = conf(env, env.port(), env.port(), "none",
             "ssl_session_ticket_key %s;" % env.path("missing.key"))
    p = H.run([H.binary(), "-t", "-c", c], timeout=20)
    assert p.returncode != 0 and "cannot open" in p.stderr, p.stderr


def test_session_cache_config_errors(env):
    bad = {
        "shared:X": "must be shared:NAME:SIZE",
        "shared::1m": "must be shared:NAME:SIZE",
        "shared:X:1k": "between 32k and 4g",
        "shared:X:5g": "between 32k and 4g",
        "shared:a/b:1m": "zone name",
        "shared:X:1m shared:Y:1m": "shared is given twice",
        "off shared:X:1m": "must be the only argument",
        "redis": "must be off, none",
    }
    for arg, msg in bad.items():
        c = conf(env, env.port(), env.port(), arg)
        p = H.run([H.binary(), "-t", "-c", c], timeout=20)
        assert p.returncode != 0 and msg in p.stderr, (arg, p.stderr)
    # one zone name with two sizes in one configuration
    c = env.conf("""
    server { listen 127.0.0.1:%d ssl; server_name a.test; %s ssl_session_cache shared:S:1m; }
    server { listen 127.0.0.1:%d ssl; server_name b.test; %s ssl_session_cache shared:S:2m; }
    """ % (env.port(), env.tls("a_rsa"), env.port(), env.tls("b_rsa")))
    p = H.run([H.binary(), "-t", "-c", c], timeout=20)
    assert p.returncode != 0 and "declared with sizes" in p.stderr, p.stderr
    # builtin and shared together are fine (nginx)
    c = conf(env, env.port(), env.port(), "builtin:1000 shared:S:1m")
    p = H.run([H.binary(), "-t", "-c", c], timeout=20)
    assert p.returncode == 0, p.stderr


def test_session_of_a_not_resumed_on_b(env):
    """Two virtual servers on one address sharing one zone and one ticket key."""
    port = env.port()
    k = env.write("k.key", os.urandom(80))
    env.write("html/index.html", "hello\n")
    for tickets in ("off", "on"):
        c = env.conf("""
        ssl_session_cache shared:S:1m;
        ssl_session_tickets %s;
        ssl_session_ticket_key %s;
        server { listen 127.0.0.1:%d ssl; server_name a.test; %s root %s; }
        server { listen 127.0.0.1:%d ssl; server_name b.test; %s root %s; }
        """ % (tickets, k, port, env.tls("a_rsa"), env.html, port, env.tls("b_rsa"),
               env.html))
        srv = env.start(c)
        srv.wait_port(port)
        for version in ("1.2", "1.3"):
            ctx = client_ctx(version)
            _, sess = connect(ctx, port, sni="a.test")
            assert connect(ctx, port, sni="a.test", session=sess)[0], \
                "tickets %s TLS %s: no resumption on a.test itself" % (tickets, version)
            _, sess = connect(ctx, port, sni="a.test")
            reused, _ = connect(ctx, port, sni="b.test", session=sess)
            assert not reused, \
                "tickets %s TLS %s: a.test's session resumed on b.test" % (tickets, version)
        rc = srv.stop()
        assert rc == 0, "tlsgate exited with %s" % rc


if __name__ == "__main__":
    H.main(globals())
