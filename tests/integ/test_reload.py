#!/usr/bin/env python3
"""Reload: `tlsgate -s reload` twice under wrk load with a changed configuration (no
socket errors, old workers gone, master unchanged, new config served); a reload with a
broken configuration keeps the old one serving and logs why.

Usage: python3 tests/integ/test_reload.py BIN [TEST...]
"""
import os
import re
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness as h  # noqa: E402

# Checks that fail because the server is wrong (see the report); remove when fixed.
KNOWN_FAILURES = {}

KB = bytes(i % 253 for i in range(1024))
OLD_WORKERS_GONE_S = 8  # bound for old workers to exit after a reload


def write(env, port, version, extra=""):
    return env.simple_conf(port, main="worker_processes 2;", locations="""
        location = /v { return 200 "%s"; }
        %s""" % (version, extra))


def reload(env, conf):
    p = h.run([h.binary(), "-s", "reload", "-c", conf], timeout=20,
              env=dict(os.environ, TLSGATE_STATE_DIR=env.state))
    return p


def served(env, port, path="/v"):
    st, _, body = env.get("https://a.test:%d%s" % (port, path))
    return st, body.decode()


def wait_version(env, port, version, timeout=8):
    h.wait_until(lambda: served(env, port) == (200, version), timeout,
                 what="/v to answer %r" % version)


def test_reload_under_load(env):
    env.write("html/1kb.bin", KB)
    port = env.port()
    conf = write(env, port, "v1")
    srv = env.start(conf, port=port)
    master = srv.pid
    gen1 = srv.wait_workers(2)
    assert served(env, port) == (200, "v1")
    wrk = subprocess.Popen(["wrk", "-t", "1", "-c", "20", "-d", "6s", "--timeout", "5s",
                            "https://127.0.0.1:%d/1kb.bin" % port],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        gens = [gen1]
        for i, version in ((1, "v2"), (2, "v3")):
            time.sleep(1.5)
            write(env, port, version)
            p = reload(env, conf)
            assert p.returncode == 0, "reload #%d: %s%s" % (i, p.stdout, p.stderr)
            wait_version(env, port, version)
            old = gens[-1]
            h.wait_until(lambda: not any(h.pid_alive(w) for w in old), OLD_WORKERS_GONE_S,
                         what="old workers %s to exit after reload #%d" % (old, i))
            new = srv.wait_workers(2)
            assert not set(new) & set(old), (old, new)
            gens.append(new)
            assert srv.proc.poll() is None, "the master exited"
        out, _ = wrk.communicate(timeout=30)
    finally:
        h.reap(wrk)
    out = out.decode("utf-8", "replace")
    assert wrk.returncode == 0, out
    m = re.search(r"^Requests/sec:\s+([\d.]+)", out, re.M)
    assert m and float(m.group(1)) > 0, out
    assert "Socket errors" not in out, "wrk saw socket errors across the reloads:\n" + out
    assert "Non-2xx or 3xx" not in out, "wrk saw non-2xx/3xx across the reloads:\n" + out
    with open(env.pidfile) as f:
        assert int(f.read().strip()) == master, "pid file changed"
    assert srv.proc.poll() is None and srv.workers() == gens[-1], (srv.workers(), gens)
    assert served(env, port) == (200, "v3")
    log = srv.log_text()
    assert len(re.findall(r"reloaded|reconfiguring", log)) >= 2, log


def test_reload_broken_config_keeps_old(env):
    port = env.port()
    conf = write(env, port, "v1")
    srv = env.start(conf, port=port)
    workers = srv.wait_workers(2)
    assert served(env, port) == (200, "v1")
    # a config that still parses but references a missing certificate, and one that
    # does not parse
    with open(conf) as f:
        good = f.read()
    broken = good.replace('"v1"', '"v2"').replace(env.certs["a_rsa"][0], env.path("gone.crt"))
    env.write(conf, broken)
    srv.send(signal.SIGHUP)
    h.wait_until(lambda: "reload failed" in srv.log_text() or "gone.crt" in srv.log_text(), 8,
                 what="the failed reload to be logged")
    time.sleep(0.3)
    assert "gone.crt" in srv.log_text(), srv.log_text()
    assert served(env, port) == (200, "v1")
    assert srv.workers() == workers, "workers changed after a failed reload"

    lines = good.replace('"v1"', '"v3"').split("\n")
    at = max(i for i, ln in enumerate(lines) if ln.strip() == "}") - 1  # the server's "}"
    lines.insert(at, "        bogus_directive 1;")
    bad_line = at + 1
    env.write(conf, "\n".join(lines))
    # `-s reload` parses the file first (as nginx): it refuses and names the error
    p = reload(env, conf)
    assert p.returncode == 1 and "bogus_directive" in p.stderr, (p.returncode, p.stderr)
    assert "%s:%d:" % (conf, bad_line) in p.stderr, p.stderr
    srv.send(signal.SIGHUP)
    h.wait_until(lambda: "bogus_directive" in srv.log_text(), 8,
                 what="the failed reload to be logged")
    time.sleep(0.3)
    log = srv.log_text()
    assert re.search(r"%s:%d: \"?bogus_directive" % (re.escape(conf), bad_line), log), log
    assert served(env, port) == (200, "v1")
    assert srv.workers() == workers, "workers changed after a failed reload"
    # a good config afterwards is taken
    env.write(conf, good.replace('"v1"', '"v4"'))
    p = reload(env, conf)
    assert p.returncode == 0, p.stderr
    wait_version(env, port, "v4")
    # the only [emerg]/[alert]/[crit] lines are the reported config errors
    env.allow_log = True
    bad = [ln for ln in srv.log_text().splitlines() if h.BAD_LOG.search(ln)
           and "gone.crt" not in ln and "bogus_directive" not in ln]
    assert not bad, bad


def test_reload_changes_listen(env):
    port1, port2 = env.port(), env.port()
    conf = write(env, port1, "p1")
    srv = env.start(conf, port=port1)
    old = srv.wait_workers(2)
    assert served(env, port1) == (200, "p1")
    write(env, port2, "p2")
    p = reload(env, conf)
    assert p.returncode == 0, p.stderr
    h.wait_until(lambda: h.port_accepts(port2), 8, what="the new listen port")
    wait_version_port = lambda: served(env, port2) == (200, "p2")  # noqa: E731
    h.wait_until(wait_version_port, 8, what="the new port to serve p2")
    h.wait_until(lambda: not h.port_accepts(port1), 8, what="the old port to be closed")
    h.wait_until(lambda: not any(h.pid_alive(w) for w in old), OLD_WORKERS_GONE_S,
                 what="old workers to exit")
    assert srv.proc.poll() is None


if __name__ == "__main__":
    h.main(globals())
