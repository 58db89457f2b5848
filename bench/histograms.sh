#!/usr/bin/env bash
# bench/histograms.sh: where a TLS handshake's time goes, per stage, as log2 histograms.
#
# The view the public reports drew with bpftrace for each stage of a handshake, from the
# gateway's own counters instead (`status;` page, issue #7): tlsgate with its provider and
# async TLS (ssl_provider tlsgate; ssl_propquery "?provider=tlsgate"; ssl_async on), one
# worker pinned to CPU 0, wrk pinned to CPU 1 making full handshakes (`Connection: close`,
# no session cache or tickets) against an RSA-2048 server (TLS 1.2 ECDHE-RSA) and then an
# ECDSA P-256 server (TLS 1.3). Then the JSON status (read over plain HTTP: no handshake of
# its own) is rendered with gnuplot as PNG bar charts into bench/out/:
#
#   handshake_us.png    TCP accept -> handshake done (µs)
#   async_pause_us.png  each async job pause: WANT_ASYNC -> resumed (µs)
#   queue_wait_us.png   per request, in the provider's queue until its batch was computed,
#                       one series per algorithm (µs)
#   batch_us.png        per batch, time in the mb8 kernel, per algorithm (µs)
#   batch_fill.png      requests per batch (1..8), per algorithm
#
# plus status.json (the raw page) and the same histograms as text on stdout.
#
# Usage: bench/histograms.sh      (after `make build`)
# Environment: TLSGATE_BIN (build/tlsgate), BENCH_SECONDS (3, per server), BENCH_CONNS (32),
#   BENCH_OUT (bench/out), BENCH_NO_INSTALL=1 (never call apt-get)
set -euo pipefail

# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

SECS=${BENCH_SECONDS:-3}
CONNS=${BENCH_CONNS:-32}
OUT=${BENCH_OUT:-$ROOT/bench/out}
if ! [[ $SECS =~ ^[0-9]+$ ]] || ((SECS == 0)); then die "BENCH_SECONDS must be a positive integer"; fi
if ! [[ $CONNS =~ ^[0-9]+$ ]] || ((CONNS == 0)); then die "BENCH_CONNS must be a positive integer"; fi

install_missing wrk:wrk gnuplot:gnuplot-nox python3:python3 openssl:openssl curl:curl \
    taskset:util-linux pgrep:procps
TG=$(tlsgate_bin)
cpu_roles wrk

# --- state and cleanup -------------------------------------------------------------------
TMP=$(mktemp -d "${TMPDIR:-/tmp}/tlsgate-hist.XXXXXX")
# shellcheck disable=SC2317 # called by the EXIT trap
cleanup() { stop_all "$CLIENT_PID"; }
trap_cleanup

mkdir -p "$TMP/state" "$OUT"
CHARTS=(handshake_us async_pause_us queue_wait_us batch_us batch_fill)
for c in "${CHARTS[@]}"; do rm -f "$OUT/$c.png"; done # no stale chart from an earlier run
make_docroot "$TMP/html"
make_certs "$TMP/certs"

launch() { # name port dir (start_server): RSA server on PORT, ECDSA and plain status on two more
    local port=$2 d=$3
    P_RSA=$port
    P_EC=$(free_port "$port")
    P_ST=$(free_port "$port $P_EC")
    # shellcheck disable=SC2034 # read by start_server (lib.sh)
    START_ALSO_LISTEN="$P_EC $P_ST"
    {
        tlsgate_main_conf "$d" 4096 "ssl_provider tlsgate;" 'ssl_propquery "?provider=tlsgate";'
        cat <<EOF
http {
    access_log off;
    ssl_session_cache off;
    ssl_session_tickets off;
    root $TMP/html;
    server {
        listen 127.0.0.1:$P_RSA ssl;
        ssl_certificate $TMP/certs/rsa.crt;
        ssl_certificate_key $TMP/certs/rsa.key;
        ssl_protocols TLSv1.2;
        ssl_ciphers ECDHE-RSA-AES256-GCM-SHA384;
        ssl_async on;
    }
    server {
        listen 127.0.0.1:$P_EC ssl;
        ssl_certificate $TMP/certs/ecdsa.crt;
        ssl_certificate_key $TMP/certs/ecdsa.key;
        ssl_protocols TLSv1.3;
        ssl_async on;
    }
    server {
        listen 127.0.0.1:$P_ST;
        location = /status { status; }
    }
}
EOF
    } >"$d/tlsgate.conf"
    TLSGATE_STATE_DIR="$d/state" "$TG" -c "$d/tlsgate.conf" >>"$d/stdout.log" 2>&1 &
}
start_server tlsgate "$TMP" launch
curl -sf "http://127.0.0.1:$P_ST/status" >/dev/null || die "tlsgate does not answer on 127.0.0.1:$P_ST"

echo "$("$TG" -v 2>&1 | head -n 1); worker on CPU $SRV_CPU, wrk on CPU $CLI_CPU"
echo "cases: RSA-2048 TLS 1.2, then ECDSA P-256 TLS 1.3; ${SECS}s each, $CONNS connections"
for port in "$P_RSA" "$P_EC"; do
    what="RSA-2048, TLS 1.2 ECDHE-RSA"
    [[ $port == "$P_EC" ]] && what="ECDSA P-256, TLS 1.3"
    run_client "$SECS" "$TMP/wrk.txt" wrk -t1 -c "$CONNS" -d "${SECS}s" -H 'Connection: close' \
        "https://127.0.0.1:$port/0kb.bin" || { cat "$TMP/wrk.txt" >&2; die "wrk failed"; }
    echo "$what: $(awk '/^Requests\/sec:/ { print $2 " handshakes/s" }' "$TMP/wrk.txt") ($CONNS connections, ${SECS}s)"
done
check_alive tlsgate "$TMP"
sleep 0.3 # the worker copies the provider's counters at most every 100 ms
curl -sf "http://127.0.0.1:$P_ST/status" -o "$OUT/status.json" || die "cannot read /status"

# --- render ------------------------------------------------------------------------------
python3 - "$OUT/status.json" "$TMP" <<'PY' >"$TMP/plot.gp"
import json, sys
js = json.load(open(sys.argv[1]))
tmp = sys.argv[2]

def label(i):
    """bpftrace's hist() bucket labels: [0], [1], [2, 4), [4, 8), ... with K/M."""
    def k(v):
        for unit, d in (("M", 1 << 20), ("K", 1 << 10)):
            if v >= d and v % d == 0:
                return "%d%s" % (v // d, unit)
        return str(v)
    if i == 0:
        return "[0]"
    if i == 1:
        return "[1]"
    if i == 31:
        return "[%s, ...)" % k(1 << 30)
    return "[%s, %s)" % (k(1 << (i - 1)), k(1 << i))

def buckets(h):
    b = [0] * 32
    for j, (_, n) in enumerate(h["buckets"]):
        b[j] = n
    return b

def text_hist(title, rows):
    """bpftrace-style text histogram on stderr (the shell prints it)."""
    print("\n@%s:" % title, file=sys.stderr)
    top = max([n for _, n in rows] + [1])
    for lab, n in rows:
        print("%-16s %8d |%-52s|" % (lab, n, "@" * int(round(52.0 * n / top))), file=sys.stderr)

def write(name, series, labels):
    """A data file: one row per bucket, one column per series; returns the columns."""
    with open("%s/%s.dat" % (tmp, name), "w") as f:
        for i, lab in enumerate(labels):
            f.write('"%s" %s\n' % (lab, " ".join(str(s[1][i]) for s in series)))
    return [s[0] for s in series]

plots = []

def add(name, title, xlabel, series, labels):
    if not series:
        return
    # trim the empty buckets at both ends (keep one of context)
    used = [i for i in range(len(labels)) if any(s[1][i] for s in series)] or [0]
    lo, hi = max(used[0] - 1, 0), min(used[-1] + 1, len(labels) - 1)
    series = [(n, v[lo:hi + 1]) for n, v in series]
    cols = write(name, series, labels[lo:hi + 1])
    for n, v in series:
        text_hist("%s %s" % (name, n) if len(series) > 1 else name, list(zip(labels[lo:hi + 1], v)))
    plots.append((name, title, xlabel, cols))

lab32 = [label(i) for i in range(32)]
add("handshake_us", "TCP accept -> TLS handshake done (%d handshakes)" % js["handshake_us"]["count"],
    "microseconds (log2 buckets)", [("handshakes", buckets(js["handshake_us"]))], lab32)
add("async_pause_us", "async job pause: WANT_ASYNC -> resumed (%d pauses)" % js["async_pause_us"]["count"],
    "microseconds (log2 buckets)", [("pauses", buckets(js["async_pause_us"]))], lab32)
prov = (js.get("provider") or {}).get("alg", {})
active = [(n, a) for n, a in prov.items() if a["batches"] or a["requests"]]
add("queue_wait_us", "provider queue wait per request (queued -> batch computed)",
    "microseconds (log2 buckets)",
    [(n, buckets(a["queue_wait_us"])) for n, a in active if a["queue_wait_us"]["count"]], lab32)
add("batch_us", "mb8 batch compute time per batch", "microseconds (log2 buckets)",
    [(n, buckets(a["batch_us"])) for n, a in active if a["batches"]], lab32)
add("batch_fill", "requests per batch (fill)", "batch size",
    [(n, a["fill"]) for n, a in active if a["batches"]], [str(k) for k in range(1, 9)])
if not prov:
    print("histograms.sh: the status page has no provider section: queue, batch charts skipped",
          file=sys.stderr)

print("set terminal png size 1100,520 font ',10' noenhanced")
print("set style data histograms")
print("set style histogram clustered gap 1")
print("set style fill solid 0.85 border -1")
print("set boxwidth 0.9")
print("set grid ytics")
print("set key top right")
print("set xtics rotate by -40 nomirror")
print("set ylabel 'count'")
print("set yrange [0:*]")
for name, title, xlabel, cols in plots:
    print("set output '%s/%s.png'" % (sys.argv[1].rsplit("/", 1)[0], name))
    print("set title \"%s\"" % title.replace('"', "'"))
    print("set xlabel '%s'" % xlabel)
    parts = []
    for j, c in enumerate(cols):
        parts.append("'%s/%s.dat' using %d:xtic(1) title '%s'" % (tmp, name, j + 2, c))
    print("plot " + ", ".join(parts))
    print("unset output")
PY
gnuplot "$TMP/plot.gp" || die "gnuplot failed (script: $TMP/plot.gp)"
grep -E '\[(crit|alert|emerg)\]' "$TMP/error.log" >&2 && note "WARNING: tlsgate logged critical messages (above)"
echo
echo "charts in ${OUT#"$ROOT"/}/:"
for c in "${CHARTS[@]}"; do
    [[ -f $OUT/$c.png ]] && echo "  $c.png"
done
exit 0
