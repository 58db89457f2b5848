#!/usr/bin/env python3
"""Observability (issue #7): the `status;` (JSON) and `metrics;` (Prometheus) pages.

Two workers, `ssl_async on`, the built-in tlsgate provider. Two TLS servers (an RSA-only
and an ECDSA-only certificate, so the key type of each handshake is known) and a plain-HTTP
server for the pages (reading them costs no handshake, so every count is exact):

- full handshakes with TLS 1.2 and 1.3 on both certificates, and one resumed session of
  each version: the handshake counters by protocol x key type x resumption are exactly
  those, the accept -> handshake histogram counts every handshake, the async pause
  histogram every resumed job, and the provider's signatures match the full handshakes
  (one RSA-2048 or ECDSA P-256 signature each); batch_size count == batches per algorithm;
- /metrics parses as the Prometheus text format (HELP/TYPE, contiguous families, label
  syntax, cumulative buckets, +Inf == _count) and agrees with /status;
- after SIGHUP the workers are replaced and no counter goes down (the master folds the
  old workers' counters into the retired total); new handshakes add exactly;
- without a provider the pages work and have no provider section;
- `status;` / `metrics;` outside a location, or two status pages in one location, fail
  `tlsgate -t` with a clear message.

Usage: python3 tests/integ/test_metrics.py BIN [TEST...]
"""
import http.client
import json
import math
import os
import re
import signal
import ssl
import socket
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness as h  # noqa: E402

h.FILE_TIMEOUT = 110

KNOWN_FAILURES = {}

MAIN_PROV = ('ssl_provider tlsgate;\nssl_propquery "?provider=tlsgate";\n'
             'worker_processes 2;\n')
MAIN_PLAIN = 'worker_processes 2;\n'


# ---------------------------------------------------------------- set-up and clients


def servers(env, port_rsa, port_ec, port_plain):
    tls = """
    server {
        listen 127.0.0.1:%d ssl;
        server_name a.test;
        %s
        root %s;
        ssl_async on;
    }"""
    return (tls % (port_rsa, env.tls("a_rsa"), env.html) +
            tls % (port_ec, env.tls("a_ec"), env.html) + """
    server {
        listen 127.0.0.1:%d;
        location = /status { status; }
        location = /metrics { metrics; }
        location = /stub { stub_status; }
    }""" % port_plain)


def start(env, main):
    env.write("html/index.html", "hello\n")
    ports = env.port(), env.port(), env.port()
    srv = env.start(env.conf(servers(env, *ports), main=main))
    for p in ports:
        srv.wait_port(p)
    srv.wait_workers(2)
    return srv, ports


def fetch(port, path, method="GET"):
    """(status, content-type, body text) of a plain-HTTP request to the page server."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        c.request(method, path, headers={"Host": "a.test"})
        r = c.getresponse()
        return r.status, r.getheader("Content-Type", ""), r.read().decode("utf-8")
    finally:
        c.close()


def status_json(port):
    st, ctype, body = fetch(port, "/status")
    assert st == 200 and ctype == "application/json", (st, ctype, body[:200])
    return json.loads(body)


_contexts = {}


def client_ctx(version):
    """One context per version: a session resumes only with the context that made it."""
    if version not in _contexts:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        ctx.minimum_version = ctx.maximum_version = version
        _contexts[version] = ctx
    return _contexts[version]


def handshake(port, version, session=None):
    """One TLS connection with a request; returns (session, resumed, protocol)."""
    ctx = client_ctx(version)
    raw = socket.create_connection(("127.0.0.1", port), timeout=10)
    s = ctx.wrap_socket(raw, server_hostname="a.test", session=session)
    try:
        s.sendall(b"GET /index.html HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n")
        resp, _ = h.read_response(s, timeout=10)
        assert resp.status == 200 and resp.body == b"hello\n", resp
        return s.session, s.session_reused, s.version()
    finally:
        s.close()


V12, V13 = ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3


def do_handshakes(ports):
    """The fixed mix; returns the expected {(protocol, key_type, resumed): n}."""
    port_rsa, port_ec, _ = ports
    want = {}

    def count(port, version, key, session=None):
        sess, reused, proto = handshake(port, version, session)
        assert reused == (session is not None), "session reuse: got %s" % reused
        k = (proto, "none" if reused else key, reused)
        want[k] = want.get(k, 0) + 1
        return sess

    for _ in range(3):
        s13 = count(port_rsa, V13, "rsa")
    for _ in range(2):
        count(port_rsa, V12, "rsa")
    for _ in range(2):
        count(port_ec, V13, "ecdsa")
    for _ in range(3):
        s12 = count(port_ec, V12, "ecdsa")
    count(port_rsa, V13, "rsa", session=s13)
    count(port_ec, V12, "ecdsa", session=s12)
    return want


def by_type(obj):
    return {(t["protocol"], t["key_type"], t["resumed"]): t["count"]
            for t in obj["handshakes"]["by_type"] if t["count"]}


def hist_count(hj):
    return sum(n for _, n in hj["buckets"])


# ---------------------------------------------------------------- Prometheus parser


SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$')
LABEL = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"\s*(,|$)')


def parse_labels(text):
    out, pos = {}, 0
    while pos < len(text):
        m = LABEL.match(text, pos)
        assert m, "bad label syntax at %r" % text[pos:]
        assert m.group(1) not in out, "label %s twice" % m.group(1)
        out[m.group(1)] = m.group(2)
        pos = m.end()
    return out


def parse_prometheus(text):
    """Strict enough for Prometheus's text parser; returns {(name, labels tuple): value}."""
    assert text.endswith("\n"), "the exposition must end with a newline"
    types, helps, samples, done = {}, {}, {}, set()
    current = None
    for n, line in enumerate(text.split("\n")[:-1], 1):
        where = "line %d: %r" % (n, line)
        assert line, "empty line at " + where
        if line.startswith("#"):
            parts = line.split(" ", 3)
            if parts[1] in ("HELP", "TYPE"):
                assert len(parts) == 4, where
                name = parts[2]
                assert name not in done, "family %s split: %s" % (name, where)
                if parts[1] == "TYPE":
                    assert name not in types, "TYPE twice: " + where
                    assert parts[3] in ("counter", "gauge", "histogram", "summary", "untyped"), where
                    types[name] = parts[3]
                else:
                    helps[name] = parts[3]
                if current and current != name:
                    done.add(current)
                current = name
            continue
        m = SAMPLE.match(line)
        assert m, "bad sample: " + where
        name, labels, value = m.group(1), parse_labels(m.group(2) or ""), m.group(3)
        fam = name
        if name not in types:
            for suf in ("_bucket", "_sum", "_count"):
                if name.endswith(suf) and types.get(name[:-len(suf)]) == "histogram":
                    fam = name[:-len(suf)]
        assert fam in types, "sample without # TYPE: " + where
        assert fam == current, "sample outside its family's block: " + where
        assert fam.startswith("tlsgate_"), where
        v = float(value)
        assert not math.isnan(v), where
        if types[fam] == "counter":
            assert v >= 0, where
        key = (name, tuple(sorted(labels.items())))
        assert key not in samples, "duplicate sample: " + where
        samples[key] = v
    for fam in types:
        assert fam in helps, "no # HELP for " + fam
    # histograms: per label set, cumulative buckets, +Inf == _count, _sum present
    for fam, t in types.items():
        if t != "histogram":
            continue
        series = {}
        for (name, labels), v in samples.items():
            if name == fam + "_bucket":
                d = dict(labels)
                le = d.pop("le")
                series.setdefault(tuple(sorted(d.items())), []).append(
                    (math.inf if le == "+Inf" else float(le), v))
        assert series, "histogram %s has no buckets" % fam
        for lab, buckets in series.items():
            buckets.sort()
            assert buckets[-1][0] == math.inf, "%s%s: no +Inf bucket" % (fam, lab)
            for (_, a), (_, b) in zip(buckets, buckets[1:]):
                assert b >= a, "%s%s: buckets not cumulative: %s" % (fam, lab, buckets)
            count = samples.get((fam + "_count", lab))
            assert count == buckets[-1][1], "%s%s: +Inf %s != _count %s" % (
                fam, lab, buckets[-1][1], count)
            assert (fam + "_sum", lab) in samples, "%s%s: no _sum" % (fam, lab)
    return samples, types


def metrics(port):
    st, ctype, body = fetch(port, "/metrics")
    assert st == 200 and ctype.startswith("text/plain; version=0.0.4"), (st, ctype)
    samples, types = parse_prometheus(body)
    return samples, types, body


def value(samples, name, **labels):
    return samples.get((name, tuple(sorted(labels.items()))))


# ---------------------------------------------------------------- checks


def check_consistent(js, samples, want):
    """The pages agree with each other and with the handshakes done (want)."""
    got = by_type(js)
    assert got == want, "handshake counters:\n got  %s\n want %s" % (got, want)
    total = sum(want.values())
    assert js["handshakes"]["total"] == total, js["handshakes"]
    assert js["handshakes"]["resumed"] == sum(n for k, n in want.items() if k[2])
    assert hist_count(js["handshake_us"]) == js["handshake_us"]["count"] == total
    assert js["async_pause_us"]["count"] == js["async"]["resumed"], (
        js["async_pause_us"]["count"], js["async"])
    assert js["async"]["paused"] == 0
    # per worker slots add up to the totals (plus the retired workers')
    for (proto, key, res), n in want.items():
        assert value(samples, "tlsgate_handshakes_total", protocol=proto, key_type=key,
                     resumed="true" if res else "false") == n, (proto, key, res)
    assert sum(v for (name, _), v in samples.items()
               if name == "tlsgate_handshakes_total") == total
    assert value(samples, "tlsgate_handshake_seconds_count") == total
    assert value(samples, "tlsgate_async_pause_seconds_count") == js["async"]["resumed"]
    s_us = js["handshake_us"]["sum"]
    assert abs(value(samples, "tlsgate_handshake_seconds_sum") - s_us / 1e6) < 1e-5


def check_provider(js, samples, want):
    prov = js["provider"]
    assert prov is not None, "no provider section with ssl_provider tlsgate"
    algs = prov["alg"]
    full = {k: sum(n for (p, kt, r), n in want.items() if kt == k and not r)
            for k in ("rsa", "ecdsa")}
    # one private-key signature per full handshake, none for a resumed one
    assert algs["rsa2048"]["requests"] == full["rsa"], (algs["rsa2048"], full)
    assert algs["ecdsa_p256"]["requests"] == full["ecdsa"], (algs["ecdsa_p256"], full)
    for name, a in algs.items():
        assert sum(a["fill"]) == a["batches"], (name, a["fill"], a["batches"])
        assert hist_count(a["batch_us"]) == a["batches"], (name, a)
        assert hist_count(a["queue_wait_us"]) == sum(
            (k + 1) * n for k, n in enumerate(a["fill"])), (name, a)
        assert a["requests"] >= a["requests_async"] and a["requests"] >= a["single"], (name, a)
        # Prometheus agrees
        assert value(samples, "tlsgate_batch_size_count", alg=name) == a["batches"]
        assert value(samples, "tlsgate_batches_total", alg=name) == a["batches"]
        assert value(samples, "tlsgate_crypto_requests_total", alg=name) == a["requests"]
        assert value(samples, "tlsgate_crypto_fallbacks_total", alg=name) == a["fallbacks"]
        assert value(samples, "tlsgate_pool_hits_total", alg=name) == a["pool_hits"]
        assert value(samples, "tlsgate_pool_misses_total", alg=name) == a["pool_misses"]
        assert value(samples, "tlsgate_queue_wait_seconds_count", alg=name) == hist_count(
            a["queue_wait_us"])
        assert value(samples, "tlsgate_batch_compute_seconds_count", alg=name) == a["batches"]
        for k in range(8):
            assert value(samples, "tlsgate_batch_size_bucket", alg=name, le=str(k + 1)) == \
                sum(a["fill"][:k + 1])
    assert sum(a["requests_async"] for a in algs.values()) > 0, "nothing ran in async jobs"


def settled(port, want, provider):
    """The pages once the provider snapshots of both workers caught up (<= ~100 ms)."""
    def ready():
        js = status_json(port)
        if provider:
            p = js["provider"]
            if not p:
                return None
            full_rsa = sum(n for (_, kt, r), n in want.items() if kt == "rsa" and not r)
            full_ec = sum(n for (_, kt, r), n in want.items() if kt == "ecdsa" and not r)
            if (p["alg"]["rsa2048"]["requests"], p["alg"]["ecdsa_p256"]["requests"]) != \
                    (full_rsa, full_ec):
                return None
        return js
    js = h.wait_until(ready, 10, interval=0.1, what="provider metrics of both workers")
    if not provider:
        samples, types, body = metrics(port)
        return js, samples, types, body

    # the workers keep computing after the handshakes (idle-time pool batches, slow in the
    # ASan build) and refresh their snapshots every ~100 ms: take /status and /metrics
    # from one quiet spell, where /status reads the same before and after /metrics
    def quiet():
        a = status_json(port)
        samples, types, body = metrics(port)
        b = status_json(port)
        if a["provider"] != b["provider"]:
            return None
        return a, samples, types, body  # /status first, as the checks expect
    return h.wait_until(quiet, 20, interval=0.3, what="a quiet spell of the provider counters")


def counters(samples, types):
    """Every monotonic sample: counters and histogram buckets/sums/counts."""
    out = {}
    for (name, labels), v in samples.items():
        fam = name
        for suf in ("_bucket", "_sum", "_count"):
            if name.endswith(suf) and types.get(name[:-len(suf)]) == "histogram":
                fam = name[:-len(suf)]
        if types.get(fam) in ("counter", "histogram"):
            out[(name, labels)] = v
    return out


# ---------------------------------------------------------------- tests


def test_counts_histograms_and_reload(env):
    srv, ports = start(env, MAIN_PROV)
    pplain = ports[2]
    want = do_handshakes(ports)
    js, samples, types, body = settled(pplain, want, provider=True)
    print("  /status %d bytes, /metrics %d bytes, %d samples" % (
        len(json.dumps(js)), len(body), len(samples)), flush=True)
    check_consistent(js, samples, want)
    check_provider(js, samples, want)
    # the live worker slots: the two workers, generation 0, their sums are the totals
    pids = sorted(srv.workers())
    assert sorted(w["pid"] for w in js["workers"]) == pids, (js["workers"], pids)
    assert all(w["generation"] == 0 for w in js["workers"])
    per_worker = {}
    for w in js["workers"]:
        for k, n in by_type(w).items():
            per_worker[k] = per_worker.get(k, 0) + n
    assert per_worker == want, per_worker
    assert sum(hist_count(w["handshake_us"]) for w in js["workers"]) == sum(want.values())
    # the stub_status counters are on both pages
    # (the /metrics request came after /status: one more connection and request)
    assert value(samples, "tlsgate_connections_accepted_total") >= js["connections"]["accepted"]
    assert js["connections"]["accepted"] >= sum(want.values())
    assert value(samples, "tlsgate_responses_total", code="2xx") >= sum(want.values())
    assert fetch(pplain, "/metrics", "POST")[0] == 405
    st, _, head_body = fetch(pplain, "/status", "HEAD")
    assert st == 200 and head_body == ""

    # reload: new workers, the old ones exit and are folded into the retired total
    before = counters(samples, types)
    srv.send(signal.SIGHUP)
    h.wait_until(lambda: (lambda w: len(w) == 2 and not set(w) & set(pids))(srv.workers()),
                 20, what="the workers to be replaced after SIGHUP")

    def after_reload():
        j = status_json(pplain)
        return j if j["workers_retired"] == 2 and len(j["workers"]) == 2 else None
    js2 = h.wait_until(after_reload, 10, what="both old workers retired")
    assert all(w["generation"] == 1 for w in js2["workers"]), js2["workers"]
    samples2, types2, _ = metrics(pplain)
    after = counters(samples2, types2)
    went_down = {k: (v, after.get(k)) for k, v in before.items()
                 if after.get(k) is None or after[k] < v}
    assert not went_down, "counters went down across the reload: %s" % went_down
    check_consistent(js2, samples2, want)   # nothing new happened: the very same counts
    check_provider(js2, samples2, want)
    assert value(samples2, "tlsgate_reloads_total") == 1
    assert value(samples2, "tlsgate_workers_retired_total") == 2

    # new handshakes on the new workers add exactly
    handshake(ports[0], V13)
    handshake(ports[1], V12)
    for k in (("TLSv1.3", "rsa", False), ("TLSv1.2", "ecdsa", False)):
        want[k] = want.get(k, 0) + 1
    js3, samples3, types3, _ = settled(pplain, want, provider=True)
    check_consistent(js3, samples3, want)
    check_provider(js3, samples3, want)
    after3 = counters(samples3, types3)
    assert all(after3.get(k, -1) >= v for k, v in after.items())

    # the big page over TLS too (the response path with tens of KB)
    s = env.tls_socket(ports[1])
    try:
        s.sendall(b"GET /x HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n")
        r, _ = h.read_response(s)
        assert r.status == 404
    finally:
        s.close()


def test_big_page_over_tls(env):
    """The metrics page through a TLS location: tens of KB written by SSL_write in an
    async job (ssl_async on) arrive whole."""
    env.write("html/index.html", "hello\n")
    port = env.port()
    conf = env.simple_conf(port, "location = /metrics { metrics; }\n"
                                 "location = /status { status; }",
                           server_extra="ssl_async on;", certs=("a_rsa", "a_ec"), main=MAIN_PROV)
    srv = env.start(conf, port=port)
    srv.wait_workers(2)
    for path in ("/metrics", "/status"):
        st, headers, body = env.get("https://a.test:%d%s" % (port, path))
        assert st == 200 and int(headers["content-length"]) == len(body), (st, headers)
        if path == "/metrics":
            assert len(body) > 20000, len(body)
            parse_prometheus(body.decode())
        else:
            js = json.loads(body)
            assert js["handshakes"]["total"] >= 1


def test_no_provider(env):
    srv, ports = start(env, MAIN_PLAIN)
    want = do_handshakes(ports)
    js, samples, types, body = settled(ports[2], want, provider=False)
    check_consistent(js, samples, want)
    assert js["provider"] is None
    assert all(w["provider"] is None for w in js["workers"])
    assert "tlsgate_batch_size" not in body and "tlsgate_crypto_requests_total" not in body
    # synchronous handshakes: no job ever paused
    assert js["async_pause_us"]["count"] == 0


def test_config_errors(env):
    def check(http, what):
        conf = env.conf(http, name="bad.conf")
        p = h.run([h.binary(), "-t", "-c", conf], timeout=30)
        out = p.stdout + p.stderr
        assert p.returncode != 0, "tlsgate -t accepted %s:\n%s" % (what, out)
        return out
    srv = """
    server {
        listen 127.0.0.1:%d;
        %s
    }"""
    out = check(srv % (env.port(), "status;"), "status; in a server")
    assert re.search(r"bad\.conf:\d+: status: directive is not allowed here", out), out
    out = check("metrics;\n" + srv % (env.port(), ""), "metrics; in http")
    assert re.search(r"bad\.conf:\d+: metrics: directive is not allowed here", out), out
    out = check(srv % (env.port(), "location /m { metrics; status; }"), "two pages")
    assert re.search(r"bad\.conf:\d+: status: a location serves one status page", out), out
    out = check(srv % (env.port(), "location /m { metrics on; }"), "an argument")
    assert re.search(r"bad\.conf:\d+: metrics: invalid number of arguments", out), out
    ok = env.conf(srv % (env.port(), "location = /s { status; } location = /m { metrics; }"),
                  name="ok.conf")
    p = h.run([h.binary(), "-t", "-c", ok], timeout=30)
    assert p.returncode == 0, p.stdout + p.stderr


h.main(globals())
