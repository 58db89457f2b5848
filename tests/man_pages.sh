#!/bin/sh
# man_pages.sh MAN_DIR CONFIG_MD: tlsgate(8) and tlsgate.conf(5) render with groff (-ww:
# every warning) without a message; tlsgate.conf(5) has an entry for every directive of
# docs/config.md (the same table); the rendered pages hold their NAME lines.
# Exit 77 (skipped) without groff.
set -u
dir=$1
md=$2
command -v groff >/dev/null || { echo "SKIPPED: groff not found (apt-get install groff-base)"; exit 77; }
fail=0
for page in tlsgate.8 tlsgate.conf.5; do
    f=$dir/$page
    [ -s "$f" ] || { echo "FAIL: $f is missing or empty (build the man target)"; exit 1; }
    err=$(groff -man -Tutf8 -ww -z "$f" 2>&1)
    if [ -n "$err" ]; then
        echo "FAIL: groff warns about $page:"; echo "$err"; fail=1
    fi
done
out8=$(groff -man -Tutf8 -P-c "$dir/tlsgate.8" 2>&1 | col -b)
out5=$(groff -man -Tutf8 -P-c "$dir/tlsgate.conf.5" 2>&1 | col -b)
echo "$out8" | grep -q "tlsgate - TLS-terminating HTTPS server and gateway" ||
    { echo "FAIL: tlsgate(8) has no NAME line"; fail=1; }
echo "$out8" | grep -q -- "-V *Print the version, the build options" ||
    { echo "FAIL: tlsgate(8) does not document -V"; fail=1; }
echo "$out5" | grep -q "tlsgate.conf - tlsgate configuration file" ||
    { echo "FAIL: tlsgate.conf(5) has no NAME line"; fail=1; }
n=0
for d in $(sed -n 's/^| `\([a-z_0-9]*\)` |.*/\1/p' "$md" | sort -u); do
    n=$((n + 1))
    grep -q "^\\\\fB$d\\\\fR" "$dir/tlsgate.conf.5" ||
        { echo "FAIL: tlsgate.conf(5) has no entry for $d"; fail=1; }
done
[ "$n" -ge 30 ] || { echo "FAIL: only $n directives found in $md"; fail=1; }
[ $fail -eq 0 ] && echo "man pages: ok ($n directives)"
exit $fail
