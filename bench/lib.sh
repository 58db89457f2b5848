# bench/lib.sh: what the bench scripts share (sourced, never run). Bash 4+.
#
#   source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
#
# Messages: die, note (prefixed with the script's name). Packages: install_missing.
# Settings: env_uint, env_words. Paths: abspath, tlsgate_bin. Ports: free_port, listening.
# Servers: start_server, stop_server, stop_servers, serve, start_case, pin_worker, alive,
# check_alive (their state in the associative arrays MASTER, WORKER, PORT, DIR);
# configurations: tlsgate_main_conf, server_conf; versions: tlsgate_version,
# haproxy_version. Checks of what a server negotiates: tls_probe, verify_probe. Measures:
# cpu_ticks, children_ticks, now_ns, to_ms, run_figures. Reports: run_stamp, report_head, save_report. Logs:
# print_log. nginx: nginx_temp_paths.
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

# env_uint VAR ENV DEFAULT [MIN]: VAR = the environment variable ENV (DEFAULT when unset or
# empty); dies unless it is a whole number of at least MIN (default 0).
env_uint() {
    local val=${!2:-$3} min=${4:-0}
    [[ $val =~ ^[0-9]+$ ]] || die "$2 must be a non-negative integer (got '$val')"
    ((10#$val >= min)) || die "$2 must be >= $min (got $val)"
    printf -v "$1" '%d' "$((10#$val))"
}

# env_words VAR ENV DEFAULT WORD...: VAR = the environment variable ENV (DEFAULT when unset
# or empty), a list of words; dies when the list is empty or has a word not among WORD.
env_words() {
    local var=$1 env=$2 val=${!2:-$3} w
    shift 3
    [[ -n ${val// /} ]] || die "$env is empty"
    for w in $val; do
        [[ " $* " == *" $w "* ]] || die "unknown '$w' in $env (known: $*)"
    done
    printf -v "$var" '%s' "$val"
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

# SPORT[NAME]: a second port of a server, where a script has one (HAProxy's stats socket,
# tlsgate's plain status server); server_conf reads it.
declare -A MASTER=() WORKER=() PORT=() DIR=() SPORT=()

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

# start_case CASE HEADING NAME...: a case's heading (a blank line, then `== HEADING ==`),
# then for each server NAME: serve NAME CASE, and the script's `verify NAME CASE` (which
# dies when the server does not run the case it claims).
start_case() {
    local cs=$1 name
    printf '\n== %s ==\n' "$2"
    shift 2
    for name in "$@"; do
        serve "$name" "$cs"
        verify "$name" "$cs"
    done
}

# stop_servers NAME...: stop_server for each NAME.
stop_servers() {
    local name
    for name in "$@"; do stop_server "$name"; done
}

# tlsgate_version BIN, haproxy_version BIN: the version number that BIN -v prints.
tlsgate_version() { "$1" -v 2>&1 | awk 'NR == 1 { sub(/^tlsgate[^0-9]*/, ""); print }'; }
haproxy_version() { "$1" -v 2>&1 | awk 'NR == 1 { print $3 }'; }

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

# run_client SECS OUT CMD...: the client CMD on CLI_CPU, its output (stdout and stderr)
# in OUT, its pid in CLIENT_PID while it runs (for stop_all "$CLIENT_PID" at exit). Dies
# when it has not finished SECS + 60 seconds later; else returns its exit status.
CLIENT_PID=""
run_client() {
    local secs=$1 out=$2 rc=0
    shift 2
    timeout -k 5 $((secs + 60)) taskset -c "$CLI_CPU" "$@" >"$out" 2>&1 &
    CLIENT_PID=$!
    wait "$CLIENT_PID" || rc=$?
    CLIENT_PID=""
    ((rc == 124 || rc == 137)) && die "$1 did not finish within $((secs + 60)) s"
    return "$rc"
}

# wrk_parse OUT WHAT: reads wrk's output OUT into WRK[reqs] (requests completed),
# WRK[rps] (Requests/sec), WRK[p50], WRK[p99] (wrk's text, as 12.34ms; empty without
# --latency), WRK[serr] (socket errors: connect, read, write, timeout) and WRK[n2xx]
# (non-2xx/3xx responses), both 0 when wrk names none. Dies, showing OUT, when there is no
# request count or rate (WHAT names the run).
declare -A WRK=()
wrk_parse() {
    local out=$1
    WRK[reqs]=$(awk '/ requests in / { print $1; exit }' "$out")
    WRK[rps]=$(awk '/^Requests\/sec:/ { print $2; exit }' "$out")
    WRK[p50]=$(awk '$1 == "50%" { print $2; exit }' "$out")
    WRK[p99]=$(awk '$1 == "99%" { print $2; exit }' "$out")
    WRK[serr]=$(awk '/Socket errors:/ { gsub(/,/, ""); print $4 + $6 + $8 + $10; exit }' "$out")
    WRK[n2xx]=$(awk '/Non-2xx or 3xx responses:/ { print $NF; exit }' "$out")
    [[ -n ${WRK[serr]} ]] || WRK[serr]=0
    [[ -n ${WRK[n2xx]} ]] || WRK[n2xx]=0
    [[ -n ${WRK[reqs]} && -n ${WRK[rps]} ]] || { cat "$out" >&2; die "cannot parse wrk output for $2"; }
}

# run_figures REQS CPU CLI WALL_NS SERR N2XX ACC CONNS: the figures of a measured run that
# completed REQS requests (or handshakes) in WALL_NS ns, with CPU and CLI clock ticks (HZ a
# second) of the server's worker and the client. Sets FIG[us] (worker CPU µs a request),
# FIG[wpct] and FIG[cpct] (worker and client CPU, % of the wall time), FIG[cpu_s] (worker
# CPU s) and FIG[flag]: "client-bound" (client CPU > 90%: the rate measures the client),
# "ERRORS" (SERR socket errors or N2XX non-2xx answers), "accepts!=requests" (ACC, the
# connections the server accepted, "n/a" when unknown, is off REQS by more than CONNS + 2%),
# joined by ", ".
declare -A FIG=()
run_figures() {
    local out
    out=$(awk -v reqs="$1" -v cpu="$2" -v cli="$3" -v hz="$HZ" -v wall_ns="$4" -v serr="$5" \
        -v n2xx="$6" -v acc="$7" -v conns="$8" 'BEGIN {
        wall = wall_ns / 1e9; cpu_s = cpu / hz; cli_s = cli / hz
        us = reqs > 0 ? cpu_s * 1e6 / reqs : 0
        wpct = 100 * cpu_s / wall; cpct = 100 * cli_s / wall
        flag = ""
        if (cpct > 90) flag = "client-bound"
        if (serr > 0 || n2xx > 0) flag = flag (flag ? ", " : "") "ERRORS"
        if (acc != "n/a" && (acc - reqs > conns + 0.02 * reqs || reqs - acc > 0.02 * reqs)) flag = flag (flag ? ", " : "") "accepts!=requests"
        printf "%.6f|%.6f|%.6f|%.6f|%s\n", us, wpct, cpct, cpu_s, flag }')
    IFS='|' read -r 'FIG[us]' 'FIG[wpct]' 'FIG[cpct]' 'FIG[cpu_s]' 'FIG[flag]' <<<"$out"
}

# stop_all [PID...]: what a script's cleanup() does at exit: SIGTERM to the client
# processes PID (empty ones skipped) and waits for them, stops every server start_server
# started (stop_server), removes $TMP.
stop_all() {
    set +e
    local p s
    for p in "$@"; do
        [[ -n $p ]] && kill -TERM "$p" 2>/dev/null && wait "$p" 2>/dev/null
    done
    for s in "${!MASTER[@]}"; do stop_server "$s"; done
    rm -rf "$TMP"
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

# alive NAME: 0 while NAME's master and the worker start_server saw are both there (a
# haproxy* server: its one process); else 1 with WHY saying what went and the first fatal
# line of its logs, and the logs shown (print_log). check_alive dies instead.
WHY=""
alive() {
    local name=$1 m=${MASTER[$1]:-} w=${WORKER[$1]:-} now fatal
    WHY=""
    if [[ -z $m ]] || ! kill -0 "$m" 2>/dev/null; then
        WHY="server process died"
    elif [[ $name != haproxy* ]]; then
        now=$(pgrep -P "$m" || true)
        [[ $now == "$w" ]] || WHY="worker $w gone (now: '${now//$'\n'/ }'): crash and respawn?"
    fi
    [[ -z $WHY ]] && return 0
    fatal=$(grep -hm1 -E 'FATAL|BUG|\[(crit|alert|emerg)\]|[Ss]egmentation' "${DIR[$name]}/stdout.log" "${DIR[$name]}/error.log" 2>/dev/null | head -n 1 || true)
    [[ -n $fatal ]] && WHY="$WHY: ${fatal:0:160}"
    print_log "${DIR[$name]}/error.log" "${DIR[$name]}/stdout.log"
    return 1
}

# run_stamp: "YYYY-mm-dd HH:MM UTC, KERNEL RELEASE MACHINE, N CPUs (MODEL)": the line that
# dates a report and names the machine.
run_stamp() {
    echo "$(date -u '+%Y-%m-%d %H:%M UTC'), $(uname -srm), $(nproc) CPUs ($(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo))"
}

# report_head TITLE VERSIONS [SETUP...]: a report's opening: "# TITLE", a blank line,
# run_stamp, VERSIONS; then the SETUP lines (how the run was set up), if any, after a
# blank line; then, after another, the verify lines (VERIFY_LINES) as a list.
report_head() {
    printf '# %s\n\n%s\n%s\n' "$1" "$(run_stamp)" "$2"
    shift 2
    (($# > 0)) && printf '\n%s\n' "$(printf '%s\n' "$@")"
    echo
    if ((${#VERIFY_LINES[@]} > 0)); then printf -- '- %s\n' "${VERIFY_LINES[@]}"; fi
}

# pin_worker NAME: every thread of NAME's worker on SRV_CPU (worker_cpu_affinity pins the
# worker, but threads started before it, such as the provider's timer thread, keep the
# old mask); notes the threads it moved with the CPUs they were on.
pin_worker() {
    local name=$1 w=${WORKER[$1]} t aff moved=""
    for t in /proc/"$w"/task/*; do
        t=${t##*/}
        aff=$(taskset -pc "$t" 2>/dev/null | sed 's/.*: *//') || continue
        [[ -z $aff || $aff == "$SRV_CPU" ]] && continue
        taskset -pc "$SRV_CPU" "$t" >/dev/null 2>&1 || continue
        moved="$moved $t($aff)"
    done
    [[ -n $moved ]] && note "$name: pinned threads of worker $w to CPU $SRV_CPU:$moved"
    return 0
}

# serve NAME CASE: starts NAME for CASE in its own directory DIR[NAME]=$TMP/NAME-CASE (with
# tmp/ and state/ in it) through the script's `launch NAME PORT DIR CASE` (start_server),
# then pins its worker (pin_worker).
serve() {
    local d="$TMP/$1-$2"
    mkdir -p "$d/tmp" "$d/state"
    DIR[$1]=$d
    start_server "$1" "$d" launch "$2"
    pin_worker "$1"
}

# tlsgate_main_conf DIR [WORKER_CONNECTIONS [LINE...]]: the main context of a bench
# tlsgate (or nginx) configuration: one worker pinned to CPU 0, the LINEs (ssl_provider,
# ...), error_log DIR/error.log, pid DIR/server.pid, user root (the workers stay root:
# tlsgate refuses that unless told), events with WORKER_CONNECTIONS (8192).
tlsgate_main_conf() {
    local d=$1 conns=${2:-8192}
    shift $(($# < 2 ? $# : 2))
    echo "worker_processes 1;"
    echo "worker_cpu_affinity 01;"
    (($# > 0)) && printf '%s\n' "$@"
    echo "error_log $d/error.log;"
    echo "pid $d/server.pid;"
    echo "user root;  # run as root: workers stay root deliberately (tlsgate refuses otherwise)"
    echo "events { worker_connections $conns; }"
}

# http_open PORT [LINE...]: the opening of a bench server's http block, which the caller
# goes on with (certificates, root, ...) and closes: access log, session cache and
# tickets off, the LINEs (http level, indented here), then `server {` on 127.0.0.1:PORT
# ssl with server_name localhost.
http_open() {
    local port=$1
    shift
    printf '%s\n' "http {" "    access_log off;" "    ssl_session_cache off;" "    ssl_session_tickets off;"
    (($# > 0)) && printf '    %s\n' "$@"
    printf '%s\n' "    server {" "        listen 127.0.0.1:$port ssl;" "        server_name localhost;"
}

# server_title NAME: how a report names the bench server NAME (server_conf's names, and
# tlsgate-b, tlsgate-prov-b: a second tlsgate binary in bench/replay.sh's A/B runs).
server_title() {
    case $1 in
    nginx) echo "nginx" ;;
    tlsgate) echo "tlsgate" ;;
    tlsgate-prov) echo "tlsgate + provider" ;;
    tlsgate-b) echo "tlsgate (B)" ;;
    tlsgate-prov-b) echo "tlsgate + provider (B)" ;;
    haproxy) echo "HAProxy" ;;
    haproxy-prov) echo "HAProxy + provider" ;;
    amnginx-engine) echo "asynch_mode_nginx + qat_sw engine" ;;
    amnginx-prov) echo "asynch_mode_nginx + qatprovider" ;;
    esac
}

# server_conf NAME CASE PORT DIR: writes the configuration of server NAME (nginx, tlsgate,
# tlsgate-prov[-b], haproxy, haproxy-prov, amnginx-engine, amnginx-prov) for handshake case
# CASE on 127.0.0.1:PORT: DIR/haproxy.cfg (HAProxy) or DIR/server.conf (the others). One
# worker or thread, no session cache, no tickets, access log off; the certificate
# $TMP/certs/CERT.{crt,key,pem}, protocol and cipher come from the script's case_cert,
# case_proto and case_cipher. HAProxy answers `200 ok` itself and has a stats socket when
# SPORT[NAME] is set; the others serve $TMP/html and /status (stub_status). The provider
# ($PROV) for the *-prov servers; the amnginx anchors from $ANCHORS. Case k: keep-alive.
server_conf() {
    local name=$1 cs=$2 port=$3 d=$4 cert
    cert=$(case_cert "$cs")
    if [[ $name == haproxy* ]]; then
        local proto tls
        proto=$(case_proto "$cs")
        tls="ssl-min-ver $proto ssl-max-ver $proto no-tls-tickets"
        [[ -n $(case_cipher "$cs") ]] && tls="$tls ciphers $(case_cipher "$cs")"
        {
            echo "global"
            echo "    nbthread 1"
            echo "    maxconn 8192"
            echo "    tune.ssl.cachesize 0"
            [[ -n ${SPORT[$name]:-} ]] && echo "    stats socket ipv4@127.0.0.1:${SPORT[$name]} level operator"
            if [[ $name == haproxy-prov ]]; then
                echo "    ssl-provider-path $(dirname "$PROV")"
                echo "    ssl-provider $(basename "$PROV" .so)"
                echo "    ssl-provider default"
                echo "    ssl-propquery ?provider=tlsgate"
                echo "    ssl-mode-async"
            fi
            echo "defaults"
            echo "    mode http"
            echo "    timeout connect 5s"
            echo "    timeout client 10s"
            echo "    timeout server 10s"
            echo "frontend fe_tls"
            echo "    bind 127.0.0.1:$port ssl crt $TMP/certs/$cert.pem $tls"
            echo "    http-request return status 200 content-type text/plain string ok"
        } >"$d/haproxy.cfg"
        return
    fi
    local main=()
    if [[ $name == nginx || $name == amnginx* ]]; then
        main+=("daemon off;" "master_process on;")
    fi
    # the anchors, configured as the kit's handshakes.sh configures them
    if [[ $name == amnginx-engine ]]; then
        main+=("load_module $ANCHORS/amnginx/modules/ngx_ssl_engine_qat_module.so;"
            "env OPENSSL_ENGINES;"
            "ssl_engine { use_engine qatengine; default_algorithms ALL; qat_engine { qat_offload_mode async; qat_notify_mode poll; qat_poll_mode heuristic; } }")
    fi
    [[ $name == amnginx-prov ]] && main+=("env OPENSSL_CONF;")
    local http=()
    [[ $name == nginx ]] && mapfile -t http < <(nginx_temp_paths "$d/tmp" | sed 's/^ *//')
    [[ $name == amnginx* ]] && http+=("client_body_temp_path $d/tmp/body; proxy_temp_path $d/tmp/proxy; fastcgi_temp_path $d/tmp/fastcgi; uwsgi_temp_path $d/tmp/uwsgi; scgi_temp_path $d/tmp/scgi;")
    [[ $cs == k ]] && http+=("keepalive_requests 1000000;")
    {
        printf '%s\n' "${main[@]}"
        if [[ $name == tlsgate-prov* ]]; then
            tlsgate_main_conf "$d" 8192 "ssl_provider tlsgate;" "ssl_propquery \"?provider=tlsgate\";"
        else
            tlsgate_main_conf "$d" 8192
        fi
        http_open "$port" "${http[@]}"
        echo "        ssl_certificate $TMP/certs/$cert.crt;"
        echo "        ssl_certificate_key $TMP/certs/$cert.key;"
        echo "        ssl_protocols $(case_proto "$cs");"
        [[ -n $(case_cipher "$cs") ]] && echo "        ssl_ciphers $(case_cipher "$cs");"
        echo "        root $TMP/html;"
        [[ $name == tlsgate-prov* ]] && echo "        ssl_async on;"
        [[ $name == amnginx* ]] && echo "        ssl_asynch on;"
        echo "        location = /status { stub_status; }"
        echo "    }"
        echo "}"
    } >"$d/server.conf"
}

# tls_probe PORT PATH [S_CLIENT_OPTION...]: one `GET PATH` through openssl s_client (SNI
# localhost, 15 s at most). Sets PROBE[proto] (TLSv1.2, TLSv1.3), PROBE[cipher],
# PROBE[key] (RSA-2048, EC-prime256v1: the server certificate's key), PROBE[temp] (the
# server's ephemeral key), PROBE[tickets] (session tickets the server sent), PROBE[status]
# (the HTTP status; empty without an answer); PROBE_OUT is s_client's output.
declare -A PROBE=()
tls_probe() {
    local port=$1 path=$2 out
    shift 2
    out=$(printf 'GET %s HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n' "$path" |
        timeout 15 openssl s_client -connect "127.0.0.1:$port" -servername localhost "$@" -ign_eof 2>&1 || true)
    PROBE_OUT=$out
    PROBE[proto]=$(awk '/^ *Protocol *:/ { print $3; exit }' <<<"$out")
    [[ -n ${PROBE[proto]} ]] || PROBE[proto]=$(awk '/^New, / { sub(/,$/, "", $2); print $2; exit }' <<<"$out")
    PROBE[cipher]=$(awk '/^New, / { sub(/.*Cipher is /, ""); print; exit }' <<<"$out")
    PROBE[temp]=$(awk -F': ' '/^Server Temp Key:/ { print $2; exit }' <<<"$out")
    PROBE[key]=$(sed -n '/-----BEGIN CERTIFICATE-----/,/-----END CERTIFICATE-----/p' <<<"$out" |
        openssl x509 -noout -text 2>/dev/null |
        awk '/Public Key Algorithm:/ { alg = $NF } /Public-Key:/ { bits = $2 } /ASN1 OID:/ { oid = $NF }
             END { if (alg == "rsaEncryption") print "RSA-" substr(bits, 2); else if (alg == "id-ecPublicKey") print "EC-" oid; else print alg }')
    # TLSv1.3: one "Post-Handshake New Session Ticket arrived" per ticket; TLSv1.2: the
    # session summary shows a ticket lifetime hint when the server sent a ticket
    if [[ ${PROBE[proto]} == TLSv1.3 ]]; then
        PROBE[tickets]=$(grep -c 'Post-Handshake New Session Ticket arrived' <<<"$out" || true)
    else
        PROBE[tickets]=$(grep -c 'TLS session ticket lifetime hint' <<<"$out" || true)
    fi
    PROBE[status]=$(awk '/^HTTP\/1\.[01] / { print $2; exit }' <<<"$out")
}

# verify_probe WHAT PROTO CIPHER-GLOB KEY [MORE]: after tls_probe, prints (and adds to the
# array VERIFY_LINES) "verify WHAT: protocol cipher, server cert key, temp key, MORE, GET:
# status", and dies with s_client's output unless protocol, cipher, key are the ones
# wanted and the status is 200 (a server that does not run the case it claims).
verify_probe() {
    local what=$1 want_p=$2 want_c=$3 want_k=$4 more=${5:+, $5} line
    line="verify $what: ${PROBE[proto]} ${PROBE[cipher]}, server cert ${PROBE[key]}, temp key ${PROBE[temp]:-?}$more, GET: ${PROBE[status]:-no response}"
    echo "$line"
    VERIFY_LINES+=("$line")
    # shellcheck disable=SC2053 # the cipher is a glob (TLS_*)
    if [[ ${PROBE[proto]} != "$want_p" || ${PROBE[cipher]} != $want_c || ${PROBE[key]} != "$want_k" ||
        ${PROBE[status]} != 200 ]]; then
        echo "$PROBE_OUT" | head -n 60 >&2
        die "$what is not what it claims (want $want_p $want_c $want_k and HTTP 200)"
    fi
}

# hs_case_tls CASE: the ssl_* lines of the two handshake cases of bench/handshake.sh and
# bench/adaptive.sh: a = TLSv1.2 ECDHE-RSA-AES256-GCM-SHA384 with $TMP/certs/rsa.*
# (RSA-2048), b = TLSv1.3 with $TMP/certs/ecdsa.* (P-256).
hs_case_tls() {
    case $1 in
    a) printf '        ssl_certificate %s;\n        ssl_certificate_key %s;\n        ssl_protocols TLSv1.2;\n        ssl_ciphers ECDHE-RSA-AES256-GCM-SHA384;\n' \
        "$TMP/certs/rsa.crt" "$TMP/certs/rsa.key" ;;
    b) printf '        ssl_certificate %s;\n        ssl_certificate_key %s;\n        ssl_protocols TLSv1.3;\n' \
        "$TMP/certs/ecdsa.crt" "$TMP/certs/ecdsa.key" ;;
    esac
}

# save_report NAME TEXT: writes TEXT to bench/results/NAME-YYYYmmdd-HHMMSS.md (BENCH_SAVE=1
# in the scripts) and says where.
save_report() {
    local f
    mkdir -p "$ROOT/bench/results"
    f="$ROOT/bench/results/$1-$(date +%Y%m%d-%H%M%S).md"
    echo "$2" >"$f"
    echo
    echo "saved: ${f#"$ROOT"/}"
}
