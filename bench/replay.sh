#!/usr/bin/env bash
# bench/replay.sh: saturated full handshakes per server core, loaded with replayed client
# flights (bench/replay.c, tlsgate_replay): Debian nginx, tlsgate, tlsgate with its
# provider, Debian HAProxy, HAProxy with the tlsgate provider; the four cases of issue #11.
#
# Usage (from the repo root, after
#   cmake --build build --target tlsgate tlsgate_prov tlsgate_replay):
#   bench/replay.sh
#   TLSGATE_BIN=build-rel/tlsgate BENCH_SECONDS=5 BENCH_CASES="a c" bench/replay.sh
#
# Environment:
#   TLSGATE_BIN     tlsgate binary (default build/tlsgate)
#   REPLAY_BIN      the generator (default: tlsgate_replay next to TLSGATE_BIN)
#   TLSGATE_PROV    provider module for HAProxy (default: tlsgate.so next to TLSGATE_BIN)
#   NGINX_BIN       nginx binary (default: nginx from PATH or /usr/sbin/nginx)
#   HAPROXY_BIN     haproxy binary (default: haproxy from PATH or /usr/sbin/haproxy)
#   BENCH_SECONDS   measured replay per server and case (default 10)
#   BENCH_WARMUP    warm-up replay before each measured run, seconds (default 2; 0 = none)
#   BENCH_CONNS     concurrent replayed connections (default 256)
#   BENCH_REPEAT    runs per server and case, in rotation over the servers (default 1)
#   BENCH_CASES     subset of "a b c d" (default all)
#   BENCH_SERVERS   subset of "nginx tlsgate tlsgate-prov haproxy haproxy-prov amnginx-engine
#                   amnginx-prov" (default all; the two anchors only when the kit is there),
#                   plus "tlsgate-b" / "tlsgate-prov-b": the same configurations run by
#                   TLSGATE_B_BIN with the environment TLSGATE_B_ENV (e.g. "LD_PRELOAD=...")
#                   for A/B comparisons of one change in one invocation (BENCH_REPEAT
#                   alternates the servers run by run)
#   BENCH_WRK       1: also measure each server's CPU per real handshake with wrk
#                   (-t1 -c50, 'Connection: close', BENCH_WRK_SECONDS, default 5) and
#                   print the replay/wrk ratio: how faithful the replay is
#   BENCH_SAVE      1: also write the report to bench/results/replay-<date>.md
#   BENCH_TSV       also append tab-separated rows to this file: per measured run
#                   "run case server rep hs_per_s hs_per_cpu_s server_cpu_pct
#                   server_us_per_hs p50_ms p99_ms client_cpu_pct errors accepts_diff note";
#                   per provider server "prov case server summary"
#   BENCH_NO_INSTALL 1: never call apt-get (fail if a tool is missing)
#   ANCHORS_DIR     the anchor kit (default ../shared/anchors beside the repo; README.md
#                   there): Intel's asynch_mode_nginx 0.5.3 with qat_sw (crypto_mb) as the
#                   QAT engine (heuristic polling, "amnginx-engine") and as qatprovider
#                   ("amnginx-prov"), started as the kit's handshakes.sh starts them; run
#                   only, never linked or copied
#   BENCH_PERF      1: `perf record` the server's worker (all threads, 1999 Hz) over each
#                   measured run and add its time per handshake by function family
#                   (bench/perf_families.py) to the report; BENCH_PERF_DIR keeps the
#                   perf.data files (default: the temporary directory, removed)
#
# Cases (the server pins them; the generator's recorded handshake is checked against them):
#   a  TLSv1.2 ECDHE-RSA-AES256-GCM-SHA384, RSA-2048 certificate, X25519
#   b  TLSv1.2 AES256-GCM-SHA384 (RSA key exchange), RSA-2048 certificate
#   c  TLSv1.3 (default suites), ECDSA P-256 certificate, X25519
#   d  TLSv1.3 (default suites), RSA-2048 certificate, X25519
#
# Servers: one worker (nginx, tlsgate: worker_processes 1, worker_cpu_affinity 01;
# HAProxy: one process, nbthread 1, started under taskset -c 0), every thread of it pinned
# to CPU 0; no session cache, no tickets, access log off, listening on 127.0.0.1 on free
# ports. tlsgate-prov: `ssl_provider tlsgate; ssl_propquery "?provider=tlsgate";
# ssl_async on;` (as BENCH_PROVIDER=1 bench/handshake.sh); haproxy-prov: ssl-provider-path
# (TLSGATE_PROV's directory), ssl-provider tlsgate, ssl-provider default, ssl-propquery
# ?provider=tlsgate, ssl-mode-async (as tests/prov/interop.sh). The generator runs on
# CPU 1: tlsgate_replay -k -c BENCH_CONNS -d BENCH_SECONDS.
#
# Columns: hs/s = handshakes the generator completed / its run time; server CPU % =
# utime+stime of the worker process (all its threads, /proc/PID/stat fields 14+15) over
# the generator's lifetime / wall time; CPU µs/hs = that CPU time / handshakes; hs per
# server CPU-s = 10^6 / CPU µs/hs, the rate of one saturated core: the comparable figure
# on a shared machine, where other tasks on CPU 0 take part of the wall time (the note
# column shows the worker's main thread's runqueue wait and idle time from
# /proc/PID/task/PID/schedstat: "server idle" means the generator did not keep it busy);
# x nginx compares that figure with nginx's in the same case (all runs); p50/p99 =
# connect() to the server's flight (TLS 1.3) or its reaction to flight 2 (TLS 1.2), ms;
# client CPU % = the generator's own utime+stime / its run time; accepts = connections
# the server accepted over the run (stub_status, HAProxy `show info` CumConns) minus the
# generator's connections (should be ~0: every replayed connection reached the server).
set -euo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

env_uint SECS BENCH_SECONDS 10 1
env_uint WARMUP BENCH_WARMUP 2
env_uint CONNS BENCH_CONNS 256 1
env_uint REPEAT BENCH_REPEAT 1 1
env_words CASES BENCH_CASES "a b c d" a b c d
ANCHORS=${ANCHORS_DIR:-$ROOT/../shared/anchors}
HAVE_ANCHORS=0
[[ -x $ANCHORS/amnginx/sbin/nginx && -f $ANCHORS/qat/qatprovider.so && -f $ANCHORS/qat/qatengine.so ]] &&
    HAVE_ANCHORS=1 && ANCHORS=$(cd "$ANCHORS" && pwd)
if ((HAVE_ANCHORS)); then
    SERVERS=${BENCH_SERVERS:-nginx tlsgate tlsgate-prov haproxy haproxy-prov amnginx-engine amnginx-prov}
else
    SERVERS=${BENCH_SERVERS:-nginx tlsgate tlsgate-prov haproxy haproxy-prov}
fi
SAVE=${BENCH_SAVE:-0}
WRK=${BENCH_WRK:-0}
env_uint WRK_SECS BENCH_WRK_SECONDS 5 1
PERF=${BENCH_PERF:-0}
PERF_DIR=${BENCH_PERF_DIR:-}
TSV=${BENCH_TSV:-}
[[ -z $TSV || $TSV == /* ]] || TSV=$PWD/$TSV
for s in $SERVERS; do
    case $s in nginx | tlsgate | tlsgate-prov | tlsgate-b | tlsgate-prov-b | haproxy | haproxy-prov) ;;
    amnginx-engine | amnginx-prov) ((HAVE_ANCHORS)) || die "$s: no anchor kit at $ANCHORS (ANCHORS_DIR)" ;;
    *) die "unknown server '$s' in BENCH_SERVERS (nginx tlsgate tlsgate-prov haproxy haproxy-prov amnginx-engine amnginx-prov)" ;;
    esac
done
[[ -n ${CASES// /} ]] || die "BENCH_CASES is empty"
[[ -n ${SERVERS// /} ]] || die "BENCH_SERVERS is empty"
want() { [[ " $SERVERS " == *" $1 "* ]]; } # server is in BENCH_SERVERS

# --- tools -------------------------------------------------------------------------------
# qat_sw's AES-GCM comes from intel-ipsec-mb (the anchor kit's README)
install_missing $(want nginx && nginx_missing) \
    $({ want haproxy || want haproxy-prov; } && haproxy_missing) \
    $([[ $WRK == 1 ]] && echo wrk:wrk) $([[ $PERF == 1 ]] && echo perf:linux-perf) \
    $({ want amnginx-engine || want amnginx-prov; } && echo dpkg:libipsec-mb1) \
    openssl:openssl taskset:util-linux pgrep:procps timeout:coreutils

TG=$(abspath "${TLSGATE_BIN:-build/tlsgate}")
BUILD_DIR=$(dirname "$TG")
REPLAY=$(abspath "${REPLAY_BIN:-$BUILD_DIR/tlsgate_replay}")
PROV=$(abspath "${TLSGATE_PROV:-$BUILD_DIR/tlsgate.so}")
[[ -x $REPLAY ]] || die "generator not found: $REPLAY (cmake --build $BUILD_DIR --target tlsgate_replay, or set REPLAY_BIN)"
if want tlsgate || want tlsgate-prov; then
    [[ -x $TG ]] || die "tlsgate binary not found: $TG (cmake --build $BUILD_DIR --target tlsgate, or set TLSGATE_BIN)"
fi
TG_B=$(abspath "${TLSGATE_B_BIN:-$TG}")
read -r -a TG_B_ENV <<<"${TLSGATE_B_ENV:-}"
if want tlsgate-b || want tlsgate-prov-b; then
    [[ -x $TG_B ]] || die "tlsgate binary B not found: $TG_B (TLSGATE_B_BIN)"
fi
if want haproxy-prov; then
    [[ -f $PROV ]] || die "provider module not found: $PROV (cmake --build $BUILD_DIR --target tlsgate_prov, or set TLSGATE_PROV)"
fi
NGINX=${NGINX_BIN:-$(command -v nginx 2>/dev/null || echo /usr/sbin/nginx)}
HAPROXY=${HAPROXY_BIN:-$(command -v haproxy 2>/dev/null || echo /usr/sbin/haproxy)}
want nginx && { [[ -x $NGINX ]] || die "nginx not found ($NGINX)"; }
if want haproxy || want haproxy-prov; then [[ -x $HAPROXY ]] || die "haproxy not found ($HAPROXY)"; fi
[[ $WRK == 1 ]] && { command -v wrk >/dev/null 2>&1 || die "wrk not found (BENCH_WRK=1)"; }

cpu_roles generator

# --- state and cleanup -------------------------------------------------------------------
TMP=$(mktemp -d "${TMPDIR:-/tmp}/tlsgate-replay.XXXXXX")
chmod 755 "$TMP" # nginx's worker runs as nobody and must read html/
declare -A SPORT=() # MASTER, WORKER, PORT, DIR: bench/lib.sh
START_SETTLE=0.3 # the provider's threads

cleanup() { stop_all "$CLIENT_PID"; }
trap_cleanup

# --- files -------------------------------------------------------------------------------
make_docroot "$TMP/html"
make_certs "$TMP/certs"
cat "$TMP/certs/rsa.crt" "$TMP/certs/rsa.key" >"$TMP/certs/rsa.pem"
cat "$TMP/certs/ecdsa.crt" "$TMP/certs/ecdsa.key" >"$TMP/certs/ecdsa.pem"
chmod 600 "$TMP"/certs/*.pem
if ((HAVE_ANCHORS)); then
    # qatprovider for asynch_mode_nginx, as the kit's handshakes.sh loads it
    cat >"$TMP/qat.cnf" <<QATCNF
openssl_conf = openssl_init
[openssl_init]
providers = provider_sect
alg_section = algorithm_sect
[provider_sect]
qatprovider = qatprovider_sect
default = default_sect
[qatprovider_sect]
module = $ANCHORS/qat/qatprovider.so
activate = 1
[default_sect]
activate = 1
[algorithm_sect]
default_properties = "?provider=qatprovider"
QATCNF
fi
cd "$TMP" # every path below is absolute; nothing stray lands in the caller's directory

# --- helpers -----------------------------------------------------------------------------

https_get() { # port path: raw response via openssl s_client
    printf 'GET %s HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n' "$2" |
        timeout 10 openssl s_client -quiet -connect "127.0.0.1:$1" -servername localhost 2>/dev/null || true
}

# Connections the server accepted so far, this query's own included ("" if unknown):
# stub_status "accepts" (nginx, tlsgate), HAProxy `show info` CumConns.
accepts() { # name
    local name=$1 n
    case $name in
    haproxy*)
        n=$( (exec 3<>"/dev/tcp/127.0.0.1/${SPORT[$name]}" && echo "show info" >&3 &&
            timeout 5 cat <&3) 2>/dev/null | awk -F': ' '$1 == "CumConns" && !n++ { print $2 }')
        echo "$n"
        ;;
    *)
        https_get "${PORT[$name]}" /status | awk 'f == 1 { print $1 } { f = f ? 2 : /^server accepts handled requests/ }'
        ;;
    esac
}

case_title() {
    case $1 in
    a) echo "TLS 1.2 ECDHE-RSA-AES256-GCM-SHA384, RSA-2048, X25519" ;;
    b) echo "TLS 1.2 AES256-GCM-SHA384 (RSA key exchange), RSA-2048" ;;
    c) echo "TLS 1.3, ECDSA P-256, X25519" ;;
    d) echo "TLS 1.3, RSA-2048, X25519" ;;
    esac
}
case_short() {
    case $1 in
    a) echo "TLS 1.2 ECDHE-RSA-2048" ;;
    b) echo "TLS 1.2 RSA kx, RSA-2048" ;;
    c) echo "TLS 1.3 ECDSA P-256" ;;
    d) echo "TLS 1.3 RSA-2048" ;;
    esac
}
case_cert() { case $1 in c) echo ecdsa ;; *) echo rsa ;; esac }
case_proto() { case $1 in a | b) echo TLSv1.2 ;; *) echo TLSv1.3 ;; esac }
case_cipher() { case $1 in a) echo ECDHE-RSA-AES256-GCM-SHA384 ;; b) echo AES256-GCM-SHA384 ;; esac }
case_client() { # the generator's options
    case $1 in
    a) echo "-V 1.2 -C ECDHE-RSA-AES256-GCM-SHA384 -g X25519" ;;
    b) echo "-V 1.2 -C AES256-GCM-SHA384" ;;
    *) echo "-V 1.3 -g X25519" ;;
    esac
}
case_want() { # what the recorded handshake must show: version cipher-glob group key
    case $1 in
    a) echo "TLSv1.2 ECDHE-RSA-AES256-GCM-SHA384 X25519 RSA-2048" ;;
    b) echo "TLSv1.2 AES256-GCM-SHA384 none RSA-2048" ;;
    c) echo "TLSv1.3 TLS_* X25519 EC-prime256v1" ;;
    d) echo "TLSv1.3 TLS_* X25519 RSA-2048" ;;
    esac
}

launch() { # name port dir case: write the configuration, start the server (start_server)
    local name=$1 port=$2 d=$3 cs=$4
    [[ $name == haproxy* ]] && SPORT[$name]=$(free_port "$port")
    server_conf "$name" "$cs" "$port" "$d"
    case $name in
    nginx) "$NGINX" -p "$d" -e "$d/error.log" -c "$d/server.conf" >>"$d/stdout.log" 2>&1 & ;;
    amnginx-engine)
        mkdir -p "$d/logs"
        OPENSSL_ENGINES=$ANCHORS/qat OPENSSL_CONF=/dev/null "$ANCHORS/amnginx/sbin/nginx" -p "$d" \
            -e "$d/error.log" -c "$d/server.conf" >>"$d/stdout.log" 2>&1 &
        ;;
    amnginx-prov)
        mkdir -p "$d/logs"
        OPENSSL_CONF=$TMP/qat.cnf "$ANCHORS/amnginx/sbin/nginx" -p "$d" -e "$d/error.log" \
            -c "$d/server.conf" >>"$d/stdout.log" 2>&1 &
        ;;
    tlsgate*-b)
        env "${TG_B_ENV[@]}" TLSGATE_STATE_DIR="$d/state" TLSGATE_STATS_FILE="$d/prov.stats" \
            "$TG_B" -p "$d" -c "$d/server.conf" >>"$d/stdout.log" 2>&1 &
        ;;
    tlsgate*)
        TLSGATE_STATE_DIR="$d/state" TLSGATE_STATS_FILE="$d/prov.stats" \
            "$TG" -p "$d" -c "$d/server.conf" >>"$d/stdout.log" 2>&1 &
        ;;
    haproxy*)
        # exec: $! is HAProxy itself (one process, no master)
        (exec env TLSGATE_STATS_FILE="$d/prov.stats" taskset -c "$SRV_CPU" "$HAPROXY" -db \
            -f "$d/haproxy.cfg" >>"$d/stdout.log" 2>&1 </dev/null) &
        ;;
    esac
}

# DEAD[CASE-NAME]: NAME died in CASE (alive, in lib.sh, says why): no more runs of it there
declare -A DEAD=()

declare -A R=() # the generator's last key=value line
# run_replay name secs out [extra options]: the generator on CLI_CPU; fills R. Bounded in
# time. Returns its exit status (1: no handshake completed; output shown on stderr).
run_replay() {
    local name=$1 secs=$2 out=$3 rc=0 kv line
    shift 3
    R=()
    # shellcheck disable=SC2046
    timeout -k 5 $((secs + 30)) taskset -c "$CLI_CPU" "$REPLAY" -k -n localhost -c "$CONNS" \
        -d "$secs" "$@" $(case_client "$CS") "127.0.0.1:${PORT[$name]}" >"$out" 2>"$out.err" &
    CLIENT_PID=$!
    wait "$CLIENT_PID" || rc=$?
    CLIENT_PID=""
    ((rc == 124 || rc == 137)) && die "the generator against $name did not finish within $((secs + 30)) s"
    if ((rc != 0)); then
        cat "$out" "$out.err" >&2
        return "$rc"
    fi
    line=$(tail -n 1 "$out")
    for kv in $line; do R[${kv%%=*}]=${kv#*=}; done
    [[ -n ${R[handshakes]:-} ]] || { cat "$out" "$out.err" >&2; die "cannot parse the generator's output ($name)"; }
}

# verify name case: the recorded handshake is the case's; prints one line
declare -a VERIFY_LINES=()
verify() {
    local name=$1 cs=$2 want_v want_c want_g want_k line
    run_replay "$name" 1 "$TMP/verify-$name-$cs.txt" -r || die "$name case $cs: the generator could not record a handshake"
    read -r want_v want_c want_g want_k <<<"$(case_want "$cs")"
    line="verify $(server_title "$name") case $cs: ${R[version]} ${R[cipher]}, group ${R[group]}, server key ${R[server_key]}, signature ${R[signature]}; client flight 1 ${R[client_flight1_bytes]} B"
    [[ ${R[client_flight2_bytes]} != 0 ]] && line="$line, flight 2 ${R[client_flight2_bytes]} B"
    line="$line; server flight ${R[server_flight_records]} records (${R[server_flight_encrypted]} encrypted), ${R[server_flight_bytes]} B"
    echo "$line"
    VERIFY_LINES+=("$line")
    # shellcheck disable=SC2053
    if [[ ${R[version]} != "$want_v" || ${R[cipher]} != $want_c || ${R[group]} != "$want_g" ||
        ${R[server_key]} != "$want_k" ]]; then
        die "$name case $cs is not what it claims (want $want_v $want_c $want_g $want_k)"
    fi
}

# CPU µs per real handshake with wrk (-c50, Connection: close), for BENCH_WRK=1
declare -A WRK_US=()
measure_wrk() { # name case rep
    local name=$1 cs=$2 rep=$3 out="$TMP/wrk-$1-$2-$3.txt" c0 c1 rc=0 reqs serr path=/0kb.bin
    [[ $name == haproxy* ]] && path=/
    c0=$(cpu_ticks "${WORKER[$name]}")
    run_client "$WRK_SECS" "$out" wrk -t1 -c50 -d "${WRK_SECS}s" -H 'Connection: close' \
        "https://127.0.0.1:${PORT[$name]}$path" || rc=$?
    c1=$(cpu_ticks "${WORKER[$name]}" 2>/dev/null || echo "$c0")
    if ((rc != 0)) || ! alive "$name"; then
        cat "$out" >&2
        note "wrk against $name case $cs failed (rc $rc) ${WHY}"
        return 0
    fi
    reqs=$(awk '/ requests in / { print $1; exit }' "$out")
    serr=$(awk '/Socket errors:/ { gsub(/,/, ""); print $4 + $6 + $8 + $10; exit }' "$out")
    [[ -n $reqs && $reqs -gt 0 ]] || { cat "$out" >&2; die "wrk against $name: no requests"; }
    ((${serr:-0} == 0)) || note "wrk against $name case $cs: ${serr} socket errors"
    WRK_US[$cs-$name-$rep]=$(awk -v c=$((c1 - c0)) -v hz="$HZ" -v n="$reqs" 'BEGIN { printf "%.1f", c / hz * 1e6 / n }')
    printf '  %-13s case %s run %d: wrk %s requests in %ss, %s us/hs (real handshakes)\n' \
        "$name" "$cs" "$rep" "$reqs" "$WRK_SECS" "${WRK_US[$cs-$name-$rep]}"
}

declare -a ROWS=()
declare -A SUM_RATE=() SUM_HS=() SUM_CPU=() N_RUNS=()

# on-CPU and runqueue-wait ns of the worker's main thread (/proc/PID/task/PID/schedstat)
sched_ns() { # pid -> "oncpu wait"
    local a b c
    read -r a b c <"/proc/$1/task/$1/schedstat" || return 1
    echo "$a $b"
}

# crashed name case rep: a row for a server that died during the run
crashed() {
    local name=$1 cs=$2 rep=$3
    DEAD[$cs-$name]=1
    ROWS+=("$cs|$name|$rep|0|0|0|0|0|0|0|0|n/a|CRASHED: ${WHY//|//}")
    note "$name case $cs run $rep: $WHY; no more runs of $name in case $cs"
}

measure() { # name case rep
    local name=$1 cs=$2 rep=$3 out="$TMP/replay-$1-$2-$3.txt" a0 a1 c0 c1 t0 t1 s0 s1 rc=0
    [[ -n ${DEAD[$cs-$name]:-} ]] && return 0
    alive "$name" || { crashed "$name" "$cs" "$rep"; return 0; }
    if ((WARMUP > 0)); then
        run_replay "$name" "$WARMUP" "$TMP/warmup-$name-$cs-$rep.txt" || rc=$?
        alive "$name" || { crashed "$name" "$cs" "$rep"; return 0; }
        ((rc == 0)) || die "$name case $cs: no handshake completed in the warm-up"
    fi
    a0=$(accepts "$name")
    c0=$(cpu_ticks "${WORKER[$name]}")
    s0=$(sched_ns "${WORKER[$name]}" || echo "0 0")
    local perf_pid="" pdata="${PERF_DIR:-$TMP}/perf-$name-$cs-$rep.data"
    if [[ $PERF == 1 ]]; then
        perf record -q -F 1999 -p "${WORKER[$name]}" -o "$pdata" -- sleep "$SECS" \
            >"$TMP/perf-$name-$cs-$rep.log" 2>&1 &
        perf_pid=$!
    fi
    t0=$(now_ns)
    run_replay "$name" "$SECS" "$out" || rc=$?
    t1=$(now_ns)
    [[ -n $perf_pid ]] && { wait "$perf_pid" || note "perf record failed: $(tail -n 2 "$TMP/perf-$name-$cs-$rep.log")"; }
    c1=$(cpu_ticks "${WORKER[$name]}" 2>/dev/null || true)
    s1=$(sched_ns "${WORKER[$name]}" 2>/dev/null || echo "$s0")
    alive "$name" || { crashed "$name" "$cs" "$rep"; return 0; }
    ((rc == 0)) || die "$name case $cs: no handshake completed"
    a1=$(accepts "$name")
    local acc="n/a"
    # connections the server accepted beyond the generator's: its recorded handshake and
    # the second query are expected (2)
    [[ -n $a0 && -n $a1 ]] && acc=$((a1 - a0 - R[started] - 2))
    local errs=${R[errors]} row
    # the worker's main thread over the run: asleep = wall - on CPU - waiting for a CPU
    # (the generator let it idle); runqueue = waiting while other tasks held CPU 0
    row=$(awk -v name="$name" -v cs="$cs" -v rep="$rep" -v hs="${R[handshakes]}" -v rate="${R[hs_per_s]}" \
        -v cpu=$((c1 - c0)) -v hz="$HZ" -v wall_ns=$((t1 - t0)) -v p50="${R[p50_us]}" -v p99="${R[p99_us]}" \
        -v ccpu="${R[client_cpu_pct]}" -v errs="$errs" -v acc="$acc" -v s0="$s0" -v s1="$s1" 'BEGIN {
        wall = wall_ns / 1e9; cpu_s = cpu / hz
        us = hs > 0 ? cpu_s * 1e6 / hs : 0; spct = 100 * cpu_s / wall
        core = us > 0 ? 1e6 / us : 0
        split(s0, a, " "); split(s1, b, " ")
        oncpu = (b[1] - a[1]) / 1e9; rq = (b[2] - a[2]) / 1e9
        idle = 100 * (wall - oncpu - rq) / wall; rqp = 100 * rq / wall
        flag = ""
        if (ccpu > 90) flag = "client-bound"
        if (idle > 5) flag = flag (flag ? ", " : "") sprintf("server idle %.0f%%", idle)
        if (rqp > 5) flag = flag (flag ? ", " : "") sprintf("CPU 0 shared: runqueue %.0f%%", rqp)
        if (errs > 0) flag = flag (flag ? ", " : "") "ERRORS"
        if (acc != "n/a" && (acc > 5 + 0.01 * hs || -acc > 5 + 0.01 * hs)) flag = flag (flag ? ", " : "") "accepts mismatch"
        printf "%s|%s|%d|%.0f|%.0f|%.0f|%.1f|%.2f|%.2f|%.0f|%d|%s|%s\n",
            cs, name, rep, rate, core, spct, us, p50 / 1000, p99 / 1000, ccpu, errs, acc, flag }')
    ROWS+=("$row")
    SUM_RATE[$cs-$name]=$(awk -v a="${SUM_RATE[$cs-$name]:-0}" -v b="${R[hs_per_s]}" 'BEGIN { printf "%.2f", a + b }')
    SUM_HS[$cs-$name]=$((${SUM_HS[$cs-$name]:-0} + R[handshakes]))
    SUM_CPU[$cs-$name]=$(awk -v a="${SUM_CPU[$cs-$name]:-0}" -v c=$((c1 - c0)) -v hz="$HZ" 'BEGIN { printf "%.4f", a + c / hz }')
    N_RUNS[$cs-$name]=$((${N_RUNS[$cs-$name]:-0} + 1))
    local rate core spct us p50 p99 ccpu flag
    IFS='|' read -r _ _ _ rate core spct us p50 p99 ccpu errs acc flag <<<"$row"
    printf '  %-13s case %s run %d: %6s hs/s  %6s hs per CPU-s  server %3s%%  %6s us/hs  p50 %sms p99 %sms  client %s%%  errors %s  accepts-diff %s  %s\n' \
        "$name" "$cs" "$rep" "$rate" "$core" "$spct" "$us" "$p50" "$p99" "$ccpu" "$errs" "$acc" "$flag"
    if ((errs > 0)); then
        note "$name case $cs: errors: refused ${R[err_refused]} reset ${R[err_reset]} timeout ${R[err_timeout]} protocol ${R[err_protocol]} other ${R[err_other]}; last: ${R[last_error]//_/ }"
    fi
    if [[ -n $perf_pid && -s $pdata ]]; then
        PERF_LINES+=("$("$ROOT/bench/perf_families.py" "$pdata" --build "$(dirname "$TG")" \
            --handshakes "${R[handshakes]}" --cpu-us-per-hs "$us" --top 12 \
            --title "$(server_title "$name"), case $cs, run $rep")")
    fi
    [[ $WRK == 1 ]] && measure_wrk "$name" "$cs" "$rep"
    return 0
}
declare -a PERF_LINES=()

# the provider's counters (TLSGATE_STATS_FILE, written when the server exits): batch fill
declare -A PROV_LINE=()
prov_summary() { # name case
    local name=$1 cs=$2 f="${DIR[$1]}/prov.stats" line
    [[ ($name == *-prov || $name == *-prov-b) && -s $f ]] || return 0
    line=$(awk '/^tlsgate pid=/ && / requests=[1-9]/ { l = $0 } END { print l }' "$f")
    [[ -n $line ]] || return 0
    PROV_LINE[$cs-$name]=$(awk '{ for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
        n = 0; s = 0; for (k = 1; k <= 8; k++) { n += v["batch_fill_" k]; s += k * v["batch_fill_" k] }
        printf "requests %d (in async jobs %d, single %d, fallbacks %d), batches %d, mean fill %.2f, full %d",
            v["requests"], v["requests_async"], v["sync"], v["fallbacks"], v["batches"],
            n ? s / n : 0, v["batch_fill_8"] }' <<<"$line")
}

# --- run ---------------------------------------------------------------------------------
VERS="$(openssl version)"
want nginx && VERS="$VERS; $("$NGINX" -v 2>&1 | sed 's/^nginx version: //')"
{ want tlsgate || want tlsgate-prov; } && VERS="$VERS; tlsgate $(tlsgate_version "$TG")"
{ want haproxy || want haproxy-prov; } && VERS="$VERS; HAProxy $(haproxy_version "$HAPROXY")"
{ want amnginx-engine || want amnginx-prov; } && VERS="$VERS; asynch_mode_nginx $("$ANCHORS/amnginx/sbin/nginx" -v 2>&1 | sed 's/^nginx version: //') + QAT_Engine qat_sw (anchor kit $ANCHORS)"
echo "$VERS"
echo "generator: $REPLAY; server worker on CPU $SRV_CPU, generator on CPU $CLI_CPU; ${SECS}s measured + ${WARMUP}s warm-up per run; $CONNS connections; repeat $REPEAT"

for CS in $CASES; do
    # shellcheck disable=SC2086 # SERVERS is a list
    start_case "$CS" "case $CS: $(case_title "$CS")" $SERVERS
    for ((rep = 1; rep <= REPEAT; rep++)); do
        for name in $SERVERS; do
            measure "$name" "$CS" "$rep"
        done
    done
    for name in $SERVERS; do
        stop_server "$name"
        prov_summary "$name" "$CS"
        if [[ -n ${PROV_LINE[$CS-$name]:-} ]]; then echo "  $name provider: ${PROV_LINE[$CS-$name]}"; fi
        # anything at [crit]/[alert]/[emerg] is worth a look, except what the replay causes
        # by design: nginx logs the stale Finished of TLS 1.2 (bad record mac) at [crit]
        crit=$(grep -hE '\[(crit|alert|emerg)\]|ALERT|FATAL' "${DIR[$name]}/error.log" "${DIR[$name]}/stdout.log" 2>/dev/null |
            grep -v 'bad record mac' | sed -E 's/^[0-9\/: ]+//; s/\*[0-9]+ //; s/client: [^,]*, //' |
            sort | uniq -c | sort -rn || true)
        if [[ -n $crit ]]; then
            note "WARNING: $name logged critical messages in case $CS:"
            head -n 5 <<<"$crit" >&2
        fi
        n=$(grep -c 'bad record mac' "${DIR[$name]}/error.log" 2>/dev/null || true)
        if ((${n:-0} > 0)); then
            echo "  $name error log: $n '[crit] ... bad record mac' lines (the replayed stale Finished)"
        fi
    done
done

# --- report ------------------------------------------------------------------------------
mean_rate() { # case name -> mean hs/s, or ""
    [[ -n ${N_RUNS[$1-$2]:-} ]] || return 0
    awk -v s="${SUM_RATE[$1-$2]}" -v n="${N_RUNS[$1-$2]}" 'BEGIN { printf "%.1f", s / n }'
}
per_core() { # case name -> handshakes per server CPU-second over all runs, or ""
    [[ -n ${N_RUNS[$1-$2]:-} ]] || return 0
    awk -v h="${SUM_HS[$1-$2]}" -v c="${SUM_CPU[$1-$2]}" 'BEGIN { printf "%.1f", (c > 0 ? h / c : 0) }'
}

report() {
    local row cs name rep rate core spct us p50 p99 ccpu errs acc flag ng x wcol whead wsep
    report_head "TLS handshakes per server core with replayed client flights (bench/replay.sh)" "$VERS" \
        "One server worker (every thread) on CPU $SRV_CPU; \`taskset -c $CLI_CPU tlsgate_replay -c $CONNS -d $SECS\`" \
        "after a ${WARMUP}s warm-up; run order per case: ($SERVERS) x $REPEAT. No session cache," \
        "no tickets, access log off. tlsgate + provider: ssl_provider tlsgate, ssl_propquery" \
        "\"?provider=tlsgate\", ssl_async on; HAProxy + provider: ssl-provider tlsgate, ssl-propquery" \
        "?provider=tlsgate, ssl-mode-async; HAProxy: nbthread 1."
    for cs in $CASES; do
        for name in $SERVERS; do
            [[ -n ${PROV_LINE[$cs-$name]:-} ]] && echo "- provider counters, $(server_title "$name") case $cs (whole server lifetime): ${PROV_LINE[$cs-$name]}"
        done
    done
    echo
    whead="" wsep=""
    if [[ $WRK == 1 ]]; then
        whead=" wrk CPU µs/hs | replay/wrk |"
        wsep="---:|---:|"
    fi
    echo "| case | server | run | handshakes/s | hs per server CPU-s | server CPU % | server CPU µs/hs | p50 ms | p99 ms | client CPU % | errors | accepts diff | × nginx (per CPU-s) |$whead note |"
    echo "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|$wsep---|"
    for row in "${ROWS[@]}"; do
        IFS='|' read -r cs name rep rate core spct us p50 p99 ccpu errs acc flag <<<"$row"
        ng=$(per_core "$cs" nginx)
        x="n/a"
        [[ -n $ng && $flag != CRASHED* ]] && x=$(awk -v a="$core" -v b="$ng" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }')
        wcol=""
        if [[ $WRK == 1 ]]; then
            wcol=$(awk -v w="${WRK_US[$cs-$name-$rep]:-0}" -v r="$us" 'BEGIN { printf " %.1f | %.2f |", w, (w > 0 ? r / w : 0) }')
        fi
        echo "| $cs | $(server_title "$name") | $rep | $rate | $core | $spct | $us | $p50 | $p99 | $ccpu | $errs | $acc | $x |$wcol $flag |"
    done
    echo
    echo
    echo "Handshakes per server CPU-second (10^6 / CPU µs per handshake over all runs: the"
    echo "saturated rate of one core, robust when other load shares CPU $SRV_CPU), × nginx; then mean handshakes/s:"
    echo
    local head="| case |" sep="|---|"
    for name in $SERVERS; do
        head="$head $(server_title "$name") |"
        sep="$sep---:|"
    done
    echo "$head"
    echo "$sep"
    for cs in $CASES; do
        local line
        line="| $cs: $(case_short "$cs") |"
        ng=$(per_core "$cs" nginx)
        for name in $SERVERS; do
            core=$(per_core "$cs" "$name")
            rate=$(mean_rate "$cs" "$name")
            if [[ -z $core ]]; then
                line="$line ${DEAD[$cs-$name]:+crashed} |"
            elif [[ -n $ng && $name != nginx ]]; then
                line="$line $(awk -v a="$core" -v b="$ng" -v r="$rate" 'BEGIN { printf "%.0f (**%.2f×**); %.0f/s", a, (b > 0 ? a / b : 0), r }') |"
            else
                line="$line $(awk -v a="$core" -v r="$rate" 'BEGIN { printf "%.0f; %.0f/s", a, r }') |"
            fi
        done
        echo "$line"
    done
    if want tlsgate-prov && { want amnginx-engine || want amnginx-prov; }; then
        echo
        echo "tlsgate + provider against the best anchor (asynch_mode_nginx + qat_sw, engine or"
        echo "provider), per server CPU-second and in handshakes/s (issue #20 asks >= 1.15):"
        echo
        echo "| case | tlsgate / anchor per CPU-s | tlsgate / anchor hs/s |"
        echo "|---|---:|---:|"
        for cs in $CASES; do
            local t tr best=0 bestr=0 v
            t=$(per_core "$cs" tlsgate-prov)
            tr=$(mean_rate "$cs" tlsgate-prov)
            for name in amnginx-engine amnginx-prov; do
                want "$name" || continue
                v=$(per_core "$cs" "$name")
                [[ -n $v ]] && best=$(awk -v a="$best" -v b="$v" 'BEGIN { print (b > a ? b : a) }')
                v=$(mean_rate "$cs" "$name")
                [[ -n $v ]] && bestr=$(awk -v a="$bestr" -v b="$v" 'BEGIN { print (b > a ? b : a) }')
            done
            echo "| $cs: $(case_short "$cs") | $(awk -v a="${t:-0}" -v b="$best" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }') | $(awk -v a="${tr:-0}" -v b="$bestr" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }') |"
        done
    fi
    if ((${#PERF_LINES[@]})); then
        echo
        echo "Where the worker's CPU time goes (perf record of the worker over each measured run,"
        echo "bench/perf_families.py; µs per handshake = share × CPU µs/hs):"
        for row in "${PERF_LINES[@]}"; do
            echo
            echo "$row"
        done
    fi
}

echo
REPORT=$(report)
echo "$REPORT"
if [[ -n $TSV ]]; then
    mkdir -p "$(dirname "$TSV")"
    {
        printf '# bench/replay.sh %s, %ss runs, %s connections\n# %s\n' "$(date -u +%FT%TZ)" "$SECS" "$CONNS" "$VERS"
        for row in "${ROWS[@]}"; do printf 'run\t%s\n' "${row//|/$'\t'}"; done
        for cs in $CASES; do
            for name in $SERVERS; do
                [[ -n ${PROV_LINE[$cs-$name]:-} ]] && printf 'prov\t%s\t%s\t%s\n' "$cs" "$name" "${PROV_LINE[$cs-$name]}"
            done
        done
    } >>"$TSV"
fi
if [[ $SAVE == 1 ]]; then save_report replay "$REPORT"; fi
