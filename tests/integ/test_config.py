#!/usr/bin/env python3
"""`tlsgate -t`: a good configuration passes, broken ones fail with FILE:LINE: and the
directive named, all errors are reported, and -t never binds.

Usage: python3 tests/integ/test_config.py BIN [TEST...]
"""
import os
import re
import socket
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness as h  # noqa: E402

# Checks that fail because the server is wrong (see the report); remove when fixed.
KNOWN_FAILURES = {}


def write_conf(env, port, server_lines, main_lines="", http_lines=""):
    """A config whose lines are known: returns (path, {marker: line number}).

    A line ending in '# @name' records its number under name."""
    text = h.USER_LINE + """error_log %s info;
pid %s;
%s
events {
    worker_connections 64;
}
http {
    %s
    server {
        listen 127.0.0.1:%d ssl;
        server_name a.test;
        %s
    }
}
""" % (env.log, env.pidfile, main_lines, http_lines, port, server_lines)
    marks = {}
    for i, line in enumerate(text.split("\n"), 1):
        m = re.search(r"# @(\w+)", line)
        if m:
            marks[m.group(1)] = i
    return env.write("t.conf", text), marks


def tcheck(env, conf):
    p = h.run([h.binary(), "-t", "-c", conf], timeout=30,
              env=dict(os.environ, TLSGATE_STATE_DIR=env.state))
    return p.returncode, p.stdout + p.stderr


def certs(env, crt="a_rsa", key="a_rsa"):
    return ("ssl_certificate %s;   # @crt\n        ssl_certificate_key %s;   # @key" %
            (env.certs[crt][0], env.certs[key][1]))


def expect_error(out, conf, line, directive):
    pat = r"%s:%d: \"?%s\"?\b" % (re.escape(conf), line, re.escape(directive))
    assert re.search(pat, out), "expected an error naming %s:%d: %s, got:\n%s" % (
        conf, line, directive, out)


def test_good_config(env):
    conf, _ = write_conf(env, env.port(), certs(env) + """
        location = /x { return 200 "hi"; }
        location /s { stub_status; }""")
    rc, out = tcheck(env, conf)
    assert rc == 0, out
    assert "test is successful" in out, out
    assert "syntax is ok" in out, out


def test_unknown_directive(env):
    conf, m = write_conf(env, env.port(), certs(env) + """
        frobnicate on;   # @bad""")
    rc, out = tcheck(env, conf)
    assert rc == 1, (rc, out)
    expect_error(out, conf, m["bad"], "frobnicate")
    assert "unknown directive" in out, out
    assert "test failed" in out and "successful" not in out, out


def test_directive_in_wrong_block(env):
    conf, m = write_conf(env, env.port(), certs(env) + """
        worker_processes 2;   # @bad""")
    rc, out = tcheck(env, conf)
    assert rc == 1, (rc, out)
    expect_error(out, conf, m["bad"], "worker_processes")
    assert "not allowed" in out, out


def test_bad_value(env):
    conf, m = write_conf(env, env.port(), certs(env) + """
        client_max_body_size 12q;   # @bad""")
    rc, out = tcheck(env, conf)
    assert rc == 1, (rc, out)
    expect_error(out, conf, m["bad"], "client_max_body_size")
    assert "12q" in out, out
    conf, m = write_conf(env, env.port(), certs(env) + """
        keepalive_timeout soon;   # @bad""")
    rc, out = tcheck(env, conf)
    assert rc == 1, (rc, out)
    expect_error(out, conf, m["bad"], "keepalive_timeout")


def test_missing_certificate_file(env):
    missing = env.path("nope", "missing.crt")
    conf, m = write_conf(env, env.port(), """
        ssl_certificate %s;   # @crt
        ssl_certificate_key %s;""" % (missing, env.certs["a_rsa"][1]))
    rc, out = tcheck(env, conf)
    assert rc == 1, (rc, out)
    assert missing in out, out
    assert re.search(r"%s:\d+: ssl_certificate\b" % re.escape(conf), out), out
    with env.known("directive_line"):
        expect_error(out, conf, m["crt"], "ssl_certificate")


def test_key_does_not_match_certificate(env):
    conf, m = write_conf(env, env.port(), certs(env, "a_rsa", "b_rsa"))
    rc, out = tcheck(env, conf)
    assert rc == 1, (rc, out)
    assert "match" in out, out
    assert re.search(r"%s:\d+: ssl_certificate_key\b" % re.escape(conf), out), out
    with env.known("directive_line"):
        expect_error(out, conf, m["key"], "ssl_certificate_key")


def test_several_errors_reported(env):
    conf, m = write_conf(env, env.port(), certs(env) + """
        frobnicate on;   # @e1
        keepalive_requests many;   # @e2
        location = /x { listen 127.0.0.1:1 ssl; }   # @e3""",
                         main_lines="worker_processes lots;   # @e0")
    rc, out = tcheck(env, conf)
    assert rc == 1, (rc, out)
    expect_error(out, conf, m["e0"], "worker_processes")
    expect_error(out, conf, m["e1"], "frobnicate")
    expect_error(out, conf, m["e2"], "keepalive_requests")
    expect_error(out, conf, m["e3"], "listen")
    assert len(re.findall(r"\[emerg\]", out)) >= 4, out


def test_does_not_bind(env):
    holder = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        holder.bind(("127.0.0.1", 0))
        holder.listen(1)
        port = holder.getsockname()[1]
        conf, _ = write_conf(env, port, certs(env))
        rc, out = tcheck(env, conf)
        assert rc == 0 and "test is successful" in out, \
            "-t failed while another process holds the port (does it bind?):\n" + out
        # and the real start does fail on the taken port, naming it
        p = h.run([h.binary(), "-c", conf], timeout=20,
                  env=dict(os.environ, TLSGATE_STATE_DIR=env.state))
        assert p.returncode != 0, p
        assert "127.0.0.1:%d" % port in p.stdout + p.stderr, p.stdout + p.stderr
        env.allow_log = True  # the failed start logs its bind() error as [emerg]
    finally:
        holder.close()


if __name__ == "__main__":
    h.main(globals())
