#!/usr/bin/env bash
# bench/ab.sh: an A/B of two tlsgate binaries in one run (issue #22: HTTP/1.1 figures
# before and after a change), alternating A B A B ... so that machine noise hits both.
#
# Usage: bench/ab.sh A_BINARY B_BINARY
# Environment:
#   BENCH_SECONDS  measured wrk run per binary, case and round (default 5)
#   BENCH_ROUNDS   rounds of A then B (default 3)
#   BENCH_CONNS    wrk connections (default 50)
#
# Cases: hs = full TLSv1.3 handshakes (ECDSA P-256, `Connection: close`, no resumption)
# on /0kb.bin; ka = keep-alive requests for /1kb.bin over TLSv1.3. One worker pinned to
# CPU 0 (worker_cpu_affinity), wrk -t1 on CPU 1 (taskset). Columns: req/s (wrk), and
# CPU us/req = the worker's utime+stime delta (/proc/PID/stat 14+15) / wrk's requests.
# Each figure is the median over the rounds; B/A is the ratio of the medians.
set -euo pipefail
die() { echo "ab.sh: error: $*" >&2; exit 1; }
[ $# -eq 2 ] || die "usage: bench/ab.sh A_BINARY B_BINARY"
A=$(realpath "$1"); B=$(realpath "$2")
[ -x "$A" ] && [ -x "$B" ] || die "both binaries must be executable"
SECS=${BENCH_SECONDS:-5}; ROUNDS=${BENCH_ROUNDS:-3}; CONNS=${BENCH_CONNS:-50}
command -v wrk >/dev/null || die "wrk missing (scripts/deps.sh bench)"
TMP=$(mktemp -d); trap 'kill $(cat "$TMP"/pid 2>/dev/null) 2>/dev/null || true; rm -rf "$TMP"' EXIT
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$TMP/k.pem" \
    -out "$TMP/c.pem" -days 2 -subj /CN=bench >/dev/null 2>&1
mkdir -p "$TMP/html"; : > "$TMP/html/0kb.bin"; head -c 1024 /dev/zero > "$TMP/html/1kb.bin"
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
USER_LINE=""; [ "$(id -u)" -eq 0 ] && USER_LINE="user root;"

run_one() { # BIN CASE -> "req/s us/req"
    local bin=$1 case=$2 port; port=$(free_port)
    cat > "$TMP/t.conf" <<EOF
$USER_LINE
worker_processes 1; worker_cpu_affinity 01;
error_log $TMP/err.log error; pid $TMP/pid;
events { worker_connections 4096; }
http { access_log off;
  server { listen 127.0.0.1:$port ssl; server_name bench;
    ssl_certificate $TMP/c.pem; ssl_certificate_key $TMP/k.pem; ssl_protocols TLSv1.3;
    ssl_session_cache off; ssl_session_tickets off; keepalive_requests 1000000;
    root $TMP/html; } }
EOF
    rm -f "$TMP/pid"
    "$bin" -c "$TMP/t.conf" & local master=$!
    for _ in $(seq 100); do [ -s "$TMP/pid" ] && ss -ltn | grep -q ":$port " && break; sleep 0.05; done
    local w; w=$(pgrep -P "$master" | head -1)
    local hdr=() path=/1kb.bin
    [ "$case" = hs ] && hdr=(-H "Connection: close") && path=/0kb.bin
    taskset -c 1 wrk -t1 -c"$CONNS" -d1s "${hdr[@]}" "https://127.0.0.1:$port$path" >/dev/null 2>&1 || true
    local t0; t0=$(awk '{print $14+$15}' "/proc/$w/stat")
    local out; out=$(taskset -c 1 wrk -t1 -c"$CONNS" -d"${SECS}s" "${hdr[@]}" "https://127.0.0.1:$port$path")
    local t1; t1=$(awk '{print $14+$15}' "/proc/$w/stat")
    kill "$master"; wait "$master" 2>/dev/null || true
    local reqs; reqs=$(echo "$out" | awk '/requests in/ {print $1}')
    local rps; rps=$(echo "$out" | awk '/Requests\/sec/ {print $2}')
    local tck; tck=$(getconf CLK_TCK)
    echo "$rps $(awk -v d=$((t1 - t0)) -v r="$reqs" -v t="$tck" 'BEGIN{printf "%.1f", d/t*1e6/r}')"
}

median() { sort -g | awk '{v[NR]=$1} END {print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }

for case in hs ka; do
    : > "$TMP/A.$case"; : > "$TMP/B.$case"
    for _ in $(seq "$ROUNDS"); do
        run_one "$A" $case >> "$TMP/A.$case"
        run_one "$B" $case >> "$TMP/B.$case"
    done
done
echo "A: $A"; echo "B: $B"
echo "| case | A req/s | B req/s | B/A | A CPU us/req | B CPU us/req | B/A |"
echo "|---|---|---|---|---|---|---|"
for case in hs ka; do
    ar=$(awk '{print $1}' "$TMP/A.$case" | median); br=$(awk '{print $1}' "$TMP/B.$case" | median)
    ac=$(awk '{print $2}' "$TMP/A.$case" | median); bc=$(awk '{print $2}' "$TMP/B.$case" | median)
    printf "| %s | %s | %s | %.3f | %s | %s | %.3f |\n" "$case" "$ar" "$br" \
        "$(awk -v a="$ar" -v b="$br" 'BEGIN{print b/a}')" "$ac" "$bc" \
        "$(awk -v a="$ac" -v b="$bc" 'BEGIN{print b/a}')"
done
