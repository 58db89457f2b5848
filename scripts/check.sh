#!/bin/bash
# `make check`: the house rules, checked. Runs every step even when one fails, then prints
# a summary and exits 1 if any step failed. Steps:
#   format    scripts/format.sh --check   (the committed .clang-format)
#   layering  tests/layering.sh           (the include graph runs one way)
#   analyze   scripts/analyze.sh          (cppcheck: zero findings, or justified in place)
#   build     cmake -DTLSGATE_WERROR=ON   (warnings are errors)
#   quick     ctest -L quick              (unit, differential, fuzz replays, fast integration)
# Environment: BUILD (build dir, default build), JOBS (default nproc), CMAKE_FLAGS.
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
JOBS=${JOBS:-$(nproc 2>/dev/null || echo 2)}
failed=()
summary=()
step() { # step NAME COMMAND...
    local name=$1 t0=$SECONDS rc
    shift
    echo "== check: $name"
    "$@"
    rc=$?
    summary+=("$(printf '%-9s %-4s %4ds' "$name" "$([ $rc -eq 0 ] && echo ok || echo FAIL)" $((SECONDS - t0)))")
    [ $rc -eq 0 ] || failed+=("$name")
}
build() {
    # shellcheck disable=SC2086 # CMAKE_FLAGS is a list of flags
    cmake -S . -B "$BUILD" -DTLSGATE_WERROR=ON ${CMAKE_FLAGS:-} >/dev/null &&
        cmake --build "$BUILD" -j "$JOBS"
}
quick() {
    (cd "$BUILD" && ctest -L quick --output-on-failure -j "$JOBS")
}
step format scripts/format.sh --check
step layering tests/layering.sh
step analyze scripts/analyze.sh
step build build
if [[ " ${failed[*]} " == *" build "* ]]; then
    summary+=("quick     skipped (the build failed)")
    failed+=(quick)
else
    step quick quick
fi
echo "== check: summary (${SECONDS}s)"
printf '   %s\n' "${summary[@]}"
if [ ${#failed[@]} -gt 0 ]; then
    echo "check: FAILED: ${failed[*]}" >&2
    exit 1
fi
echo "check: ok"
