#!/usr/bin/env bash
# bench/proxy.sh: issue #8's measurement - keep-alive 1 KB requests/s through a TLS-
# terminating reverse proxy, tlsgate vs Debian's nginx as the same proxy, one run.
#
# Usage (from the repo root, after `cmake --build build --target tlsgate`):
#   bench/proxy.sh
#   BENCH_SECONDS=10 BENCH_CONNS=50 BENCH_REPEAT=2 bench/proxy.sh
#
# Environment:
#   TLSGATE_BIN    tlsgate binary (default build/tlsgate; a copy is run)
#   NGINX_BIN      nginx binary (default: nginx on PATH, else /usr/sbin/nginx)
#   BENCH_SECONDS  measured wrk run per proxy (default 10), after a 2 s warm-up
#   BENCH_CONNS    wrk connections (default 50)
#   BENCH_REPEAT   rounds, each runs both proxies (order alternates; default 1)
#
# Set-up (all on 127.0.0.1, free ports, a temp dir removed at exit):
#   backend  nginx, plain HTTP, 1 worker, serves a 1024-byte file, access_log off, CPU 1
#   proxies  each with 1 worker pinned to CPU 0 (taskset), TLS 1.3 (X25519, ECDSA P-256
#            certificate), access_log off, HTTP/1.1 keep-alive to the backend through an
#            `upstream { keepalive 32; }` pool:
#              tlsgate: proxy_pass http://app;
#              nginx:   proxy_pass http://app; proxy_http_version 1.1;
#                       proxy_set_header Connection "";
#   client   wrk -t1 -c BENCH_CONNS -d BENCH_SECONDS on CPU 1 (with the backend), keep-alive:
#            every connection does one handshake and then only requests.
# Columns: req/s (wrk), server CPU ms (utime+stime of the proxy's worker over the measured
# run, /proc/PID/stat), CPU µs/req, and tlsgate/nginx ratios of req/s and CPU per request.
# The host is shared (2 cores, other engineers building and benchmarking): figures move
# by several percent between runs; compare the ratio within one run, not across runs.
set -euo pipefail

die() { echo "proxy.sh: error: $*" >&2; exit 1; }
TLSGATE_BIN=${TLSGATE_BIN:-build/tlsgate}
NGINX_BIN=${NGINX_BIN:-$(command -v nginx || echo /usr/sbin/nginx)}
SECS=${BENCH_SECONDS:-10}
CONNS=${BENCH_CONNS:-50}
REPEAT=${BENCH_REPEAT:-1}
[ -x "$TLSGATE_BIN" ] || die "no tlsgate binary at $TLSGATE_BIN"
[ -x "$NGINX_BIN" ] || die "nginx not found (apt-get install nginx-light)"
command -v wrk >/dev/null || die "wrk not found (apt-get install wrk)"
command -v taskset >/dev/null || die "taskset not found (util-linux)"

T=$(mktemp -d /tmp/tlsgate-bench-proxy.XXXXXX)
PIDS=()
cleanup() {
    for p in "${PIDS[@]}"; do kill -9 -- "-$p" 2>/dev/null || kill -9 "$p" 2>/dev/null || true; done
    rm -rf "$T"
}
trap cleanup EXIT
[ -n "${BENCH_KEEP:-}" ] && trap "for p in \"\${PIDS[@]}\"; do kill -9 -- -\$p 2>/dev/null; done; echo kept \$T" EXIT
chmod 755 "$T" # nginx workers (another user when started as root) read the file
cp "$TLSGATE_BIN" "$T/tlsgate"

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_port() {
    for _ in $(seq 100); do
        (exec 3<>/dev/tcp/127.0.0.1/"$1") 2>/dev/null && return 0
        sleep 0.05
    done
    die "nothing listens on port $1"
}
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
child_of() { pgrep -P "$1" | head -1; }

openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
    -subj /CN=bench.test -keyout "$T/key.pem" -out "$T/cert.pem" 2>/dev/null
mkdir -p "$T/be/html" "$T/be/logs" "$T/ng/logs" "$T/tg"
head -c 1024 /dev/urandom | base64 -w0 | head -c 1024 > "$T/be/html/1k"

BE_PORT=$(free_port); TG_PORT=$(free_port); NG_PORT=$(free_port); TG_STATUS=$(free_port)
cat > "$T/be/nginx.conf" <<EOF
daemon off; worker_processes 1; error_log $T/be/logs/error.log; pid $T/be/nginx.pid;
events { worker_connections 1024; }
http { access_log off; keepalive_requests 1000000;
  server { listen 127.0.0.1:$BE_PORT; root $T/be/html; } }
EOF
cat > "$T/ng/nginx.conf" <<EOF
daemon off; worker_processes 1; error_log $T/ng/logs/error.log; pid $T/ng/nginx.pid;
events { worker_connections 1024; }
http { access_log off; keepalive_requests 1000000;
  upstream app { server 127.0.0.1:$BE_PORT; keepalive 32; keepalive_requests 1000000; }
  server { listen 127.0.0.1:$NG_PORT ssl; ssl_certificate $T/cert.pem;
           ssl_certificate_key $T/key.pem; ssl_protocols TLSv1.3;
           location / { proxy_pass http://app; proxy_http_version 1.1;
                        proxy_set_header Connection ""; } } }
EOF
cat > "$T/tg/tlsgate.conf" <<EOF
$( [ "$(id -u)" = 0 ] && echo "user root;" )
worker_processes 1; error_log $T/tg/error.log; pid $T/tg/tlsgate.pid;
events { worker_connections 1024; }
http { keepalive_requests 1000000;
  upstream app { server 127.0.0.1:$BE_PORT; keepalive 32; keepalive_requests 1000000; }
  server { listen 127.0.0.1:$TG_PORT ssl; ssl_certificate $T/cert.pem;
           ssl_certificate_key $T/key.pem; ssl_protocols TLSv1.3;
           location / { proxy_pass http://app; } } }
EOF

setsid taskset -c 1 "$NGINX_BIN" -p "$T/be" -c "$T/be/nginx.conf" & PIDS+=($!)
setsid taskset -c 0 "$NGINX_BIN" -p "$T/ng" -c "$T/ng/nginx.conf" & PIDS+=($!)
setsid taskset -c 0 "$T/tlsgate" -p "$T/tg" -c "$T/tg/tlsgate.conf" & PIDS+=($!)
disown -a # killed at exit: no job notices
wait_port "$BE_PORT"; wait_port "$NG_PORT"; wait_port "$TG_PORT"
sleep 0.3
NG_MASTER=${PIDS[1]}; TG_MASTER=${PIDS[2]}
NG_WORKER=$(child_of "$NG_MASTER"); TG_WORKER=$(child_of "$TG_MASTER")
[ -n "$NG_WORKER" ] && [ -n "$TG_WORKER" ] || die "worker processes not found"
HZ=$(getconf CLK_TCK)

curl -sk "https://127.0.0.1:$TG_PORT/1k" | cmp -s - "$T/be/html/1k" || die "tlsgate does not proxy /1k"
curl -sk "https://127.0.0.1:$NG_PORT/1k" | cmp -s - "$T/be/html/1k" || die "nginx does not proxy /1k"

run() { # run NAME PORT WORKER -> "rps cpu_ms"
    taskset -c 1 wrk -t1 -c "$CONNS" -d 2s "https://127.0.0.1:$2/1k" >/dev/null 2>&1 || true
    local t0; t0=$(cpu_ticks "$3")
    local out; out=$(taskset -c 1 wrk -t1 -c "$CONNS" -d "${SECS}s" "https://127.0.0.1:$2/1k" 2>&1)
    local t1; t1=$(cpu_ticks "$3")
    local rps; rps=$(awk '/Requests\/sec/ {print $2}' <<<"$out")
    local errs; errs=$(awk '/Non-2xx|Socket errors/' <<<"$out")
    [ -n "$errs" ] && echo "proxy.sh: $1: $errs" >&2
    echo "$rps $(( (t1 - t0) * 1000 / HZ ))"
}

echo "# bench/proxy.sh: $(date -u '+%F %T') UTC, $(nproc) CPUs, ${SECS}s, c=$CONNS, 1 KiB, TLS 1.3 keep-alive"
echo "# tlsgate $(git rev-parse --short HEAD 2>/dev/null || echo '?'), $("$NGINX_BIN" -v 2>&1)"
printf '%-6s %-8s %10s %12s %12s\n' round proxy req/s "cpu ms" "cpu us/req"
declare -A SUM_RPS SUM_CPU
for r in $(seq "$REPEAT"); do
    order="tlsgate nginx"; [ $((r % 2)) -eq 0 ] && order="nginx tlsgate"
    for name in $order; do
        if [ "$name" = tlsgate ]; then res=$(run tlsgate "$TG_PORT" "$TG_WORKER")
        else res=$(run nginx "$NG_PORT" "$NG_WORKER"); fi
        read -r rps cpu <<<"$res"
        us=$(awk -v c="$cpu" -v r="$rps" -v s="$SECS" 'BEGIN{printf "%.1f", c*1000/(r*s)}')
        printf '%-6s %-8s %10s %12s %12s\n' "$r" "$name" "$rps" "$cpu" "$us"
        SUM_RPS[$name]=$(awk -v a="${SUM_RPS[$name]:-0}" -v b="$rps" 'BEGIN{print a+b}')
        SUM_CPU[$name]=$(awk -v a="${SUM_CPU[$name]:-0}" -v b="$us" 'BEGIN{print a+b}')
    done
done
awk -v tr="${SUM_RPS[tlsgate]}" -v nr="${SUM_RPS[nginx]}" -v tc="${SUM_CPU[tlsgate]}" \
    -v nc="${SUM_CPU[nginx]}" 'BEGIN{printf "ratio tlsgate/nginx: req/s %.3f, CPU per request %.3f\n", tr/nr, tc/nc}'
