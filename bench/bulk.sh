#!/usr/bin/env bash
# bench/bulk.sh: issue #21's three figures, tlsgate against Debian's nginx in one run:
#   idle  worker memory per idle keep-alive TLS connection: N connections (default 4,000)
#         held open after one request each (bench/idle_conns.py), the worker's RSS delta / N
#   ka    server CPU per keep-alive request: wrk -t1 -c50 on /0kb.bin, worker CPU / requests
#   tp    server CPU per GB: curl fetches /200mb.bin BENCH_TP_COUNT times over one
#         connection, TLS 1.3 TLS_AES_256_GCM_SHA384 (BENCH_SUITE), worker CPU / 10^9 B
# Both servers: one worker on CPU 0 (every thread), `sendfile on;`, TLS 1.3, ECDSA P-256,
# access log off, keepalive_requests 1000000, no session cache or tickets; the clients on
# CPU 1. tlsgate-prov adds `ssl_provider tlsgate; ssl_propquery "?provider=tlsgate";`.
#
# Usage (repo root, after a build):  flock /tmp/tlsgate-bench.lock bench/bulk.sh
# Environment: TLSGATE_BIN (build/tlsgate), NGINX_BIN, BENCH_PARTS ("idle ka tp"),
#   BENCH_SERVERS ("nginx tlsgate tlsgate-prov"), BENCH_IDLE_CONNS (4000),
#   BENCH_SECONDS (ka run, 5), BENCH_TP_COUNT (5), BENCH_TP_MB (200),
#   BENCH_SUITE (TLS_AES_256_GCM_SHA384), BENCH_TLSGATE_EXTRA (directives added to
#   tlsgate's server block, e.g. "sendfile off;"), BENCH_TSV (append rows:
#   idle|server|conns|kb_per_conn, BENCH_PERF (a directory: perf record of the worker in tp),
#   ka|server|conns|req_per_s|us_per_req|client_pct,
#   tp|server|suite|mb_per_s|cpu_ms_per_gb|client_pct; tab-separated in the file).
set -euo pipefail
die() { echo "bulk.sh: error: $*" >&2; exit 1; }
note() { echo "bulk.sh: $*" >&2; }

PARTS=${BENCH_PARTS:-idle ka tp}
SERVERS=${BENCH_SERVERS:-nginx tlsgate tlsgate-prov}
IDLE_N=${BENCH_IDLE_CONNS:-4000}
SECS=${BENCH_SECONDS:-5}
TP_COUNT=${BENCH_TP_COUNT:-5}
TP_MB=${BENCH_TP_MB:-200}
SUITE=${BENCH_SUITE:-TLS_AES_256_GCM_SHA384}
TSV=${BENCH_TSV:-}
for v in IDLE_N SECS TP_COUNT TP_MB; do
    [[ ${!v} =~ ^[1-9][0-9]*$ ]] || die "$v must be a positive integer (got '${!v}')"
done
for p in $PARTS; do case $p in idle | ka | tp) ;; *) die "unknown part '$p'" ;; esac; done
for s in $SERVERS; do case $s in nginx | tlsgate | tlsgate-prov) ;; *) die "unknown server '$s'" ;; esac; done
part() { [[ " $PARTS " == *" $1 "* ]]; }

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
TG=${TLSGATE_BIN:-$ROOT/build/tlsgate}
[[ $TG == /* ]] || TG=$PWD/$TG
NGINX=${NGINX_BIN:-$(command -v nginx 2>/dev/null || echo /usr/sbin/nginx)}
[[ -x $TG ]] || die "no tlsgate binary at $TG"
[[ " $SERVERS " != *" nginx "* || -x $NGINX ]] || die "nginx not found ($NGINX)"
for t in curl wrk python3 taskset openssl; do command -v $t >/dev/null || die "$t is missing (scripts/deps.sh bench)"; done
SRV_CPU=0
CLI_CPU=1
(($(nproc) >= 2)) || CLI_CPU=0
HZ=$(getconf CLK_TCK)
PAGE_KB=$(($(getconf PAGESIZE) / 1024))

TMP=$(mktemp -d "${TMPDIR:-/tmp}/tlsgate-bulk.XXXXXX")
chmod 755 "$TMP"
MASTER=""
WORKER=""
HOLDER=""
stop_server() {
    [[ -n $MASTER ]] || return 0
    kill -TERM "$MASTER" 2>/dev/null || true
    local i
    for ((i = 0; i < 50; i++)); do kill -0 "$MASTER" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$MASTER" 2>/dev/null && { kill -KILL "$WORKER" "$MASTER" 2>/dev/null || true; }
    wait "$MASTER" 2>/dev/null || true
    MASTER=""
    WORKER=""
}
cleanup() {
    set +e
    [[ -n $HOLDER ]] && kill "$HOLDER" 2>/dev/null
    stop_server
    rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

mkdir -p "$TMP/html" "$TMP/certs"
: >"$TMP/html/0kb.bin"
head -c 1024 /dev/zero | tr '\0' a >"$TMP/html/1kb.bin"
part tp && head -c $((TP_MB * 1024 * 1024)) /dev/urandom >"$TMP/html/big.bin"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj /CN=localhost \
    -addext subjectAltName=DNS:localhost,IP:127.0.0.1 \
    -keyout "$TMP/certs/ecdsa.key" -out "$TMP/certs/ecdsa.crt" 2>/dev/null || die "openssl req failed"

free_port() {
    local p
    for ((;;)); do
        p=$((20000 + RANDOM % 20000))
        ss -ltn "sport = :$p" | grep -q LISTEN || { echo "$p"; return; }
    done
}
cpu_ticks() { local l r; read -r l <"/proc/$1/stat"; r=${l##*) }; set -- $r; echo $((${12} + ${13})); }
rss_kb() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"; }
now_ns() { date +%s%N; }

start_server() { # name
    local name=$1 d="$TMP/$1" i
    mkdir -p "$d/tmp" "$d/state"
    PORT=$(free_port)
    {
        [[ $name == nginx ]] && printf 'daemon off;\nmaster_process on;\n'
        echo "worker_processes 1;"
        echo "worker_cpu_affinity 01;"
        echo "worker_rlimit_nofile 16384;"
        if [[ $name == tlsgate-prov ]]; then
            echo "ssl_provider tlsgate;"
            echo "ssl_propquery \"?provider=tlsgate\";"
        fi
        echo "error_log $d/error.log;"
        echo "pid $d/server.pid;"
        echo "user root;"
        echo "events { worker_connections 16384; }"
        echo "http {"
        echo "    access_log off;"
        if [[ $name == nginx ]]; then
            echo "    client_body_temp_path $d/tmp/body; proxy_temp_path $d/tmp/proxy;"
            echo "    fastcgi_temp_path $d/tmp/fcgi; uwsgi_temp_path $d/tmp/uwsgi; scgi_temp_path $d/tmp/scgi;"
        fi
        echo "    sendfile on;"
        echo "    keepalive_requests 1000000;"
        echo "    keepalive_timeout 120s;"
        echo "    ssl_session_cache off;"
        echo "    ssl_session_tickets off;"
        echo "    server {"
        echo "        listen 127.0.0.1:$PORT ssl;"
        echo "        server_name localhost;"
        echo "        ssl_certificate $TMP/certs/ecdsa.crt;"
        echo "        ssl_certificate_key $TMP/certs/ecdsa.key;"
        echo "        ssl_protocols TLSv1.3;"
        echo "        root $TMP/html;"
        [[ $name == tlsgate* ]] && echo "        ${BENCH_TLSGATE_EXTRA:-}"
        echo "    }"
        echo "}"
    } >"$d/server.conf"
    if [[ $name == nginx ]]; then
        "$NGINX" -p "$d" -e "$d/error.log" -c "$d/server.conf" >"$d/stdout.log" 2>&1 &
    else
        TLSGATE_STATE_DIR="$d/state" "$TG" -p "$d" -c "$d/server.conf" >"$d/stdout.log" 2>&1 &
    fi
    MASTER=$!
    for ((i = 0; i < 100; i++)); do
        WORKER=$(pgrep -P "$MASTER" || true)
        [[ -n $WORKER ]] && ss -ltn "sport = :$PORT" | grep -q LISTEN && break
        sleep 0.1
    done
    [[ -n $WORKER && $WORKER != *[!0-9]* ]] || { cat "$d/error.log" "$d/stdout.log" >&2; die "$name did not start"; }
    sleep 0.3
    local t
    for t in /proc/"$WORKER"/task/*; do taskset -pc "$SRV_CPU" "${t##*/}" >/dev/null 2>&1 || true; done
}
emit() { echo "$1"; [[ -z $TSV ]] || tr '|' '\t' <<<"$1" >>"$TSV"; }

idle_run() { # name
    local name=$1 r0 r1 out="$TMP/idle-$1.txt"
    # warm-up: 64 connections opened and closed, so one-time allocations are not counted
    echo | timeout 60 taskset -c "$CLI_CPU" python3 "$ROOT/bench/idle_conns.py" 127.0.0.1 "$PORT" 64 /1kb.bin >/dev/null ||
        die "$name: warm-up connections failed"
    sleep 0.5
    r0=$(rss_kb "$WORKER")
    coproc HOLD { exec timeout 120 taskset -c "$CLI_CPU" python3 "$ROOT/bench/idle_conns.py" 127.0.0.1 "$PORT" "$IDLE_N" /1kb.bin 64 2>"$out"; }
    HOLDER=$HOLD_PID
    local line=""
    read -r -t 100 line <&"${HOLD[0]}" || true
    [[ $line == "ready $IDLE_N" ]] || { cat "$out" >&2; die "$name: $IDLE_N idle connections not established ($line)"; }
    sleep 1
    r1=$(rss_kb "$WORKER")
    echo >&"${HOLD[1]}" || true
    wait "$HOLDER" 2>/dev/null || true
    HOLDER=""
    emit "$(awk -v n="$name" -v c="$IDLE_N" -v a="$r0" -v b="$r1" 'BEGIN { printf "idle|%s|%d|%.1f|rss %d -> %d KB\n", n, c, (b - a) / c, a, b }')"
}

ka_run() { # name
    local name=$1 out="$TMP/wrk-$1.txt" c0 c1 t0 t1
    timeout 30 taskset -c "$CLI_CPU" wrk -t1 -c50 -d1s "https://127.0.0.1:$PORT/0kb.bin" >/dev/null 2>&1 || true
    local perf=""
    if [[ -n ${BENCH_PERF:-} ]]; then
        mkdir -p "$BENCH_PERF"
        perf record -q -g -o "$BENCH_PERF/perf-ka-$name.data" -p "$WORKER" 2>/dev/null &
        perf=$!
        sleep 0.5
    fi
    c0=$(cpu_ticks "$WORKER"); t0=$(now_ns)
    timeout $((SECS + 20)) taskset -c "$CLI_CPU" wrk -t1 -c50 -d"${SECS}s" "https://127.0.0.1:$PORT/0kb.bin" >"$out" 2>&1 ||
        { cat "$out" >&2; die "$name: wrk failed"; }
    c1=$(cpu_ticks "$WORKER"); t1=$(now_ns)
    [[ -z $perf ]] || { kill -INT "$perf"; wait "$perf" || true; }
    local reqs
    reqs=$(awk '/requests in/ { print $1; exit }' "$out")
    [[ -n $reqs ]] || { cat "$out" >&2; die "$name: no wrk result"; }
    grep -q 'Non-2xx\|Socket errors' "$out" && note "$name: wrk reported errors: $(grep 'Non-2xx\|Socket errors' "$out" | tr '\n' ' ')"
    emit "$(awk -v n="$name" -v r="$reqs" -v c=$((c1 - c0)) -v hz="$HZ" -v w=$((t1 - t0)) 'BEGIN {
        printf "ka|%s|50|%.0f|%.2f|server %.0f%%\n", n, r / (w / 1e9), c / hz * 1e6 / r, 100 * c / hz / (w / 1e9) }')"
}

tp_run() { # name
    local name=$1 out="$TMP/curl-$1.txt" c0 c1 t0 t1 urls=() i
    for ((i = 0; i < TP_COUNT; i++)); do urls+=(-o /dev/null "https://127.0.0.1:$PORT/big.bin"); done
    timeout 60 taskset -c "$CLI_CPU" curl -sSk -o /dev/null "https://127.0.0.1:$PORT/big.bin" || die "$name: warm-up download failed"
    local perf=""
    if [[ -n ${BENCH_PERF:-} ]]; then # BENCH_PERF=DIR: perf record the worker during the run
        mkdir -p "$BENCH_PERF"
        perf record -q -o "$BENCH_PERF/perf-tp-$name.data" -p "$WORKER" 2>/dev/null &
        perf=$!
        sleep 0.5
    fi
    c0=$(cpu_ticks "$WORKER"); t0=$(now_ns)
    timeout 120 taskset -c "$CLI_CPU" curl -sSk --tlsv1.3 --tls13-ciphers "$SUITE" \
        -w '%{http_code} %{size_download}\n' "${urls[@]}" >"$out" 2>&1 || { cat "$out" >&2; die "$name: curl failed"; }
    c1=$(cpu_ticks "$WORKER"); t1=$(now_ns)
    [[ -z $perf ]] || { kill -INT "$perf"; wait "$perf" || true; }
    local bytes
    bytes=$(awk '$1 == 200 { s += $2 } END { print s + 0 }' "$out")
    ((bytes == TP_COUNT * TP_MB * 1024 * 1024)) || { cat "$out" >&2; die "$name: short downloads ($bytes B)"; }
    emit "$(awk -v n="$name" -v s="$SUITE" -v b="$bytes" -v c=$((c1 - c0)) -v hz="$HZ" -v w=$((t1 - t0)) 'BEGIN {
        printf "tp|%s|%s|%.0f|%.0f|server %.0f%%\n", n, s, b / 1e6 / (w / 1e9), c / hz * 1e3 / (b / 1e9), 100 * c / hz / (w / 1e9) }')"
}

echo "# bench/bulk.sh $(date -u +%FT%TZ) $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //') (family $(grep -m1 'cpu family' /proc/cpuinfo | sed 's/.*: //') model $(grep -m1 '^model' /proc/cpuinfo | sed 's/.*: //')); $(openssl version); tlsgate $(cd "$ROOT" && git describe --always --dirty 2>/dev/null)"
echo "# rows: idle|server|conns|KB per idle connection; ka|server|conns|req/s|server CPU us per request; tp|server|suite|MB/s|server CPU ms per GB"
for name in $SERVERS; do
    start_server "$name"
    part idle && idle_run "$name"
    part ka && ka_run "$name"
    part tp && tp_run "$name"
    stop_server
done
