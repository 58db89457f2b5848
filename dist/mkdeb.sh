#!/bin/sh
# mkdeb.sh BUILD_DIR OUT_DIR: build the Debian package tlsgate_VERSION_ARCH.deb from a
# built tree (no network): /usr/sbin/tlsgate, the provider module tlsgate.so in OpenSSL's
# module directory, /etc/tlsgate/tlsgate.conf, the systemd unit, the logrotate snippet,
# tlsgate(8) and tlsgate.conf(5). Depends: from dpkg-shlibdeps. Prints the .deb's path.
set -eu
build=$(cd "${1:?usage: mkdeb.sh BUILD_DIR OUT_DIR}" && pwd)
out=$(mkdir -p "${2:?usage: mkdeb.sh BUILD_DIR OUT_DIR}" && cd "$2" && pwd)
src=$(cd "$(dirname "$0")/.." && pwd)
for f in "$build/tlsgate" "$build/tlsgate.so" "$build/man/tlsgate.8" "$build/man/tlsgate.conf.5"; do
    [ -f "$f" ] || { echo "mkdeb: $f is missing: build the targets tlsgate, tlsgate_prov and man" >&2; exit 1; }
done
for t in dpkg-deb dpkg-shlibdeps gzip openssl; do
    command -v $t >/dev/null || { echo "mkdeb: $t not found (apt-get install dpkg-dev)" >&2; exit 1; }
done
version=$("$build/tlsgate" -v | awk '{print $3}')
arch=$(dpkg --print-architecture)
# where this system's OpenSSL loads providers from (the binary reports the same directory)
moddir=$("$build/tlsgate" -V | sed -n 's/^OpenSSL modules directory: //p')
[ -n "$moddir" ] || { echo "mkdeb: cannot find OpenSSL's module directory" >&2; exit 1; }

work=$(mktemp -d "${TMPDIR:-/tmp}/tlsgate-deb.XXXXXX")
trap 'rm -rf "$work"' EXIT
root=$work/root
install -d "$root/DEBIAN" "$root/usr/sbin" "$root$moddir" "$root/etc/tlsgate" \
    "$root/lib/systemd/system" "$root/etc/logrotate.d" "$root/usr/share/man/man8" \
    "$root/usr/share/man/man5" "$root/usr/share/tlsgate/html" "$root/usr/share/doc/tlsgate"
install -m 0755 "$build/tlsgate" "$root/usr/sbin/tlsgate"
install -m 0644 "$build/tlsgate.so" "$root$moddir/tlsgate.so"
strip --strip-unneeded "$root/usr/sbin/tlsgate" "$root$moddir/tlsgate.so" 2>/dev/null || true
install -m 0644 "$src/dist/tlsgate.conf" "$root/etc/tlsgate/tlsgate.conf"
install -m 0644 "$src/dist/tlsgate.service" "$root/lib/systemd/system/tlsgate.service"
install -m 0644 "$src/dist/tlsgate.logrotate" "$root/etc/logrotate.d/tlsgate"
install -m 0755 "$src/dist/make-default-cert" "$root/usr/share/tlsgate/make-default-cert"
install -m 0644 "$src/dist/index.html" "$root/usr/share/tlsgate/html/index.html"
gzip -9n -c "$build/man/tlsgate.8" > "$root/usr/share/man/man8/tlsgate.8.gz"
gzip -9n -c "$build/man/tlsgate.conf.5" > "$root/usr/share/man/man5/tlsgate.conf.5.gz"
gzip -9n -c "$src/docs/config.md" > "$root/usr/share/doc/tlsgate/config.md.gz"
install -m 0644 "$src/README.md" "$root/usr/share/doc/tlsgate/README.md"
chmod 0644 "$root/usr/share/man/man8/tlsgate.8.gz" "$root/usr/share/man/man5/tlsgate.conf.5.gz" \
    "$root/usr/share/doc/tlsgate/config.md.gz"

# shared-library dependencies, as debhelper's ${shlibs:Depends} would compute them
mkdir -p "$work/pkg/debian"
printf 'Source: tlsgate\n\nPackage: tlsgate\nArchitecture: any\n' > "$work/pkg/debian/control"
shlibs=$(cd "$work/pkg" && dpkg-shlibdeps -O "$root/usr/sbin/tlsgate" "$root$moddir/tlsgate.so" \
    2>/dev/null | sed -n 's/^shlibs:Depends=//p')
[ -n "$shlibs" ] || { echo "mkdeb: dpkg-shlibdeps found no dependencies" >&2; exit 1; }

size=$(du -sk --exclude=DEBIAN "$root" | cut -f1)
cat > "$root/DEBIAN/control" <<CONTROL
Package: tlsgate
Version: $version
Architecture: $arch
Maintainer: tlsgate developers <tlsgate@localhost>
Installed-Size: $size
Depends: $shlibs, openssl
Recommends: libipsec-mb1
Suggests: logrotate
Section: httpd
Priority: optional
Homepage: https://localhost/tlsgate
Description: TLS-terminating HTTPS server and gateway with a batching OpenSSL 3 provider
 tlsgate terminates TLS 1.2 and 1.3 and serves HTTP/1.1 with an nginx-style
 configuration and command line (master and worker processes, reload on SIGHUP,
 OCSP stapling from files). Its OpenSSL 3 provider "tlsgate", also installed as
 a module for any OpenSSL 3 application, batches the RSA, ECDSA P-256 and X25519
 operations of concurrent handshakes on CPUs with AVX-512 IFMA.
CONTROL
printf '/etc/tlsgate/tlsgate.conf\n/etc/logrotate.d/tlsgate\n' > "$root/DEBIAN/conffiles"
cat > "$root/DEBIAN/postinst" <<'SCRIPT'
#!/bin/sh
# DPKG_ROOT: set by dpkg --root with --force-script-chrootless
set -e
if [ "$1" = configure ]; then
    "$DPKG_ROOT/usr/share/tlsgate/make-default-cert" "$DPKG_ROOT/etc/tlsgate/ssl"
    if [ -z "$DPKG_ROOT" ] && [ -d /run/systemd/system ]; then
        systemctl daemon-reload >/dev/null || true
    fi
fi
exit 0
SCRIPT
cat > "$root/DEBIAN/prerm" <<'SCRIPT'
#!/bin/sh
set -e
if [ "$1" = remove ] && [ -z "$DPKG_ROOT" ] && [ -d /run/systemd/system ]; then
    systemctl stop tlsgate.service >/dev/null 2>&1 || true
fi
exit 0
SCRIPT
cat > "$root/DEBIAN/postrm" <<'SCRIPT'
#!/bin/sh
set -e
if [ "$1" = purge ]; then
    rm -f "$DPKG_ROOT/etc/tlsgate/ssl/tlsgate.crt" "$DPKG_ROOT/etc/tlsgate/ssl/tlsgate.key"
    rmdir "$DPKG_ROOT/etc/tlsgate/ssl" "$DPKG_ROOT/etc/tlsgate" 2>/dev/null || true
fi
if [ -z "$DPKG_ROOT" ] && [ -d /run/systemd/system ]; then
    systemctl daemon-reload >/dev/null 2>&1 || true
fi
exit 0
SCRIPT
chmod 0755 "$root/DEBIAN/postinst" "$root/DEBIAN/prerm" "$root/DEBIAN/postrm"
deb="$out/tlsgate_${version}_${arch}.deb"
dpkg-deb --root-owner-group -Zxz --build "$root" "$deb" >/dev/null
echo "$deb"
