#!/usr/bin/env python3
"""`tlsgate -V`: version, build options, OpenSSL versions (compile and run time), the IFMA
path as /proc/cpuinfo predicts (and forced off by MB8_FORCE_PORTABLE=1), and with -c the
providers, engines and property query the configuration loads; a bad file fails.

Usage: python3 tests/integ/test_version.py BIN [TEST...]
"""
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness as h  # noqa: E402

KNOWN_FAILURES = {}


def V(env, *args, extra_env=None):
    e = dict(os.environ, TLSGATE_STATE_DIR=env.state)
    e.pop("MB8_FORCE_PORTABLE", None)
    e.update(extra_env or {})
    return h.run([h.binary(), *args, "-V"], timeout=30, env=e)


def test_build_and_cpu(env):
    p = V(env, "-p", env.dir)  # -p: no default configuration file under it
    assert p.returncode == 0, p.stderr
    out = p.stdout
    ver = h.run([h.binary(), "-v"]).stdout.split()[2]
    assert out.startswith("tlsgate version %s\n" % ver), out
    assert re.search(r"^built with OpenSSL 3\.\d+\.\d+.*build type \w+, sanitizers \(ASan\+UBSan\) "
                     r"(on|off), -Werror (on|off)$", out, re.M), out
    lib = subprocess.run(["openssl", "version"], capture_output=True, text=True).stdout.split()[1]
    assert re.search(r"^running with OpenSSL %s " % re.escape(lib), out, re.M), (lib, out)
    mods = subprocess.run(["openssl", "version", "-m"], capture_output=True,
                          text=True).stdout.split('"')[1]
    assert "OpenSSL modules directory: %s\n" % mods in out, out
    with open("/proc/cpuinfo") as f:
        flags = set(re.search(r"^flags\s*:(.*)$", f.read(), re.M).group(1).split())
    ifma = {"avx512f", "avx512ifma", "avx512vl", "avx512bw"} <= flags
    want = "AVX-512 IFMA path: %s" % ("available (" if ifma else "not available (")
    assert want in out, (want, out)
    assert "configuration: none" in out, out
    forced = V(env, "-p", env.dir, extra_env={"MB8_FORCE_PORTABLE": "1"})
    assert "AVX-512 IFMA path: not available (mb8 portable kernels)" in forced.stdout, forced.stdout


def test_config_providers(env):
    c = env.write("v.conf", """
ssl_provider tlsgate { flush_us 50; enable rsa; }
ssl_provider legacy;
ssl_provider nosuch { path %s; }
ssl_engine dynamic;
ssl_propquery ?provider=tlsgate;
http { server { listen 127.0.0.1:9; } }
""" % env.dir)
    p = V(env, "-c", c)
    assert p.returncode == 0, p.stderr
    out = p.stdout
    assert "configuration: %s\n" % c in out
    assert "  provider default (always loaded)\n" in out
    assert "  provider tlsgate (built in) params flush_us=50, enable=rsa\n" in out, out
    assert re.search(r"^  provider legacy \(module /\S+/legacy\.so(, not found)?\)$", out, re.M), out
    assert "  provider nosuch (module %s/nosuch.so, not found)\n" % env.dir in out, out
    assert "  engine dynamic\n" in out and "  property query ?provider=tlsgate\n" in out, out
    # a configuration that cannot be read or parsed: the facts, then the errors, exit 1
    bad = env.write("bad.conf", "ssl_provider;\n")
    p = V(env, "-c", bad)
    assert p.returncode == 1 and "configuration: %s: not read" % bad in p.stdout, p.stdout
    assert "ssl_provider" in p.stderr, p.stderr


if __name__ == "__main__":
    h.main(globals())
