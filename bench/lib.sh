# bench/lib.sh: what the bench scripts share (sourced, never run). Bash 4+.
#
#   source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
#
# Messages: die, note (prefixed with the script's name). Packages: install_missing.
# Paths: abspath, tlsgate_bin. Ports: free_port, listening. Servers: start_server,
# stop_server (their state in the associative arrays MASTER, WORKER, PORT). Measures:
# cpu_ticks, children_ticks, now_ns, to_ms. Logs: print_log. nginx: nginx_temp_paths.
# Every server listens on 127.0.0.1 on a port that free_port picked outside the ephemeral
# range (so no client's source port takes it meanwhile).

BENCH_SELF=${BENCH_SELF:-$(basename "$0")}
ROOT=${ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}

die() { echo "$BENCH_SELF: error: $*" >&2; exit 1; }
note() { echo "$BENCH_SELF: $*" >&2; }

# install_missing SPEC...: installs (apt-get, Debian) the packages whose command is missing.
# SPEC is COMMAND:PACKAGE (installed when COMMAND is not on PATH), dpkg:PACKAGE (when dpkg
# does not list it) or path:FILE:PACKAGE (when FILE is not executable). BENCH_NO_INSTALL=1:
# fail instead. Packages never start their system services (a denying policy-rc.d for the
# duration, unless the system has one).
install_missing() {
    local pkgs=() sudo=() spec cmd pkg
    for spec in "$@"; do
        cmd=${spec%%:*}
        pkg=${spec##*:}
        case $cmd in
        dpkg) dpkg -s "$pkg" >/dev/null 2>&1 || pkgs+=("$pkg") ;;
        path) spec=${spec#path:}; [[ -x ${spec%:*} ]] || pkgs+=("$pkg") ;;
        *) command -v "$cmd" >/dev/null 2>&1 || pkgs+=("$pkg") ;;
        esac
    done
    ((${#pkgs[@]} == 0)) && return 0
    [[ ${BENCH_NO_INSTALL:-0} == 1 ]] && die "missing packages: ${pkgs[*]} (BENCH_NO_INSTALL=1)"
    command -v apt-get >/dev/null 2>&1 || die "missing packages: ${pkgs[*]} and no apt-get"
    [[ $(id -u) -eq 0 ]] || sudo=(sudo)
    note "installing: ${pkgs[*]}"
    local policy=/usr/sbin/policy-rc.d made_policy=0 rc=0
    if [[ ! -e $policy ]]; then
        printf '#!/bin/sh\nexit 101\n' | "${sudo[@]}" tee "$policy" >/dev/null
        "${sudo[@]}" chmod 755 "$policy"
        made_policy=1
    fi
    { "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq &&
        "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
            --no-install-recommends "${pkgs[@]}" >/dev/null; } || rc=$?
    ((made_policy)) && "${sudo[@]}" rm -f "$policy"
    ((rc == 0)) || die "apt-get install ${pkgs[*]} failed (rc $rc)"
}

# nginx_missing: "nginx:nginx-light" unless some nginx is there (NGINX_BIN, PATH, /usr/sbin).
nginx_missing() {
    command -v nginx >/dev/null 2>&1 || [[ -x /usr/sbin/nginx || -n ${NGINX_BIN:-} ]] ||
        echo "nginx:nginx-light"
}

# haproxy_missing: the same for HAProxy (HAPROXY_BIN).
haproxy_missing() {
    command -v haproxy >/dev/null 2>&1 || [[ -x /usr/sbin/haproxy || -n ${HAPROXY_BIN:-} ]] ||
        echo "haproxy:haproxy"
}

abspath() { # a path relative to $PWD if it exists there, else to the repo root
    if [[ $1 == /* ]]; then echo "$1"; elif [[ -e $1 ]]; then echo "$PWD/$1"; else echo "$ROOT/$1"; fi
}

# tlsgate_bin: the absolute path of TLSGATE_BIN (default build/tlsgate), or die.
tlsgate_bin() {
    local tg
    tg=$(abspath "${TLSGATE_BIN:-build/tlsgate}")
    [[ -x $tg ]] || die "tlsgate binary not found or not executable: $tg (build it: cmake -S . -B build && cmake --build build --target tlsgate, or set TLSGATE_BIN)"
    echo "$tg"
}

# free_port [AVOID...]: a port no TCP socket uses now (/proc/net/tcp, tcp6), outside the
# ephemeral range and not among AVOID (ports picked but not bound yet).
free_port() {
    local avoid=" $* " used p i lo=32768 hi=60999
    read -r lo hi </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || true
    used=$(awk 'NR > 1 { n = split($2, a, ":"); print strtonum("0x" a[n]) }' \
        /proc/net/tcp /proc/net/tcp6 2>/dev/null | sort -u)
    for ((i = 0; i < 500; i++)); do
        p=$((10000 + (RANDOM * 32768 + RANDOM) % 55000))
        ((p >= lo && p <= hi)) && continue
        [[ $avoid == *" $p "* ]] && continue
        grep -qx "$p" <<<"$used" || { echo "$p"; return 0; }
    done
    die "no free port found"
}

listening() { # port: 0 if something listens on 127.0.0.1:port
    local hex
    hex=$(printf '%04X' "$1")
    awk -v h="$hex" 'NR > 1 && $4 == "0A" { split($2, a, ":"); if (a[2] == h) f = 1 } END { exit !f }' \
        /proc/net/tcp
}

cpu_ticks() { # pid -> utime+stime (all threads), clock ticks
    local line rest
    read -r line <"/proc/$1/stat" || return 1
    rest=${line##*) }
    # shellcheck disable=SC2086
    set -- $rest # $1 = field 3 (state) ... $12 = field 14 (utime), $13 = field 15 (stime)
    echo $((${12} + ${13}))
}

children_ticks() { # cutime+cstime of this shell: CPU of reaped clients, clock ticks
    local line rest
    read -r line <"/proc/$$/stat"
    rest=${line##*) }
    # shellcheck disable=SC2086
    set -- $rest # $14 = field 16 (cutime), $15 = field 17 (cstime)
    echo $((${14} + ${15}))
}

now_ns() { date +%s%N; }

to_ms() { # wrk time like 12.34ms / 850.00us / 1.20s / 1.00m -> ms with 2 decimals
    awk -v t="$1" 'BEGIN { v = t + 0; u = t; sub(/^[0-9.]+/, "", u);
        if (u == "us") v /= 1000; else if (u == "s") v *= 1000; else if (u == "m") v *= 60000;
        else if (u == "h") v *= 3600000; printf "%.2f", v }'
}

print_log() { # FILE...: the last PRINT_LOG_LINES (40) lines of each non-empty one, on stderr
    local f n=${PRINT_LOG_LINES:-40}
    for f in "$@"; do
        [[ -s $f ]] || continue
        echo "----- $f (last $n lines) -----" >&2
        tail -n "$n" "$f" >&2
    done
}

# nginx_temp_paths DIR: the *_temp_path lines that keep nginx's compiled-in temp paths
# (under /var/lib/nginx) out of the run: only those of the modules this nginx has.
nginx_temp_paths() {
    local v dir=$1
    v=$("$NGINX" -V 2>&1)
    echo "    client_body_temp_path $dir/body;"
    grep -q -- '--without-http_proxy_module' <<<"$v" || echo "    proxy_temp_path $dir/proxy;"
    grep -q -- '--without-http_fastcgi_module' <<<"$v" || echo "    fastcgi_temp_path $dir/fastcgi;"
    grep -q -- '--without-http_uwsgi_module' <<<"$v" || echo "    uwsgi_temp_path $dir/uwsgi;"
    grep -q -- '--without-http_scgi_module' <<<"$v" || echo "    scgi_temp_path $dir/scgi;"
}

declare -A MASTER=() WORKER=() PORT=()

# start_server NAME DIR LAUNCH [ARGS...]: starts one server and waits until it listens.
# Up to 5 attempts (a port taken meanwhile): each picks PORT with free_port, empties
# DIR/error.log and DIR/stdout.log, and calls `LAUNCH NAME PORT DIR ARGS...` in this shell,
# which writes the configuration and starts the server in the background (its $! is the
# master; a server named haproxy* is one process, its own worker). LAUNCH may pick more
# ports (free_port "$PORT") and list them in START_ALSO_LISTEN: they must listen too.
# On success MASTER[NAME], WORKER[NAME] (the single worker) and PORT[NAME] are set; after
# START_SETTLE seconds (0.2) the worker must still be there. Dies with the server's logs
# and configuration (DIR/*.conf, DIR/*.cfg) when it does not start within 10 s.
start_server() {
    local name=$1 d=$2 launch=$3 attempt port m w i kids p up
    shift 3
    for ((attempt = 1; attempt <= 5; attempt++)); do
        port=$(free_port "${PORT[*]:-}")
        START_ALSO_LISTEN=""
        : >"$d/error.log"
        : >"$d/stdout.log"
        "$launch" "$name" "$port" "$d" "$@"
        m=$!
        MASTER[$name]=$m
        w=""
        for ((i = 0; i < 100; i++)); do
            kill -0 "$m" 2>/dev/null || break
            if [[ $name == haproxy* ]]; then kids=$m; else kids=$(pgrep -P "$m" || true); fi
            up=1
            for p in $port $START_ALSO_LISTEN; do listening "$p" || up=0; done
            if [[ -n $kids ]] && ((up)); then
                w=$kids
                break
            fi
            sleep 0.1
        done
        if [[ -n $w ]]; then
            [[ $w == *[!0-9]* ]] && { print_log "$d/error.log" "$d/stdout.log"; die "$name: expected one worker process, master $m has children: ${w//$'\n'/ }"; }
            WORKER[$name]=$w
            PORT[$name]=$port
            sleep "${START_SETTLE:-0.2}" # let the worker finish its start-up (the provider's threads)
            [[ $name == haproxy* ]] || [[ $(pgrep -P "$m" || true) == "$w" ]] ||
                { print_log "$d/error.log" "$d/stdout.log"; die "$name: worker $w exited right after start (master $m)"; }
            return 0
        fi
        if kill -0 "$m" 2>/dev/null; then
            stop_server "$name"
            print_log "$d/error.log" "$d/stdout.log"
            die "$name did not start listening on 127.0.0.1:$port $START_ALSO_LISTEN with a worker within 10 s (config in $d)"
        fi
        wait "$m" 2>/dev/null || true
        MASTER[$name]=""
        if grep -qi 'address already in use' "$d/error.log" "$d/stdout.log" 2>/dev/null; then
            note "$name: port $port $START_ALSO_LISTEN taken meanwhile, retrying with others"
            continue
        fi
        for p in "$d"/*.conf "$d"/*.cfg; do
            [[ -f $p ]] && { echo "----- $p -----" >&2; cat "$p" >&2; }
        done
        print_log "$d/error.log" "$d/stdout.log"
        die "$name failed to start (its log is above)"
    done
    die "$name: no free port after 5 attempts"
}

# stop_server NAME: SIGTERM to its master (HAProxy: SIGUSR1 first, a soft stop that lets
# OPENSSL_cleanup run, so the provider writes TLSGATE_STATS_FILE), SIGKILL after 5 s, and
# SIGKILL to a worker that outlived its master. Nothing when NAME is not running.
stop_server() {
    local name=$1 m=${MASTER[$1]:-} i
    [[ -n $m ]] || return 0
    MASTER[$name]=""
    if [[ $name == haproxy* ]]; then
        kill -USR1 "$m" 2>/dev/null || true
        for ((i = 0; i < 30; i++)); do
            kill -0 "$m" 2>/dev/null || break
            sleep 0.1
        done
    fi
    kill -TERM "$m" 2>/dev/null || true
    for ((i = 0; i < 50; i++)); do
        kill -0 "$m" 2>/dev/null || break
        sleep 0.1
    done
    if kill -0 "$m" 2>/dev/null; then
        note "$name ($m) did not stop on SIGTERM in 5 s, sending SIGKILL"
        pkill -KILL -P "$m" 2>/dev/null || true
        kill -KILL "$m" 2>/dev/null || true
    fi
    wait "$m" 2>/dev/null || true
    if [[ -n ${WORKER[$name]:-} && ${WORKER[$name]} != "$m" ]]; then
        kill -KILL "${WORKER[$name]}" 2>/dev/null || true
    fi
    WORKER[$name]=""
}

# make_certs DIR [rsa] [ecdsa]: self-signed certificates for localhost / 127.0.0.1, valid
# 2 days: DIR/rsa.{key,crt} (RSA-2048) and DIR/ecdsa.{key,crt} (P-256); both by default.
# Keys mode 600. Dies when openssl fails.
make_certs() {
    local dir=$1 k
    shift
    (($# > 0)) || set -- rsa ecdsa
    mkdir -p "$dir"
    for k in "$@"; do
        case $k in
        rsa) set -- -newkey rsa:2048 ;;
        ecdsa) set -- -newkey ec -pkeyopt ec_paramgen_curve:P-256 ;;
        *) die "make_certs: unknown key type $k" ;;
        esac
        openssl req -x509 "$@" -nodes -days 2 -subj /CN=localhost \
            -addext subjectAltName=DNS:localhost,IP:127.0.0.1 \
            -keyout "$dir/$k.key" -out "$dir/$k.crt" 2>/dev/null ||
            die "cannot create the $k certificate"
        chmod 600 "$dir/$k.key"
    done
}

# cpu_roles WHAT: SRV_CPU=0 (the server's worker), CLI_CPU=1 (the load generator, WHAT in
# the warning), both 0 on a single-CPU machine; NCPU and HZ (clock ticks per second).
cpu_roles() {
    NCPU=$(nproc)
    SRV_CPU=0
    CLI_CPU=1
    if ((NCPU < 2)); then
        note "warning: only $NCPU CPU: server and $1 share CPU 0, numbers are not meaningful"
        CLI_CPU=0
    fi
    HZ=$(getconf CLK_TCK)
}

# trap_cleanup: the script's cleanup() runs on exit; SIGINT / SIGTERM exit 130 / 143.
trap_cleanup() {
    trap cleanup EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
}

# make_docroot DIR: DIR/0kb.bin (empty) and DIR/1kb.bin (1,024 bytes), the files benched.
make_docroot() {
    mkdir -p "$1"
    : >"$1/0kb.bin"
    head -c 1024 /dev/zero | tr '\0' 'a' >"$1/1kb.bin"
}

# check_alive NAME LOGDIR: dies (with LOGDIR's logs) unless NAME's master and the worker
# start_server saw are both still there (a crashed worker respawned would skew a figure).
check_alive() {
    local name=$1 d=$2 m=${MASTER[$1]} w=${WORKER[$1]} now
    if ! kill -0 "$m" 2>/dev/null; then
        print_log "$d/error.log" "$d/stdout.log"
        die "$name master $m died during the bench"
    fi
    now=$(pgrep -P "$m" || true)
    if [[ $now != "$w" ]]; then
        print_log "$d/error.log" "$d/stdout.log"
        die "$name worker changed during the bench: was $w, '${now//$'\n'/ }' (crash and respawn?)"
    fi
}
