#!/usr/bin/env python3
"""systemd Type=notify without libsystemd: with NOTIFY_SOCKET set (a path or an abstract
'@' name) the master sends READY=1 and MAINPID once its workers run, RELOADING=1 then
READY=1 around a reload (also a failed one), STOPPING=1 on a graceful stop; an invalid
NOTIFY_SOCKET is a warning, not a failure.

Usage: python3 tests/integ/test_sdnotify.py BIN [TEST...]
"""
import os
import signal
import socket
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness as h  # noqa: E402

KNOWN_FAILURES = {}


def recv(sock, timeout=10):
    sock.settimeout(timeout)
    try:
        return sock.recv(4096).decode()
    except socket.timeout:
        raise AssertionError("no notification within %ds" % timeout)


def run_notify(env, address, name):
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    try:
        sock.bind(address)
        port = env.port()
        conf = env.simple_conf(port)
        srv = env.start(conf, env={"NOTIFY_SOCKET": name})
        assert recv(sock) == "READY=1\nMAINPID=%d" % srv.pid
        srv.wait_port(port)
        srv.send(signal.SIGHUP)
        assert recv(sock) == "RELOADING=1"
        assert recv(sock) == "READY=1"
        env.write(conf, "http { broken")  # a failed reload still ends with READY=1
        srv.send(signal.SIGHUP)
        assert recv(sock) == "RELOADING=1"
        assert recv(sock) == "READY=1"
        assert "reload failed" in srv.log_text()
        env.allow_log = True  # the failed reload logs [emerg]
        assert srv.stop(signal.SIGQUIT) == 0
        assert recv(sock) == "STOPPING=1"
    finally:
        sock.close()


def test_path_socket(env):
    p = env.path("notify.sock")
    run_notify(env, p, p)


def test_abstract_socket(env):
    name = "tlsgate-test-%d-%d" % (os.getpid(), env.port())
    run_notify(env, "\0" + name, "@" + name)


def test_invalid_socket_warns(env):
    port = env.port()
    srv = env.start(env.simple_conf(port), env={"NOTIFY_SOCKET": "relative/path"}, port=port)
    h.wait_until(lambda: "sd_notify" in srv.log_text(), 5, what="the sd_notify warning")
    assert "[warn]" in srv.log_text() and "Invalid argument" in srv.log_text(), srv.log_text()
    st, _, _ = env.get("https://a.test:%d/" % port)
    assert st in (200, 403, 404), st


if __name__ == "__main__":
    h.main(globals())
