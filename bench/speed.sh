#!/usr/bin/env bash
# bench/speed.sh: crypto speed of the tlsgate provider against OpenSSL's default provider,
# measured with `openssl speed` in the same invocation, pinned to one CPU.
#
# For each algorithm and async job count: the default provider's ops/s, then the same
# command with the tlsgate provider preferred (-propquery '?provider=tlsgate'), and the
# ratio. The provider's counters (TLSGATE_STATS_FILE) show the batch fill it reached.
# Until the AVX-512 IFMA kernels land (issues #5, #6), mb8 computes batches with its
# portable reference code: ratios below 1 are expected and are what #5/#6 must turn around.
#
# Usage: bench/speed.sh        (after `make build`)
# Environment: BUILD_DIR (build), BENCH_SECONDS (2), BENCH_ALGS ("rsa2048 rsa3072 rsa4096
#   ecdsap256 ecdhp256 ecdhx25519 ecdsap384 ecdhp384"), BENCH_JOBS ("1 8 64"), BENCH_CPU (0),
#   BENCH_TSV (also append one tab-separated row per line to this file: alg jobs
#   default_per_s tlsgate_per_s ratio batches fill_1 .. fill_8)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
SECS=${BENCH_SECONDS:-2}
ALGS=${BENCH_ALGS:-"rsa2048 rsa3072 rsa4096 ecdsap256 ecdhp256 ecdhx25519 ecdsap384 ecdhp384"}
JOBS=${BENCH_JOBS:-"1 8 64"}
CPU=${BENCH_CPU:-0}
TSV=${BENCH_TSV:-}
if [ -n "$TSV" ]; then
    case $TSV in /*) ;; *) TSV=$OLDPWD/$TSV ;; esac # relative to the caller's directory
    mkdir -p "$(dirname "$TSV")"
    printf '# bench/speed.sh %s, %ss per run, CPU %s\n' "$(date -u +%FT%TZ)" "$SECS" "$CPU" >>"$TSV"
fi
for t in openssl taskset; do
    command -v "$t" >/dev/null || { echo "bench/speed.sh: $t is missing (scripts/deps.sh bench)" >&2; exit 1; }
done
[ -f "$BUILD_DIR/tlsgate.so" ] || cmake --build "$BUILD_DIR" --target tlsgate_prov >/dev/null
PROV=$(cd "$BUILD_DIR" && pwd)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# ops/s of the first result column `openssl speed` prints for ALG (sign/s, or op/s)
rate() { # rate OUTFILE ALG
    case "$2" in
    rsa*) awk '/^rsa [0-9]+ bits/ {print $6; exit}' "$1" ;;
    ecdsa*) awk '/ecdsa \(/ {print $(NF-1); exit}' "$1" ;;
    *) awk '/ ecdh \(/ {print $NF; exit}' "$1" ;;
    esac
}

echo "# openssl speed, ${SECS}s per run, CPU $CPU, $(nproc) CPUs, $(date -u +%FT%TZ)"
printf "%-11s %5s %12s %12s %7s  %s\n" alg jobs default/s tlsgate/s ratio "tlsgate batches (fill 1..8)"
for alg in $ALGS; do
    for j in $JOBS; do
        taskset -c "$CPU" openssl speed -seconds "$SECS" -async_jobs "$j" "$alg" \
            > "$TMP/d.out" 2>&1 || true
        rm -f "$TMP/stats"
        TLSGATE_STATS_FILE="$TMP/stats" taskset -c "$CPU" openssl speed -provider-path "$PROV" \
            -provider tlsgate -provider default -propquery '?provider=tlsgate' \
            -seconds "$SECS" -async_jobs "$j" "$alg" > "$TMP/t.out" 2>&1 || true
        d=$(rate "$TMP/d.out" "$alg")
        t=$(rate "$TMP/t.out" "$alg")
        fill=$(sed -n 's/.*batches=\([0-9]*\) batch_fill_1=\([0-9]*\) batch_fill_2=\([0-9]*\) batch_fill_3=\([0-9]*\) batch_fill_4=\([0-9]*\) batch_fill_5=\([0-9]*\) batch_fill_6=\([0-9]*\) batch_fill_7=\([0-9]*\) batch_fill_8=\([0-9]*\).*/\1 (\2 \3 \4 \5 \6 \7 \8 \9)/p' "$TMP/stats" 2>/dev/null | tail -1)
        ratio=$(awk -v a="${t:-0}" -v b="${d:-0}" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }')
        printf "%-11s %5s %12s %12s %7s  %s\n" "$alg" "$j" "${d:-?}" "${t:-?}" "$ratio" "${fill:-?}"
        if [ -n "$TSV" ]; then
            # shellcheck disable=SC2086 # fill: "batches (f1 .. f8)"
            printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$alg" "$j" "${d:-0}" "${t:-0}" "$ratio" \
                "$(echo ${fill:-} | tr -d '()' | tr ' ' '\t')" >>"$TSV"
        fi
    done
done
