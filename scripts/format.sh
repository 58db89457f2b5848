#!/bin/bash
# Format the tree's C sources with the committed .clang-format (Debian 12's clang-format 14).
#   scripts/format.sh           rewrite every tracked *.c / *.h in place (`make format`)
#   scripts/format.sh --check   change nothing; list the files clang-format would change and
#                               exit 1 if there is any (`make check`)
#   scripts/format.sh [--check] FILE...   the same on the files given
# Generated tables (*_table.h, written by gen_comb_table.py / x25519_ifma_table.py) are left
# as their generators write them. Needs git (the file list) unless files are given.
set -euo pipefail
cd "$(dirname "$0")/.."
check=0
if [ "${1:-}" = "--check" ]; then check=1; shift; fi
CLANG_FORMAT=${CLANG_FORMAT:-clang-format}
if ! command -v "$CLANG_FORMAT" >/dev/null; then
    echo "format: $CLANG_FORMAT not found (Debian: apt-get install clang-format)" >&2
    exit 2
fi
if [ $# -gt 0 ]; then
    files=("$@")
else
    mapfile -t files < <(git ls-files '*.c' '*.h' | grep -v '_table\.h$')
fi
if [ $check -eq 0 ]; then
    printf '%s\0' "${files[@]}" | xargs -0 -n 16 "$CLANG_FORMAT" -i --style=file
    exit 0
fi
bad=0
for f in "${files[@]}"; do
    if ! "$CLANG_FORMAT" --style=file "$f" | cmp -s - "$f"; then
        n=$("$CLANG_FORMAT" --style=file "$f" | diff "$f" - | grep -c '^[<>]' || true)
        echo "format: $f: $n lines differ (run make format, or: clang-format -i $f)"
        bad=$((bad + 1))
    fi
done
if [ $bad -gt 0 ]; then
    echo "format: $bad of ${#files[@]} files differ from .clang-format" >&2
    exit 1
fi
echo "format: ok (${#files[@]} files)"
