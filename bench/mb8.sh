#!/usr/bin/env bash
# bench/mb8.sh: mb8's kernels against OpenSSL in one process per size (bench/mb8_rsa.c),
# then the dudect-style timing-leak tests of the RSA and ECC kernels (bench/dudect_rsa.c,
# bench/dudect_ecc.c, bench/dudect_mlkem.c), pinned to one CPU. The x25519/p256 benches run too when they are built.
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
for b in mb8_x25519_bench mb8_p256_bench mb8_mlkem_bench; do
    if cmake --build "$BUILD_DIR" --target "$b" >/dev/null 2>&1; then
        taskset -c "$CPU" "$BUILD_DIR/$b"
    fi
done
taskset -c "$CPU" "$BUILD_DIR/dudect_rsa" tests/diff/rsa_keys "$N"
taskset -c "$CPU" "$BUILD_DIR/dudect_ecc" $((N * 5))
taskset -c "$CPU" "$BUILD_DIR/dudect_mlkem" $((N * 5))
