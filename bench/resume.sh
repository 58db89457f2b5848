#!/usr/bin/env bash
# bench/resume.sh: resumed vs full TLS handshakes/s, tlsgate vs Debian's nginx, each with
# its shared session cache, in one invocation (issue #9).
#
# Usage (from the repo root, after `cmake --build build --target tlsgate`):
#   bench/resume.sh
#   TLSGATE_BIN=build/tlsgate BENCH_SECONDS=5 bench/resume.sh
#
# Environment:
#   TLSGATE_BIN    tlsgate binary (default build/tlsgate)
#   NGINX_BIN      nginx binary (default: nginx from PATH or /usr/sbin/nginx)
#   BENCH_SECONDS  seconds per openssl s_time run (default 5)
#
# Client: `openssl s_time -connect 127.0.0.1:PORT -www /0kb.bin -time SECONDS` with
# `-new` (a full handshake per connection) or `-reuse` (the first connection's session
# offered on every later one), pinned to CPU 1; s_time is one sequential client, so the
# figure is connections/s of one client against an idle server (latency-bound, not the
# server's capacity); the server's CPU per handshake is reported too (worker utime+stime
# delta / connections, from /proc/PID/stat).
# Servers: one worker each pinned to CPU 0 (taskset), access_log off,
# `ssl_session_cache shared:SSL:10m`, 127.0.0.1 on free ports.
# Cases:
#   tls12-id   TLSv1.2 ECDHE-RSA-AES256-GCM-SHA384, RSA-2048, tickets off: session IDs in
#              the shared cache
#   tls13-tkt  TLSv1.3, ECDSA P-256, tickets on (the default): stateless tickets
# The host is shared with other builds and benchmarks: run it twice and compare.
set -euo pipefail

die() { echo "resume.sh: error: $*" >&2; exit 1; }
SECS=${BENCH_SECONDS:-5}
[[ $SECS =~ ^[0-9]+$ ]] && ((SECS > 0)) || die "BENCH_SECONDS must be a positive integer"
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
TG=${TLSGATE_BIN:-$ROOT/build/tlsgate}
[[ -x $TG ]] || die "tlsgate not found: $TG (cmake --build build --target tlsgate)"
NGINX=${NGINX_BIN:-$(command -v nginx 2>/dev/null || echo /usr/sbin/nginx)}
[[ -x $NGINX ]] || die "nginx not found (scripts/deps.sh bench installs nginx-light)"
command -v taskset >/dev/null || die "taskset not found (util-linux)"
CLI_CPU=1
(($(nproc) >= 2)) || CLI_CPU=0

TMP=$(mktemp -d "${TMPDIR:-/tmp}/tlsgate-resume.XXXXXX")
chmod 755 "$TMP"
PIDS=()
cleanup() {
    set +e
    for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null; done
    sleep 0.3
    for p in "${PIDS[@]}"; do kill -KILL "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
    rm -rf "$TMP"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])'; }
mkdir -p "$TMP/html" "$TMP/logs"
: >"$TMP/html/0kb.bin"
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$TMP/rsa.key" -out "$TMP/rsa.crt" \
    -subj /CN=localhost -days 2 2>/dev/null
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$TMP/ec.key" \
    -out "$TMP/ec.crt" -subj /CN=localhost -days 2 2>/dev/null

P12=$(free_port)
P13=$(free_port)
servers() { # $1 = tlsgate|nginx: the two server blocks
    cat <<EOF
    ssl_session_cache shared:SSL:10m;
    server {
        listen 127.0.0.1:$P12 ssl;
        ssl_certificate $TMP/rsa.crt; ssl_certificate_key $TMP/rsa.key;
        ssl_protocols TLSv1.2; ssl_ciphers ECDHE-RSA-AES256-GCM-SHA384;
        ssl_session_tickets off;
        root $TMP/html;
    }
    server {
        listen 127.0.0.1:$P13 ssl;
        ssl_certificate $TMP/ec.crt; ssl_certificate_key $TMP/ec.key;
        ssl_protocols TLSv1.3;
        root $TMP/html;
    }
EOF
}
worker_of() { # master pid -> its single worker
    local i w
    for ((i = 0; i < 50; i++)); do
        w=$(pgrep -P "$1" | head -1 || true)
        [[ -n $w ]] && { echo "$w"; return; }
        sleep 0.1
    done
    die "no worker under $1"
}
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

run_case() { # name port mode
    local name=$1 port=$2 mode=$3 w=$4 t0 t1 out conns
    t0=$(cpu_ticks "$w")
    out=$(taskset -c $CLI_CPU openssl s_time -connect 127.0.0.1:"$port" -www /0kb.bin \
        "-$mode" -time "$SECS" 2>&1 || true)
    t1=$(cpu_ticks "$w")
    # "N connections in T real seconds, ..." (the other line counts client CPU time)
    conns=$(echo "$out" | awk '/connections in [0-9]+ real seconds/ {print $1; exit}')
    local real
    real=$(echo "$out" | awk '/connections in [0-9]+ real seconds/ {print $4; exit}')
    [[ -n $conns && $conns -gt 0 ]] || { echo "$out" | tail -3 >&2; die "$name: s_time gave no result"; }
    if [[ $mode == reuse ]] && echo "$out" | grep -q '\*'; then
        echo "resume.sh: warning: $name: some -reuse connections were not resumed" >&2
    fi
    local hz
    hz=$(getconf CLK_TCK)
    printf '%s %s %s\n' "$conns" "$(awk -v c="$conns" -v s="$real" 'BEGIN{printf "%.0f", c/s}')" \
        "$(awk -v d=$((t1 - t0)) -v c="$conns" -v hz="$hz" 'BEGIN{printf "%.0f", d*1e6/hz/c}')"
}

declare -A RES
for srv in nginx tlsgate; do
    if [[ $srv == nginx ]]; then
        cat >"$TMP/nginx.conf" <<EOF
worker_processes 1; worker_cpu_affinity 01; daemon off; pid $TMP/nginx.pid;
error_log $TMP/logs/nginx.err error;
events { worker_connections 1024; }
http { access_log off; $(servers) }
EOF
        taskset -c 0 "$NGINX" -p "$TMP" -c "$TMP/nginx.conf" -e "$TMP/logs/nginx.err" &
    else
        cat >"$TMP/tlsgate.conf" <<EOF
$( [ "$(id -u)" = 0 ] && echo "user root;" )
worker_processes 1; worker_cpu_affinity 01; pid $TMP/tlsgate.pid;
error_log $TMP/logs/tlsgate.err error;
events { worker_connections 1024; }
http { $(servers) }
EOF
        taskset -c 0 "$TG" -c "$TMP/tlsgate.conf" &
    fi
    m=$!
    PIDS+=("$m")
    sleep 1
    w=$(worker_of "$m")
    for c in "tls12-id $P12" "tls13-tkt $P13"; do
        set -- $c
        for mode in new reuse; do
            RES[$srv,$1,$mode]=$(run_case "$srv $1" "$2" "$mode" "$w")
        done
    done
    kill -TERM "$m"
    wait "$m" 2>/dev/null || true
done

echo
echo "| case | server | full hs/s | resumed hs/s | resumed/full | worker CPU µs/hs full | resumed |"
echo "|---|---|---:|---:|---:|---:|---:|"
for c in tls12-id tls13-tkt; do
    for srv in nginx tlsgate; do
        read -r _ fr fc <<<"${RES[$srv,$c,new]}"
        read -r _ rr rc <<<"${RES[$srv,$c,reuse]}"
        printf '| %s | %s | %s | %s | %s | %s | %s |\n' "$c" "$srv" "$fr" "$rr" \
            "$(awk -v a="$rr" -v b="$fr" 'BEGIN{printf "%.2f", a/b}')" "$fc" "$rc"
    done
done
echo
echo "(openssl s_time, one sequential client on CPU $CLI_CPU, ${SECS}s per run; one worker"
echo " each on CPU 0; $(nproc) CPUs, shared host: noisy)"
