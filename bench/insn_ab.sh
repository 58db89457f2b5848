#!/usr/bin/env bash
# bench/insn_ab.sh: instructions per request of two tlsgate binaries (A/B), counted by
# valgrind's callgrind, so that a loaded or shared machine (or a VM without a PMU, where
# `perf stat -e instructions` says <not supported>) does not blur a small difference.
#
# Usage: bench/insn_ab.sh A_BINARY B_BINARY
# Environment:
#   BENCH_N1, BENCH_N2  requests of the short and the long run (default 2000, 6000)
#
# For each protocol (h1: `h2load --h1 -c 1`, keep-alive; h2: `h2load -c 1 -m 10`) and each
# binary, one worker serves a 1 KiB file over TLSv1.3 (ECDSA P-256, access_log off) to N1
# then N2 requests on one connection; the worker's instruction count (callgrind's summary)
# of the two runs gives the slope (Ir(N2) - Ir(N1)) / (N2 - N1): the cost of a request,
# without start-up, the handshake and exit. The columns: Ir/request of A and B, and B/A.
# Deterministic up to timing-dependent paths (how many requests one read brings).
set -euo pipefail
die() { echo "insn_ab.sh: error: $*" >&2; exit 1; }
[ $# -eq 2 ] || die "usage: bench/insn_ab.sh A_BINARY B_BINARY"
A=$(realpath "$1"); B=$(realpath "$2")
[ -x "$A" ] && [ -x "$B" ] || die "both binaries must be executable"
N1=${BENCH_N1:-2000}; N2=${BENCH_N2:-6000}
[ "$N2" -gt "$N1" ] || die "BENCH_N2 must be larger than BENCH_N1"
command -v valgrind >/dev/null || die "valgrind missing (apt-get install valgrind)"
command -v h2load >/dev/null || die "h2load missing (apt-get install nghttp2-client)"
TMP=$(mktemp -d)
cleanup() { [ -s "$TMP/pid" ] && kill "$(cat "$TMP/pid")" 2>/dev/null; rm -rf "$TMP"; }
trap cleanup EXIT
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$TMP/k.pem" \
    -out "$TMP/c.pem" -days 2 -subj /CN=bench >/dev/null 2>&1
mkdir -p "$TMP/html"; head -c 1024 /dev/zero > "$TMP/html/1kb.bin"
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
USER_LINE=""; [ "$(id -u)" -eq 0 ] && USER_LINE="user root;"

run_one() { # BIN PROTO N -> the worker's instructions
    local bin=$1 proto=$2 n=$3 port; port=$(free_port)
    cat > "$TMP/t.conf" <<EOF
$USER_LINE
worker_processes 1;
error_log $TMP/err.log error; pid $TMP/pid;
events { worker_connections 256; }
http { access_log off;
  server { listen 127.0.0.1:$port ssl http2; server_name bench;
    ssl_certificate $TMP/c.pem; ssl_certificate_key $TMP/k.pem; ssl_protocols TLSv1.3;
    keepalive_requests 100000000; root $TMP/html; } }
EOF
    rm -f "$TMP"/pid "$TMP"/cg.*
    valgrind --tool=callgrind --trace-children=yes --callgrind-out-file="$TMP/cg.%p" \
        "$bin" -c "$TMP/t.conf" > "$TMP/vg.log" 2>&1 &
    local vg=$!
    for _ in $(seq 300); do [ -s "$TMP/pid" ] && ss -ltn | grep -q "127.0.0.1:$port " && break; sleep 0.1; done
    local args=(-c 1 -m 10); [ "$proto" = h1 ] && args=(--h1 -c 1)
    local out; out=$(h2load "${args[@]}" -n "$n" "https://127.0.0.1:$port/1kb.bin")
    grep -q "$n succeeded" <<< "$out" || die "$bin $proto: not all requests succeeded"
    local master; master=$(cat "$TMP/pid")
    kill -QUIT "$master"; wait "$vg" 2>/dev/null || true
    local f
    for f in "$TMP"/cg.*; do # the worker: the file that is not the master's
        [ "$f" = "$TMP/cg.$master" ] && continue
        awk '/^(summary|totals):/ {print $2; exit}' "$f"
    done | sort -g | tail -1
}

echo "A: $A"; echo "B: $B"
echo "| protocol | A Ir/request | B Ir/request | B/A |"
echo "|---|---|---|---|"
for proto in h1 h2; do
    declare -A ir=()
    for bin in A B; do
        b=$A; [ $bin = B ] && b=$B
        lo=$(run_one "$b" $proto "$N1"); hi=$(run_one "$b" $proto "$N2")
        ir[$bin]=$(awk -v l="$lo" -v h="$hi" -v a="$N1" -v b="$N2" 'BEGIN{printf "%.0f", (h-l)/(b-a)}')
    done
    printf "| %s | %s | %s | %.4f |\n" $proto "${ir[A]}" "${ir[B]}" \
        "$(awk -v a="${ir[A]}" -v b="${ir[B]}" 'BEGIN{print b/a}')"
done
