#!/usr/bin/env bash
# bench/soak.sh: a soak test (issue #12): tlsgate under mixed load for SOAK_SECONDS with a
# reload every SOAK_RELOAD seconds, reporting the RSS and open fds of the master and of
# the workers at the start and at the end (and after every reload), so that a leak shows
# as growth. Not a CTest test (10 minutes by default); it stops by itself.
#
# Usage (from the repo root, after `cmake --build build --target tlsgate`):
#   bench/soak.sh                          # 10 minutes
#   SOAK_SECONDS=120 bench/soak.sh         # shortened
#
# Load, all at once for the whole run, on 127.0.0.1:
#   - full handshakes: wrk, SOAK_CONNS connections, `Connection: close` (a new TLS
#     handshake per request; the client picks ECDSA or RSA by its signature algorithms);
#   - keep-alive: wrk, SOAK_CONNS connections, 1 KiB responses;
#   - TLS 1.2 ECDHE-RSA handshakes and aborts (python3): complete requests, connections
#     reset (SO_LINGER 0) after the ClientHello, in the middle of a request, or right
#     after the handshake, and clients that send half a request and close;
#   - `tlsgate -s reload` every SOAK_RELOAD seconds (new workers; old ones finish).
#
# Environment:
#   TLSGATE_BIN    tlsgate binary (default build/tlsgate)
#   SOAK_SECONDS   duration (default 600)
#   SOAK_RELOAD    seconds between reloads (default 30)
#   SOAK_CONNS     connections of each wrk (default 16)
#   SOAK_WORKERS   worker_processes (default 2)
#   SOAK_PROVIDER  1: ssl_provider tlsgate + ssl_async on (default 1); 0: plain OpenSSL
#
# Output: a table of master/worker RSS (KiB) and fds at the start, after each reload and
# at the end; wrk's totals; the number of [alert]/[crit]/[emerg] log lines (must be 0).
# Exit 1 when the server died, a reload failed, or the log has such lines.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${TLSGATE_BIN:-build/tlsgate}
SECONDS_TOTAL=${SOAK_SECONDS:-600}
RELOAD=${SOAK_RELOAD:-30}
CONNS=${SOAK_CONNS:-16}
WORKERS=${SOAK_WORKERS:-2}
PROVIDER=${SOAK_PROVIDER:-1}
for t in wrk openssl python3; do
    command -v $t >/dev/null || { echo "soak: $t not found (scripts/deps.sh test)" >&2; exit 2; }
done
[ -x "$BIN" ] || { echo "soak: $BIN is not built" >&2; exit 2; }
BIN=$(readlink -f "$BIN")

T=$(mktemp -d /tmp/tlsgate-soak.XXXXXX)
pids=()
master=""
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    if [ -n "$master" ]; then
        kill -TERM "$master" 2>/dev/null || true
        for _ in $(seq 50); do kill -0 "$master" 2>/dev/null || break; sleep 0.1; done
        kill -KILL -- "-$master" 2>/dev/null || true
    fi
    rm -rf "$T"
}
trap cleanup EXIT INT TERM

openssl req -x509 -newkey rsa:2048 -nodes -sha256 -days 2 -subj /CN=soak.test \
    -keyout "$T/rsa.key" -out "$T/rsa.crt" 2>/dev/null
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -sha256 -days 2 \
    -subj /CN=soak.test -keyout "$T/ec.key" -out "$T/ec.crt" 2>/dev/null
mkdir -p "$T/html" "$T/state"
head -c 1024 /dev/zero | tr '\0' a > "$T/html/1kb.bin"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
prov=""
[ "$PROVIDER" = 1 ] && prov='ssl_provider tlsgate;
ssl_propquery "?provider=tlsgate";'
async=""
[ "$PROVIDER" = 1 ] && async="ssl_async on;"
user_line=""
[ "$(id -u)" = 0 ] && user_line="user root;  # as root: workers stay root deliberately (tlsgate refuses otherwise)"
cat > "$T/tlsgate.conf" <<CONF
$user_line
worker_processes $WORKERS;
error_log $T/error.log notice;
pid $T/tlsgate.pid;
worker_shutdown_timeout 5s;
$prov
events { worker_connections 4096; }
http {
    keepalive_requests 1000000;
    client_header_timeout 5s;
    ssl_session_cache off;
    ssl_session_tickets off;
    server {
        listen 127.0.0.1:$port ssl;
        server_name soak.test;
        ssl_certificate $T/rsa.crt; ssl_certificate_key $T/rsa.key;
        ssl_certificate $T/ec.crt; ssl_certificate_key $T/ec.key;
        $async
        root $T/html;
        location = /status { stub_status; }
    }
}
CONF
TLSGATE_STATE_DIR=$T/state setsid "$BIN" -c "$T/tlsgate.conf" > "$T/server.out" 2>&1 &
master=$!
for _ in $(seq 100); do
    python3 -c "import socket; socket.create_connection(('127.0.0.1', $port), 0.2)" 2>/dev/null && break
    kill -0 "$master" 2>/dev/null || { cat "$T/server.out"; echo "soak: tlsgate exited" >&2; exit 1; }
    sleep 0.1
done

workers() { pgrep -P "$master" | tr '\n' ' '; }
kib() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status" 2>/dev/null || echo 0; }
fds() { ls "/proc/$1/fd" 2>/dev/null | wc -l; }
sample() { # sample LABEL: one table row
    local w rss=0 fd=0 n=0 p
    w=$(workers)
    for p in $w; do rss=$((rss + $(kib "$p"))); fd=$((fd + $(fds "$p"))); n=$((n + 1)); done
    printf '| %-14s | %5ss | %10s | %10s | %7s | %11s | %11s |\n' "$1" "$(( $(date +%s) - t0 ))" \
        "$(kib "$master")" "$(fds "$master")" "$n" "$rss" "$fd"
}

cat > "$T/aborts.py" <<'PY'
import random, socket, ssl, struct, sys, time
port, until = int(sys.argv[1]), time.time() + float(sys.argv[2])
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
ctx.check_hostname = False
ctx.verify_mode = ssl.CERT_NONE
ctx.maximum_version = ssl.TLSVersion.TLSv1_2
ctx.set_ciphers("ECDHE-RSA-AES128-GCM-SHA256")
counts = {"full": 0, "reset_hello": 0, "reset_request": 0, "reset_after_hs": 0, "half": 0, "err": 0}
def reset(s):
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    s.close()
while time.time() < until:
    kind = random.choice(list(counts)[:-1])
    try:
        raw = socket.create_connection(("127.0.0.1", port), timeout=5)
        if kind == "reset_hello":
            raw.send(bytes.fromhex("16030100") + b"\x40" + b"\x01" + b"\x00" * 20)
            reset(raw)
        else:
            s = ctx.wrap_socket(raw, server_hostname="soak.test")
            if kind == "full":
                s.sendall(b"GET /1kb.bin HTTP/1.1\r\nHost: soak.test\r\nConnection: close\r\n\r\n")
                while s.recv(65536):
                    pass
                s.close()
            elif kind == "reset_request":
                s.sendall(b"GET /1kb.bin HTTP/1.1\r\nHost: soak.test\r\n\r\n")
                s.recv(100)
                reset(s)
            elif kind == "reset_after_hs":
                reset(s)
            else:
                s.sendall(b"GET /1kb.bin HTTP/1.1\r\nHo")
                s.close()
        counts[kind] += 1
    except (OSError, ssl.SSLError):
        counts["err"] += 1
print(" ".join("%s=%d" % kv for kv in counts.items()))
PY

t0=$(date +%s)
sleep 1 # workers settled
echo "tlsgate soak: ${SECONDS_TOTAL}s, reload every ${RELOAD}s, $WORKERS workers, provider=$PROVIDER, port $port"
echo
echo "| when           |   time | master KiB | master fds | workers | workers KiB | workers fds |"
echo "|---|---|---|---|---|---|---|"
sample "start"
wrk -t 1 -c "$CONNS" -d "${SECONDS_TOTAL}s" --timeout 5s -H "Connection: close" \
    "https://127.0.0.1:$port/1kb.bin" > "$T/wrk_hs.out" 2>&1 &
pids+=($!)
wrk -t 1 -c "$CONNS" -d "${SECONDS_TOTAL}s" --timeout 5s \
    "https://127.0.0.1:$port/1kb.bin" > "$T/wrk_ka.out" 2>&1 &
pids+=($!)
python3 "$T/aborts.py" "$port" "$SECONDS_TOTAL" > "$T/aborts.out" 2>&1 &
pids+=($!)
load0=$(date +%s)
end=$((load0 + SECONDS_TOTAL))
sleep $(( SECONDS_TOTAL < 20 ? 2 : 5 ))
sample "under load"    # the baseline for growth: buffers and caches warmed up
reloads=0
failed=0
next=$((load0 + RELOAD))
while :; do
    now=$(date +%s)
    wake=$(( next < end ? next : end ))
    [ "$wake" -le "$now" ] || sleep $((wake - now))
    kill -0 "$master" 2>/dev/null || { echo "soak: tlsgate died" >&2; failed=1; break; }
    [ "$(date +%s)" -lt "$end" ] || break
    if TLSGATE_STATE_DIR=$T/state "$BIN" -s reload -c "$T/tlsgate.conf"; then
        reloads=$((reloads + 1))
    else
        failed=1
    fi
    next=$((next + RELOAD))
    sleep 1
    sample "reload $reloads"
done
for p in "${pids[@]}"; do wait "$p" || true; done
pids=()
for _ in $(seq 60); do # the old generations are gone (worker_shutdown_timeout 5s)
    [ "$(pgrep -c -P "$master")" -le "$WORKERS" ] && break
    sleep 0.1
done
sleep 0.5 # the connections the loads left are closed
sample "end"
echo
echo "reloads: $reloads"
[ "$reloads" -gt 0 ] || [ "$SECONDS_TOTAL" -le "$RELOAD" ] || { echo "soak: no reload was done" >&2; failed=1; }
echo "full handshakes (wrk, Connection: close): $(grep -E 'requests in|Non-2xx|Socket errors' "$T/wrk_hs.out" | tr -s ' ' | tr '\n' ';')"
echo "keep-alive (wrk): $(grep -E 'requests in|Non-2xx|Socket errors' "$T/wrk_ka.out" | tr -s ' ' | tr '\n' ';')"
echo "TLS 1.2 RSA clients and aborts: $(cat "$T/aborts.out")"
grep -q "reload failed" "$T/error.log" && { echo "soak: a reload failed" >&2; failed=1; }
bad=$(grep -cE '\[(alert|crit|emerg)\]' "$T/error.log" || true)
echo "[alert]/[crit]/[emerg] log lines: $bad"
[ "$bad" -eq 0 ] || { grep -E '\[(alert|crit|emerg)\]' "$T/error.log" | head -5; failed=1; }
exit $failed
