#!/bin/bash
# The include graph runs one way (docs/architecture.md): a file may include its own layer
# and the layers below it, never one above. Prints each violation; exits 1 if any.
set -uo pipefail
cd "$(dirname "$0")/.."
bad=0
check() { # check GLOB FORBIDDEN_REGEX WHY
    local glob=$1 re=$2 why=$3 f
    for f in $glob; do
        [ -f "$f" ] || continue
        if grep -nE "^[[:space:]]*#[[:space:]]*include[[:space:]]*[<\"]($re)" "$f"; then
            echo "layering: $f: $why" >&2
            bad=1
        fi
    done
}
check 'gw/conf/*.c gw/conf/*.h' 'openssl/|core/|net/|tls/|http/|cycle|worker|master' \
      'conf/ is libc only (its tests and fuzz target compile it alone)'
check 'gw/http/parser.c gw/http/parser.h' 'openssl/|core/|net/|tls/|conf/|cycle|worker|master' \
      'the HTTP parser is libc only'
check 'gw/proxy/response.c gw/proxy/response.h' 'openssl/|core/|net/|tls/|http/|conf/|cycle|worker|master' \
      'the upstream response parser is libc only (its fuzz target compiles it alone)'
check 'gw/core/*.c gw/core/*.h' 'net/|tls/|http/|cycle|worker|master' 'core/ is the bottom layer'
check 'gw/net/*.c gw/net/*.h' 'tls/|http/|cycle|worker|master' 'net/ sits below tls/ and http/'
check 'gw/tls/*.c gw/tls/*.h' 'net/|http/|cycle|worker|master' 'tls/ sits below http/'
check 'mb8/*/*.c mb8/*/*.h mb8/*/*/*.c mb8/*/*/*.h' 'openssl/|gw/|prov/' 'mb8/ uses neither OpenSSL nor the gateway'
check 'prov/*.c prov/*.h prov/*/*.c prov/*/*.h' 'gw/|core/|net/|tls/|http/' 'prov/ does not use the gateway'
[ $bad -eq 0 ] && echo "layering: ok"
exit $bad
