#!/bin/sh
# Install the Debian packages tlsgate needs to build, test and run; skip what is present.
# Usage: scripts/deps.sh [build|test|bench]   (default: test). Idempotent.
set -eu
what=${1:-test}
pkgs="build-essential cmake pkg-config libssl-dev openssl libhiredis-dev libipsec-mb-dev libgmp-dev libnghttp2-dev"
case "$what" in
  build) ;;
  test)  pkgs="$pkgs libcmocka-dev clang clang-format cppcheck curl wrk python3 procps valgrind haproxy dpkg-dev groff-base logrotate redis-server nginx-light nghttp2-client python3-h2" ;;
  bench) pkgs="$pkgs libcmocka-dev clang curl wrk nghttp2-client python3 procps valgrind nginx-light util-linux haproxy gnuplot-nox redis-server" ;;
  *) echo "usage: $0 [build|test|bench]" >&2; exit 2 ;;
esac
missing=""
for p in $pkgs; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing="$missing $p"
  fi
done
[ -z "$missing" ] && exit 0
echo "deps: installing:$missing" >&2
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# nginx's package starts a service on install where systemd runs; we never need it.
$SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
