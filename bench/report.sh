#!/usr/bin/env bash
# bench/report.sh: one command that measures tlsgate against the systems it replaces, and
# draws it (issue #10). Runs the bench scripts with machine-readable output, then writes
# bench/out/report.md (machine, versions, every figure, ratios to the baselines of the same
# run) and grouped bar charts (PNG, gnuplot) next to it. `make bench` calls it.
#
# Usage (from the repo root):
#   bench/report.sh                   full run (about 20 minutes on 2 vCPUs)
#   BENCH_QUICK=1 bench/report.sh     short runs, fewer cases (under 5 minutes)
#   BENCH_PARTS="speed matrix" bench/report.sh
#
# Parts, in the order they run:
#   speed       bench/speed.sh: default provider vs tlsgate provider, openssl speed
#   matrix      bench/matrix.sh: full handshakes (4 cases x 5 servers x 1/200 connections,
#               wrk), keep-alive 1 KB requests/s, 100 MB throughput per TLS 1.3 suite
#   replay      bench/replay.sh: saturated handshakes per core with replayed flights
#   histograms  bench/histograms.sh: per-stage handshake histograms (tlsgate + provider)
#   async       bench/async.sh: async TLS against the fake accelerator     (full run only)
#   mb8         bench/mb8.sh: mb8 kernels vs OpenSSL, dudect              (full run only)
#   adaptive    bench/adaptive.sh: issue #7's adaptive batching goals     (full run only)
#   bulk        bench/bulk.sh: server CPU per GB (sendfile on) and per keep-alive request,
#               worker memory per idle TLS connection: nginx, tlsgate, tlsgate + provider
#
# Environment:
#   BENCH_QUICK     1: short runs and fewer cases (speed: rsa2048 ecdsap256 ecdhx25519 at 1
#                   and 8 jobs, 1 s; matrix and replay: cases a and c, 2 s runs; 100 MB x 1)
#   BENCH_PARTS     subset of the parts above (default: all of the mode's)
#   BENCH_OUT       output directory (default bench/out): report.md, *.png, *.tsv, logs/
#   BENCH_SECONDS   override every script's measured run length
#   BUILD_DIR       build directory (default build; TLSGATE_BIN defaults to BUILD_DIR/tlsgate)
#   BENCH_NO_INSTALL 1: never call apt-get (fail if a tool is missing)
# Servers listen on 127.0.0.1 only (free ports); every script stops by itself and cleans up.
# Exit status: 0 when every part succeeded, 1 otherwise (the report says which failed).
set -euo pipefail

die() { echo "report.sh: error: $*" >&2; exit 1; }
note() { echo "report.sh: $*" >&2; }

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
QUICK=${BENCH_QUICK:-0}
[[ $QUICK == 0 || $QUICK == 1 ]] || die "BENCH_QUICK must be 0 or 1"
if [[ $QUICK == 1 ]]; then
    DEF_PARTS="speed matrix replay histograms bulk"
else
    DEF_PARTS="speed matrix replay histograms async mb8 adaptive bulk"
fi
PARTS=${BENCH_PARTS:-$DEF_PARTS}
for p in $PARTS; do
    case $p in speed | matrix | replay | histograms | async | mb8 | adaptive | bulk) ;;
    *) die "unknown part '$p' in BENCH_PARTS (speed matrix replay histograms async mb8 adaptive bulk)" ;;
    esac
done
OUT=${BENCH_OUT:-$ROOT/bench/out}
[[ $OUT == /* ]] || OUT=$ROOT/$OUT
BUILD_DIR=${BUILD_DIR:-build}
[[ $BUILD_DIR == /* ]] || BUILD_DIR=$ROOT/$BUILD_DIR
TG=${TLSGATE_BIN:-$BUILD_DIR/tlsgate}
[[ $TG == /* ]] || TG=$ROOT/$TG
SECS_OVERRIDE=${BENCH_SECONDS:-}
if [[ -n $SECS_OVERRIDE ]] && ! [[ $SECS_OVERRIDE =~ ^[1-9][0-9]*$ ]]; then
    die "BENCH_SECONDS must be a positive integer"
fi
# the scripts read these themselves: clear them so that each part gets what this script
# chooses (BENCH_SECONDS is passed on explicitly)
unset BENCH_CASES BENCH_SERVERS BENCH_CONNS BENCH_REPEAT BENCH_WARMUP BENCH_SAVE BENCH_TSV \
    BENCH_ALGS BENCH_JOBS BENCH_LOADS BENCH_PARTS BENCH_SECONDS BENCH_OUT BENCH_IDLE_CONNS \
    BENCH_TP_COUNT BENCH_TP_MB BENCH_SUITE BENCH_TLSGATE_EXTRA BENCH_PERF

# --- tools and build ---------------------------------------------------------------------
if [[ ${BENCH_NO_INSTALL:-0} != 1 ]]; then
    scripts/deps.sh bench || die "scripts/deps.sh bench failed"
fi
for t in gnuplot python3 taskset; do
    command -v "$t" >/dev/null 2>&1 || die "$t is missing (scripts/deps.sh bench)"
done
if [[ ! -x $TG || ! -f $(dirname "$TG")/tlsgate.so || ! -x $(dirname "$TG")/tlsgate_replay ]]; then
    [[ -f $BUILD_DIR/CMakeCache.txt ]] || cmake -S "$ROOT" -B "$BUILD_DIR" >/dev/null
    note "building tlsgate, tlsgate_prov, tlsgate_replay in $BUILD_DIR"
    cmake --build "$BUILD_DIR" -j "$(nproc)" --target tlsgate tlsgate_prov tlsgate_replay >/dev/null ||
        die "build failed"
fi
[[ -x $TG ]] || die "tlsgate binary not found: $TG"

# --- state and cleanup -------------------------------------------------------------------
mkdir -p "$OUT/logs"
TMP=$(mktemp -d "${TMPDIR:-/tmp}/tlsgate-report.XXXXXX")
CHILD=""
# shellcheck disable=SC2317 # called by the traps
cleanup() {
    set +e
    if [[ -n $CHILD ]] && kill -0 "$CHILD" 2>/dev/null; then
        kill -TERM "$CHILD" 2>/dev/null # each script's own trap stops its servers
        wait "$CHILD" 2>/dev/null
    fi
    rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# this run's files only: no stale table or chart from an earlier run
rm -f "$OUT"/*.tsv "$OUT"/*.png "$OUT"/report.md "$OUT"/status.json "$OUT"/logs/*.log

# --- run the parts -----------------------------------------------------------------------
declare -A RC=() DUR=()
q() { [[ $QUICK == 1 ]]; }
secs() { echo "${SECS_OVERRIDE:-$1}"; } # secs DEFAULT

run_part() { # part: runs the script with this mode's settings; log in logs/PART.log
    local p=$1 t0 t1 rc=0 env=()
    case $p in
    speed)
        env=(BENCH_TSV="$OUT/speed.tsv" BUILD_DIR="$(dirname "$TG")")
        if q; then
            env+=(BENCH_SECONDS="$(secs 1)" BENCH_ALGS="rsa2048 ecdsap256 ecdhx25519" BENCH_JOBS="1 8")
        else
            env+=(BENCH_SECONDS="$(secs 2)")
        fi
        ;;
    matrix)
        env=(BENCH_TSV="$OUT/matrix.tsv" TLSGATE_BIN="$TG")
        if q; then
            env+=(BENCH_SECONDS="$(secs 2)" BENCH_WARMUP=1 BENCH_CASES="a c" BENCH_MB_COUNT=1)
        else
            env+=(BENCH_SECONDS="$(secs 5)" BENCH_WARMUP=2)
        fi
        ;;
    replay)
        env=(BENCH_TSV="$OUT/replay.tsv" TLSGATE_BIN="$TG")
        if q; then
            env+=(BENCH_SECONDS="$(secs 2)" BENCH_WARMUP=1 BENCH_CASES="a c")
        else
            env+=(BENCH_SECONDS="$(secs 10)" BENCH_WARMUP=2)
        fi
        ;;
    histograms)
        env=(BENCH_OUT="$OUT" TLSGATE_BIN="$TG")
        if q; then env+=(BENCH_SECONDS="$(secs 2)"); else env+=(BENCH_SECONDS="$(secs 3)"); fi
        ;;
    async) env=(TLSGATE_BIN="$TG" BUILD_DIR="$(dirname "$TG")" BENCH_SECONDS="$(secs 5)") ;;
    mb8) env=(BUILD_DIR="$(dirname "$TG")") ;;
    adaptive) env=(TLSGATE_BIN="$TG" BENCH_SECONDS="$(secs 5)") ;;
    bulk)
        env=(BENCH_TSV="$OUT/bulk.tsv" TLSGATE_BIN="$TG")
        if q; then
            env+=(BENCH_SECONDS="$(secs 2)" BENCH_IDLE_CONNS=1000 BENCH_TP_COUNT=2)
        else
            env+=(BENCH_SECONDS="$(secs 5)")
        fi
        ;;
    esac
    note "running bench/$p.sh (${env[*]}); log: ${OUT#"$ROOT"/}/logs/$p.log"
    t0=$(date +%s)
    env "${env[@]}" "bench/$p.sh" >"$OUT/logs/$p.log" 2>&1 &
    CHILD=$!
    wait "$CHILD" || rc=$?
    CHILD=""
    t1=$(date +%s)
    RC[$p]=$rc
    DUR[$p]=$((t1 - t0))
    if ((rc != 0)); then
        note "bench/$p.sh FAILED (rc $rc) after ${DUR[$p]} s; last lines of its log:"
        tail -n 15 "$OUT/logs/$p.log" >&2
    else
        note "bench/$p.sh done in ${DUR[$p]} s"
    fi
}

START=$(date +%s)
for p in $PARTS; do
    [[ -x bench/$p.sh ]] || { note "bench/$p.sh is missing: skipped"; RC[$p]=127; DUR[$p]=0; continue; }
    run_part "$p"
done
TOTAL=$(($(date +%s) - START))

# --- the report --------------------------------------------------------------------------
{
    echo "date=$(date -u '+%Y-%m-%d %H:%M UTC')"
    echo "model=$(lscpu 2>/dev/null | awk -F': *' '/^Model name/ { print $2; exit }')"
    echo "cpus=$(nproc)"
    echo "kernel=$(uname -srm)"
    echo "os=$(awk -F= '$1 == "PRETTY_NAME" { gsub(/"/, "", $2); print $2 }' /etc/os-release 2>/dev/null)"
    desc=unknown
    if command -v git >/dev/null 2>&1; then
        desc=$(git -C "$ROOT" describe --always --dirty 2>/dev/null || echo unknown)
    fi
    echo "tlsgate=$desc ($("$TG" -v 2>&1 | head -n 1))"
    echo "openssl=$(openssl version)"
    echo "nginx=$({ nginx -v 2>&1 || /usr/sbin/nginx -v 2>&1; } | sed 's/^nginx version: nginx\///' | head -n 1)"
    echo "haproxy=$({ haproxy -v 2>/dev/null || /usr/sbin/haproxy -v 2>/dev/null; } | awk 'NR == 1 { print $3 }')"
    echo "wrk=$(wrk -v 2>&1 | awk 'NR == 1 { print $1, $2 }')"
    echo "curl=$(curl --version 2>/dev/null | awk 'NR == 1 { print $2 }')"
    echo "mode=$([[ $QUICK == 1 ]] && echo quick || echo full)"
    echo "total=$TOTAL"
    echo "parts=$PARTS"
    for p in $PARTS; do echo "rc_$p=${RC[$p]}"; echo "dur_$p=${DUR[$p]}"; done
} >"$TMP/meta"

python3 - "$OUT" "$TMP/meta" <<'PY' >"$TMP/plot.gp"
import os, sys

out, metaf = sys.argv[1], sys.argv[2]
meta = {}
for line in open(metaf):
    k, _, v = line.rstrip("\n").partition("=")
    meta[k] = v
parts = meta["parts"].split()
md = []
plots = []  # (name, title, ylabel, groups, series, {(group, series): value})

def w(s=""):
    md.append(s)

def tsv(name):
    p = os.path.join(out, name)
    if not os.path.exists(p):
        return []
    return [l.rstrip("\n").split("\t") for l in open(p) if l.strip() and not l.startswith("#")]

def num(s):
    try:
        return float(s)
    except (TypeError, ValueError):
        return 0.0

def f0(v):
    return "{:,.0f}".format(v)

def ratio(a, b):
    return "**%.2f×**" % (a / b) if a and b else "n/a"

def mean(xs):
    xs = [x for x in xs]
    return sum(xs) / len(xs) if xs else 0.0

CASES = {
    "a": "TLS 1.2 ECDHE-RSA-AES256-GCM-SHA384, RSA-2048",
    "b": "TLS 1.2 AES256-GCM-SHA384 (RSA key exchange), RSA-2048",
    "c": "TLS 1.3, ECDSA P-256",
    "d": "TLS 1.3, RSA-2048",
}
SHORT = {"a": "1.2 ECDHE-RSA", "b": "1.2 RSA kx", "c": "1.3 ECDSA", "d": "1.3 RSA"}
SERVERS = ["nginx", "tlsgate", "tlsgate-prov", "haproxy", "haproxy-prov"]
TITLE = {"nginx": "nginx", "tlsgate": "tlsgate", "tlsgate-prov": "tlsgate + provider",
         "haproxy": "HAProxy", "haproxy-prov": "HAProxy + provider"}

w("# tlsgate benchmark report (`bench/report.sh`)")
w()
w("- date: %s; mode: %s (`BENCH_QUICK=%d`), %d s in all" % (
    meta["date"], meta["mode"], meta["mode"] == "quick", int(meta["total"])))
w("- machine: %s, %s CPUs; %s; %s" % (meta["model"], meta["cpus"], meta["kernel"], meta["os"]))
w("- versions: tlsgate %s; %s; nginx %s; HAProxy %s; %s; curl %s" % (
    meta["tlsgate"], meta["openssl"], meta["nginx"], meta["haproxy"], meta["wrk"], meta["curl"]))
w("- placement: each server's worker (every thread) on CPU 0, the client (wrk, curl, "
  "tlsgate_replay, openssl speed's other runs) on CPU 1" if int(meta["cpus"]) >= 2 else
  "- placement: one CPU: servers and clients share it (figures are not meaningful)")
w("- parts: " + ", ".join("%s %s (%s s)" % (p, "ok" if meta["rc_" + p] == "0" else
                                           "**FAILED rc %s**" % meta["rc_" + p], meta["dur_" + p])
                          for p in parts))
w("- ratios compare with the baseline measured in the same run (the machine may be shared: "
  "compare ratios, not absolute figures). Raw rows: `*.tsv`; each script's output: `logs/`.")

# --- crypto ---------------------------------------------------------------------------------
rows = tsv("speed.tsv")
if rows:
    w()
    w("## Crypto: default provider vs tlsgate provider (`bench/speed.sh`)")
    w()
    w("`openssl speed -async_jobs N ALG` pinned to CPU 0, the default provider then the tlsgate "
      "provider preferred (`-propquery ?provider=tlsgate`); sign/s (RSA, ECDSA) or op/s (ECDH).")
    w()
    w("| alg | async jobs | default/s | tlsgate/s | tlsgate / default | batches | mean fill (of 8) |")
    w("|---|---:|---:|---:|---:|---:|---:|")
    data = {}
    for r in rows:
        alg, jobs, d, t = r[0], r[1], num(r[2]), num(r[3])
        fills = [num(x) for x in r[6:14]] if len(r) >= 14 else []
        nb = sum(fills)
        fill = "%.2f" % (sum((i + 1) * f for i, f in enumerate(fills)) / nb) if nb else "-"
        w("| %s | %s | %s | %s | %s | %s | %s |" % (alg, jobs, f0(d), f0(t), ratio(t, d),
                                                    f0(num(r[5])) if len(r) > 5 else "-", fill))
        data[("%s j%s" % (alg, jobs), "tlsgate / default")] = t / d if d else 0
    groups = []
    for r in rows:
        g = "%s j%s" % (r[0], r[1])
        if g not in groups:
            groups.append(g)
    plots.append(("speed", "openssl speed: tlsgate provider / default provider (1 = parity)",
                  "ratio", groups, ["tlsgate / default"], data))

# --- handshakes (wrk) -------------------------------------------------------------------------
rows = tsv("matrix.tsv")
hs = [r for r in rows if r[0] == "hs"]
if hs:
    w()
    w("## Full handshakes with a real client (`bench/matrix.sh`, wrk)")
    w()
    w("`wrk -t1 -c N -H 'Connection: close' --latency` on CPU 1 (one full handshake per request: "
      "no session cache, no tickets), one server worker on CPU 0. hs/s × nginx: handshakes/s "
      "over nginx's at the same point; CPU × nginx: nginx's server CPU µs per handshake over "
      "this server's (> 1: cheaper than nginx). conn ms = N / hs/s (at c=1: one whole "
      "connection). p50/p99: wrk's latency, from the request's first write (after the "
      "handshake). Client CPU: wrk's; **client-bound** rows measure wrk, not the server (its "
      "CPU per handshake is still valid). Means over the runs.")
    agg = {}
    order = []
    for r in hs:
        key = (r[1], int(r[3]), r[2])
        if key not in agg:
            agg[key] = []
            order.append(key)
        agg[key].append(r)
    cases = []
    loads = []
    for (c, n, s) in order:
        if c not in cases:
            cases.append(c)
        if n not in loads:
            loads.append(n)
    rate_d, cpu_d = {}, {}
    for c in cases:
        w()
        w("### %s: %s" % (c, CASES.get(c, c)))
        w()
        w("| conns | server | handshakes/s | hs/s × nginx | server CPU µs/hs | CPU × nginx | server CPU %"
          " | conn ms | p50 ms | p99 ms | client CPU % | errors | note |")
        w("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
        for n in loads:
            def m(s, i):
                rs = [r for r in agg.get((c, n, s), []) if not r[13].startswith("CRASHED")]
                return mean([num(r[i]) for r in rs]) if rs else None
            ng_rate, ng_cpu = m("nginx", 5), m("nginx", 6)
            for s in SERVERS:
                rs = agg.get((c, n, s))
                if not rs:
                    continue
                notes = sorted({r[13] for r in rs if len(r) > 13 and r[13]})
                if all(r[13].startswith("CRASHED") for r in rs if len(r) > 13):
                    w("| %d | %s | crashed | | | | | | | | | | %s |" % (n, TITLE[s], "; ".join(notes)))
                    continue
                rate, cpu = m(s, 5), m(s, 6)
                rate_d[("%s c=%d" % (SHORT.get(c, c), n), TITLE[s])] = rate
                cpu_d[("%s c=%d" % (SHORT.get(c, c), n), TITLE[s])] = cpu
                w("| %d | %s | %s | %s | %.0f | %s | %.0f | %.2f | %.2f | %.2f | %.0f | %d | %s |" % (
                    n, TITLE[s], f0(rate), "—" if s == "nginx" else ratio(rate, ng_rate), cpu,
                    "—" if s == "nginx" else ratio(ng_cpu, cpu), m(s, 7), m(s, 8), m(s, 9), m(s, 10),
                    m(s, 11), sum(int(num(r[12])) for r in rs), "; ".join(notes)))
    groups = ["%s c=%d" % (SHORT.get(c, c), n) for c in cases for n in loads]
    series = [TITLE[s] for s in SERVERS if any(k[2] == s for k in agg)]
    plots.append(("handshakes_rate", "full handshakes/s (wrk, Connection: close)", "handshakes/s",
                  groups, series, rate_d))
    plots.append(("handshakes_cpu", "server CPU per full handshake (lower is better)",
                  "server CPU µs per handshake", groups, series, cpu_d))

ka = [r for r in rows if r[0] == "ka"]
tp = [r for r in rows if r[0] == "tp"]
if ka or tp:
    w()
    w("## Keep-alive requests and bulk throughput, tlsgate vs nginx (`bench/matrix.sh`)")
    w()
    w("TLS 1.3, ECDSA P-256, `keepalive_requests 1000000` on both. Keep-alive: `wrk -t1 -c N "
      "--latency` on `/1kb.bin`. Throughput: `curl --tls13-ciphers SUITE` fetching a 100 MB file "
      "(random bytes) several times over one connection on CPU 1; MB = 10^6 bytes.")
if ka:
    w()
    w("| server | conns | requests/s | × nginx | server CPU µs/request | CPU × nginx | server CPU % | "
      "p50 ms | p99 ms | client CPU % | errors | note |")
    w("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    def kam(s, i):
        rs = [r for r in ka if r[2] == s and not r[13].startswith("CRASHED")]
        return mean([num(r[i]) for r in rs]) if rs else 0
    kd = {}
    for s in ("nginx", "tlsgate"):
        rs = [r for r in ka if r[2] == s]
        if not rs:
            continue
        notes = sorted({r[13] for r in rs if r[13]})
        kd[("1 KB keep-alive", TITLE[s])] = kam(s, 5)
        w("| %s | %s | %s | %s | %.1f | %s | %.0f | %.2f | %.2f | %.0f | %d | %s |" % (
            TITLE[s], rs[0][3], f0(kam(s, 5)), "—" if s == "nginx" else ratio(kam(s, 5), kam("nginx", 5)),
            kam(s, 6), "—" if s == "nginx" else ratio(kam("nginx", 6), kam(s, 6)), kam(s, 7),
            kam(s, 9), kam(s, 10), kam(s, 11), sum(int(num(r[12])) for r in rs), "; ".join(notes)))
    plots.append(("keepalive", "keep-alive 1 KB requests/s", "requests/s", ["1 KB keep-alive"],
                  [TITLE[s] for s in ("nginx", "tlsgate") if ("1 KB keep-alive", TITLE[s]) in kd], kd))
if tp:
    w()
    w("| suite | server | MB/s | × nginx | server CPU s/GB | CPU × nginx | server CPU % | client CPU % | note |")
    w("|---|---|---:|---:|---:|---:|---:|---:|---|")
    suites = []
    for r in tp:
        if r[1] not in suites:
            suites.append(r[1])
    td = {}
    for su in suites:
        def tm(s, i):
            rs = [r for r in tp if r[1] == su and r[2] == s and not r[13].startswith("CRASHED")]
            return mean([num(r[i]) for r in rs]) if rs else 0
        for s in ("nginx", "tlsgate"):
            rs = [r for r in tp if r[1] == su and r[2] == s]
            if not rs:
                continue
            notes = sorted({r[13] for r in rs if r[13]})
            td[(su.replace("TLS_", ""), TITLE[s])] = tm(s, 5)
            w("| %s | %s | %s | %s | %.3f | %s | %.0f | %.0f | %s |" % (
                su, TITLE[s], f0(tm(s, 5)), "—" if s == "nginx" else ratio(tm(s, 5), tm("nginx", 5)),
                tm(s, 6), "—" if s == "nginx" else ratio(tm("nginx", 6), tm(s, 6)), tm(s, 7), tm(s, 11),
                "; ".join(notes)))
    plots.append(("throughput", "100 MB downloads, one connection (MB/s)", "MB/s",
                  [s.replace("TLS_", "") for s in suites], ["nginx", "tlsgate"], td))

# --- bulk (issue #21) ----------------------------------------------------------------------
rows = tsv("bulk.tsv")
if rows:
    w()
    w("## Bulk transfer, keep-alive CPU and idle memory, tlsgate vs nginx (`bench/bulk.sh`)")
    w()
    w("One worker on CPU 0, clients on CPU 1, TLS 1.3, ECDSA P-256, `sendfile on;` on both. "
      "CPU per GB: curl fetches a 200 MB file (random bytes) several times over one "
      "connection, TLS_AES_256_GCM_SHA384, worker CPU / 10^9 B. Per keep-alive request: "
      "`wrk -t1 -c50` on a 0-byte file. Idle memory: N connections held open after one "
      "request each, the worker's RSS delta / N. Issue #21's goals: CPU per GB <= 0.5x, "
      "per request <= 0.9x, memory <= 0.8x nginx's.")
    w()
    w("| figure | server | value | × nginx |")
    w("|---|---|---:|---:|")
    what = {"idle": ("memory per idle TLS connection (KB)", 3),
            "ka": ("server CPU per keep-alive request (µs)", 4),
            "tp": ("server CPU per GB (ms)", 4)}
    for kind in ("tp", "ka", "idle"):
        label, col = what[kind]
        rs = [r for r in rows if r[0] == kind]
        base = [num(r[col]) for r in rs if r[1] == "nginx"]
        for r in rs:
            v = num(r[col])
            w("| %s | %s | %s | %s |" % (label, TITLE.get(r[1], r[1]), ("%.1f" % v) if kind != "tp" else f0(v),
                                       "—" if r[1] == "nginx" or not base else "**%.2f×**" % (v / base[0])))

# --- replay ---------------------------------------------------------------------------------
rows = tsv("replay.tsv")
runs = [r[1:] for r in rows if r[0] == "run"]
provs = [r[1:] for r in rows if r[0] == "prov"]
if runs:
    w()
    w("## Saturated handshakes per server core, replayed client flights (`bench/replay.sh`)")
    w()
    w("`tlsgate_replay` on CPU 1 replays one recorded client flight on 256 connections: the "
      "server does a whole handshake's work, the client almost none. **Handshakes per server "
      "CPU-second** (10^6 / server CPU µs per handshake: one saturated core's rate, robust when "
      "other work shares CPU 0) is the comparison; handshakes/s is shown too.")
    w()
    cases = []
    for r in runs:
        if r[0] not in cases:
            cases.append(r[0])
    servers = [s for s in SERVERS if any(r[1] == s for r in runs)]
    w("| case | " + " | ".join(TITLE[s] for s in servers) + " |")
    w("|---|" + "---:|" * len(servers))
    rd = {}
    for c in cases:
        def per_core(s):
            rs = [r for r in runs if r[0] == c and r[1] == s and not r[12].startswith("CRASHED")]
            # mean over the runs (equal lengths) of each run's rate
            return (mean([num(r[4]) for r in rs]), mean([num(r[3]) for r in rs])) if rs else (None, None)
        ng = per_core("nginx")[0]
        cells = []
        for s in servers:
            core, rate = per_core(s)
            crashed = any(r[12].startswith("CRASHED") for r in runs if r[0] == c and r[1] == s)
            if core is None:
                cells.append("crashed" if crashed else "")
                continue
            rd[(SHORT.get(c, c), TITLE[s])] = core
            x = "" if s == "nginx" or not ng else " (%s)" % ratio(core, ng)
            cells.append("%s%s; %s/s%s" % (f0(core), x, f0(rate), " (crashed in a run)" if crashed else ""))
        w("| %s: %s | %s |" % (c, CASES.get(c, c), " | ".join(cells)))
    w()
    w("<details><summary>every replay run</summary>")
    w()
    w("| case | server | run | handshakes/s | hs per server CPU-s | server CPU % | server CPU µs/hs | p50 ms | p99 ms | client CPU % | errors | accepts diff | note |")
    w("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for r in runs:
        w("| " + " | ".join([r[0], TITLE.get(r[1], r[1])] + r[2:13]) + " |")
    w()
    for p in provs:
        w("- provider counters, %s, case %s (whole server life): %s" % (TITLE.get(p[1], p[1]), p[0], p[2]))
    w()
    w("</details>")
    plots.append(("replay", "saturated handshakes per server CPU-second (replayed flights)",
                  "handshakes per CPU-second", [SHORT.get(c, c) for c in cases],
                  [TITLE[s] for s in servers], rd))

# --- the other scripts: their own output ----------------------------------------------------
def log_section(p, title, fence):
    f = os.path.join(out, "logs", p + ".log")
    if p not in parts or not os.path.exists(f):
        return
    w()
    w("## %s (`bench/%s.sh`)" % (title, p))
    w()
    text = open(f, errors="replace").read().rstrip("\n").splitlines()
    if meta["rc_" + p] != "0":
        w("**FAILED (rc %s)**; the end of its output:" % meta["rc_" + p])
        text = text[-30:]
        fence = True
    elif p == "histograms":
        text = [l for l in text if l and not l.startswith("@") and "|" not in l]
    if fence:
        w("```")
    for l in text:
        w(l)
    if fence:
        w("```")

log_section("histograms", "Where a handshake's time goes: histograms", True)
if "histograms" in parts:
    for png in ("handshake_us", "async_pause_us", "queue_wait_us", "batch_us", "batch_fill"):
        if os.path.exists(os.path.join(out, png + ".png")):
            w("![%s](%s.png)" % (png, png))
log_section("async", "Async TLS with a 1 ms accelerator", False)
log_section("mb8", "mb8 kernels vs OpenSSL, dudect", True)
log_section("adaptive", "Adaptive batching (issue #7)", False)
for p in ("speed", "matrix", "replay"):
    if p in parts and meta["rc_" + p] != "0":
        log_section(p, "FAILED part", True)

# --- charts: gnuplot script on stdout, data files in out/ -----------------------------------
if plots:
    w()
    w("## Charts")
    w()
print("set terminal pngcairo size 1100,520 font ',10' noenhanced" if os.environ.get("PNGCAIRO") else
      "set terminal png size 1100,520 font ',10' noenhanced")
print("set style data histograms")
print("set style histogram clustered gap 1")
print("set style fill solid 0.85 border -1")
print("set boxwidth 0.9")
print("set grid ytics")
print("set key top left")
print("set yrange [0:*]")
print("set xtics nomirror rotate by -20")
for name, title, ylabel, groups, series, data in plots:
    if not groups or not series:
        continue
    dat = os.path.join(out, name + ".dat")
    with open(dat, "w") as f:
        f.write('"group" ' + " ".join('"%s"' % s for s in series) + "\n")
        for g in groups:
            f.write('"%s" ' % g + " ".join("%.3f" % data.get((g, s), 0) for s in series) + "\n")
    print("set output '%s/%s.png'" % (out, name))
    print("set title \"%s\"" % title)
    print("set ylabel \"%s\"" % ylabel)
    print("plot " + ", ".join("'%s' using %d:xtic(1) title columnhead" % (dat, i + 2)
                              for i in range(len(series))))
    print("unset output")
    md.append("![%s](%s.png)" % (name, name))

with open(os.path.join(out, "report.md"), "w") as f:
    f.write("\n".join(md) + "\n")
PY
gnuplot "$TMP/plot.gp" 2>"$TMP/gnuplot.err" || { cat "$TMP/gnuplot.err" >&2; die "gnuplot failed"; }
rm -f "$OUT"/*.dat

echo "report: ${OUT#"$ROOT"/}/report.md ($TOTAL s)"
for f in "$OUT"/*.png; do [[ -e $f ]] && echo "  ${f#"$ROOT"/}"; done
failed=""
for p in $PARTS; do [[ ${RC[$p]} == 0 ]] || failed="$failed $p"; done
[[ -z $failed ]] || { note "failed parts:$failed (see the report and ${OUT#"$ROOT"/}/logs/)"; exit 1; }
exit 0
