#!/bin/bash
# hardening: the release build's binaries carry the hardening CMakeLists.txt asks for
# (TLSGATE_HARDEN), read back from the ELF files as checksec does:
#   PIE           ELF type DYN with a PIE flag in DT_FLAGS_1 (tlsgate, the benches' binaries)
#   full RELRO    a GNU_RELRO segment and BIND_NOW (DT_FLAGS BIND_NOW or DT_FLAGS_1 NOW)
#   canary        a call to __stack_chk_fail (-fstack-protector-strong)
#   FORTIFY       calls to checked libc functions (__*_chk; -D_FORTIFY_SOURCE=2)
#   NX            a GNU_STACK segment without the X flag
# Usage: tests/hardening.sh BUILD_DIR. Exit 0: every binary has all of them; 1: a missing
# one is named; 77 (skip): no readelf, or a build without hardening (Debug, sanitizers,
# TLSGATE_HARDEN=OFF: the CMake cache says so).
set -uo pipefail
build=${1:?usage: tests/hardening.sh BUILD_DIR}
command -v readelf >/dev/null || { echo "hardening: SKIPPED: no readelf (binutils)"; exit 77; }
cache=$build/CMakeCache.txt
get() { sed -n "s/^$1:[A-Z]*=//p" "$cache"; }
type=$(get CMAKE_BUILD_TYPE)
case "$type" in Release | RelWithDebInfo | MinSizeRel) ;; *)
    echo "hardening: SKIPPED: build type '$type' is not a release build"; exit 77 ;;
esac
for o in TLSGATE_SANITIZE TLSGATE_TSAN; do
    [[ $(get $o) == ON ]] && { echo "hardening: SKIPPED: $o=ON"; exit 77; }
done
[[ $(get TLSGATE_HARDEN) == OFF ]] && { echo "hardening: SKIPPED: TLSGATE_HARDEN=OFF"; exit 77; }

bad=0
fail() { echo "hardening: $1: $2"; bad=1; here=1; }
check() { # FILE KIND(exe|so)
    local f=$1 kind=$2 hdr dyn seg syms here=0
    [[ -f $f ]] || { fail "$f" "not built"; return; }
    hdr=$(readelf -hW "$f") dyn=$(readelf -dW "$f") seg=$(readelf -lW "$f")
    syms=$(readelf --dyn-syms -W "$f")
    grep -q 'Type:[[:space:]]*DYN' <<<"$hdr" || fail "$f" "not position-independent (ELF type is not DYN)"
    if [[ $kind == exe ]]; then
        grep -qE 'FLAGS_1.*PIE' <<<"$dyn" || fail "$f" "not a PIE (no PIE in DT_FLAGS_1)"
    fi
    grep -q 'GNU_RELRO' <<<"$seg" || fail "$f" "no RELRO segment"
    grep -qE '\(FLAGS\).*BIND_NOW|FLAGS_1.*NOW' <<<"$dyn" || fail "$f" "partial RELRO only (no BIND_NOW)"
    grep -qE 'GNU_STACK.* RW  ' <<<"$seg" || fail "$f" "executable stack"
    grep -q '__stack_chk_fail' <<<"$syms" || fail "$f" "no stack protector (__stack_chk_fail not called)"
    grep -qE '__[a-z0-9_]+_chk(@|$| )' <<<"$(grep -v __stack_chk_fail <<<"$syms")" ||
        fail "$f" "not fortified (no __*_chk libc call)"
    [[ $here -eq 0 ]] && echo "hardening: $f: PIE, full RELRO, NX, canary, FORTIFY"
}
check "$build/tlsgate" exe
check "$build/tlsgate.so" so
check "$build/tlsgate_replay" exe
exit $bad
