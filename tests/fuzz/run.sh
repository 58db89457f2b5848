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
mkdir -p build/fuzz
for t in "${targets[@]}"; do
  srcs=$(sed -n 's|^// fuzz-sources: ||p' "tests/fuzz/$t.c")
  clang -g -O1 -D_GNU_SOURCE -fsanitize=fuzzer,address,undefined -Igw -Ibuild/generated \
    -o "build/fuzz/$t" "tests/fuzz/$t.c" $srcs
  mkdir -p "tests/fuzz/corpus/$t"
  "build/fuzz/$t" -max_total_time="$secs" -max_len=8192 "tests/fuzz/corpus/$t"
done
