#!/usr/bin/env python3
"""Session resumption across two gateways sharing a Redis (issue #9).

A redis-server started here on a random 127.0.0.1 port (no persistence); two tlsgate
instances on different ports with `ssl_session_cache redis://...`:
- TLS 1.2 session ID (tickets off) made on instance 1 resumes on instance 2;
- TLS 1.3 stateful ticket (tickets off) likewise;
- TLS 1.3 and 1.2 tickets with one shared ticket key file resume on the other instance;
- Redis killed mid-test: handshakes go on at once (full), no client error, the
  redis_errors counter in /status and /metrics rises, one log line per interval;
  Redis restarted on the same port: resumption comes back;
- a Redis that accepts but never answers (SIGSTOP): handshakes wait at most the timeout;
- a Redis address whose connects hang: handshakes go on, connects given up after 1 s;
- ssl_session_ticket_key redis://: the fleet shares ticket keys, the previous key decrypts.
Skipped when redis-server is not installed.
"""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import http.client

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness as H  # noqa: E402
from test_resume import client_ctx, connect, sleep_to_period_end  # noqa: E402


class Redis:
    def __init__(self, env, port):
        self.env, self.port, self.proc = env, port, None

    def start(self):
        exe = shutil.which("redis-server")
        self.proc = subprocess.Popen(
            [exe, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--daemonize", "no", "--dir", self.env.dir,
             "--logfile", self.env.path("redis.log"), "--loglevel", "verbose"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        H.wait_until(lambda: H.port_accepts(self.port), 10, what="redis-server")

    def kill(self):
        if self.proc and self.proc.poll() is None:
            try:
                os.kill(self.proc.pid, signal.SIGCONT)
            except ProcessLookupError:
                pass
            self.proc.kill()
            self.proc.wait(timeout=10)

    def cmd(self, *args):
        """A minimal RESP client: one command, the raw reply line."""
        s = socket.create_connection(("127.0.0.1", self.port), timeout=5)
        try:
            out = b"*%d\r\n" % len(args)
            for a in args:
                a = a.encode() if isinstance(a, str) else a
                out += b"$%d\r\n%s\r\n" % (len(a), a)
            s.sendall(out)
            return s.recv(65536)
        finally:
            s.close()


def with_redis(fn):
    def run(env):
        if not shutil.which("redis-server"):
            raise H.SkipTest("redis-server is not installed (scripts/deps.sh test)")
        r = Redis(env, env.port())
        r.start()
        try:
            fn(env, r)
        finally:
            r.kill()
    run.__name__ = fn.__name__
    return run


def status(port):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        c.request("GET", "/status", headers={"Host": "a.test"})
        st = json.loads(c.getresponse().read())
        c.request("GET", "/metrics", headers={"Host": "a.test"})
        met = c.getresponse().read().decode()
        return st, met
    finally:
        c.close()


def two_gateways(env, redis, extra="", timeout=""):
    env.write("html/index.html", "hello\n")
    ports = []
    srvs = []
    for i in (1, 2):
        port, sport = env.port(), env.port()
        log, pid = env.path("gw%d.log" % i), env.path("gw%d.pid" % i)
        c = env.write("gw%d.conf" % i, """
        %s error_log %s info; pid %s; events { worker_connections 128; }
        http {
        ssl_session_cache redis://127.0.0.1:%d/3 %s;
        %s
        server { listen 127.0.0.1:%d ssl; server_name a.test; %s root %s; }
        server { listen 127.0.0.1:%d; location = /status { status; }
                 location = /metrics { metrics; } }
        }
        """ % (H.USER_LINE.strip(), log, pid, redis.port, timeout, extra, port,
               env.tls("a_rsa"), env.html, sport))
        s = env.start(c, log=log, pidfile=pid)
        s.wait_port(port)
        s.wait_port(sport)
        ports.append((port, sport))
        srvs.append(s)
    return srvs, ports


def across(ports, version, tries=3):
    """Make a session on gateway 1, offer it to gateway 2: how many resumed."""
    ctx = client_ctx(version)
    n = 0
    for _ in range(tries):
        _, sess = connect(ctx, ports[0][0])
        n += bool(connect(ctx, ports[1][0], session=sess)[0])
    return n


def wait_resumes(ports, version, timeout=10):
    H.wait_until(lambda: across(ports, version, 1) == 1, timeout,
                 what="TLS %s resumption through Redis" % version)


@with_redis
def test_redis_two_instances(env, redis):
    srvs, ports = two_gateways(env, redis, "ssl_session_tickets off;")
    wait_resumes(ports, "1.2")  # the first connects open the workers' Redis connections
    for version in ("1.2", "1.3"):
        n = across(ports, version, 4)
        assert n == 4, "TLS %s: %d of 4 sessions resumed on the other gateway" % (version, n)
    st, met = status(ports[1][1])
    assert st["session_cache"]["hits"] >= 8, st["session_cache"]
    assert "tlsgate_session_cache_hits_total " in met
    keys = redis.cmd("SELECT", "3")
    keys = redis.cmd("DBSIZE")
    assert keys.startswith(b":") and int(keys[1:]) == 0  # db 0 is empty: they use db 3


@with_redis
def test_redis_tickets_shared_key(env, redis):
    k = env.write("k.key", os.urandom(80))
    srvs, ports = two_gateways(env, redis, "ssl_session_ticket_key %s;" % k)
    for version in ("1.2", "1.3"):
        n = across(ports, version, 3)
        assert n == 3, "TLS %s tickets: %d of 3 resumed on the other gateway" % (version, n)


@with_redis
def test_redis_killed_and_restarted(env, redis):
    srvs, ports = two_gateways(env, redis, "ssl_session_tickets off;", "timeout=200ms")
    wait_resumes(ports, "1.2")
    redis.kill()
    ctx = client_ctx("1.2")
    t0 = time.monotonic()
    for _ in range(10):  # full handshakes, no error, no stall
        _, sess = connect(ctx, ports[0][0])
        reused, _ = connect(ctx, ports[1][0], session=sess)
        assert not reused
    took = time.monotonic() - t0
    assert took < 5, "20 handshakes took %.1fs with Redis down" % took
    st, met = status(ports[0][1])
    assert st["redis_errors"] > 0, st["redis_errors"]
    assert "tlsgate_redis_errors_total " in met
    lines = [ln for ln in srvs[0].log_text().splitlines() if "redis 127.0.0.1" in ln
             and "[error]" in ln]
    assert 1 <= len(lines) <= 2, "log lines about Redis: %s" % lines
    redis.start()
    wait_resumes(ports, "1.2", timeout=15)
    assert across(ports, "1.3") == 3


@with_redis
def test_redis_slow_bounded_by_timeout(env, redis):
    srvs, ports = two_gateways(env, redis, "ssl_session_tickets off;", "timeout=150ms")
    wait_resumes(ports, "1.2")
    os.kill(redis.proc.pid, signal.SIGSTOP)  # accepts nothing, answers nothing
    try:
        ctx = client_ctx("1.2")
        _, sess = connect(ctx, ports[0][0])
        times = []
        for _ in range(6):
            t0 = time.monotonic()
            reused, _ = connect(ctx, ports[1][0], session=sess)
            times.append(time.monotonic() - t0)
            assert not reused
        # the first waits for the timeout; then Redis counts as slow for a while: no wait
        assert times[0] >= 0.12 and max(times) < 2, times
        assert min(times[1:]) < 0.12, times
        st, _ = status(ports[1][1])
        assert st["redis_errors"] >= 1
    finally:
        os.kill(redis.proc.pid, signal.SIGCONT)
    wait_resumes(ports, "1.2", timeout=15)


@with_redis
def test_redis_ticket_keys_fleet_and_rotation(env, redis):
    """ssl_session_ticket_key redis://: one key per period for the whole fleet."""
    period = 3
    srvs, ports = two_gateways(env, redis, "ssl_session_ticket_key redis://127.0.0.1:%d; "
                               "ssl_session_timeout %ds;" % (redis.port, period))
    # the first handshakes start the workers' key refresh; then both share keys
    wait_resumes(ports, "1.3")
    for version in ("1.2", "1.3"):
        n = across(ports, version, 3)
        assert n == 3, "TLS %s: %d of 3 tickets resumed on the other gateway" % (version, n)
    keys = redis.cmd("KEYS", "tlsgate:tk:*")
    assert keys.count(b"tlsgate:tk:%d:" % period) >= 2, keys  # this epoch and the next
    # a ticket made late in epoch e is still accepted (by the other gateway) in e + 1,
    # where its key only decrypts
    ctx = client_ctx("1.3")
    sleep_to_period_end(period, 1.2)
    _, sess = connect(ctx, ports[0][0])
    e = int(time.time()) // period
    time.sleep((e + 1) * period + 0.3 - time.time())
    assert int(time.time()) // period == e + 1
    reused, _ = connect(ctx, ports[1][0], session=sess)
    assert reused, "a ticket of the previous period's key was refused"


def fleet_gateway(env, redis, i):
    """A gateway with ssl_session_ticket_key redis:// (no session cache: only a ticket can
    resume), started without waiting for it."""
    port = env.port()
    log, pid = env.path("fleet%d.log" % i), env.path("fleet%d.pid" % i)
    c = env.write("fleet%d.conf" % i, """
        %s error_log %s info; pid %s; events { worker_connections 128; }
        http { ssl_session_cache off; ssl_session_ticket_key redis://127.0.0.1:%d;
        server { listen 127.0.0.1:%d ssl; server_name a.test; %s root %s; } }
        """ % (H.USER_LINE.strip(), log, pid, redis.port, port, env.tls("a_rsa"), env.html))
    return env.start(c, log=log, pidfile=pid), port


def first_connect(ctx, port, session=None, timeout=10):
    """The first connection that gets through once the port is bound (a fresh start)."""
    t0 = time.monotonic()
    while True:
        try:
            return connect(ctx, port, session=session)
        except (ConnectionRefusedError, ConnectionResetError):
            if time.monotonic() - t0 > timeout:
                raise
            time.sleep(0.005)


def while_redis_stalls(redis, fn, stall=0.3):
    """Run fn() in a thread while redis-server is stopped for stall seconds (its socket
    still accepts: commands are answered late); fn's result."""
    out = []

    def run():
        try:
            out.append(fn())
        except Exception as e:  # noqa: BLE001 (raised below)
            out.append(e)
    os.kill(redis.proc.pid, signal.SIGSTOP)
    try:
        t = threading.Thread(target=run)
        t.start()
        time.sleep(stall)
    finally:
        os.kill(redis.proc.pid, signal.SIGCONT)
    t.join(20)
    if isinstance(out[0], Exception):
        raise out[0]
    return out[0]


@with_redis
def test_redis_fleet_keys_read_before_accepting(env, redis):
    """A fresh gateway reads the fleet's ticket keys before it accepts (issue #23): with
    Redis answering only 300 ms after the start, its first connection already carries a
    ticket under the fleet key, and a ticket another gateway issued is resumed on the very
    first connection of a gateway just started, and right after a reload: no full
    handshake in the first second."""
    env.write("html/index.html", "hello\n")
    for version in ("1.3", "1.2"):
        ctx = client_ctx(version)
        s1, p1 = fleet_gateway(env, redis, 1)
        reused, sess = while_redis_stalls(redis, lambda: first_connect(ctx, p1))
        assert sess is not None and sess.has_ticket, \
            "TLS %s: the first connection of a fresh gateway got no ticket" % version
        s2, p2 = fleet_gateway(env, redis, 2)
        reused, _ = while_redis_stalls(redis, lambda: first_connect(ctx, p2, session=sess))
        assert reused, "TLS %s: a fleet ticket was not resumed by a gateway just started" \
            % version
        _, sess = connect(ctx, p1)

        def after_reload():
            s2.send(signal.SIGHUP)
            time.sleep(0.05)
            return connect(ctx, p2, session=sess)
        reused, _ = while_redis_stalls(redis, after_reload)
        assert reused, "TLS %s: a fleet ticket was not resumed right after a reload" % version
        for s in (s1, s2):
            assert s.stop(signal.SIGQUIT) == 0
        assert "fleet ticket keys not read" not in s1.log_text() + s2.log_text()


def test_redis_fleet_keys_wait_bounded(env):
    """Redis out of reach at the start: the worker waits at most 1 s for the fleet's keys,
    then accepts (logged) and issues no ticket (a full handshake each time)."""
    env.write("html/index.html", "hello\n")

    class Gone:
        pass
    gone = Gone()
    gone.port = env.port()  # nothing listens there
    t0 = time.monotonic()
    srv, port = fleet_gateway(env, gone, 1)
    reused, sess = first_connect(client_ctx("1.3"), port)
    took = time.monotonic() - t0
    assert not reused and (sess is None or not sess.has_ticket), "a ticket under a local key"
    assert 0.9 < took < 4, "first connection after %.2f s" % took
    H.wait_until(lambda: "fleet ticket keys not read from Redis within 1000 ms" in
                 srv.log_text(), 3, what="the bounded wait's log line")


def test_redis_connect_hangs(env):
    """A Redis address whose connects never complete (a listener that never accepts, its
    queue full: the kernel drops further SYNs): handshakes do not wait, each connect is
    given up after 1 s and counted."""
    lst = socket.socket()
    lst.bind(("127.0.0.1", 0))
    lst.listen(0)
    port = lst.getsockname()[1]
    fillers = []
    try:
        for _ in range(3):  # fill the accept queue (backlog 0 still queues one or two)
            f = socket.socket()
            f.setblocking(False)
            f.connect_ex(("127.0.0.1", port))
            fillers.append(f)
        time.sleep(0.2)

        class Fake:
            pass
        fake = Fake()
        fake.port = port
        srvs, ports = two_gateways(env, fake, "ssl_session_tickets off;")
        ctx = client_ctx("1.2")
        t0 = time.monotonic()
        deadline = t0 + 2.6
        n = 0
        while time.monotonic() < deadline:
            _, sess = connect(ctx, ports[0][0])
            assert not connect(ctx, ports[1][0], session=sess)[0]
            n += 1
        assert n >= 6, "only %d handshake pairs in 2.6 s" % n
        st, _ = status(ports[0][1])
        assert st["redis_errors"] >= 2, st["redis_errors"]
        assert "connect timed out" in srvs[0].log_text()
    finally:
        for f in fillers:
            f.close()
        lst.close()


def test_redis_config_errors(env):
    bad = {
        "redis://": "not redis://HOST:PORT",
        "redis://h": "not redis://HOST:PORT",
        "redis://h:0": "port must be 1..65535",
        "redis://h:70000": "port must be 1..65535",
        "redis://h:6379/16": "database must be 0..15",
        "redis://h:6379/x": "database must be 0..15",
        "redis://h:6379 timeout=0": "timeout=TIME",
        "redis://h:6379 timeout=x": "timeout=TIME",
        "redis://h:6379 foo": "timeout=TIME",
    }
    c = env.conf("server { listen 127.0.0.1:%d ssl; %s ssl_session_ticket_key redis://h:0; }"
                 % (env.port(), env.tls("a_rsa")))
    p = H.run([H.binary(), "-t", "-c", c], timeout=20)
    assert p.returncode != 0 and "port must be" in p.stderr, p.stderr
    k = env.write("k.key", os.urandom(48))
    c = env.conf("server { listen 127.0.0.1:%d ssl; %s ssl_session_ticket_key %s; "
                 "ssl_session_ticket_key redis://h:1; }" % (env.port(), env.tls("a_rsa"), k))
    p = H.run([H.binary(), "-t", "-c", c], timeout=20)
    assert p.returncode != 0 and "cannot be mixed" in p.stderr, p.stderr
    env.write("html/index.html", "x")
    for arg, msg in bad.items():
        c = env.conf("server { listen 127.0.0.1:%d ssl; %s ssl_session_cache %s; }"
                     % (env.port(), env.tls("a_rsa"), arg))
        p = H.run([H.binary(), "-t", "-c", c], timeout=20)
        assert p.returncode != 0 and msg in p.stderr, (arg, p.stderr)
    c = env.conf("server { listen 127.0.0.1:%d ssl; %s ssl_session_cache "
                 "redis://[::1]:6379/2 timeout=50ms; }" % (env.port(), env.tls("a_rsa")))
    p = H.run([H.binary(), "-t", "-c", c], timeout=20)
    assert p.returncode == 0, p.stderr


if __name__ == "__main__":
    H.main(globals())
