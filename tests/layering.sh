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
check 'gw/net/*.c gw/net/*.h' 'tls/|sock/|http/|proxy/|cycle|worker|master' 'net/ sits below tls/ and http/'
check 'gw/tls/*.c gw/tls/*.h' 'net/|sock/|http/|proxy/|cycle|worker|master' 'tls/ sits below http/'
# The socket layer (issue #22): TLS, async parking, timers and close below every protocol;
# it knows no protocol, no configuration and no worker.
check 'gw/sock/*.c gw/sock/*.h' 'http/|proxy/|conf/|cycle|worker|master' \
      'sock/ sits below every protocol (http/, proxy/) and knows no configuration'
check 'gw/http/*.c gw/http/*.h gw/proxy/*.c gw/proxy/*.h' 'sock/internal|worker|master' \
      'protocols use sock/sock.h only, and no worker global: the worker hands them its loop'
check 'mb8/*/*.c mb8/*/*.h mb8/*/*/*.c mb8/*/*/*.h' 'openssl/|gw/|prov/' 'mb8/ uses neither OpenSSL nor the gateway'
check 'prov/*.c prov/*.h prov/*/*.c prov/*/*.h' 'gw/|core/|net/|tls/|http/' 'prov/ does not use the gateway'
# The connection layers stay small enough to read (issue #22: about 600 lines a file); the
# HTTP/1.1 parser (libc only, fuzzed) is one unit of its own and exempt.
for f in gw/sock/*.c gw/http/*.c gw/proxy/*.c; do
    [ "$f" = gw/http/parser.c ] && continue
    n=$(wc -l < "$f")
    if [ "$n" -gt 620 ]; then
        echo "layering: $f: $n lines (split it: at most about 600)" >&2
        bad=1
    fi
done
[ $bad -eq 0 ] && echo "layering: ok"
exit $bad
