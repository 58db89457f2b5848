#!/usr/bin/env bash
# bench/adaptive.sh: issue #7's goals for the tlsgate provider's adaptive batching and
# idle-time pools, measured against tlsgate without the provider and with fixed policies.
#
# Usage (from the repo root, after `cmake --build build --target tlsgate`):
#   bench/adaptive.sh
#   BENCH_SECONDS=5 BENCH_REPEAT=2 BENCH_SAVE=1 bench/adaptive.sh
#   BENCH_CASES=b BENCH_LOADS="1 16" bench/adaptive.sh
#
# Environment:
#   TLSGATE_BIN     tlsgate binary (default build/tlsgate)
#   BENCH_SECONDS   measured wrk run per configuration, case and load (default 5)
#   BENCH_WARMUP    warm-up wrk run before each measured run, seconds (default 1; 0 = none)
#   BENCH_CASES     subset of "a b" (default "a b")
#   BENCH_LOADS     wrk connection counts (default "1 16 200")
#   BENCH_REPEAT    runs per configuration, case and load (default 1); the configurations
#                   run back to back, forwards (plain adaptive nopool batch) on odd runs and
#                   backwards on even runs; the table shows the median of the runs (the
#                   mean, for two)
#   BENCH_SAVE      1: also write the report to bench/results/adaptive-<date>.md
#   BENCH_BUSY_RETRY  redo a run flagged "busy host" (see Columns) up to this many times,
#                   after a pause of BENCH_BUSY_PAUSE seconds (default 10); the row keeps
#                   the last try and says how often it was redone (default 0: never)
#   BENCH_NO_INSTALL 1: never call apt-get (fail if a tool is missing)
#
# Issue #7's goals (benchmarks, not tests):
#   1. c=1 (one connection at a time): handshake latency of `adaptive` <= 1.05x `plain`'s.
#      Judged on the connection time (1 / hs/s at c=1: connect, full handshake, request,
#      response); the line also shows the server's accept-to-handshake-done time and wrk's
#      Latency Avg, which starts only after wrk's SSL_connect returned (see Columns).
#   2. c=200: handshakes/s of `adaptive` >= 0.95x the best fixed policy, max(plain, batch).
#   3. case b (TLS 1.3, ECDSA) at c=1 and c=16: what the idle-time pools save per
#      handshake, nopool - adaptive, in server CPU us and in latency (reported, no bound).
#
# Configurations (tlsgate, one worker pinned to CPU 0 by worker_cpu_affinity 01, access_log
# off, ssl_session_cache off, ssl_session_tickets off, default groups: X25519 first):
#   plain     no provider, ssl_async off
#   adaptive  ssl_provider tlsgate; ssl_propquery "?provider=tlsgate"; ssl_async on;
#             (provider defaults: adaptive on, pool_size 64)
#   nopool    as adaptive with ssl_provider tlsgate { pool_size 0; }
#   batch     as adaptive with ssl_provider tlsgate { adaptive off; pool_size 0; }: every
#             private-key operation in a job is queued ("always batch")
# `plain` is also the "never batch" fixed policy.
#
# Cases (pinned by the server config, verified once per server with `openssl s_client`):
#   a  TLSv1.2 ECDHE-RSA-AES256-GCM-SHA384, RSA-2048 certificate (X25519)
#   b  TLSv1.3 (default ciphersuites), ECDSA P-256 certificate (X25519)
#
# All four servers of a case run side by side (an idle one blocks in epoll), each on
# 127.0.0.1 on free ports: the TLS server, and a plain-HTTP server with
# `location = /status { status; }` whose JSON is read before and after each measured run.
# wrk runs on CPU 1: wrk -t1 -c LOAD -d BENCH_SECONDS -H 'Connection: close' --latency
# https://127.0.0.1:PORT/0kb.bin, with a Lua done() hook that prints the exact latency
# mean and percentiles in µs.
#
# Columns: hs/s = wrk Requests/sec (one request = one full handshake); conn ms = conns /
# hs/s, the mean lifetime of a connection (Little's law; at c=1 the time of one sequential
# handshake + request); server hs ms = mean accept-to-handshake-done time (the status
# JSON's handshake_us histogram, delta over the run); wrk mean, p50, p99 = wrk's Latency,
# measured from the request's first write, i.e. after wrk's SSL_connect returned: it does
# not contain the server's key exchange and signature, only what follows (TLS 1.3: the
# client Finished and the request; TLS 1.2: the request); CPU µs/hs = utime+stime of the
# worker process (all its threads, /proc/PID/stat fields 14+15) over the measured run / wrk
# requests;
# client CPU % = wrk's utime+stime / wall ("client-bound" when > 90%: hs/s then measures
# wrk; CPU µs/hs is still valid). Provider counters (deltas of the status JSON's
# provider.alg.* over the measured run, summed over algorithms and runs): pool hits/req =
# pool_hits / requests; queued/req = requests_async / requests (queued in a batch queue:
# probes included; the rest ran as single operations or were served from a pool); mean
# fill = lanes used per mb8 batch. A per-algorithm table follows. Other load CPU0 / CPU1 =
# busy time of each core (/proc/stat) minus the worker's (CPU 0) or wrk's (CPU 1) own CPU
# time, % of the wall time: other processes, interrupts, hypervisor steal; a run above 20%
# on either core is flagged "busy host" (on a shared machine, read those runs with care).
#
# The servers run a copy of TLSGATE_BIN made at the start, so that a rebuild of the tree
# during the run cannot mix builds; the report names the build's time and sha256.
set -euo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

env_uint SECS BENCH_SECONDS 5 1
env_uint WARMUP BENCH_WARMUP 1
env_words CASES BENCH_CASES "a b" a b
LOADS=${BENCH_LOADS:-1 16 200}
env_uint REPEAT BENCH_REPEAT 1 1
SAVE=${BENCH_SAVE:-0}
env_uint BUSY_RETRY BENCH_BUSY_RETRY 0
env_uint BUSY_PAUSE BENCH_BUSY_PAUSE 10
for l in $LOADS; do
    if ! [[ $l =~ ^[0-9]+$ ]] || ((l == 0)); then die "BENCH_LOADS must be positive integers (got '$l')"; fi
done
[[ -n ${LOADS// /} ]] || die "BENCH_LOADS is empty"
CONFIGS=(plain adaptive nopool batch)

# --- tools -------------------------------------------------------------------------------
install_missing wrk:wrk openssl:openssl taskset:util-linux pgrep:procps timeout:coreutils \
    curl:curl jq:jq

TG=$(tlsgate_bin)
TG_SRC=$TG
TG_BUILT=$(date -u -r "$TG_SRC" '+%Y-%m-%d %H:%M:%S UTC')

cpu_roles wrk

# --- state and cleanup -------------------------------------------------------------------
TMP=$(mktemp -d "${TMPDIR:-/tmp}/tlsgate-adaptive.XXXXXX")
# every server of the run uses the same build, even if the tree is rebuilt meanwhile
# (tlsgate links its provider in; it only needs libssl and libcrypto)
cp "$TG_SRC" "$TMP/tlsgate"
TG=$TMP/tlsgate
TG_SHA=$(sha256sum "$TG" | cut -c1-12)
declare -A SPORT=() # MASTER, WORKER, PORT, DIR: bench/lib.sh

cleanup() { stop_all "$CLIENT_PID"; }
trap_cleanup

# --- files -------------------------------------------------------------------------------
make_docroot "$TMP/html"
make_certs "$TMP/certs"

# wrk's done() hook: exact latency statistics (µs), parsed by measure()
cat >"$TMP/latency.lua" <<'EOF'
done = function(summary, latency, requests)
    io.write(string.format("LATENCY_US mean=%.1f p50=%d p99=%d max=%d\n",
        latency.mean, latency:percentile(50), latency:percentile(99), latency.max))
end
EOF

# --- helpers -----------------------------------------------------------------------------
# A port nobody uses on this host now (no socket in any state, v4 or v6), not in $1 either.

# utime+stime of a process (all its threads), clock ticks

# cutime+cstime of this shell: CPU of reaped children (wrk), clock ticks

# busy ticks of CPU $1 (user nice system irq softirq steal; guest time is in user)
cpu_busy() {
    awk -v c="cpu$1" '$1 == c { print $2 + $3 + $4 + $7 + $8 + $9; exit }' /proc/stat
}

loadavg() { cut -d' ' -f1-3 /proc/loadavg; }

case_title() {
    case $1 in
    a) echo "TLSv1.2 ECDHE-RSA-AES256-GCM-SHA384, RSA-2048 (X25519)" ;;
    b) echo "TLSv1.3, ECDSA P-256 (X25519)" ;;
    esac
}

provider_conf() { # config name -> its main-level provider lines
    case $1 in
    plain) ;;
    adaptive) echo "ssl_provider tlsgate;" ;;
    nopool) echo "ssl_provider tlsgate { pool_size 0; }" ;;
    batch) echo "ssl_provider tlsgate { adaptive off; pool_size 0; }" ;;
    esac
    [[ $1 == plain ]] || echo "ssl_propquery \"?provider=tlsgate\";"
}

launch() { # name port dir case: a status port too, the configuration, tlsgate (start_server)
    local name=$1 port=$2 d=$3 cs=$4 sport
    sport=$(free_port "$port ${PORT[*]} ${SPORT[*]}")
    SPORT[$name]=$sport
    START_ALSO_LISTEN=$sport
    write_conf "$name" "$cs" "$port" "$sport" "$d"
    TLSGATE_STATE_DIR="$d/state" "$TG" -p "$d" -c "$d/tlsgate.conf" >>"$d/stdout.log" 2>&1 &
}

write_conf() { # name case port status-port dir
    local name=$1 cs=$2 port=$3 sport=$4 d=$5
    {
        local prov
        mapfile -t prov < <(provider_conf "$name")
        tlsgate_main_conf "$d" 4096 "${prov[@]}"
        http_open "$port"
        hs_case_tls "$cs"
        echo "        root $TMP/html;"
        if [[ $name == plain ]]; then echo "        ssl_async off;"; else echo "        ssl_async on;"; fi
        echo "    }"
        echo "    server {"
        echo "        listen 127.0.0.1:$sport;"
        echo "        server_name status;"
        echo "        location = /status { status; }"
        echo "    }"
        echo "}"
    } >"$d/tlsgate.conf"
}

# verify protocol, cipher, server key and that /0kb.bin is served; prints one line
verify() { # name case
    local name=$1 cs=$2
    tls_probe "${PORT[$name]}" /0kb.bin
    case $cs in
    a) verify_probe "$name case $cs" TLSv1.2 ECDHE-RSA-AES256-GCM-SHA384 RSA-2048 ;;
    b) verify_probe "$name case $cs" TLSv1.3 'TLS_*' EC-prime256v1 ;;
    esac
}

to_us() { # wrk time like 12.34ms / 850.00us / 1.20s / 1.00m -> µs
    awk -v t="$1" 'BEGIN { v = t + 0; u = t; sub(/^[0-9.]+/, "", u);
        if (u == "ms") v *= 1000; else if (u == "s") v *= 1e6; else if (u == "m") v *= 6e7;
        else if (u == "h") v *= 3.6e9; printf "%.1f", v }'
}

# The status JSON of server $1 into file $2 ("" when unavailable).
fetch_status() {
    curl -s --max-time 5 "http://127.0.0.1:${SPORT[$1]}/status" >"$2" 2>/dev/null || : >"$2"
}

# Provider counters of a status JSON file, one line per algorithm:
# alg requests requests_async single pool_hits pool_misses fallbacks batches lanes
prov_counters() {
    [[ -s $1 ]] || return 0
    jq -r '(.provider.alg // {}) | to_entries[] | .value as $v |
        [.key, ($v.requests // 0), ($v.requests_async // 0), ($v.single // 0),
         ($v.pool_hits // 0), ($v.pool_misses // 0), ($v.fallbacks // 0), ($v.batches // 0),
         ([($v.fill // []) | to_entries[] | (.key + 1) * .value] | add // 0)] | @tsv' "$1" 2>/dev/null || true
}

accepted() { # status JSON file -> connections.accepted ("" when unavailable)
    [[ -s $1 ]] || return 0
    jq -r '.connections.accepted // empty' "$1" 2>/dev/null || true
}

hs_hist() { # status JSON file -> "count sum" of the accept-to-handshake-done histogram (µs)
    [[ -s $1 ]] || return 0
    jq -r 'if .handshake_us then "\(.handshake_us.count) \(.handshake_us.sum)" else empty end' "$1" 2>/dev/null || true
}

# Runs wrk on CLI_CPU for $2 seconds with $3 connections against server $1; output in $4.
# Bounded in time (run_client).
run_wrk() {
    local name=$1 secs=$2 conns=$3 out=$4
    run_client "$secs" "$out" wrk -t1 -c "$conns" -d "${secs}s" -H 'Connection: close' --latency \
        -s "$TMP/latency.lua" "https://127.0.0.1:${PORT[$name]}/0kb.bin" ||
        { cat "$out" >&2; die "wrk against $name failed"; }
}

declare -a VERIFY_LINES=()
ROWS="$TMP/rows.txt" # one line per measured run
ALGS="$TMP/algs.txt" # provider counter deltas per run and algorithm
: >"$ROWS"
: >"$ALGS"

measure() { # name case load rep
    local name=$1 cs=$2 load=$3 rep=$4 tag="$1-$2-c$3-$4"
    local out="$TMP/wrk-$tag.txt" s0="$TMP/status0-$tag.json" s1="$TMP/status1-$tag.json"
    local c0 c1 k0 k1 t0 t1
    check_alive "$name" "${DIR[$name]}"
    if ((WARMUP > 0)); then
        run_wrk "$name" "$WARMUP" "$load" "$TMP/warmup-$tag.txt"
        check_alive "$name" "${DIR[$name]}"
    fi
    sleep 0.3 # the worker copies the provider's counters to the status page every 100 ms
    fetch_status "$name" "$s0"
    local b00 b01 b10 b11
    b00=$(cpu_busy "$SRV_CPU")
    b10=$(cpu_busy "$CLI_CPU")
    c0=$(cpu_ticks "${WORKER[$name]}")
    k0=$(children_ticks)
    t0=$(now_ns)
    run_wrk "$name" "$SECS" "$load" "$out"
    t1=$(now_ns)
    k1=$(children_ticks)
    b01=$(cpu_busy "$SRV_CPU")
    b11=$(cpu_busy "$CLI_CPU")
    c1=$(cpu_ticks "${WORKER[$name]}") || { check_alive "$name" "${DIR[$name]}"; die "cannot read /proc/${WORKER[$name]}/stat"; }
    check_alive "$name" "${DIR[$name]}"
    pin_worker "$name"
    sleep 0.3
    fetch_status "$name" "$s1"

    # wrk
    local reqs rps mean p50 p99 serr n2xx lat
    wrk_parse "$out" "$name case $cs c=$load"
    reqs=${WRK[reqs]} rps=${WRK[rps]} serr=${WRK[serr]} n2xx=${WRK[n2xx]}
    if ((reqs == 0)); then
        note "WARNING: $name case $cs c=$load run $rep: no handshake completed in ${SECS}s (worker CPU $((c1 - c0)) ticks); wrk said:"
        cat "$out" >&2
        print_log "${DIR[$name]}/error.log"
        if [[ ${RETRYING:-0} == 0 ]]; then
            note "retrying this run once"
            RETRYING=1 measure "$@"
            return
        fi
    fi
    [[ -s $s0 && -s $s1 ]] || note "WARNING: $name case $cs c=$load run $rep: could not read the status page on 127.0.0.1:${SPORT[$name]}"
    lat=$(grep -m1 '^LATENCY_US ' "$out" || true)
    if [[ -n $lat ]]; then
        read -r mean p50 p99 < <(awk '{ for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
            print v["mean"], v["p50"], v["p99"] }' <<<"$lat")
    else # no Lua: wrk's rounded text
        mean=$(to_us "$(awk '$1 == "Latency" { print $2; exit }' "$out")")
        p50=$(to_us "$(awk '$1 == "50%" { print $2; exit }' "$out")")
        p99=$(to_us "$(awk '$1 == "99%" { print $2; exit }' "$out")")
    fi

    # status: accepted connections and provider counters over the measured run
    local a0 a1 acc="n/a"
    a0=$(accepted "$s0")
    a1=$(accepted "$s1")
    [[ -n $a0 && -n $a1 ]] && acc=$((a1 - a0 - 1)) # minus the second status request
    local h0 h1 srv_hs=""
    h0=$(hs_hist "$s0")
    h1=$(hs_hist "$s1")
    if [[ -n $h0 && -n $h1 ]]; then
        srv_hs=$(awk -v a="$h0" -v b="$h1" 'BEGIN { split(a, x, " "); split(b, y, " ")
            if (y[1] > x[1]) printf "%.1f", (y[2] - x[2]) / (y[1] - x[1]) }')
    fi
    prov_counters "$s0" >"$TMP/p0.tsv"
    prov_counters "$s1" >"$TMP/p1.tsv"
    local prov
    : >"$TMP/algs-run.txt"
    prov=$(awk -v pre="$cs|$load|$name|$rep" -v algs="$TMP/algs-run.txt" '
        FILENAME == ARGV[1] { for (i = 2; i <= 9; i++) b[$1, i] = $i; next }
        { line = pre "|" $1; any = 0
          for (i = 2; i <= 9; i++) { d[i] = $i - b[$1, i]; line = line "|" d[i]; t[i] += d[i]; if (d[i]) any = 1 }
          if (any) print line >> algs }
        END { printf "%d|%d|%d|%d|%d|%d", t[2], t[3], t[4], t[5], t[8], t[9] }' "$TMP/p0.tsv" "$TMP/p1.tsv")
    [[ -n $prov ]] || prov="0|0|0|0|0|0"
    local preq
    preq=${prov%%|*}
    if [[ $name != plain ]] && [[ -s $s1 ]] && ((preq == 0)); then
        note "WARNING: $name case $cs c=$load: the provider handled no request (is it loaded?)"
    fi

    local row
    run_figures "$reqs" $((c1 - c0)) $((k1 - k0)) $((t1 - t0)) "$serr" "$n2xx" "$acc" "$load"
    row=$(awk -v cs="$cs" -v load="$load" -v name="$name" -v rep="$rep" -v rps="$rps" \
        -v hz="$HZ" -v wall_ns=$((t1 - t0)) -v us="${FIG[us]}" -v wpct="${FIG[wpct]}" \
        -v cpct="${FIG[cpct]}" -v flag="${FIG[flag]}" \
        -v mean="$mean" -v p50="$p50" -v p99="$p99" -v serr="$serr" -v n2xx="$n2xx" \
        -v acc="$acc" -v prov="$prov" -v srv_hs="$srv_hs" -v retried="${RETRYING:-0}" -v redone="${BUSY_TRY:-0}" \
        -v o0=$((b01 - b00 - (c1 - c0))) -v o1=$((b11 - b10 - (k1 - k0))) -v same=$((SRV_CPU == CLI_CPU)) 'BEGIN {
        wall = wall_ns / 1e9
        if (retried) flag = flag (flag ? ", " : "") "retried (first try: no handshake)"
        if (redone) flag = flag (flag ? ", " : "") "redone " redone "x (other load)"
        conn = rps > 0 ? load * 1e6 / rps : 0 # Little: mean connection lifetime, µs
        # CPU time on the two cores that is neither the worker nor wrk (other processes,
        # interrupts, hypervisor steal), % of the wall time
        ob0 = 100 * o0 / hz / wall; ob1 = same ? ob0 : 100 * o1 / hz / wall
        if (ob0 < 0) ob0 = 0
        if (ob1 < 0) ob1 = 0
        if (ob0 > 20 || ob1 > 20) flag = flag (flag ? ", " : "") "busy host"
        printf "%s|%s|%s|%d|%.1f|%s|%.1f|%.0f|%.1f|%.1f|%.1f|%d|%d|%.0f|%s|%s|%.1f|%s|%.0f|%.0f\n",
            cs, load, name, rep, rps, acc, us, wpct, mean, p50, p99, serr, n2xx, cpct, flag, prov, conn, srv_hs, ob0, ob1
    }')
    local tries=${BUSY_TRY:-0}
    IFS='|' read -r _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ ob0 ob1 <<<"$row"
    if ((tries < BUSY_RETRY && (ob0 > 20 || ob1 > 20))); then
        note "$name case $cs c=$load run $rep: other load on CPU$SRV_CPU / CPU$CLI_CPU was $ob0% / $ob1%, redoing the run ($((tries + 1)) of $BUSY_RETRY)"
        sleep "$BUSY_PAUSE"
        BUSY_TRY=$((tries + 1)) measure "$@"
        return
    fi
    echo "$row" >>"$ROWS"
    cat "$TMP/algs-run.txt" >>"$ALGS"
    local wpct cpct flag preq pq pss ph pb conn
    local ob0 ob1
    IFS='|' read -r _ _ _ _ rps acc us wpct mean p50 p99 serr n2xx cpct flag preq pq pss ph pb _ conn srv_hs ob0 ob1 <<<"$row"
    printf '  %-8s case %s c=%-3s run %d: %7s hs/s %7s us/hs  worker %3s%%  conn %s us  server hs %s us  wrk latency mean %s p50 %s p99 %s us  errors %s  non-2xx %s  accepts %s  client %s%%  other load CPU%s %s%% CPU%s %s%%  provider: req %s pool %s queued %s single %s batches %s %s\n' \
        "$name" "$cs" "$load" "$rep" "$rps" "$us" "$wpct" "$conn" "${srv_hs:-n/a}" "$mean" "$p50" "$p99" "$serr" "$n2xx" "$acc" "$cpct" \
        "$SRV_CPU" "$ob0" "$CLI_CPU" "$ob1" "$preq" "$ph" "$pq" "$pss" "$pb" "$flag"
}

# --- run ---------------------------------------------------------------------------------
TG_VER=$("$TG" -v 2>&1 | head -n 1 || true)
LOAD_START=$(loadavg)
echo "tlsgate: $TG_SRC ($TG_VER, built $TG_BUILT, sha256 $TG_SHA…, run from a copy); $(openssl version); wrk $(wrk -v 2>&1 | awk 'NR == 1 { print $2 }')"
echo "server worker on CPU $SRV_CPU, wrk on CPU $CLI_CPU; ${SECS}s measured + ${WARMUP}s warm-up per run; loads: $LOADS; repeat $REPEAT; load average $LOAD_START"

for cs in $CASES; do
    echo
    echo "== case $cs: $(case_title "$cs") =="
    for name in "${CONFIGS[@]}"; do serve "$name" "$cs"; done
    for name in "${CONFIGS[@]}"; do
        pin_worker "$name"
        verify "$name" "$cs"
    done
    for load in $LOADS; do
        for ((rep = 1; rep <= REPEAT; rep++)); do
            if ((rep % 2 == 1)); then
                order=("${CONFIGS[@]}")
            else
                order=()
                for ((i = ${#CONFIGS[@]} - 1; i >= 0; i--)); do order+=("${CONFIGS[i]}"); done
            fi
            for name in "${order[@]}"; do
                measure "$name" "$cs" "$load" "$rep"
            done
        done
    done
    for name in "${CONFIGS[@]}"; do
        stop_server "$name"
        # anything at [crit]/[alert]/[emerg] in tlsgate's log after the load is a bug report
        d="$TMP/$name-$cs"
        if grep -E '\[(crit|alert|emerg)\]' "$d/error.log" "$d/stdout.log" >/dev/null 2>&1; then
            note "WARNING: tlsgate ($name) logged critical messages in case $cs:"
            grep -hE '\[(crit|alert|emerg)\]' "$d/error.log" "$d/stdout.log" | sort | uniq -c | sort -rn | head -n 10 >&2
        fi
    done
done
LOAD_END=$(loadavg)

# --- report ------------------------------------------------------------------------------
# median of the numbers on stdin ("" if none)
median() {
    sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) exit; if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# ROWS fields: 1 case, 2 load, 3 config, 4 run, 5 hs/s, 6 accepts, 7 us/hs, 8 worker %,
# 9 wrk latency mean us, 10 p50 us, 11 p99 us, 12 socket errors, 13 non-2xx, 14 client %,
# 15 flag, 16 prov requests, 17 queued, 18 single, 19 pool hits, 20 batches, 21 lanes,
# 22 connection lifetime us (conns / hs/s), 23 server accept-to-handshake-done mean us,
# 24, 25 other load on the server's and the client's CPU, %
F_RPS=5 F_US=7 F_WPCT=8 F_MEAN=9 F_P50=10 F_P99=11 F_CPCT=14 F_CONN=22 F_SRV=23 F_OB0=24 F_OB1=25

# median of field $4 over the runs of case $1, load $2, config $3 ("" if none)
med() {
    awk -F'|' -v cs="$1" -v l="$2" -v n="$3" -v f="$4" '$1 == cs && $2 == l && $3 == n && $f != "" { print $f }' "$ROWS" | median
}

ms() { # µs -> ms with 3 decimals, or "n/a"
    awk -v a="$1" 'BEGIN { if (a == "") print "n/a"; else printf "%.3f", a / 1000 }'
}

summary_row() { # case load config -> markdown row
    local cs=$1 l=$2 n=$3 rps
    rps=$(med "$cs" "$l" "$n" $F_RPS)
    [[ -n $rps ]] || return 0
    awk -F'|' -v cs="$cs" -v l="$l" -v n="$n" -v rps="$rps" \
        -v conn="$(ms "$(med "$cs" "$l" "$n" $F_CONN)")" -v srv="$(ms "$(med "$cs" "$l" "$n" $F_SRV)")" \
        -v mean="$(ms "$(med "$cs" "$l" "$n" $F_MEAN)")" -v p50="$(ms "$(med "$cs" "$l" "$n" $F_P50)")" \
        -v p99="$(ms "$(med "$cs" "$l" "$n" $F_P99)")" -v us="$(med "$cs" "$l" "$n" $F_US)" \
        -v wpct="$(med "$cs" "$l" "$n" $F_WPCT)" -v cpct="$(med "$cs" "$l" "$n" $F_CPCT)" \
        -v ob0="$(med "$cs" "$l" "$n" $F_OB0)" -v ob1="$(med "$cs" "$l" "$n" $F_OB1)" '
        $1 == cs && $2 == l && $3 == n {
            runs++; err += $12 + $13; req += $16; q += $17; pool += $19; bat += $20; lanes += $21
            if (runs == 1 || $5 + 0 < min) min = $5 + 0
            if ($5 + 0 > max) max = $5 + 0
            if ($14 > 90) cb++
            if ($15 ~ /accepts/) acc++
            if ($15 ~ /retried/) rt++
            if ($15 ~ /busy host/) bh++
            if ($5 + 0 == 0) zero++
        }
        END {
            note = ""
            if (cb) note = "client-bound" (runs > 1 ? " (" cb "/" runs ")" : "")
            if (err) note = note (note ? ", " : "") err " errors"
            if (acc) note = note (note ? ", " : "") "accepts!=requests"
            if (rt) note = note (note ? ", " : "") rt " retried"
            if (bh) note = note (note ? ", " : "") "busy host" (runs > 1 ? " (" bh "/" runs ")" : "")
            if (zero) note = note (note ? ", " : "") zero " run(s) without a handshake"
            spread = runs > 1 ? sprintf(" (%.0f–%.0f)", min, max) : ""
            ph = req > 0 ? sprintf("%.2f", pool / req) : "–"
            pq = req > 0 ? sprintf("%.2f", q / req) : "–"
            fill = bat > 0 ? sprintf("%.2f (%d)", lanes / bat, bat) : "–"
            printf "| %s | %s | %s | %.0f%s | %s | %s | %s | %s | %s | %.1f | %.0f | %.0f | %.0f / %.0f | %s | %s | %s | %s |\n",
                cs, l, n, rps, spread, conn, srv, mean, p50, p99, us, wpct, cpct, ob0, ob1, ph, pq, fill, note
        }' "$ROWS"
}

ratio() { # a b -> a/b with 3 decimals, or "n/a"
    awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "" || b + 0 == 0) print "n/a"; else printf "%.3f", a / b }'
}

diff_of() { # a b scale decimals -> (a-b)*scale with a sign, or "n/a"
    awk -v a="$1" -v b="$2" -v s="$3" -v d="$4" 'BEGIN { if (a == "" || b == "") print "n/a"; else printf "%+." d "f", (a - b) * s }'
}

larger() { # a b -> the larger ("" if both empty)
    awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" && b == "") exit; if (b == "" || (a != "" && a + 0 >= b + 0)) print a; else print b }'
}

verdict() { # ratio op bound -> PASS / MISS
    awk -v r="$1" -v op="$2" -v b="$3" 'BEGIN { if (r == "n/a") { print "n/a"; exit }
        ok = (op == "<=") ? (r + 0 <= b + 0) : (r + 0 >= b + 0); print ok ? "PASS" : "MISS" }'
}

has_load() { [[ " $LOADS " == *" $1 "* ]]; }

report() {
    local cs l n row
    echo "## Adaptive batching and idle-time pools (issue #7, \`bench/adaptive.sh\`)"
    echo
    run_stamp
    echo "tlsgate $TG_VER, $TG_SRC built $TG_BUILT (sha256 $TG_SHA…); $(openssl version); load average $LOAD_START at the start, $LOAD_END at the end"
    echo
    echo "One tlsgate worker on CPU $SRV_CPU per configuration; \`taskset -c $CLI_CPU wrk -t1 -c CONNS -d ${SECS}s -H 'Connection: close' --latency https://127.0.0.1:PORT/0kb.bin\`"
    echo "after a ${WARMUP}s warm-up; per case and load the configurations run back to back, $REPEAT run(s),"
    echo "forwards (plain adaptive nopool batch) on odd runs, backwards on even runs; medians of the runs"
    echo "(hs/s range in parentheses). access_log off, ssl_session_cache off, ssl_session_tickets off."
    echo "plain: no provider, ssl_async off; adaptive: provider (adaptive on, pool_size 64), ssl_async on;"
    echo "nopool: provider pool_size 0; batch: provider adaptive off, pool_size 0."
    if ((BUSY_RETRY > 0)); then
        echo "A run with other load above 20% on either core was redone up to $BUSY_RETRY times, ${BUSY_PAUSE}s apart."
    fi
    echo
    echo "Latency columns: conn = conns / hs/s, the mean lifetime of a connection (connect, full"
    echo "handshake, request, response; at c=1 the time of one sequential handshake); server hs ="
    echo "accept to handshake done, mean, from the status JSON; wrk mean/p50/p99 = wrk's Latency,"
    echo "which starts when the request is written, i.e. *after* wrk's SSL_connect returned: it"
    echo "leaves out the server's key exchange and signature. Other load = CPU time on the server's /"
    echo "the client's core that is neither the tlsgate worker nor wrk (other processes, interrupts,"
    echo "hypervisor steal), % of wall time; a run with more than 20% on either is flagged \"busy host\"."
    echo
    for row in "${VERIFY_LINES[@]}"; do echo "- $row"; done
    echo
    echo "| case | conns | config | hs/s | conn ms | server hs ms | wrk mean ms | wrk p50 ms | wrk p99 ms | CPU µs/hs | worker CPU % | client CPU % | other load CPU$SRV_CPU / CPU$CLI_CPU % | pool hits/req | queued/req | mean fill (batches) | note |"
    echo "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"
    for cs in $CASES; do
        for l in $LOADS; do
            for n in "${CONFIGS[@]}"; do summary_row "$cs" "$l" "$n"; done
        done
    done
    echo
    echo "Ratios of the medians: adaptive/plain of the latencies and of CPU µs/hs; hs/s adaptive /"
    echo "max(plain, batch); what the pools save, nopool − adaptive (positive: the pools help)."
    echo
    echo "| case | conns | conn adaptive/plain | server hs adaptive/plain | wrk mean adaptive/plain | hs/s adaptive/max(plain,batch) | CPU/hs adaptive/plain | nopool−adaptive CPU µs/hs | nopool−adaptive conn ms | nopool−adaptive server hs ms | nopool−adaptive wrk mean ms |"
    echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    for cs in $CASES; do
        for l in $LOADS; do
            echo "| $cs | $l" \
                "| $(ratio "$(med "$cs" "$l" adaptive $F_CONN)" "$(med "$cs" "$l" plain $F_CONN)")" \
                "| $(ratio "$(med "$cs" "$l" adaptive $F_SRV)" "$(med "$cs" "$l" plain $F_SRV)")" \
                "| $(ratio "$(med "$cs" "$l" adaptive $F_MEAN)" "$(med "$cs" "$l" plain $F_MEAN)")" \
                "| $(ratio "$(med "$cs" "$l" adaptive $F_RPS)" "$(larger "$(med "$cs" "$l" plain $F_RPS)" "$(med "$cs" "$l" batch $F_RPS)")")" \
                "| $(ratio "$(med "$cs" "$l" adaptive $F_US)" "$(med "$cs" "$l" plain $F_US)")" \
                "| $(diff_of "$(med "$cs" "$l" nopool $F_US)" "$(med "$cs" "$l" adaptive $F_US)" 1 1)" \
                "| $(diff_of "$(med "$cs" "$l" nopool $F_CONN)" "$(med "$cs" "$l" adaptive $F_CONN)" 0.001 3)" \
                "| $(diff_of "$(med "$cs" "$l" nopool $F_SRV)" "$(med "$cs" "$l" adaptive $F_SRV)" 0.001 3)" \
                "| $(diff_of "$(med "$cs" "$l" nopool $F_MEAN)" "$(med "$cs" "$l" adaptive $F_MEAN)" 0.001 3) |"
        done
    done
    echo
    echo "Goals (issue #7):"
    echo
    local r r2 r3 ac pc as ps am pm ar pr br best cb au pu bu nu nc nsv nm
    for cs in $CASES; do
        has_load 1 || break
        ac=$(med "$cs" 1 adaptive $F_CONN); pc=$(med "$cs" 1 plain $F_CONN)
        as=$(med "$cs" 1 adaptive $F_SRV); ps=$(med "$cs" 1 plain $F_SRV)
        am=$(med "$cs" 1 adaptive $F_MEAN); pm=$(med "$cs" 1 plain $F_MEAN)
        r=$(ratio "$ac" "$pc"); r2=$(ratio "$as" "$ps"); r3=$(ratio "$am" "$pm")
        echo "- goal 1, case $cs, c=1: handshake latency (connection time, 1 / hs/s) adaptive/plain =" \
            "$(ms "$ac") / $(ms "$pc") ms = **$r** (≤ 1.05): **$(verdict "$r" "<=" 1.05)**" \
            "($(diff_of "$ac" "$pc" 1 0) µs); server accept→handshake done $(ms "$as") / $(ms "$ps") ms = $r2;" \
            "wrk Latency Avg (after the handshake) $(ms "$am") / $(ms "$pm") ms = $r3 ($(verdict "$r3" "<=" 1.05))"
    done
    for cs in $CASES; do
        has_load 200 || break
        ar=$(med "$cs" 200 adaptive $F_RPS); pr=$(med "$cs" 200 plain $F_RPS); br=$(med "$cs" 200 batch $F_RPS)
        best=$(larger "$pr" "$br")
        r=$(ratio "$ar" "$best")
        cb=$(awk -F'|' -v cs="$cs" '$1 == cs && $2 == 200 && $14 > 90 { n++ } END { print n + 0 }' "$ROWS")
        au=$(med "$cs" 200 adaptive $F_US); pu=$(med "$cs" 200 plain $F_US); bu=$(med "$cs" 200 batch $F_US)
        echo "- goal 2, case $cs, c=200: hs/s adaptive / max(plain, batch) =" \
            "$(printf '%.0f' "$ar") / max($(printf '%.0f' "$pr"), $(printf '%.0f' "$br")) = **$r** (≥ 0.95):" \
            "**$(verdict "$r" ">=" 0.95)**$(if ((cb > 0)); then echo " ($cb of the c=200 runs client-bound)"; fi);" \
            "server capacity (1 / CPU µs/hs) adaptive / best fixed policy =" \
            "min($(printf '%.0f' "$pu"), $(printf '%.0f' "$bu")) / $(printf '%.0f' "$au") µs =" \
            "$(ratio "$(awk -v a="$pu" -v b="$bu" 'BEGIN { print (a + 0 < b + 0) ? a : b }')" "$au")"
    done
    if [[ " $CASES " == *" b "* ]]; then
        for l in 1 16; do
            has_load "$l" || continue
            au=$(med b "$l" adaptive $F_US); nu=$(med b "$l" nopool $F_US)
            ac=$(med b "$l" adaptive $F_CONN); nc=$(med b "$l" nopool $F_CONN)
            as=$(med b "$l" adaptive $F_SRV); nsv=$(med b "$l" nopool $F_SRV)
            am=$(med b "$l" adaptive $F_MEAN); nm=$(med b "$l" nopool $F_MEAN)
            echo "- goal 3, case b, c=$l: the pools save $(diff_of "$nu" "$au" 1 1) CPU µs/hs" \
                "($(printf '%.1f' "$nu") → $(printf '%.1f' "$au") µs," \
                "$(awk -v a="$au" -v b="$nu" 'BEGIN { if (b > 0) printf "%+.1f%%", 100 * (a - b) / b; else print "n/a" }'))," \
                "connection time $(diff_of "$nc" "$ac" 0.001 3) ms ($(ms "$nc") → $(ms "$ac"))," \
                "server handshake $(diff_of "$nsv" "$as" 0.001 3) ms ($(ms "$nsv") → $(ms "$as"))," \
                "wrk Latency Avg $(diff_of "$nm" "$am" 0.001 3) ms (reported, no bound)"
        done
    fi
    echo
    echo "Provider counters per algorithm (deltas over the measured runs, summed over the runs):"
    echo
    echo "| case | conns | config | alg | requests | single | queued | pool hits | pool misses | fallbacks | batches | mean fill |"
    echo "|---|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"
    # ALGS fields: case load config run alg requests async single pool_hits pool_misses fallbacks batches lanes
    for cs in $CASES; do
        for l in $LOADS; do
            for n in "${CONFIGS[@]}"; do
                awk -F'|' -v cs="$cs" -v l="$l" -v n="$n" '
                    $1 == cs && $2 == l && $3 == n {
                        if (!($5 in seen)) { seen[$5] = 1; order[++k] = $5 }
                        for (i = 6; i <= 13; i++) s[$5, i] += $i
                    }
                    END {
                        for (j = 1; j <= k; j++) {
                            a = order[j]
                            fill = s[a, 12] > 0 ? sprintf("%.2f", s[a, 13] / s[a, 12]) : "–"
                            printf "| %s | %s | %s | %s | %d | %d | %d | %d | %d | %d | %d | %s |\n",
                                cs, l, n, a, s[a, 6], s[a, 8], s[a, 7], s[a, 9], s[a, 10], s[a, 11], s[a, 12], fill
                        }
                    }' "$ALGS"
            done
        done
    done
    echo
    echo "Every run:"
    echo
    echo "| case | conns | config | run | hs/s | accepts | CPU µs/hs | worker CPU % | conn ms | server hs ms | wrk mean ms | wrk p50 ms | wrk p99 ms | socket errors | non-2xx | client CPU % | other load CPU$SRV_CPU / CPU$CLI_CPU % | note |"
    echo "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"
    local rep rps acc us wpct mean p50 p99 serr n2xx cpct flag conn srv ob0 ob1
    while IFS='|' read -r cs l n rep rps acc us wpct mean p50 p99 serr n2xx cpct flag _ _ _ _ _ _ conn srv ob0 ob1; do
        echo "| $cs | $l | $n | $rep | $rps | $acc | $us | $wpct | $(ms "$conn") | $(ms "$srv") | $(ms "$mean") | $(ms "$p50") | $(ms "$p99") | $serr | $n2xx | $cpct | $ob0 / $ob1 | $flag |"
    done <"$ROWS"
}

echo
REPORT=$(report)
echo "$REPORT"
if [[ $SAVE == 1 ]]; then save_report adaptive "$REPORT"; fi
