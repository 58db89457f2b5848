#!/bin/bash
# Coverage-guided fuzzing with libFuzzer (clang). Usage: tests/fuzz/run.sh [SECONDS] [TARGET...]
# Each target is tests/fuzz/TARGET.c plus the sources listed in its "// fuzz-sources:" line;
# new inputs are added to tests/fuzz/corpus/TARGET/.
set -euo pipefail
cd "$(dirname "$0")/../.."
secs=${1:-60}; shift || true
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  for f in tests/fuzz/*.c; do b=$(basename "$f" .c); [ "$b" = replay ] || targets+=("$b"); done
fi
# The sources of a target: its "// fuzz-sources: A.c B.c" line and the "// C.c D.c" lines
# right after it (clang-format wraps a long comment); 00-fuzz.cmake checks them against
# the CTest build's list.
fuzz_sources() {
  awk '/^\/\/ fuzz-sources: / { sub(/^\/\/ fuzz-sources: /, ""); print; f = 1; next }
       f && /^\/\/ ([^ ]+\.c ?)+$/ { sub(/^\/\/ /, ""); print; next }
       { f = 0 }' "$1" | tr '\n' ' '
}
mkdir -p build/fuzz
for t in "${targets[@]}"; do
  srcs=$(fuzz_sources "tests/fuzz/$t.c")
  libs=()
  if grep -q '^// fuzz-link: gw' "tests/fuzz/$t.c"; then
    # the whole gateway library, instrumented: a clang build of target gw in build/fuzz-lib
    cmake -S . -B build/fuzz-lib -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=Debug \
      -DCMAKE_C_FLAGS="-fsanitize=fuzzer-no-link,address,undefined" >/dev/null
    cmake --build build/fuzz-lib --target gw -j2 >/dev/null
    libs=(build/fuzz-lib/libgw.a build/fuzz-lib/prov/libtgprov.a build/fuzz-lib/mb8/libmb8.a
          -lssl -lcrypto -lpthread)
  fi
  clang -g -O1 -D_GNU_SOURCE -fsanitize=fuzzer,address,undefined -Igw -Ibuild/generated \
    -o "build/fuzz/$t" "tests/fuzz/$t.c" $srcs "${libs[@]}"
  mkdir -p "tests/fuzz/corpus/$t"
  "build/fuzz/$t" -max_total_time="$secs" -max_len=8192 "tests/fuzz/corpus/$t"
done
