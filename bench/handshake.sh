#!/usr/bin/env bash
# bench/handshake.sh: full TLS handshakes/s of tlsgate vs Debian's nginx, side by side.
#
# Usage (from the repo root, after `cmake --build build --target tlsgate`):
#   bench/handshake.sh
#   TLSGATE_BIN=build-rel/tlsgate BENCH_SECONDS=3 bench/handshake.sh
#
# Environment:
#   TLSGATE_BIN     tlsgate binary (default build/tlsgate)
#   NGINX_BIN       nginx binary (default: nginx from PATH or /usr/sbin/nginx)
#   BENCH_SECONDS   measured wrk run per server and case (default 10)
#   BENCH_WARMUP    warm-up wrk run before each measured run, seconds (default 2; 0 = none)
#   BENCH_CONNS     wrk connections (default 50)
#   BENCH_REPEAT    1: nginx then tlsgate per case; 2: nginx tlsgate nginx tlsgate (default 1)
#   BENCH_CASES     which cases to run, subset of "a b" (default "a b")
#   BENCH_SAVE      1: also write the table to bench/results/handshake-<date>.md
#   BENCH_NO_INSTALL 1: never call apt-get (fail if a tool is missing)
#   BENCH_PROVIDER  1: tlsgate runs with its own provider and async TLS (ssl_provider
#                   tlsgate; ssl_propquery "?provider=tlsgate"; ssl_async on): the
#                   batched mb8 kernels instead of OpenSSL's single operations
#
# Cases (the server config pins them; wrk negotiates whatever the server allows, and
# each case is verified once per server with `openssl s_client`):
#   a  TLSv1.2 ECDHE-RSA-AES256-GCM-SHA384, RSA-2048 certificate
#   b  TLSv1.3 (default ciphersuites and groups), ECDSA P-256 certificate only
#
# Both servers: one worker pinned to CPU 0 (worker_cpu_affinity 01), access_log off,
# error_log at the default level (error), keepalive_timeout default,
# ssl_session_cache off + ssl_session_tickets off (no resumption at all; wrk with
# `Connection: close` makes a full handshake per request anyway), default ssl_ecdh_curve
# / groups, 127.0.0.1 on free ports. wrk runs on CPU 1: -t1 -c BENCH_CONNS
# -H 'Connection: close' --latency https://127.0.0.1:PORT/0kb.bin.
#
# Columns: hs/s = wrk Requests/sec (one request = one full handshake); accepts =
# stub_status "accepts" delta over the measured run (cross-check); CPU us/hs = worker
# utime+stime delta over the measured run (/proc/PID/stat fields 14+15) / wrk requests;
# worker CPU % = that CPU time / wall time; client CPU % = wrk's utime+stime / wall
# ("client-bound" when > 90%: then hs/s measures wrk, CPU us/hs is still valid).
# Latency depends on the accept policy: nginx runs with its default multi_accept off
# (one accept per wake-up); a server that accepts a large batch per wake-up puts ready
# requests behind that batch's handshakes, so its p50 is higher at the same CPU cost
# (tlsgate accepts one per wake-up too, and lets epoll report each ClientHello).
set -euo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

env_uint SECS BENCH_SECONDS 10 1
env_uint WARMUP BENCH_WARMUP 2
env_uint CONNS BENCH_CONNS 50 1
env_uint REPEAT BENCH_REPEAT 1 1
env_words CASES BENCH_CASES "a b" a b
SAVE=${BENCH_SAVE:-0}

# --- tools -------------------------------------------------------------------------------
install_missing $(nginx_missing) wrk:wrk openssl:openssl taskset:util-linux pgrep:procps \
    timeout:coreutils

NGINX=${NGINX_BIN:-$(command -v nginx 2>/dev/null || echo /usr/sbin/nginx)}
[[ -x $NGINX ]] || die "nginx not found ($NGINX)"

TG=$(tlsgate_bin)

cpu_roles wrk

# --- state and cleanup -------------------------------------------------------------------
TMP=$(mktemp -d "${TMPDIR:-/tmp}/tlsgate-hs.XXXXXX")
chmod 755 "$TMP" # nginx's worker runs as nobody and must read html/
# MASTER, WORKER, PORT, DIR: bench/lib.sh

cleanup() { stop_all "$CLIENT_PID"; }
trap_cleanup

# --- files -------------------------------------------------------------------------------
make_docroot "$TMP/html"
make_certs "$TMP/certs"

# --- helpers -----------------------------------------------------------------------------
# A port nobody uses on this host now (no socket in any state, v4 or v6).

# utime+stime of a process, clock ticks

# cutime+cstime of this shell: CPU of reaped children (wrk), clock ticks

# HTTPS GET via openssl s_client; prints the raw response
https_get() {
    printf 'GET %s HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n' "$2" |
        timeout 10 openssl s_client -quiet -connect "127.0.0.1:$1" -servername localhost 2>/dev/null || true
}

accepts() { # port -> stub_status "accepts", or "" if unavailable
    https_get "$1" /status | awk '/^server accepts handled requests/ { getline; print $1; exit }'
}

# nginx -V lists the compiled-in temp paths; point every one of them into TMP so that the
# bench instance never touches /var/lib/nginx. Only for modules that are compiled in.

case_title() {
    case $1 in
    a) echo "TLSv1.2 ECDHE-RSA-AES256-GCM-SHA384, RSA-2048" ;;
    b) echo "TLSv1.3, ECDSA P-256" ;;
    esac
}

launch() { # name port dir case: write the configuration, start the server (start_server)
    local name=$1 port=$2 d=$3 cs=$4
    write_conf "$name" "$cs" "$port" "$d"
    if [[ $name == nginx ]]; then
        "$NGINX" -p "$d" -e "$d/error.log" -c "$d/nginx.conf" >>"$d/stdout.log" 2>&1 &
    else
        TLSGATE_STATE_DIR="$d/state" "$TG" -p "$d" -c "$d/tlsgate.conf" >>"$d/stdout.log" 2>&1 &
    fi
}

write_conf() { # name case port dir
    local name=$1 cs=$2 port=$3 d=$4
    local http=()
    [[ $name == nginx ]] && mapfile -t http < <(nginx_temp_paths "$d/tmp" | sed 's/^ *//')
    {
        if [[ $name == nginx ]]; then
            echo "daemon off;"
            echo "master_process on;"
        fi
        if [[ $name == tlsgate && ${BENCH_PROVIDER:-0} == 1 ]]; then
            tlsgate_main_conf "$d" 4096 "ssl_provider tlsgate;" "ssl_propquery \"?provider=tlsgate\";"
        else
            tlsgate_main_conf "$d" 4096
        fi
        http_open "$port" "${http[@]}"
        hs_case_tls "$cs"
        echo "        root $TMP/html;"
        [[ $name == tlsgate && ${BENCH_PROVIDER:-0} == 1 ]] && echo "        ssl_async on;"
        echo "        location = /status { stub_status; }"
        echo "    }"
        echo "}"
    } >"$d/$name.conf"
}

# verify protocol, cipher, server key and that /0kb.bin is served; prints one line
verify() { # name case
    local name=$1 cs=$2
    tls_probe "${PORT[$name]}" /0kb.bin
    TICKETS[$cs-$name]=${PROBE[tickets]}
    case $cs in
    a) verify_probe "$name case $cs" TLSv1.2 ECDHE-RSA-AES256-GCM-SHA384 RSA-2048 "session tickets sent: ${PROBE[tickets]}" ;;
    b) verify_probe "$name case $cs" TLSv1.3 'TLS_*' EC-prime256v1 "session tickets sent: ${PROBE[tickets]}" ;;
    esac
}

# Runs wrk on CLI_CPU for $2 seconds against server $1; output in $3. Bounded in time
# (run_client).
run_wrk() {
    local name=$1 secs=$2 out=$3
    run_client "$secs" "$out" wrk -t1 -c "$CONNS" -d "${secs}s" -H 'Connection: close' --latency \
        "https://127.0.0.1:${PORT[$name]}/0kb.bin" || { cat "$out" >&2; die "wrk against $name failed"; }
}

declare -a ROWS=() VERIFY_LINES=()
declare -A TICKETS=()
declare -A SUM_CPU=() SUM_HS=() SUM_RPS=() N_RUNS=()

measure() { # name case rep
    local name=$1 cs=$2 rep=$3 out="$TMP/wrk-$1-$2-$3.txt" a0 a1 c0 c1 k0 k1 t0 t1
    check_alive "$name" "${DIR[$name]}"
    if ((WARMUP > 0)); then
        run_wrk "$name" "$WARMUP" "$TMP/warmup-$name-$cs-$rep.txt"
        check_alive "$name" "${DIR[$name]}"
    fi
    a0=$(accepts "${PORT[$name]}")
    c0=$(cpu_ticks "${WORKER[$name]}")
    k0=$(children_ticks)
    t0=$(now_ns)
    run_wrk "$name" "$SECS" "$out"
    t1=$(now_ns)
    k1=$(children_ticks)
    c1=$(cpu_ticks "${WORKER[$name]}") || { check_alive "$name" "${DIR[$name]}"; die "cannot read /proc/${WORKER[$name]}/stat"; }
    check_alive "$name" "${DIR[$name]}"
    a1=$(accepts "${PORT[$name]}")

    # parse wrk
    local reqs rps p50 p99 serr n2xx
    wrk_parse "$out" "$name case $cs"
    reqs=${WRK[reqs]} rps=${WRK[rps]} p50=${WRK[p50]} p99=${WRK[p99]} serr=${WRK[serr]} n2xx=${WRK[n2xx]}
    local acc="n/a"
    [[ -n $a0 && -n $a1 ]] && acc=$((a1 - a0 - 1)) # minus the status request itself

    local row
    run_figures "$reqs" $((c1 - c0)) $((k1 - k0)) $((t1 - t0)) "$serr" "$n2xx" "$acc" "$CONNS"
    row=$(awk -v name="$name" -v cs="$cs" -v rep="$rep" -v rps="$rps" -v acc="$acc" \
        -v p50="$(to_ms "${p50:-0}")" -v p99="$(to_ms "${p99:-0}")" -v serr="$serr" -v n2xx="$n2xx" \
        -v us="${FIG[us]}" -v wpct="${FIG[wpct]}" -v cpct="${FIG[cpct]}" -v flag="${FIG[flag]}" \
        -v cpu_s="${FIG[cpu_s]}" 'BEGIN {
        printf "%s|%s|%d|%.0f|%s|%.1f|%.0f|%.2f|%.2f|%d|%d|%.0f|%s|%.6f\n",
            cs, name, rep, rps, acc, us, wpct, p50, p99, serr, n2xx, cpct, flag, cpu_s
    }')
    ROWS+=("$row")
    SUM_CPU[$cs-$name]=$(awk -v a="${SUM_CPU[$cs-$name]:-0}" -v b=$((c1 - c0)) -v hz="$HZ" 'BEGIN { printf "%.6f", a + b / hz }')
    SUM_HS[$cs-$name]=$((${SUM_HS[$cs-$name]:-0} + reqs))
    SUM_RPS[$cs-$name]=$(awk -v a="${SUM_RPS[$cs-$name]:-0}" -v b="$rps" 'BEGIN { printf "%.2f", a + b }')
    N_RUNS[$cs-$name]=$((${N_RUNS[$cs-$name]:-0} + 1))
    IFS='|' read -r _ _ _ rps acc us wpct p50 p99 serr n2xx cpct flag _ <<<"$row"
    printf '  %-7s case %s run %d: %6s hs/s  %6s us/hs  worker %3s%%  p50 %sms p99 %sms  errors %s  non-2xx %s  accepts %s  client %s%% %s\n' \
        "$name" "$cs" "$rep" "$rps" "$us" "$wpct" "$p50" "$p99" "$serr" "$n2xx" "$acc" "$cpct" "$flag"
}

# --- run ---------------------------------------------------------------------------------
NGINX_VER=$("$NGINX" -v 2>&1 | sed 's/^nginx version: //')
TG_VER=$("$TG" -v 2>&1 | head -n 1 || true)
echo "tlsgate: $TG ($TG_VER); nginx: $NGINX ($NGINX_VER); $(openssl version)"
echo "server worker on CPU $SRV_CPU, wrk on CPU $CLI_CPU; ${SECS}s measured + ${WARMUP}s warm-up per run; $CONNS connections; repeat $REPEAT"

for cs in $CASES; do
    echo
    echo "== case $cs: $(case_title "$cs") =="
    serve nginx "$cs"
    serve tlsgate "$cs"
    for name in nginx tlsgate; do
        pin_worker "$name"
        verify "$name" "$cs"
    done
    for ((rep = 1; rep <= REPEAT; rep++)); do
        for name in nginx tlsgate; do
            measure "$name" "$cs" "$rep"
        done
    done
    stop_server nginx
    stop_server tlsgate
    # tlsgate's error log after the load: anything at [crit]/[alert]/[emerg] is a bug report
    if grep -E '\[(crit|alert|emerg)\]' "$TMP/tlsgate-$cs/error.log" "$TMP/tlsgate-$cs/stdout.log" >/dev/null 2>&1; then
        note "WARNING: tlsgate logged critical messages in case $cs:"
        grep -hE '\[(crit|alert|emerg)\]' "$TMP/tlsgate-$cs/error.log" "$TMP/tlsgate-$cs/stdout.log" | sort | uniq -c | sort -rn | head -n 10 >&2
    fi
done

# --- report ------------------------------------------------------------------------------
report() {
    local cs name row
    report_head "TLS full-handshake benchmark: tlsgate vs nginx" \
        "tlsgate $TG_VER; nginx $NGINX_VER; $(openssl version)" \
        "One worker per server on CPU $SRV_CPU; \`taskset -c $CLI_CPU wrk -t1 -c $CONNS -d ${SECS}s -H 'Connection: close' --latency https://127.0.0.1:PORT/0kb.bin\`" \
        "after a ${WARMUP}s warm-up; run order per case: (nginx, tlsgate) x $REPEAT. Both servers: access_log off," \
        "ssl_session_cache off, ssl_session_tickets off, keepalive_timeout default, default ECDH groups."
    for cs in $CASES; do
        if [[ ${TICKETS[$cs-nginx]:-} != "${TICKETS[$cs-tlsgate]:-}" ]]; then
            echo "- note, case $cs: the servers send different numbers of session tickets per handshake" \
                "(nginx ${TICKETS[$cs-nginx]:-?}, tlsgate ${TICKETS[$cs-tlsgate]:-?}) although both have" \
                "ssl_session_cache off and ssl_session_tickets off; ticket creation is part of the measured CPU."
        fi
    done
    echo
    echo "| case | server | run | handshakes/s | accepts | CPU µs/handshake | worker CPU % | p50 ms | p99 ms | socket errors | non-2xx | client CPU % | note |"
    echo "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"
    for row in "${ROWS[@]}"; do
        IFS='|' read -r cs name rep rps acc us wpct p50 p99 serr n2xx cpct flag _ <<<"$row"
        echo "| $cs | $name | $rep | $rps | $acc | $us | $wpct | $p50 | $p99 | $serr | $n2xx | $cpct | $flag |"
    done
    echo
    echo "| case | nginx µs/hs | tlsgate µs/hs | **ratio tlsgate/nginx CPU µs/hs** | nginx hs/s | tlsgate hs/s | ratio hs/s |"
    echo "|---|---:|---:|---:|---:|---:|---:|"
    for cs in $CASES; do
        awk -v cs="$cs ($(case_title "$cs"))" \
            -v nc="${SUM_CPU[$cs-nginx]}" -v nh="${SUM_HS[$cs-nginx]}" -v nr="${SUM_RPS[$cs-nginx]}" -v nn="${N_RUNS[$cs-nginx]}" \
            -v tc="${SUM_CPU[$cs-tlsgate]}" -v th="${SUM_HS[$cs-tlsgate]}" -v tr="${SUM_RPS[$cs-tlsgate]}" -v tn="${N_RUNS[$cs-tlsgate]}" 'BEGIN {
            nus = nh > 0 ? nc * 1e6 / nh : 0; tus = th > 0 ? tc * 1e6 / th : 0
            nrps = nr / nn; trps = tr / tn
            r1 = (nus > 0) ? tus / nus : 0; r2 = (nrps > 0) ? trps / nrps : 0
            printf "| %s | %.1f | %.1f | **%.3f** | %.0f | %.0f | %.3f |\n", cs, nus, tus, r1, nrps, trps, r2 }'
    done
}

echo
REPORT=$(report)
echo "$REPORT"
if [[ $SAVE == 1 ]]; then save_report handshake "$REPORT"; fi
