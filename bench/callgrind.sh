#!/usr/bin/env bash
# bench/callgrind.sh: instructions per full handshake, counted by valgrind's callgrind in
# the server's worker, for A/B comparisons of non-crypto changes on a noisy machine.
#
# CPU time per handshake moves by ±10-20% on a shared host; the number of instructions a
# worker executes per handshake does not (run to run it moves by well under 1%). This
# script counts them: it starts the server under `valgrind --tool=callgrind`, warms it
# up, zeroes the counters, replays N handshakes with tlsgate_replay (bench/replay.c),
# dumps, and prints instructions (Ir) per handshake in total and by function family
# (bench/perf_families.py --callgrind). Instructions are not time (a cache miss costs no
# instruction, a memset of 16 KB costs few): it says whether a change removed work, and
# bench/replay.sh says what that is worth in handshakes per second.
#
# valgrind has no AVX-512: under it the worker sees no AVX-512 in CPUID, so the provider
# (if configured) runs mb8's portable kernels and libcrypto its AVX2 code. Compare like
# with like: these counts are for A/B of the same configuration.
#
# Usage: bench/callgrind.sh [SERVER...]      SERVER: tlsgate | tlsgate-prov | nginx |
#                                            BIN=PATH:tlsgate[-prov] (another build)
# Environment:
#   CG_CASE     a | b | c | d, as bench/replay.sh (default c)
#   CG_N        measured handshakes (default 400); CG_WARMUP (default 50)
#   CG_CONNS    concurrent replayed connections (default 8)
#   CG_TOP      symbols listed per server (default 12)
#   TLSGATE_BIN / REPLAY_BIN / NGINX_BIN  as bench/replay.sh
#   CG_KEEP     a directory: copy each server's callgrind dump there (callgrind_annotate
#               --tree=caller FILE shows who calls what)
#   CG_LIBDIR   run the servers with LD_LIBRARY_PATH=CG_LIBDIR (e.g. an OpenSSL 3.0 build
#               with symbols, for names inside libssl/libcrypto; docs/benchmarks.md)
# Output: one Markdown table per server on stdout. Exit status 0, 1 on failure.
set -euo pipefail
die() { echo "callgrind.sh: error: $*" >&2; exit 1; }
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CASE=${CG_CASE:-c}
N=${CG_N:-400}
WARM=${CG_WARMUP:-50}
CONNS=${CG_CONNS:-8}
TOP=${CG_TOP:-12}
[[ $CASE =~ ^[abcd]$ ]] || die "CG_CASE must be a, b, c or d"
for v in N WARM CONNS TOP; do [[ ${!v} =~ ^[0-9]+$ && ${!v} -gt 0 ]] || die "$v must be a positive integer"; done
abspath() { if [[ $1 == /* ]]; then echo "$1"; elif [[ -e $1 ]]; then echo "$PWD/$1"; else echo "$ROOT/$1"; fi; }
TG=$(abspath "${TLSGATE_BIN:-build/tlsgate}")
REPLAY=$(abspath "${REPLAY_BIN:-$(dirname "$TG")/tlsgate_replay}")
NGINX=${NGINX_BIN:-$(command -v nginx 2>/dev/null || echo /usr/sbin/nginx)}
command -v valgrind >/dev/null || die "valgrind not found (apt-get install valgrind)"
command -v callgrind_control >/dev/null || die "callgrind_control not found (valgrind package)"
[[ -x $REPLAY ]] || die "generator not found: $REPLAY"
(($# > 0)) || set -- tlsgate nginx

TMP=$(mktemp -d "${TMPDIR:-/tmp}/tlsgate-cg.XXXXXX")
chmod 755 "$TMP"
VG_PID=""
cleanup() {
    set +e
    if [[ -n $VG_PID ]]; then
        pkill -TERM -P "$VG_PID" 2>/dev/null
        kill -TERM "$VG_PID" 2>/dev/null
        wait "$VG_PID" 2>/dev/null
    fi
    pkill -KILL -f "callgrind-out-file=$TMP/" 2>/dev/null
    rm -rf "$TMP"
}
trap cleanup EXIT

mkdir -p "$TMP/html" "$TMP/certs"
: >"$TMP/html/0kb.bin"
if [[ $CASE == c ]]; then
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj /CN=localhost \
        -keyout "$TMP/certs/s.key" -out "$TMP/certs/s.crt" 2>/dev/null || die "openssl req failed"
else
    openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=localhost \
        -keyout "$TMP/certs/s.key" -out "$TMP/certs/s.crt" 2>/dev/null || die "openssl req failed"
fi
case $CASE in
a) PROTO=TLSv1.2 CIPHERS=ECDHE-RSA-AES256-GCM-SHA384 CLIENT=(-V 1.2 -C ECDHE-RSA-AES256-GCM-SHA384 -g X25519) ;;
b) PROTO=TLSv1.2 CIPHERS=AES256-GCM-SHA384 CLIENT=(-V 1.2 -C AES256-GCM-SHA384) ;;
*) PROTO=TLSv1.3 CIPHERS="" CLIENT=(-V 1.3 -g X25519) ;;
esac

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

write_conf() { # kind dir port
    local kind=$1 d=$2 port=$3
    {
        # as root, nginx's worker runs as root too: callgrind_control (vgdb) must reach it
        [[ $kind == nginx ]] && { echo "daemon off;"; echo "master_process on;"; [[ $(id -u) == 0 ]] && echo "user root;"; }
        # as root: tlsgate refuses to keep root in its workers unless told (docs/security.md)
        [[ $kind != nginx && $(id -u) == 0 ]] && echo "user root;"
        echo "worker_processes 1;"
        if [[ $kind == tlsgate-prov ]]; then
            echo "ssl_provider tlsgate;"
            echo "ssl_propquery \"?provider=tlsgate\";"
        fi
        echo "error_log $d/error.log;"
        echo "pid $d/server.pid;"
        echo "events { worker_connections 1024; }"
        echo "http {"
        echo "    access_log off;"
        if [[ $kind == nginx ]]; then
            for t in client_body proxy fastcgi uwsgi scgi; do echo "    ${t}_temp_path $d/tmp/$t;"; done
        fi
        echo "    ssl_session_cache off;"
        echo "    ssl_session_tickets off;"
        echo "    server {"
        echo "        listen 127.0.0.1:$port ssl;"
        echo "        server_name localhost;"
        echo "        ssl_certificate $TMP/certs/s.crt;"
        echo "        ssl_certificate_key $TMP/certs/s.key;"
        echo "        ssl_protocols $PROTO;"
        [[ -n $CIPHERS ]] && echo "        ssl_ciphers $CIPHERS;"
        echo "        root $TMP/html;"
        [[ $kind == tlsgate-prov ]] && echo "        ssl_async on;"
        echo "    }"
        echo "}"
    } >"$d/server.conf"
}

measure() { # spec
    local spec=$1 bin kind d port w i out
    if [[ $spec == BIN=*:* ]]; then
        bin=${spec#BIN=}
        kind=${bin##*:}
        bin=$(abspath "${bin%:*}")
    else
        kind=$spec
        bin=$TG
        [[ $kind == nginx ]] && bin=$NGINX
    fi
    case $kind in tlsgate | tlsgate-prov | nginx) ;; *) die "unknown server '$spec'" ;; esac
    [[ -x $bin ]] || die "$bin: not an executable"
    d="$TMP/${spec//[^A-Za-z0-9_-]/_}"
    mkdir -p "$d/tmp" "$d/state"
    chmod 1777 "$d" # nginx's worker (nobody) writes its dump and callgrind_control's files here
    port=$(free_port)
    write_conf "$kind" "$d" "$port"
    local envs=(TLSGATE_STATE_DIR="$d/state")
    [[ -n ${CG_LIBDIR:-} ]] && envs+=(LD_LIBRARY_PATH="$CG_LIBDIR")
    if [[ $kind == nginx ]]; then
        env "${envs[@]}" valgrind --tool=callgrind --trace-children=yes \
            --callgrind-out-file="$d/cg.%p" "$bin" -p "$d" -e "$d/error.log" -c "$d/server.conf" \
            >"$d/vg.log" 2>&1 &
    else
        env "${envs[@]}" valgrind --tool=callgrind --trace-children=yes \
            --callgrind-out-file="$d/cg.%p" "$bin" -p "$d" -c "$d/server.conf" >"$d/vg.log" 2>&1 &
    fi
    VG_PID=$!
    w=""
    for ((i = 0; i < 600; i++)); do
        kill -0 "$VG_PID" 2>/dev/null || { cat "$d/vg.log" "$d/error.log" >&2 2>/dev/null; die "$spec exited under valgrind"; }
        w=$(pgrep -P "$VG_PID" | head -n 1 || true)
        if [[ -n $w ]] && (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then break; fi
        w=""
        sleep 0.1
    done
    [[ -n $w ]] || die "$spec did not listen within 60 s under valgrind"
    "$REPLAY" -k -n localhost -c "$CONNS" -N "$WARM" -d 600 "${CLIENT[@]}" "127.0.0.1:$port" \
        >"$d/warm.txt" 2>&1 || { cat "$d/warm.txt" >&2; die "$spec: warm-up replay failed"; }
    (cd "$d" && timeout 60 callgrind_control -z "$w" >/dev/null) || die "$spec: callgrind_control -z failed"
    "$REPLAY" -k -n localhost -c "$CONNS" -N "$N" -d 600 "${CLIENT[@]}" "127.0.0.1:$port" \
        >"$d/run.txt" 2>&1 || { cat "$d/run.txt" >&2; die "$spec: replay failed"; }
    (cd "$d" && timeout 120 callgrind_control -d "$w" >/dev/null) || die "$spec: callgrind_control -d failed"
    out=$(ls "$d"/cg."$w".* 2>/dev/null | tail -n 1)
    [[ -s $out ]] || die "$spec: no callgrind dump"
    if [[ -n ${CG_KEEP:-} ]]; then
        mkdir -p "$CG_KEEP"
        cp "$out" "$CG_KEEP/callgrind.${spec//[^A-Za-z0-9_-]/_}.$CASE.out"
    fi
    local hs
    # the generator's handshakes plus its recording connection
    hs=$(tail -n 1 "$d/run.txt" | tr ' ' '\n' | awk -F= '$1 == "handshakes" { print $2 }')
    [[ -n $hs && $hs -gt 0 ]] || die "$spec: cannot read the handshake count"
    hs=$((hs + 1))
    "$ROOT/bench/perf_families.py" --callgrind "$out" --build "$(dirname "$bin")" \
        --handshakes "$hs" --top "$TOP" --title "$spec, case $CASE"
    echo
    pkill -TERM -P "$VG_PID" 2>/dev/null || true
    kill -TERM "$VG_PID" 2>/dev/null || true
    wait "$VG_PID" 2>/dev/null || true
    VG_PID=""
}

echo "Instructions per full handshake in the server's worker (bench/callgrind.sh, case $CASE,"
echo "$N replayed handshakes after $WARM, $CONNS at a time; $(date -u '+%Y-%m-%d %H:%M UTC'))"
echo
for s in "$@"; do measure "$s"; done
