#!/usr/bin/env bash
# bench/async.sh: what async TLS buys with an accelerator that answers after a latency.
#
# tlsgate with the fake accelerator provider (tests/fakeaccel: RSA/ECDSA signatures and RSA
# decryption answered by a background thread after BENCH_DELAY_US), one worker pinned to
# CPU 0, wrk pinned to CPU 1 making full TLS handshakes (Connection: close, no session
# resumption), once with `ssl_async off` (the worker blocks for every operation: at most
# 1/latency handshakes/s) and once with `ssl_async on` (the worker serves other connections
# while jobs are paused), in the same invocation.
#
# Usage: bench/async.sh            (after `make build`; builds build/fakeaccel.so if needed)
# Environment: TLSGATE_BIN (build/tlsgate), BUILD_DIR (build), BENCH_SECONDS (5),
#   BENCH_CONNS (200), BENCH_DELAY_US (1000), BENCH_NOTIFY (callback|fd, default callback),
#   BENCH_TLS (1.3|1.2, default 1.3)
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench/lib.sh
source bench/lib.sh
BUILD_DIR=${BUILD_DIR:-build}
BIN=$(TLSGATE_BIN=${TLSGATE_BIN:-$BUILD_DIR/tlsgate} tlsgate_bin)
SECS=${BENCH_SECONDS:-5}
CONNS=${BENCH_CONNS:-200}
DELAY=${BENCH_DELAY_US:-1000}
NOTIFY=${BENCH_NOTIFY:-callback}
TLSV=${BENCH_TLS:-1.3}
for t in wrk openssl taskset curl; do
    command -v "$t" >/dev/null || die "$t is missing (scripts/deps.sh bench)"
done
[ -f "$BUILD_DIR/fakeaccel.so" ] || cmake --build "$BUILD_DIR" --target fakeaccel >/dev/null
BUILD_ABS=$(cd "$BUILD_DIR" && pwd) # BUILD_DIR may be relative or absolute
TMP=$(mktemp -d)
cleanup() { stop_all; }
trap cleanup EXIT INT TERM
make_certs "$TMP/certs" rsa
make_docroot "$TMP/html"
CLK=$(getconf CLK_TCK)
if [ "$TLSV" = 1.2 ]; then PROTO="ssl_protocols TLSv1.2; ssl_ciphers ECDHE-RSA-AES256-GCM-SHA384;"
else PROTO="ssl_protocols TLSv1.3;"; fi

launch() { # name port dir mode (start_server): tlsgate with ssl_async MODE on PORT
    local d=$3 mode=$4
    P_TLS=$2
    {
        tlsgate_main_conf "$d" 4096 "ssl_provider fakeaccel { path $BUILD_ABS; delay_us $DELAY; notify $NOTIFY; }" \
            'ssl_propquery "?provider=fakeaccel";'
        cat <<CONF
http {
    access_log off;
    server {
        listen 127.0.0.1:$P_TLS ssl;
        ssl_certificate $TMP/certs/rsa.crt;
        ssl_certificate_key $TMP/certs/rsa.key;
        $PROTO
        ssl_session_cache off;
        ssl_session_tickets off;
        ssl_async $mode;
        ssl_async_notify $NOTIFY;
        root $TMP/html;
        location = /status { stub_status; }
    }
}
CONF
    } >"$d/t.conf"
    "$BIN" -c "$d/t.conf" >>"$d/stdout.log" 2>&1 &
}

run() { # run on|off -> prints a table row
    local mode=$1
    start_server tlsgate "$TMP" launch "$mode"
    local worker=${WORKER[tlsgate]}
    taskset -c 1 wrk -t1 -c"$CONNS" -d1 -H 'Connection: close' "https://127.0.0.1:$P_TLS/0kb.bin" >/dev/null
    local t0 t1
    t0=$(cpu_ticks "$worker")
    local out
    out=$(taskset -c 1 wrk -t1 -c"$CONNS" -d"$SECS" -H 'Connection: close' --latency \
        "https://127.0.0.1:$P_TLS/0kb.bin")
    t1=$(cpu_ticks "$worker")
    local reqs rps p50 p99 errs
    reqs=$(echo "$out" | awk '/requests in/ {print $1}')
    rps=$(echo "$out" | awk '/Requests\/sec/ {print $2}')
    p50=$(echo "$out" | awk '$1=="50%" {print $2}')
    p99=$(echo "$out" | awk '$1=="99%" {print $2}')
    errs=$(echo "$out" | awk '/Socket errors/ {print $0}')
    local us
    us=$(awk -v d=$((t1 - t0)) -v c="$CLK" -v n="$reqs" 'BEGIN { printf "%.0f", d * 1e6 / c / n }')
    local resumed
    resumed=$(curl -sk "https://127.0.0.1:$P_TLS/status" | sed -n 's/.*resumed: \([0-9]*\) drained.*/\1/p')
    printf '| ssl_async %s | %s | %s | %s | %s | %s | %s |\n' "$mode" "$rps" "$us" "$p50" "$p99" \
        "${resumed:-?}" "${errs:-0}"
    stop_server tlsgate
    cat "$TMP/error.log" >>"$TMP/errors.log" # start_server empties error.log
}

echo "tlsgate, fake accelerator at ${DELAY} us (notify $NOTIFY), TLS $TLSV RSA-2048, one worker on CPU 0, wrk -c$CONNS on CPU 1, ${SECS}s"
echo
echo "| mode | handshakes/s | worker process CPU us/handshake (incl. accelerator thread) | p50 | p99 | jobs resumed | socket errors |"
echo "|---|---:|---:|---:|---:|---:|---|"
run off
run on
echo
echo "With ssl_async off the worker sleeps through every accelerator operation, so it cannot"
echo "pass 1/latency = $((1000000 / DELAY)) handshakes/s."
if grep -E '\[(crit|alert|emerg)\]' "$TMP/errors.log"; then exit 1; fi
