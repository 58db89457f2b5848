#!/bin/bash
# Static analysis of every C file in the tree with Debian's cppcheck (`make check` runs it).
# The checks: cppcheck's "warning" and "portability" classes (real defects: leaks, use of
# uninitialised memory, out-of-bounds, undefined casts), plus its "error" class, always on.
# The "style" class is not enabled (opinions, not defects). A finding that is a false
# positive is justified where it is, on the line before it:
#     /* cppcheck-suppress <id>: <why this is not a defect> */
# Exit 0: no finding; 1: findings (listed as file:line: severity: message [id]); 2: no
# cppcheck (Debian: apt-get install cppcheck).
set -uo pipefail
cd "$(dirname "$0")/.."
if ! command -v cppcheck >/dev/null; then
    echo "analyze: cppcheck not found (Debian: apt-get install cppcheck)" >&2
    exit 2
fi
out=$(mktemp)
trap 'rm -f "$out"' EXIT
# -D: the project's build defines (CMakeLists.txt: _GNU_SOURCE; the tests' module dirs are
# set by CMake at build time and only need to be defined here).
nice -n 10 cppcheck -q -j "${JOBS:-2}" --std=c11 --enable=warning,portability --inline-suppr \
    --error-exitcode=0 --template='{file}:{line}: {severity}: {message} [{id}]' \
    -D_GNU_SOURCE -D__x86_64__ -DTLSGATE_PROV_DIR='"."' -DFAKEACCEL_MODULE_DIR='"."' \
    -Igw -Iprov -Iprov/include -Imb8/include -Imb8/src -Itests/diff -Itests/fakeaccel \
    gw prov mb8 tests bench 2>"$out"
findings=$(grep -E '^[^ ].*:[0-9]+: [a-z]+: .*\[[A-Za-z0-9_]+\]$' "$out" | sort -u)
if [ -n "$findings" ]; then
    echo "$findings"
    echo "analyze: $(echo "$findings" | wc -l) cppcheck findings (fix each, or justify it in place)" >&2
    exit 1
fi
echo "analyze: ok (cppcheck $(cppcheck --version | cut -d' ' -f2): gw prov mb8 tests bench)"
