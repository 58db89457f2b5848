#!/usr/bin/env bash
# bench/matrix.sh: tlsgate against the servers it replaces, with real clients (wrk, curl):
# full handshakes in issue #11's four cases for five servers at 1 and at 200 connections,
# then keep-alive 1 KB requests/s and 100 MB transfers per TLS 1.3 cipher suite.
#
# Usage (from the repo root, after
#   cmake --build build --target tlsgate tlsgate_prov):
#   bench/matrix.sh
#   BENCH_SECONDS=3 BENCH_CASES="a c" BENCH_PARTS=handshake bench/matrix.sh
#   BENCH_TSV=bench/out/matrix.tsv bench/matrix.sh     (also machine-readable rows)
#
# Environment:
#   TLSGATE_BIN     tlsgate binary (default build/tlsgate)
#   TLSGATE_PROV    provider module for HAProxy (default: tlsgate.so next to TLSGATE_BIN)
#   NGINX_BIN, HAPROXY_BIN  (default: from PATH or /usr/sbin)
#   BENCH_PARTS     subset of "handshake keepalive throughput" (default all)
#   BENCH_SECONDS   measured wrk run (handshake, keepalive) (default 10)
#   BENCH_WARMUP    warm-up wrk run before each measured run, seconds (default 2; 0 = none)
#   BENCH_REPEAT    runs per server and point, servers in rotation (default 1)
#   BENCH_CASES     handshake cases, subset of "a b c d" (default all)
#   BENCH_SERVERS   handshake servers, subset of "nginx tlsgate tlsgate-prov haproxy
#                   haproxy-prov" (default all); keepalive/throughput: nginx, tlsgate
#   BENCH_LOADS     handshake wrk connection counts (default "1 200")
#   BENCH_KA_CONNS  keep-alive wrk connections (default 50)
#   BENCH_SUITES    throughput suites, subset of "TLS_AES_128_GCM_SHA256
#                   TLS_AES_256_GCM_SHA384 TLS_CHACHA20_POLY1305_SHA256" (default all)
#   BENCH_MB_COUNT  100 MB downloads per throughput run, one connection (default 5)
#   BENCH_TSV       also append tab-separated rows to this file (see "TSV" below)
#   BENCH_NO_INSTALL 1: never call apt-get (fail if a tool is missing)
#
# Handshake cases (pinned by the server; verified once per server with openssl s_client):
#   a  TLSv1.2 ECDHE-RSA-AES256-GCM-SHA384, RSA-2048 certificate
#   b  TLSv1.2 AES256-GCM-SHA384 (RSA key exchange), RSA-2048 certificate
#   c  TLSv1.3 (default suites), ECDSA P-256 certificate
#   d  TLSv1.3 (default suites), RSA-2048 certificate
# Servers (as bench/replay.sh): one worker (every thread) pinned to CPU 0; no session cache,
# no tickets, access log off, 127.0.0.1 on free ports. tlsgate-prov: ssl_provider tlsgate;
# ssl_propquery "?provider=tlsgate"; ssl_async on. haproxy: nbthread 1, `http-request
# return` (2-byte body); haproxy-prov: + ssl-provider tlsgate, ssl-propquery
# ?provider=tlsgate, ssl-mode-async. Client on CPU 1 (CPU 0 too on a 1-CPU machine):
# wrk -t1 -c LOAD -H 'Connection: close' --latency (one full handshake per request).
#
# Keep-alive: nginx and tlsgate, TLS 1.3 (default suites), ECDSA P-256, keepalive_requests
# 1000000: wrk -t1 -c BENCH_KA_CONNS --latency on /1kb.bin (requests/s, server CPU µs per
# request). Throughput: the same servers; curl on CPU 1 fetches /100mb.bin BENCH_MB_COUNT
# times over one connection, offering only the suite measured (--tls13-ciphers; the
# negotiated suite is checked with openssl s_client): MB/s (10^6 B) and server CPU s per GB.
#
# Columns: hs/s (req/s) = wrk Requests/sec; server CPU µs = worker utime+stime (all threads)
# over the run / requests; server CPU % = that / wall; conn ms = connections / hs/s (Little's
# law: at c=1 the time of a whole connection: connect, handshake, request); p50/p99 = wrk's
# latency (from the request's first write: after the handshake); client CPU % = the
# client's utime+stime / wall, "client-bound" when > 90% (then the rate measures the client;
# the server's CPU per operation is still valid).
#
# TSV (BENCH_TSV), one row per measured run, first field the part:
#   hs  case server conns rep hs_per_s server_us_per_hs server_cpu_pct conn_ms p50_ms p99_ms client_cpu_pct errors note
#   ka  -    server conns rep req_per_s server_us_per_req server_cpu_pct conn_ms p50_ms p99_ms client_cpu_pct errors note
#   tp  suite server 1   rep mb_per_s server_cpu_s_per_gb server_cpu_pct - - - client_cpu_pct errors note
set -euo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

env_uint SECS BENCH_SECONDS 10 1
env_uint WARMUP BENCH_WARMUP 2
env_uint REPEAT BENCH_REPEAT 1 1
env_words PARTS BENCH_PARTS "handshake keepalive throughput" handshake keepalive throughput
env_words CASES BENCH_CASES "a b c d" a b c d
SERVERS=${BENCH_SERVERS:-nginx tlsgate tlsgate-prov haproxy haproxy-prov}
LOADS=${BENCH_LOADS:-1 200}
env_uint KA_CONNS BENCH_KA_CONNS 50 1
SUITES=${BENCH_SUITES:-TLS_AES_128_GCM_SHA256 TLS_AES_256_GCM_SHA384 TLS_CHACHA20_POLY1305_SHA256}
env_uint MB_COUNT BENCH_MB_COUNT 5 1
TSV=${BENCH_TSV:-}
for s in $SERVERS; do
    case $s in nginx | tlsgate | tlsgate-prov | haproxy | haproxy-prov) ;;
    *) die "unknown server '$s' in BENCH_SERVERS" ;;
    esac
done
for l in $LOADS; do [[ $l =~ ^[1-9][0-9]*$ ]] || die "bad load '$l' in BENCH_LOADS"; done
for s in $SUITES; do
    case $s in TLS_AES_128_GCM_SHA256 | TLS_AES_256_GCM_SHA384 | TLS_CHACHA20_POLY1305_SHA256) ;;
    *) die "unknown suite '$s' in BENCH_SUITES" ;;
    esac
done
part() { [[ " $PARTS " == *" $1 "* ]]; }
want() { [[ " $SERVERS " == *" $1 "* ]]; }
part handshake || SERVERS="" # keepalive/throughput use nginx and tlsgate only
NEED_NGINX=0
NEED_HAPROXY=0
{ want nginx || part keepalive || part throughput; } && NEED_NGINX=1
{ want haproxy || want haproxy-prov; } && NEED_HAPROXY=1

# --- tools -------------------------------------------------------------------------------
install_missing $( ((NEED_NGINX)) && nginx_missing) $( ((NEED_HAPROXY)) && haproxy_missing) \
    wrk:wrk curl:curl openssl:openssl taskset:util-linux pgrep:procps timeout:coreutils

TG=$(abspath "${TLSGATE_BIN:-build/tlsgate}")
PROV=$(abspath "${TLSGATE_PROV:-$(dirname "$TG")/tlsgate.so}")
[[ -x $TG ]] || die "tlsgate binary not found: $TG (cmake --build build --target tlsgate, or set TLSGATE_BIN)"
if want haproxy-prov; then
    [[ -f $PROV ]] || die "provider module not found: $PROV (cmake --build build --target tlsgate_prov, or set TLSGATE_PROV)"
fi
NGINX=${NGINX_BIN:-$(command -v nginx 2>/dev/null || echo /usr/sbin/nginx)}
HAPROXY=${HAPROXY_BIN:-$(command -v haproxy 2>/dev/null || echo /usr/sbin/haproxy)}
((NEED_NGINX)) && { [[ -x $NGINX ]] || die "nginx not found ($NGINX)"; }
((NEED_HAPROXY)) && { [[ -x $HAPROXY ]] || die "haproxy not found ($HAPROXY)"; }
if [[ -n $TSV ]]; then
    TSV=$(abspath "$TSV")
    mkdir -p "$(dirname "$TSV")"
fi

cpu_roles client

# --- state and cleanup -------------------------------------------------------------------
TMP=$(mktemp -d "${TMPDIR:-/tmp}/tlsgate-matrix.XXXXXX")
chmod 755 "$TMP" # nginx's worker runs as nobody and must read html/
# MASTER, WORKER, PORT, DIR: bench/lib.sh
START_SETTLE=0.3 # the provider's threads
PRINT_LOG_LINES=30

# shellcheck disable=SC2317 # called by the EXIT trap
cleanup() { stop_all "$CLIENT_PID"; }
trap_cleanup

# --- files -------------------------------------------------------------------------------
make_docroot "$TMP/html"
if part throughput; then
    # random bytes: nothing on the path can compress them
    head -c $((100 * 1024 * 1024)) /dev/urandom >"$TMP/html/100mb.bin"
fi
make_certs "$TMP/certs"
cat "$TMP/certs/rsa.crt" "$TMP/certs/rsa.key" >"$TMP/certs/rsa.pem"
cat "$TMP/certs/ecdsa.crt" "$TMP/certs/ecdsa.key" >"$TMP/certs/ecdsa.pem"
chmod 600 "$TMP"/certs/*.pem
cd "$TMP" # every path below is absolute

# --- helpers -----------------------------------------------------------------------------

# case k: the keep-alive / throughput server (TLS 1.3, every default suite, ECDSA P-256)
case_title() {
    case $1 in
    a) echo "TLS 1.2 ECDHE-RSA-AES256-GCM-SHA384, RSA-2048" ;;
    b) echo "TLS 1.2 AES256-GCM-SHA384 (RSA key exchange), RSA-2048" ;;
    c) echo "TLS 1.3, ECDSA P-256" ;;
    d) echo "TLS 1.3, RSA-2048" ;;
    k) echo "TLS 1.3, ECDSA P-256, keep-alive" ;;
    esac
}
case_cert() { case $1 in c | k) echo ecdsa ;; *) echo rsa ;; esac }
case_proto() { case $1 in a | b) echo TLSv1.2 ;; *) echo TLSv1.3 ;; esac }
case_cipher() { case $1 in a) echo ECDHE-RSA-AES256-GCM-SHA384 ;; b) echo AES256-GCM-SHA384 ;; esac }
case_want() { # protocol cipher-glob key
    case $1 in
    a) echo "TLSv1.2 ECDHE-RSA-AES256-GCM-SHA384 RSA-2048" ;;
    b) echo "TLSv1.2 AES256-GCM-SHA384 RSA-2048" ;;
    c | k) echo "TLSv1.3 TLS_* EC-prime256v1" ;;
    d) echo "TLSv1.3 TLS_* RSA-2048" ;;
    esac
}
server_path() { case $1 in haproxy*) echo / ;; *) echo /0kb.bin ;; esac }

launch() { # name port dir case: write the configuration, start the server (start_server)
    local name=$1 port=$2 d=$3 cs=$4
    server_conf "$name" "$cs" "$port" "$d"
    case $name in
    nginx) "$NGINX" -p "$d" -e "$d/error.log" -c "$d/server.conf" >>"$d/stdout.log" 2>&1 & ;;
    tlsgate*) TLSGATE_STATE_DIR="$d/state" "$TG" -p "$d" -c "$d/server.conf" >>"$d/stdout.log" 2>&1 & ;;
    haproxy*)
        (exec taskset -c "$SRV_CPU" "$HAPROXY" -db -f "$d/haproxy.cfg" >>"$d/stdout.log" 2>&1 </dev/null) &
        ;;
    esac
}

# DEAD[KEY-NAME]: NAME died at KEY (alive, in lib.sh, says why): no more runs of it there
declare -A DEAD=()

declare -a VERIFY_LINES=()
verify() { # name case [suite]: protocol, cipher, key and HTTP 200 are the case's
    local name=$1 cs=$2 suite=${3:-} want_p want_c want_k opts=()
    [[ -n $suite ]] && opts=(-ciphersuites "$suite")
    tls_probe "${PORT[$name]}" "$(server_path "$name")" "${opts[@]}"
    read -r want_p want_c want_k <<<"$(case_want "$cs")"
    [[ -n $suite ]] && want_c=$suite
    verify_probe "$(server_title "$name") case $cs" "$want_p" "$want_c" "$want_k"
}

declare -a ROWS=() # part|key|server|conns|rep|rate|cpu_per|spct|conn_ms|p50|p99|cpct|errors|note
emit() { # the row, to ROWS and BENCH_TSV
    ROWS+=("$1")
    [[ -n $TSV ]] && tr '|' '\t' <<<"$1" >>"$TSV"
    return 0
}

# wrk_run part key name conns rep path extra-header...: one measured wrk run (+ warm-up)
wrk_run() {
    local pt=$1 key=$2 name=$3 conns=$4 rep=$5 path=$6 out="$TMP/wrk-$1-$2-$3-$4-$5.txt" c0 c1 k0 k1 t0 t1 rc=0
    shift 6
    local hdr=("$@") wrk=(wrk -t1 -c "$conns" --latency)
    ((${#hdr[@]})) && wrk+=(-H "${hdr[0]}")
    local url="https://127.0.0.1:${PORT[$name]}$path"
    if [[ -n ${DEAD[$key-$name]:-} ]]; then return 0; fi
    if ! alive "$name"; then
        DEAD[$key-$name]=1
        emit "$pt|$key|$name|$conns|$rep|0|0|0|0|0|0|0|0|CRASHED: ${WHY//|//}"
        return 0
    fi
    if ((WARMUP > 0)); then
        run_client "$WARMUP" "$TMP/warmup.txt" "${wrk[@]}" -d "${WARMUP}s" "$url" || rc=$?
    fi
    if ((rc == 0)); then
        c0=$(cpu_ticks "${WORKER[$name]}" 2>/dev/null || echo 0)
        k0=$(children_ticks)
        t0=$(now_ns)
        run_client "$SECS" "$out" "${wrk[@]}" -d "${SECS}s" "$url" || rc=$?
        t1=$(now_ns)
        k1=$(children_ticks)
        c1=$(cpu_ticks "${WORKER[$name]}" 2>/dev/null || echo 0)
    fi
    if ! alive "$name"; then
        DEAD[$key-$name]=1
        emit "$pt|$key|$name|$conns|$rep|0|0|0|0|0|0|0|0|CRASHED: ${WHY//|//}"
        note "$name ($key, c=$conns): $WHY"
        return 0
    fi
    ((rc == 0)) || { cat "$out" >&2 2>/dev/null; die "wrk against $name ($key, c=$conns) failed (rc $rc)"; }
    local reqs rps p50 p99 serr n2xx row
    wrk_parse "$out" "$name ($key)"
    reqs=${WRK[reqs]} rps=${WRK[rps]} p50=${WRK[p50]} p99=${WRK[p99]} serr=${WRK[serr]} n2xx=${WRK[n2xx]}
    row=$(awk -v pt="$pt" -v key="$key" -v name="$name" -v conns="$conns" -v rep="$rep" -v reqs="$reqs" \
        -v rps="$rps" -v cpu=$((c1 - c0)) -v cli=$((k1 - k0)) -v hz="$HZ" -v wall_ns=$((t1 - t0)) \
        -v p50="$(to_ms "${p50:-0}")" -v p99="$(to_ms "${p99:-0}")" -v errs=$((${serr:-0} + ${n2xx:-0})) 'BEGIN {
        wall = wall_ns / 1e9; cpu_s = cpu / hz; cli_s = cli / hz
        us = reqs > 0 ? cpu_s * 1e6 / reqs : 0
        spct = 100 * cpu_s / wall; cpct = 100 * cli_s / wall
        conn_ms = rps > 0 ? 1000 * conns / rps : 0
        flag = ""
        if (cpct > 90) flag = "client-bound"
        if (errs > 0) flag = flag (flag ? ", " : "") "ERRORS"
        printf "%s|%s|%s|%d|%d|%.0f|%.1f|%.0f|%.2f|%.2f|%.2f|%.0f|%d|%s\n",
            pt, key, name, conns, rep, rps, us, spct, conn_ms, p50, p99, cpct, errs, flag }')
    emit "$row"
    local rate cpu spct cms q50 q99 cpct errs flag
    IFS='|' read -r _ _ _ _ _ rate cpu spct cms q50 q99 cpct errs flag <<<"$row"
    printf '  %-13s %-2s c=%-4s run %d: %7s/s  %7s us/op  server %3s%%  conn %6sms  p50 %sms p99 %sms  client %s%%  errors %s  %s\n' \
        "$name" "$key" "$conns" "$rep" "$rate" "$cpu" "$spct" "$cms" "$q50" "$q99" "$cpct" "$errs" "$flag"
}

# tp_run suite name rep: MB_COUNT downloads of /100mb.bin over one connection with curl
tp_run() {
    local suite=$1 name=$2 rep=$3 out="$TMP/curl-$1-$2-$3.txt" c0 c1 k0 k1 t0 t1 rc=0 urls=() i
    for ((i = 0; i < MB_COUNT; i++)); do urls+=(-o /dev/null "https://127.0.0.1:${PORT[$name]}/100mb.bin"); done
    alive "$name" || { emit "tp|$suite|$name|1|$rep|0|0|0|0|0|0|0|0|CRASHED: ${WHY//|//}"; return 0; }
    c0=$(cpu_ticks "${WORKER[$name]}")
    k0=$(children_ticks)
    t0=$(now_ns)
    run_client 60 "$out" curl -sS -k --tlsv1.3 --tls13-ciphers "$suite" \
        -w '%{http_code} %{size_download} %{num_connects}\n' "${urls[@]}" || rc=$?
    t1=$(now_ns)
    k1=$(children_ticks)
    c1=$(cpu_ticks "${WORKER[$name]}" 2>/dev/null || echo "$c0")
    alive "$name" || { emit "tp|$suite|$name|1|$rep|0|0|0|0|0|0|0|0|CRASHED: ${WHY//|//}"; return 0; }
    ((rc == 0)) || { cat "$out" >&2; die "curl against $name ($suite) failed (rc $rc)"; }
    local bytes bad conns row
    bytes=$(awk '{ s += $2 } END { print s + 0 }' "$out")
    bad=$(awk '$1 != 200 { n++ } END { print n + 0 }' "$out")
    conns=$(awk '{ s += $3 } END { print s + 0 }' "$out")
    ((bytes == MB_COUNT * 100 * 1024 * 1024 && bad == 0)) || { cat "$out" >&2; die "curl against $name ($suite): short or failed downloads"; }
    row=$(awk -v suite="$suite" -v name="$name" -v rep="$rep" -v bytes="$bytes" -v cpu=$((c1 - c0)) \
        -v cli=$((k1 - k0)) -v hz="$HZ" -v wall_ns=$((t1 - t0)) -v nconn="$conns" 'BEGIN {
        wall = wall_ns / 1e9; cpu_s = cpu / hz; cli_s = cli / hz
        mbs = bytes / 1e6 / wall; per_gb = cpu_s / (bytes / 1e9)
        spct = 100 * cpu_s / wall; cpct = 100 * cli_s / wall
        flag = (cpct > 90) ? "client-bound" : ""
        if (nconn != 1) flag = flag (flag ? ", " : "") nconn " connections"
        printf "tp|%s|%s|1|%d|%.0f|%.3f|%.0f|0|0|0|%.0f|0|%s\n", suite, name, rep, mbs, per_gb, spct, cpct, flag }')
    emit "$row"
    local mbs pgb spct cpct flag
    IFS='|' read -r _ _ _ _ _ mbs pgb spct _ _ _ cpct _ flag <<<"$row"
    printf '  %-13s %-28s run %d: %6s MB/s  %6s server CPU s/GB  server %3s%%  client %s%%  %s\n' \
        "$name" "$suite" "$rep" "$mbs" "$pgb" "$spct" "$cpct" "$flag"
}

# --- run ---------------------------------------------------------------------------------
VERS="$(openssl version | awk '{ print "OpenSSL", $2 }'); tlsgate $(tlsgate_version "$TG")"
((NEED_NGINX)) && VERS="$VERS; nginx $("$NGINX" -v 2>&1 | sed 's/^nginx version: nginx\///')"
((NEED_HAPROXY)) && VERS="$VERS; HAProxy $(haproxy_version "$HAPROXY")"
echo "$VERS"
echo "server worker on CPU $SRV_CPU, clients on CPU $CLI_CPU; ${SECS}s measured + ${WARMUP}s warm-up per run; repeat $REPEAT; parts: $PARTS"
if [[ -n $TSV ]]; then
    printf '# bench/matrix.sh %s\n# %s\n' "$(date -u +%FT%TZ)" "$VERS" >>"$TSV"
fi

if part handshake; then
    for cs in $CASES; do
        # shellcheck disable=SC2086 # SERVERS is a list
        start_case "$cs" "handshakes, case $cs: $(case_title "$cs")" $SERVERS
        for ((rep = 1; rep <= REPEAT; rep++)); do
            for load in $LOADS; do
                for name in $SERVERS; do
                    wrk_run hs "$cs" "$name" "$load" "$rep" "$(server_path "$name")" 'Connection: close'
                done
            done
        done
        # shellcheck disable=SC2086
        stop_servers $SERVERS
    done
fi

if part keepalive || part throughput; then
    start_case k "keep-alive and throughput: $(case_title k)" nginx tlsgate
    if part throughput; then
        for suite in $SUITES; do
            for name in nginx tlsgate; do verify "$name" k "$suite"; done
        done
    fi
    for ((rep = 1; rep <= REPEAT; rep++)); do
        if part keepalive; then
            for name in nginx tlsgate; do
                wrk_run ka - "$name" "$KA_CONNS" "$rep" /1kb.bin
            done
        fi
        if part throughput; then
            for suite in $SUITES; do
                for name in nginx tlsgate; do tp_run "$suite" "$name" "$rep"; done
            done
        fi
    done
    stop_servers nginx tlsgate
fi

# --- report ------------------------------------------------------------------------------
echo
report_head "tlsgate against nginx and HAProxy with real clients (bench/matrix.sh)" "$VERS"

# table PT TITLE HEADER ALIGN: the table of the rows of part PT (hs, ka, tp) under TITLE
table() {
    local row pt key name conns rep rate cpu spct cms p50 p99 cpct errs flag title
    printf '\n%s\n\n%s\n%s\n' "$2" "$3" "$4"
    for row in "${ROWS[@]}"; do
        IFS='|' read -r pt key name conns rep rate cpu spct cms p50 p99 cpct errs flag <<<"$row"
        [[ $pt == "$1" ]] || continue
        title=$(server_title "$name")
        case $pt in
        hs) echo "| $key | $title | $conns | $rep | $rate | $cpu | $spct | $cms | $p50 | $p99 | $cpct | $errs | $flag |" ;;
        ka) echo "| $title | $rep | $rate | $cpu | $spct | $p50 | $p99 | $cpct | $errs | $flag |" ;;
        tp) echo "| $key | $title | $rep | $rate | $cpu | $spct | $cpct | $flag |" ;;
        esac
    done
}
part handshake && table hs "Full handshakes (wrk -t1 -H 'Connection: close'):" \
    "| case | server | conns | run | handshakes/s | server CPU µs/hs | server CPU % | conn ms | p50 ms | p99 ms | client CPU % | errors | note |" \
    "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"
part keepalive && table ka "Keep-alive 1 KB requests (wrk -t1 -c $KA_CONNS, /1kb.bin):" \
    "| server | run | requests/s | server CPU µs/request | server CPU % | p50 ms | p99 ms | client CPU % | errors | note |" \
    "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|"
part throughput && table tp "100 MB downloads ($MB_COUNT per run over one connection, curl --tls13-ciphers SUITE):" \
    "| suite | server | run | MB/s | server CPU s/GB | server CPU % | client CPU % | note |" \
    "|---|---|---:|---:|---:|---:|---:|---|"
exit 0
