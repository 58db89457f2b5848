#!/bin/sh
# dist_deb.sh BUILD_DIR: the Debian package (dist/mkdeb.sh) builds, installs into a scratch
# root with `dpkg --root` (maintainer scripts run chrootless: the postinst creates the
# default certificate there), its dependencies are satisfied on this host, and the
# installed files work without systemctl: `tlsgate -V` names the module directory the
# package used; `-t` accepts the installed default configuration; the server starts with
# it (on a free port) and serves the packaged page over TLS verified against the created
# certificate; the installed provider module loads into `openssl`; the man pages render;
# the unit passes `systemd-analyze verify`; the logrotate snippet rotates a running
# server's access log and its postrotate USR1 makes the server write to the new file;
# a purge removes everything, the created certificate included.
# Exit 77 (skipped) without dpkg-deb/dpkg-shlibdeps.
set -u
build=$(cd "$1" && pwd)
src=$(cd "$(dirname "$0")/.." && pwd)
for t in dpkg dpkg-deb dpkg-shlibdeps curl openssl python3; do
    command -v $t >/dev/null || { echo "SKIPPED: $t not found"; exit 77; }
done
T=$(mktemp -d "${TMPDIR:-/tmp}/tlsgate-dist.XXXXXX")
chmod 755 "$T" # the packaged config runs the workers as www-data: they must reach the scratch root
pid=""
cleanup() {
    [ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null && sleep 0.3
    [ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null
    rm -rf "$T"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; [ -f "$T/server.out" ] && tail -20 "$T/server.out"; exit 1; }

deb=$(sh "$src/dist/mkdeb.sh" "$build" "$T/out") || fail "mkdeb.sh failed"
[ -s "$deb" ] || fail "no package at '$deb'"
R=$T/root
mkdir -p "$R/var/lib/dpkg/updates" "$R/var/lib/dpkg/info"
: > "$R/var/lib/dpkg/status"
dpkg --root="$R" --force-script-chrootless --force-depends --force-not-root --log=/dev/null \
    -i "$deb" > "$T/dpkg.out" 2>&1 || { cat "$T/dpkg.out"; fail "dpkg -i into a scratch root"; }
dpkg --root="$R" -s tlsgate | grep -q '^Status: install ok installed' || fail "not installed"

# Depends: every dependency is installed on this host at a version that satisfies it
deps=$(dpkg-deb -f "$deb" Depends)
echo "$deps" | tr ',' '\n' | while read -r dep; do
    name=${dep%% *}
    have=$(dpkg-query -W -f='${Version}' "$name" 2>/dev/null) || { echo "FAIL: $name not installed"; exit 1; }
    case "$dep" in
    *"("*) op=$(echo "$dep" | sed 's/.*(\([<>=]*\) .*/\1/'); ver=$(echo "$dep" | sed 's/.*(.* \(.*\))/\1/')
        dpkg --compare-versions "$have" "$op" "$ver" || { echo "FAIL: $name $have does not satisfy $dep"; exit 1; } ;;
    esac
done || fail "Depends: $deps"

moddir=$(openssl version -m | sed 's/.*"\(.*\)"/\1/')
for f in /usr/sbin/tlsgate "$moddir/tlsgate.so" /etc/tlsgate/tlsgate.conf \
         /lib/systemd/system/tlsgate.service /etc/logrotate.d/tlsgate \
         /usr/share/man/man8/tlsgate.8.gz /usr/share/man/man5/tlsgate.conf.5.gz \
         /etc/tlsgate/ssl/tlsgate.crt /etc/tlsgate/ssl/tlsgate.key; do
    [ -s "$R$f" ] || fail "$f is not installed"
done
[ "$(stat -c %a "$R/etc/tlsgate/ssl/tlsgate.key")" = 600 ] || fail "the default key is not mode 0600"
dpkg-deb -f "$deb" Version | grep -qx "$("$R/usr/sbin/tlsgate" -v | awk '{print $3}')" ||
    fail "package and binary versions differ"

export TLSGATE_STATE_DIR="$T/run"
mkdir -p "$TLSGATE_STATE_DIR"
"$R/usr/sbin/tlsgate" -V > "$T/V.out" 2>&1 || { cat "$T/V.out"; fail "tlsgate -V"; }
grep -qx "OpenSSL modules directory: $moddir" "$T/V.out" || { cat "$T/V.out"; fail "-V module directory"; }
grep -q "^AVX-512 IFMA path: " "$T/V.out" || fail "-V has no IFMA line"
"$R/usr/sbin/tlsgate" -t -c "$R/etc/tlsgate/tlsgate.conf" > "$T/t.out" 2>&1 ||
    { cat "$T/t.out"; fail "tlsgate -t with the installed default configuration"; }
grep -q "test is successful" "$T/t.out" || fail "-t output: $(cat "$T/t.out")"

# the installed provider module loads into OpenSSL
openssl list -providers -provider-path "$R$moddir" -provider tlsgate > "$T/prov.out" 2>&1 &&
    grep -q "^  tlsgate" "$T/prov.out" || { cat "$T/prov.out"; fail "openssl cannot load the installed tlsgate.so"; }

# man pages render
if command -v groff >/dev/null; then
    for p in man8/tlsgate.8.gz man5/tlsgate.conf.5.gz; do
        err=$(gzip -dc "$R/usr/share/man/$p" | groff -man -Tutf8 -ww -z 2>&1)
        [ -z "$err" ] || fail "groff: $p: $err"
    done
fi

# the unit: systemd's own checker, with the installed binary and man pages
if command -v systemd-analyze >/dev/null; then
    sed "s#/usr/sbin/tlsgate#$R/usr/sbin/tlsgate#g" "$R/lib/systemd/system/tlsgate.service" \
        > "$T/tlsgate.service"
    MANPATH="$R/usr/share/man" systemd-analyze verify "$T/tlsgate.service" > "$T/verify.out" 2>&1 ||
        { cat "$T/verify.out"; fail "systemd-analyze verify"; }
fi

# start with the installed configuration (relocated into the scratch root, another port,
# one worker, access log on) and serve the packaged page
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
logdir=$T/log
mkdir -p "$logdir"
sed -e "s/127.0.0.1:8443/127.0.0.1:$port/" -e "s/^worker_processes auto;/worker_processes 1;/" \
    -e "s#root /usr/share/tlsgate/html;#root $R/usr/share/tlsgate/html;#" \
    -e "s|# access_log /var/log/tlsgate/access.log;|access_log $logdir/access.log;|" \
    "$R/etc/tlsgate/tlsgate.conf" > "$R/etc/tlsgate/smoke.conf"
grep -q "access_log $logdir/access.log;" "$R/etc/tlsgate/smoke.conf" || fail "no access_log line to enable"
"$R/usr/sbin/tlsgate" -c "$R/etc/tlsgate/smoke.conf" > "$T/server.out" 2>&1 &
pid=$!
get() {
    curl -sS --max-time 5 --cacert "$R/etc/tlsgate/ssl/tlsgate.crt" \
        --resolve "localhost:$port:127.0.0.1" "https://localhost:$port$1"
}
i=0
until get / > "$T/page" 2>/dev/null; do
    i=$((i + 1)); [ $i -lt 100 ] || fail "the installed server does not answer on $port"
    kill -0 $pid 2>/dev/null || fail "the installed server exited"
    sleep 0.1
done
grep -q "tlsgate is serving" "$T/page" || fail "unexpected page: $(cat "$T/page")"

# logrotate: the packaged snippet with this run's log directory and pid file
if command -v logrotate >/dev/null; then
    sed -e "s#/var/log/tlsgate#$logdir#" -e "s#/run/tlsgate/tlsgate.pid#$TLSGATE_STATE_DIR/tlsgate.pid#g" \
        -e "s#create 0640 root adm#create 0640#" "$R/etc/logrotate.d/tlsgate" > "$T/lr.conf"
    i=0
    until [ -s "$logdir/access.log" ]; do # the worker logs after the response went out
        i=$((i + 1)); [ $i -lt 50 ] || fail "no access log line before rotation"
        sleep 0.1
    done
    logrotate -f -s "$T/lr.state" "$T/lr.conf" > "$T/lr.out" 2>&1 || { cat "$T/lr.out"; fail "logrotate"; }
    [ -s "$logdir/access.log.1" ] || fail "logrotate did not rotate access.log"
    i=0
    until [ -s "$logdir/access.log" ]; do
        get /after-rotation > /dev/null 2>&1
        i=$((i + 1)); [ $i -lt 50 ] || fail "nothing written to the new access.log after postrotate"
        sleep 0.1
    done
    grep -q "after-rotation" "$logdir/access.log" || fail "the new access.log: $(cat "$logdir/access.log")"
    grep -q '"GET / HTTP/1.1" 200' "$logdir/access.log.1" || fail "the rotated file: $(cat "$logdir/access.log.1")"
fi
kill -QUIT $pid
i=0
while kill -0 $pid 2>/dev/null; do
    i=$((i + 1)); [ $i -lt 100 ] || fail "the installed server did not stop on SIGQUIT"
    sleep 0.1
done
wait $pid
rc=$?
pid=""
[ $rc -eq 0 ] || fail "the installed server exited with $rc"

# remove and purge: files gone, the created certificate and /etc/tlsgate too
rm -f "$R/etc/tlsgate/smoke.conf"
dpkg --root="$R" --force-script-chrootless --force-not-root --log=/dev/null --purge tlsgate \
    > "$T/purge.out" 2>&1 || { cat "$T/purge.out"; fail "dpkg --purge"; }
for f in /usr/sbin/tlsgate "$moddir/tlsgate.so" /etc/tlsgate /lib/systemd/system/tlsgate.service \
         /etc/logrotate.d/tlsgate; do
    [ ! -e "$R$f" ] || fail "$f is left after purge"
done
echo "dist_deb: ok ($(basename "$deb"), Depends: $deps)"
