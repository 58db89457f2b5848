#!/usr/bin/env bash
# bench/mb8.sh: mb8's kernels against OpenSSL in one process per size (bench/mb8_rsa.c),
# then the dudect-style timing-leak tests of the RSA and ECC kernels (bench/dudect_rsa.c,
# bench/dudect_ecc.c, bench/dudect_mlkem.c), pinned to one CPU. The X25519, P-256, P-384 and
# ML-KEM benches run too, and each of the elliptic-curve 8-lane kernels' share of this core's
# IFMA peak: ops/s x IFMA per op (counted by bench/mb8_ifma_count.c) / peak (issue #19).
#
# Usage: bench/mb8.sh     Environment: BUILD_DIR (build), BENCH_CPU (0),
#   BENCH_DUDECT_N (4000 measurements)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
CPU=${BENCH_CPU:-0}
N=${BENCH_DUDECT_N:-4000}
cmake --build "$BUILD_DIR" --target mb8_rsa_bench dudect_rsa dudect_ecc dudect_mlkem >/dev/null
taskset -c "$CPU" "$BUILD_DIR/mb8_rsa_bench" tests/diff/rsa_keys 0.5 3
counts=$(mktemp)
trap 'rm -f "$counts"' EXIT
if cmake --build "$BUILD_DIR" --target mb8_ifma_count >/dev/null 2>&1; then
    taskset -c "$CPU" "$BUILD_DIR/mb8_ifma_count" >"$counts" || : >"$counts"
fi
for b in mb8_x25519_bench mb8_p256_bench mb8_p384_bench mb8_mlkem_bench; do
    if cmake --build "$BUILD_DIR" --target "$b" >/dev/null 2>&1; then
        out=$(taskset -c "$CPU" "$BUILD_DIR/$b")
        echo "$out"
        curve=${b#mb8_}; curve=${curve%_bench}
        # the 8-lane lines (op words, lanes, mb8 ops/s, ...) joined with the counts
        echo "$out" | awk -v curve="$curve" -v counts="$counts" '
            BEGIN { while ((getline l < counts) > 0) { split(l, f, " ");
                        if (f[1] == "ifma") n[f[2] " " f[3]] = f[4]; else if (f[1] == "ifma_peak") peak = f[2] } }
            { for (i = 2; i <= NF; i++) if ($i == "8" && $(i + 1) ~ /^[0-9]+$/) {
                  op = $1; for (j = 2; j < i; j++) op = op "_" $j
                  k = curve " " op
                  if (k in n && peak > 0)
                      printf "# %s %s, 8 lanes: %d ops/s x %d IFMA/op = %.2f of the IFMA peak (%.3g/s)\n", curve, op, $(i + 1), n[k], $(i + 1) * n[k] / peak, peak
                  break } }'
    fi
done
taskset -c "$CPU" "$BUILD_DIR/dudect_rsa" tests/diff/rsa_keys "$N"
taskset -c "$CPU" "$BUILD_DIR/dudect_ecc" $((N * 5))
taskset -c "$CPU" "$BUILD_DIR/dudect_mlkem" $((N * 5))
