#!/usr/bin/env bash
# bench/pq.sh: CPU per TLS 1.3 handshake of tlsgate with the post-quantum hybrid group
# X25519MLKEM768 against X25519 alone (issue #24), saturated and one connection at a time.
#
# Usage (from the repo root, after
#   cmake --build build --target tlsgate tlsgate_prov tlsgate_replay):
#   flock /tmp/tlsgate-bench.lock bench/pq.sh
# Environment: TLSGATE_BIN (build/tlsgate; tlsgate.so and tlsgate_replay beside it),
#   BENCH_SECONDS (5) per run, BENCH_ROUNDS (3) runs per group and load, alternating,
#   BENCH_CONNS (256) saturated connections, BENCH_LOADS ("sat single"),
#   BENCH_GROUPS ("X25519 X25519MLKEM768").
#
# Server: tlsgate, one worker pinned to CPU 0, `ssl_provider tlsgate; ssl_propquery
# "?provider=tlsgate"; ssl_async on;`, TLSv1.3 only, an ECDSA P-256 certificate, no session
# cache or tickets, access log off, `ssl_ecdh_curve` default (auto: X25519MLKEM768 first).
# Load: bench/replay.c (tlsgate_replay) on CPU 1 replays one recorded ClientHello whose
# first group is the one measured (-g GROUP); the recording client offers X25519MLKEM768
# because OPENSSL_CONF loads the tlsgate provider into it (no change to the generator:
# the recorded flight carries the 1,216-byte hybrid key share, the server does its whole
# part: encapsulation, X25519 key generation and derivation, ECDSA signature).
# sat = BENCH_CONNS connections in flight; single = one connection at a time (-c 1).
#
# Columns: hs/s (generator), server CPU us/hs = worker utime+stime delta (/proc/PID/stat,
# all threads) / handshakes; p50/p99 latency (ms, connect -> server flight). The summary
# gives, per load, the median us/hs per group and the ratio to X25519's.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench/lib.sh
source bench/lib.sh
BIN=$(tlsgate_bin)
BDIR=$(dirname "$BIN")
REPLAY=$BDIR/tlsgate_replay
SECS=${BENCH_SECONDS:-5}
ROUNDS=${BENCH_ROUNDS:-3}
CONNS=${BENCH_CONNS:-256}
LOADS=${BENCH_LOADS:-sat single}
GROUPS_=${BENCH_GROUPS:-X25519 X25519MLKEM768}
for f in "$REPLAY" "$BDIR/tlsgate.so"; do [[ -e $f ]] || die "missing $f"; done
HZ=$(getconf CLK_TCK)
TMP=$(mktemp -d)
cleanup() { stop_all; }
trap cleanup EXIT

make_certs "$TMP/certs" ecdsa
make_docroot "$TMP/html"
launch() { # name port dir (start_server): TLS on PORT, the plain status page on P_ST
    local d=$3
    P_TLS=$2
    P_ST=$(free_port "$P_TLS")
    # shellcheck disable=SC2034 # read by start_server (lib.sh)
    START_ALSO_LISTEN=$P_ST
    {
        tlsgate_main_conf "$d" 8192 "ssl_provider tlsgate;" 'ssl_propquery "?provider=tlsgate";'
        http_open "$P_TLS"
        cat <<CONF
        ssl_certificate $TMP/certs/ecdsa.crt;
        ssl_certificate_key $TMP/certs/ecdsa.key;
        ssl_protocols TLSv1.3;
        root $TMP/html;
        ssl_async on;
    }
    server {
        listen 127.0.0.1:$P_ST;
        location = /status { status; }
    }
}
CONF
    } >"$d/tlsgate.conf"
    "$BIN" -c "$d/tlsgate.conf" >>"$d/stdout.log" 2>&1 & # runs in the foreground
}
cat >"$TMP/openssl.cnf" <<CNF
openssl_conf = openssl_init
[openssl_init]
providers = provider_sect
[provider_sect]
tlsgate = tlsgate_sect
default = default_sect
[tlsgate_sect]
module = $BDIR/tlsgate.so
activate = 1
[default_sect]
activate = 1
CNF
start_server tlsgate "$TMP" launch

kv() { tr ' ' '\n' <<<"$1" | awk -F= -v k="$2" '$1 == k {print $2}'; }

echo "# bench/pq.sh $(date -u '+%Y-%m-%d %H:%M UTC'), $(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# tlsgate worker on CPU 0, tlsgate_replay on CPU 1, ${SECS}s a run, $ROUNDS rounds, sat = $CONNS connections"
printf "%-7s %-15s %5s %9s %12s %8s %8s %s\n" load group round hs/s "CPU us/hs" p50_ms p99_ms flight1_B
declare -A RES
for load in $LOADS; do
    c=$CONNS
    [[ $load == single ]] && c=1
    for r in $(seq "$ROUNDS"); do
        for g in $GROUPS_; do
            # a short warm-up (pools, batch policy)
            OPENSSL_CONF=$TMP/openssl.cnf timeout 30 taskset -c 1 "$REPLAY" -k -c "$c" -d 1 -g "$g" "127.0.0.1:$P_TLS" >/dev/null
            t0=$(cpu_ticks "${WORKER[tlsgate]}")
            out=$(OPENSSL_CONF=$TMP/openssl.cnf timeout $((SECS + 30)) taskset -c 1 "$REPLAY" -k -c "$c" -d "$SECS" -g "$g" "127.0.0.1:$P_TLS")
            t1=$(cpu_ticks "${WORKER[tlsgate]}")
            hs=$(kv "$out" handshakes)
            us=$(awk -v d=$((t1 - t0)) -v hz="$HZ" -v n="$hs" 'BEGIN {printf "%.1f", (n > 0) ? d / hz * 1e6 / n : 0}')
            printf "%-7s %-15s %5d %9s %12s %8.2f %8.2f %s\n" "$load" "$g" "$r" "$(kv "$out" hs_per_s)" "$us" \
                "$(awk -v v="$(kv "$out" p50_us)" 'BEGIN {print v / 1000}')" \
                "$(awk -v v="$(kv "$out" p99_us)" 'BEGIN {print v / 1000}')" "$(kv "$out" client_flight1_bytes)"
            RES[$load,$g]+="$us "
        done
    done
done
echo
echo "# median CPU us per handshake, and the ratio to the first group's"
for load in $LOADS; do
    base=
    for g in $GROUPS_; do
        med=$(tr ' ' '\n' <<<"${RES[$load,$g]}" | grep . | sort -n | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}')
        [[ -z $base ]] && base=$med
        printf "%-7s %-15s %8s us/hs  x%.3f\n" "$load" "$g" "$med" "$(awk -v a="$med" -v b="$base" 'BEGIN {print a / b}')"
    done
done
# what the provider did with the ML-KEM encapsulations and the X25519 halves over all runs
curl -s "http://127.0.0.1:$P_ST/status" | python3 -c '
import json, sys
js = json.load(sys.stdin)
print("# handshakes by group:", {k: v for k, v in js["handshakes"]["by_group"].items() if v})
for a in ("mlkem768", "x25519", "keygen_x25519", "ecdsa_p256"):
    m = (js.get("provider") or {}).get("alg", {}).get(a)
    if m:
        print("# %-13s requests %d, batched %d, single %d, pool hits %d, batches %d, fill 1..8 %s"
              % (a, m["requests"], m["requests_async"], m["single"], m["pool_hits"], m["batches"], m["fill"]))
' || true
grep -E "\[(alert|crit|emerg)\]" "$TMP/error.log" || true
