#!/bin/bash
# bench_replay_smoke: the flight-replay load generator (bench/replay.c, tlsgate_replay)
# against `openssl s_server` on 127.0.0.1, about 2 s per case:
#
#  1. TLS 1.3 (X25519, RSA-2048 certificate), TLS 1.2 ECDHE-RSA and TLS 1.2 RSA key
#     exchange: exit 0, handshakes > 0, no protocol error; TLS 1.2: the server answered
#     the replayed (stale) Finished with alerts;
#  2. a closed port: a clear "cannot connect ... refused" error, nonzero exit, at once;
#  3. a server that accepts and never answers: the recording times out (-t), nonzero exit;
#  4. the server killed during a run: the generator counts refused connections and still
#     stops by itself at the end of -d.
# Every run is bounded by `timeout`: a hang is a failure (exit 124).
#
# Usage: bench_replay_smoke.sh TLSGATE_REPLAY_BIN   (CTest test bench_replay_smoke)
# Output: TAP-like `ok` / `not ok` lines. Exit 0: all passed; 1: a check failed; 77:
# openssl or python3 is missing (skipped; a failure under CI=true).
set -u

REPLAY=${1:?usage: bench_replay_smoke.sh TLSGATE_REPLAY_BIN}
[[ $REPLAY == /* ]] || REPLAY=$PWD/$REPLAY
for prog in openssl python3 timeout; do
    if ! command -v "$prog" > /dev/null; then
        if [ "${CI:-}" = true ]; then
            echo "Bail out! $prog not installed (CI=true)"
            exit 1
        fi
        echo "1..0 # SKIP $prog not installed"
        exit 77
    fi
done
[ -x "$REPLAY" ] || { echo "Bail out! $REPLAY is not executable (build target tlsgate_replay)"; exit 1; }

passed=0
failed=0
ok() { passed=$((passed + 1)); echo "ok - $*"; }
not_ok() { failed=$((failed + 1)); echo "not ok - $*"; }
indent() { sed 's/^/#   /'; }

WORK=$(mktemp -d /tmp/tlsgate-replay-smoke.XXXXXX)
PIDS=""
cleanup() {
    local pid
    for pid in $PIDS; do kill "$pid" 2> /dev/null; done
    for pid in $PIDS; do wait "$pid" 2> /dev/null; done
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

cd "$WORK" || exit 1
if ! openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=localhost \
    -keyout rsa.key -out rsa.crt > certs.log 2>&1; then
    indent < certs.log
    echo "Bail out! cannot make a certificate"
    exit 1
fi

# start_server: openssl s_server (TLS 1.2 and 1.3, no tickets) in the background; sets
# PORT and SERVER_PID. s_server serves one connection at a time and goes on after a
# failed handshake, which every replayed connection is.
start_server() {
    local _try
    for _try in 1 2 3 4 5; do
        PORT=$(free_port)
        openssl s_server -accept "127.0.0.1:$PORT" -cert rsa.crt -key rsa.key -www \
            -no_ticket > server.log 2>&1 < /dev/null &
        SERVER_PID=$!
        PIDS="$PIDS $SERVER_PID"
        for _ in $(seq 50); do
            grep -q '^ACCEPT' server.log && return 0
            kill -0 "$SERVER_PID" 2> /dev/null || break
            sleep 0.1
        done
        kill "$SERVER_PID" 2> /dev/null
        wait "$SERVER_PID" 2> /dev/null
    done
    echo "# s_server did not start:"
    indent < server.log
    return 1
}

# kv FILE KEY: a value of the generator's key=value line
kv() { tail -n 1 "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"; }

start_server || { echo "Bail out! no s_server"; exit 1; }

# 1. the three cases
run_case() { # desc want_version [generator options]
    local desc=$1 want=$2 out rc=0
    shift 2
    out="$WORK/case.$((passed + failed)).out"
    timeout 30 "$REPLAY" -k -c 4 -d 2 "$@" "127.0.0.1:$PORT" > "$out" 2> "$out.err" || rc=$?
    local hs proto ver alerts errs
    hs=$(kv "$out" handshakes)
    proto=$(kv "$out" err_protocol)
    ver=$(kv "$out" version)
    alerts=$(kv "$out" tls12_alerts)
    errs=$(kv "$out" errors)
    if [ "$rc" -ne 0 ]; then
        not_ok "$desc: exit $rc"
        cat "$out" "$out.err" | indent
    elif [ "$ver" != "$want" ]; then
        not_ok "$desc: recorded '$ver', want $want"
    elif [ -z "$hs" ] || [ "$hs" -le 0 ] || [ "$proto" != 0 ]; then
        not_ok "$desc: handshakes=$hs err_protocol=$proto"
        cat "$out" "$out.err" | indent
    elif [ "$want" = TLSv1.2 ] && [ "${alerts:-0}" -le 0 ]; then
        not_ok "$desc: the server never answered flight 2 with an alert (tls12_alerts=$alerts)"
    else
        [ "$want" = TLSv1.2 ] || alerts=""
        ok "$desc: $hs handshakes in $(kv "$out" seconds) s, $(kv "$out" cipher), errors $errs, p50 $(kv "$out" p50_us) us${alerts:+, server alerts $alerts}"
    fi
}
run_case "TLS 1.3, X25519" TLSv1.3 -V 1.3 -g X25519
run_case "TLS 1.2 ECDHE-RSA" TLSv1.2 -V 1.2 -C ECDHE-RSA-AES256-GCM-SHA384 -g X25519
run_case "TLS 1.2 RSA key exchange" TLSv1.2 -V 1.2 -C AES256-GCM-SHA384
if ! kill -0 "$SERVER_PID" 2> /dev/null; then
    not_ok "s_server died under the replay"
    tail -n 10 server.log | indent
fi

# 2. a closed port
CLOSED=$(free_port)
t0=$(date +%s%N)
rc=0
timeout 20 "$REPLAY" -d 2 "127.0.0.1:$CLOSED" > closed.out 2> closed.err || rc=$?
ms=$((($(date +%s%N) - t0) / 1000000))
if [ "$rc" -eq 0 ] || [ "$rc" -eq 124 ]; then
    not_ok "closed port: exit $rc (want a nonzero exit, no hang)"
elif ! grep -q 'cannot connect to 127.0.0.1:.*refused' closed.err; then
    not_ok "closed port: no clear error message"
    indent < closed.err
elif [ "$ms" -gt 5000 ]; then
    not_ok "closed port: took $ms ms"
else
    ok "closed port: exit $rc in $ms ms: $(head -n 1 closed.err)"
fi

# 3. a server that accepts and never answers
SILENT=$(free_port)
python3 -c '
import socket, sys, time
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1])))
s.listen(16)
print("listening", flush=True)
conns = []
end = time.time() + 30
s.settimeout(1)
while time.time() < end:
    try:
        conns.append(s.accept()[0])
    except socket.timeout:
        pass
' "$SILENT" > silent.log 2>&1 &
PIDS="$PIDS $!"
for _ in $(seq 50); do grep -q listening silent.log && break; sleep 0.1; done
t0=$(date +%s%N)
rc=0
timeout 20 "$REPLAY" -t 1000 -d 2 "127.0.0.1:$SILENT" > silent.out 2> silent.err || rc=$?
ms=$((($(date +%s%N) - t0) / 1000000))
if [ "$rc" -eq 0 ] || [ "$rc" -eq 124 ] || ! grep -q 'timed out' silent.err; then
    not_ok "silent server: exit $rc after $ms ms (want a 'timed out' error and a nonzero exit)"
    indent < silent.err
else
    ok "silent server: exit $rc in $ms ms: $(head -n 1 silent.err)"
fi

# 4. the server goes away during a run
(sleep 0.7; kill "$SERVER_PID" 2> /dev/null) &
t0=$(date +%s%N)
rc=0
timeout 20 "$REPLAY" -k -c 4 -d 2 "127.0.0.1:$PORT" > gone.out 2> gone.err || rc=$?
ms=$((($(date +%s%N) - t0) / 1000000))
wait "$SERVER_PID" 2> /dev/null
refused=$(kv gone.out err_refused)
if [ "$rc" -ne 0 ] || [ "${refused:-0}" -le 0 ] || [ "$ms" -gt 6000 ]; then
    not_ok "server gone mid-run: exit $rc after $ms ms, err_refused=$refused"
    cat gone.out gone.err | indent
else
    ok "server gone mid-run: stopped by itself after $ms ms, $(kv gone.out handshakes) handshakes, $refused refused"
fi

echo "# summary: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
