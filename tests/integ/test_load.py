#!/usr/bin/env python3
"""wrk against tlsgate: a short keep-alive load and a Connection: close load over https,
with no socket errors and only 2xx responses.

Usage: python3 tests/integ/test_load.py BIN [TEST...]
"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness as h  # noqa: E402

# Checks that fail because the server is wrong (see the report); remove when fixed.
KNOWN_FAILURES = {}

KB = bytes(i % 251 for i in range(1024))


def serve(env):
    env.write("html/1kb.bin", KB)
    port = env.port()
    conf = env.simple_conf(port, locations="location = /status { stub_status; }")
    env.start(conf, port=port)
    return port


def wrk(url, *args, duration=2, conns=20):
    p = h.run(["wrk", "-t", "1", "-c", str(conns), "-d", "%ds" % duration, "--timeout", "5s",
               *args, url], timeout=duration + 25)
    assert p.returncode == 0, "wrk failed (exit %d):\n%s%s" % (p.returncode, p.stdout, p.stderr)
    return p.stdout


def summary(out):
    m = re.search(r"^Requests/sec:\s+([\d.]+)", out, re.M)
    assert m, "no Requests/sec in wrk's output:\n" + out
    n = re.search(r"^\s*(\d+) requests in", out, re.M)
    return float(m.group(1)), int(n.group(1)) if n else 0


def check_clean(out):
    assert "Socket errors" not in out, "wrk reported socket errors:\n" + out
    assert "Non-2xx or 3xx" not in out, "wrk saw non-2xx/3xx responses:\n" + out


def test_keepalive_load(env):
    port = serve(env)
    out = wrk("https://127.0.0.1:%d/1kb.bin" % port)
    rps, n = summary(out)
    assert rps > 0 and n > 0, out
    check_clean(out)
    # ~1 KiB per response: the transfer total is consistent with the request count
    st, _, body = env.get("https://a.test:%d/status" % port)
    m = re.search(r" (\d+) (\d+) (\d+) \n", body.decode())
    assert m and int(m.group(3)) >= n, (n, body)
    # keep-alive: far fewer connections than requests
    assert int(m.group(1)) < n / 2, "connections %s for %d requests" % (m.group(1), n)


def test_connection_close_load(env):
    port = serve(env)
    out = wrk("https://127.0.0.1:%d/1kb.bin" % port, "-H", "Connection: close")
    rps, n = summary(out)
    assert rps > 0 and n > 0, out
    check_clean(out)
    st, _, body = env.get("https://a.test:%d/status" % port)
    m = re.search(r" (\d+) (\d+) (\d+) \n", body.decode())
    assert m and int(m.group(1)) >= n, "one connection per request expected: %s for %d" % (
        m and m.group(1), n)


if __name__ == "__main__":
    h.main(globals())
