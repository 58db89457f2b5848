#!/bin/bash
# fakeaccel integration test (TEST-ONLY): `openssl s_server -async` with the fakeaccel
# provider preferred (-propquery '?provider=fakeaccel'), and `openssl s_client`
# handshakes over loopback: TLS 1.2 RSA key exchange, ECDHE-RSA (PSS and PKCS#1 v1.5),
# ECDHE-ECDSA, TLS 1.3 with an RSA and with an ECDSA certificate. Each handshake must
# complete, serve the -www page, and the provider's log (FAKEACCEL_LOG) must show that
# the private-key operation ran inside s_server's ASYNC job and paused it.
# Then fail_every=2: every other handshake fails, and the server survives it.
#
# Usage: tls_test.sh BUILD_DIR   (the directory holding fakeaccel.so)
set -u

BUILD_DIR=$(cd "${1:?usage: tls_test.sh BUILD_DIR}" && pwd)
[ -f "$BUILD_DIR/fakeaccel.so" ] || { echo "no $BUILD_DIR/fakeaccel.so" >&2; exit 2; }
command -v openssl > /dev/null || { echo "openssl not found" >&2; exit 2; }

WORK=$(mktemp -d /tmp/fakeaccel-tls.XXXXXX)
SERVER_PID=
cleanup() {
    if [ -n "$SERVER_PID" ]; then
        kill "$SERVER_PID" 2> /dev/null
        wait "$SERVER_PID" 2> /dev/null
    fi
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

passed=0
failed=0
ok() { passed=$((passed + 1)); echo "ok - $*"; }
not_ok() { failed=$((failed + 1)); echo "not ok - $*"; }

# ---- certificates, made per run ----
cd "$WORK" || exit 2
if ! { openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out rsa.key \
    && openssl req -x509 -new -key rsa.key -subj /CN=fakeaccel-rsa -days 2 -out rsa.crt \
    && openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out ec.key \
    && openssl req -x509 -new -key ec.key -subj /CN=fakeaccel-ecdsa -days 2 -out ec.crt; } \
    > certs.log 2>&1; then
    cat certs.log >&2
    exit 2
fi

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# start_server NAME [VAR=VALUE...]: s_server in the background; sets PORT, SERVER_PID.
start_server() {
    local name=$1 try
    shift
    for try in 1 2 3 4 5; do
        PORT=$(free_port)
        : > "$WORK/$name.log"
        env FAKEACCEL_LOG="$WORK/$name.accel" "$@" \
            timeout 100 openssl s_server \
            -provider-path "$BUILD_DIR" -provider fakeaccel -provider default \
            -propquery '?provider=fakeaccel' -async \
            -accept "127.0.0.1:$PORT" \
            -cert rsa.crt -key rsa.key -dcert ec.crt -dkey ec.key -www \
            > "$WORK/$name.log" 2>&1 < /dev/null &
        SERVER_PID=$!
        for _ in $(seq 100); do
            if grep -q '^ACCEPT' "$WORK/$name.log"; then
                return 0
            fi
            kill -0 "$SERVER_PID" 2> /dev/null || break
            sleep 0.1
        done
        kill "$SERVER_PID" 2> /dev/null
        wait "$SERVER_PID" 2> /dev/null
        SERVER_PID=
    done
    echo "s_server ($name) did not start:" >&2
    cat "$WORK/$name.log" >&2
    return 1
}

stop_server() {
    kill "$SERVER_PID" 2> /dev/null
    wait "$SERVER_PID" 2> /dev/null
    SERVER_PID=
}

# client OUT ARGS...: one handshake and GET /; output in OUT.
client() {
    local out=$1
    shift
    printf 'GET / HTTP/1.0\r\n\r\n' \
        | timeout 15 openssl s_client -connect "127.0.0.1:$PORT" -ign_eof "$@" > "$out" 2>&1
}

# handshake DESC PROTO CIPHER CERT_CN OP ARGS...: a handshake that must work and must have
# run one accelerated OP (sign|decrypt) inside s_server's job, paused.
handshake() {
    local desc=$1 proto=$2 cipher=$3 cn=$4 op=$5 out lines0 lines1 new
    shift 5
    out="$WORK/client.$((passed + failed)).log"
    lines0=$(wc -l < "$WORK/main.accel" 2> /dev/null || echo 0)
    client "$out" "$@"
    lines1=$(wc -l < "$WORK/main.accel" 2> /dev/null || echo 0)
    new=$(tail -n "$((lines1 - lines0))" "$WORK/main.accel" 2> /dev/null)
    if ! grep -q "New, $proto, Cipher is $cipher" "$out"; then
        not_ok "$desc: no $proto $cipher handshake"
        sed 's/^/#   /' "$out" | head -20
    elif ! grep -q '^HTTP/1.0 200 ok' "$out"; then
        not_ok "$desc: no HTTP response"
    elif ! grep -q "subject=CN = $cn" "$out"; then
        not_ok "$desc: not the $cn certificate"
    elif ! grep -qE "op=$op async=1 pauses=[1-9][0-9]* ok=1" <<< "$new"; then
        not_ok "$desc: no paused accelerated $op in s_server's job"
        echo "#   provider log: ${new:-nothing}"
    else
        ok "$desc ($(grep -oE "op=$op async=1 pauses=[0-9]+" <<< "$new" | head -1))"
    fi
}

echo "# fakeaccel TLS test: $(openssl version)"
start_server main FAKEACCEL_DELAY_US=2000 || exit 1

handshake "TLS 1.2 RSA key exchange" TLSv1.2 AES256-GCM-SHA384 fakeaccel-rsa decrypt \
    -tls1_2 -cipher AES256-GCM-SHA384
handshake "TLS 1.2 ECDHE-RSA, RSA-PSS, P-256" TLSv1.2 ECDHE-RSA-AES128-GCM-SHA256 \
    fakeaccel-rsa sign -tls1_2 -cipher ECDHE-RSA-AES128-GCM-SHA256 -groups P-256
handshake "TLS 1.2 ECDHE-RSA, PKCS#1 v1.5, X25519" TLSv1.2 ECDHE-RSA-AES256-GCM-SHA384 \
    fakeaccel-rsa sign -tls1_2 -cipher ECDHE-RSA-AES256-GCM-SHA384 -sigalgs RSA+SHA256 \
    -groups X25519
handshake "TLS 1.2 ECDHE-ECDSA, P-256" TLSv1.2 ECDHE-ECDSA-AES128-GCM-SHA256 \
    fakeaccel-ecdsa sign -tls1_2 -cipher ECDHE-ECDSA-AES128-GCM-SHA256 -groups P-256
handshake "TLS 1.3, RSA certificate, X25519" TLSv1.3 TLS_AES_256_GCM_SHA384 fakeaccel-rsa \
    sign -tls1_3 -sigalgs rsa_pss_rsae_sha256
handshake "TLS 1.3, RSA certificate, P-256" TLSv1.3 TLS_AES_256_GCM_SHA384 fakeaccel-rsa \
    sign -tls1_3 -sigalgs rsa_pss_rsae_sha256 -groups P-256
handshake "TLS 1.3, ECDSA certificate, P-384" TLSv1.3 TLS_AES_256_GCM_SHA384 fakeaccel-ecdsa \
    sign -tls1_3 -sigalgs ecdsa_secp256r1_sha256 -groups P-384
handshake "TLS 1.3, ECDSA certificate, X25519" TLSv1.3 TLS_AES_128_GCM_SHA256 fakeaccel-ecdsa \
    sign -tls1_3 -ciphersuites TLS_AES_128_GCM_SHA256 -sigalgs ecdsa_secp256r1_sha256
stop_server

# fail_every=2 with notify=fd: handshakes 1 and 3 work, 2 and 4 fail; the server lives on.
start_server fail FAKEACCEL_DELAY_US=500 FAKEACCEL_NOTIFY=fd FAKEACCEL_FAIL_EVERY=2 || exit 1
results=""
for i in 1 2 3 4; do
    client "$WORK/fail.$i.log" -tls1_3
    if grep -q '^HTTP/1.0 200 ok' "$WORK/fail.$i.log"; then
        results="$results ok"
    else
        results="$results fail"
    fi
done
if [ "$results" = " ok fail ok fail" ] && grep -q "fakeaccel injected failure" "$WORK/fail.log"; then
    ok "fail_every=2: handshakes$results, error reported by s_server"
else
    not_ok "fail_every=2: handshakes$results"
    sed 's/^/#   /' "$WORK/fail.log" | tail -5
fi
stop_server

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
