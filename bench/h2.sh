#!/usr/bin/env bash
# bench/h2.sh: HTTP/2 requests per server CPU second, tlsgate vs Debian's nginx (issue #22's
# "Done when": >= 1.1x nginx's `http2`).
#
# Usage (from the repo root, after `cmake --build build --target tlsgate`):
#   bench/h2.sh
#   TLSGATE_BIN=build-rel/tlsgate BENCH_REQUESTS=400000 BENCH_ROUNDS=3 bench/h2.sh
# Environment:
#   TLSGATE_BIN     tlsgate binary (default build/tlsgate)
#   NGINX_BIN       nginx binary (default nginx from PATH or /usr/sbin/nginx)
#   BENCH_REQUESTS  h2load -n per run (default 200000)
#   BENCH_ROUNDS    rounds of nginx then tlsgate (default 3; the median is reported)
#   TLSGATE_BASE    a second tlsgate binary run in nginx's place (same configuration as
#                   tlsgate's): an A/B of two builds in one run, rounds alternating
#
# Both servers: one worker pinned to CPU 0 (worker_cpu_affinity 01), `listen ... ssl
# http2`, TLSv1.3 with an ECDSA P-256 certificate, access_log off, a 1,024-byte file,
# keepalive_requests high (nginx closes an h2 connection after 1000 requests otherwise, and
# h2load does not reconnect).
# h2load on CPU 1 (taskset): -c 10 -m 20 -t 1 -n BENCH_REQUESTS on /1kb.bin. CPU s = the
# worker's utime+stime delta over the run (/proc/PID/stat fields 14+15); req per CPU s =
# requests / CPU s (the server's cost per request, whatever h2load's own speed); req/s =
# h2load's figure (bounded by the client when h2load saturates CPU 1).
set -euo pipefail
die() { echo "h2.sh: error: $*" >&2; exit 1; }
TG=$(realpath "${TLSGATE_BIN:-build/tlsgate}")
NGINX=${NGINX_BIN:-$(command -v nginx || echo /usr/sbin/nginx)}
N=${BENCH_REQUESTS:-200000}; ROUNDS=${BENCH_ROUNDS:-3}
[ -x "$TG" ] || die "no tlsgate binary at $TG"
BASE=${TLSGATE_BASE:+$(realpath "$TLSGATE_BASE")}
LA=${BASE:+base}; LA=${LA:-nginx}
[ -n "$BASE" ] || [ -x "$NGINX" ] || die "nginx missing (apt-get install nginx-light)"
command -v h2load >/dev/null || die "h2load missing (apt-get install nghttp2-client)"
TMP=$(mktemp -d)
cleanup() { for f in "$TMP"/*.pid; do [ -s "$f" ] && kill "$(cat "$f")" 2>/dev/null; done; rm -rf "$TMP"; }
trap cleanup EXIT
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$TMP/k.pem" \
    -out "$TMP/c.pem" -days 2 -subj /CN=bench >/dev/null 2>&1
mkdir -p "$TMP/html" "$TMP/ngx"; head -c 1024 /dev/urandom > "$TMP/html/1kb.bin"
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
USER_LINE=""; [ "$(id -u)" -eq 0 ] && USER_LINE="user root;"
TCK=$(getconf CLK_TCK)

conf() { # NAME PORT
    cat <<EOF
$USER_LINE
worker_processes 1; worker_cpu_affinity 01;
error_log $TMP/$1.err error; pid $TMP/$1.pid;
events { worker_connections 1024; }
http { access_log off;
  server { listen 127.0.0.1:$2 ssl http2; server_name bench;
    ssl_certificate $TMP/c.pem; ssl_certificate_key $TMP/k.pem; ssl_protocols TLSv1.3;
    keepalive_requests 100000000; root $TMP/html; } }
EOF
}

run_one() { # NAME -> "req/s cpu_s req_per_cpu_s"
    local name=$1 port; port=$(free_port)
    if [ "$name" = nginx ] && [ -n "$BASE" ]; then
        conf nginx "$port" > "$TMP/base.conf"
        "$BASE" -c "$TMP/base.conf" &
    elif [ "$name" = nginx ]; then
        conf nginx "$port" | sed 's/^events/daemon off; events/' > "$TMP/nginx.conf"
        "$NGINX" -p "$TMP/ngx" -c "$TMP/nginx.conf" -e "$TMP/nginx.err" &
    else
        conf tlsgate "$port" > "$TMP/tlsgate.conf"
        "$TG" -c "$TMP/tlsgate.conf" &
    fi
    local master=$!
    for _ in $(seq 100); do ss -ltn | grep -q "127.0.0.1:$port " && break; sleep 0.05; done
    local w; w=$(pgrep -P "$master" | head -1)
    [ -n "$w" ] || die "$name: no worker"
    local t0; t0=$(awk '{print $14+$15}' "/proc/$w/stat")
    local out; out=$(taskset -c 1 h2load -c 10 -m 20 -t 1 -n "$N" "https://127.0.0.1:$port/1kb.bin")
    local t1; t1=$(awk '{print $14+$15}' "/proc/$w/stat")
    kill "$master"; wait "$master" 2>/dev/null || true
    grep -q "$N succeeded" <<< "$out" || die "$name: not all requests succeeded: $(echo "$out" | grep requests:)"
    local rps; rps=$(echo "$out" | awk '/^finished in/ {print $4}')
    awk -v d=$((t1 - t0)) -v t="$TCK" -v n="$N" -v r="$rps" \
        'BEGIN { c = d / t; printf "%s %.2f %.0f\n", r, c, n / c }'
}

median() { sort -g | awk '{v[NR]=$1} END {print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }

: > "$TMP/nginx.r"; : > "$TMP/tlsgate.r"
for _ in $(seq "$ROUNDS"); do
    run_one nginx >> "$TMP/nginx.r"
    run_one tlsgate >> "$TMP/tlsgate.r"
done
echo "h2load -c 10 -m 20 -n $N, 1 KB file, one worker on CPU 0, h2load on CPU 1; median of $ROUNDS"
echo "| server | req/s | worker CPU s | req per CPU s |"
echo "|---|---|---|---|"
for s in nginx tlsgate; do
    printf "| %s | %s | %s | %s |\n" "$( [ $s = nginx ] && echo "$LA" || echo $s)" "$(awk '{print $1}' "$TMP/$s.r" | median)" \
        "$(awk '{print $2}' "$TMP/$s.r" | median)" "$(awk '{print $3}' "$TMP/$s.r" | median)"
done
ng=$(awk '{print $3}' "$TMP/nginx.r" | median); tg=$(awk '{print $3}' "$TMP/tlsgate.r" | median)
echo "tlsgate / $LA (req per CPU s): $(awk -v a="$ng" -v b="$tg" 'BEGIN { printf "%.2f", b / a }')"
