# SPDX-License-Identifier: BSD-2-Clause
# lib.sh - what the nginx benches share, sourced by bench/nginx.sh,
# bench/requests.sh and bench/insn.sh: a work directory removed at exit,
# the processes they started (stopped by their ids), a free loopback port,
# an nginx prefix made from a template, waiting until a server answers.
#
# bench_init TAG sets root (the repository), build (BUILD, default
# build/, made absolute), work (a fresh directory) and pids (the processes
# to stop: append each one started).

bench_init() {
    root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
    build=${BUILD:-build}
    case $build in /*) ;; *) build=$root/$build ;; esac
    work=$(mktemp -d "/tmp/sluice-bench-$1.XXXXXX")
    chmod 755 "$work" # nginx workers run as nobody and must read www/
    pids=()
    trap 'stop_all; rm -rf "$work"' EXIT
    trap 'exit 1' INT TERM
}

# Stops what pids names: TERM, up to 10 s (nginx under valgrind writes its
# profile at exit), then KILL for it and its children (nginx workers).
stop_all() {
    local p i
    for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null; done
    for p in "${pids[@]}"; do
        for i in $(seq 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
        if kill -0 "$p" 2>/dev/null; then
            pkill -KILL -P "$p" 2>/dev/null
            kill -KILL "$p" 2>/dev/null
        fi
        wait "$p" 2>/dev/null
    done
    pids=()
}

free_port() {
    "${py:-python3}" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# nginx_prefix DIR PORT TEMPLATE FILE [LIMIT]: DIR made an nginx prefix
# serving the 13-byte www/FILE, its nginx.conf from TEMPLATE with @DIR@,
# @PORT@ and @LIMIT@ (nginx directives, or nothing) filled in.
nginx_prefix() {
    local d=$1 p=$2 template=$3 file=$4 limit=${5:-}
    mkdir -p "$d/www" "$d/tmp"
    chmod 755 "$d" "$d/www"
    printf 'sluice bench\n' >"$d/www/$file"
    sed "s|@DIR@|$d|g; s|@PORT@|$p|g; s|@LIMIT@|$limit|" "$template" >"$d/nginx.conf"
}

# answers URL [CURL ARGS...]: waits up to 10 s for URL to answer; 1 if it
# never does.
answers() {
    local url=$1 i
    shift
    for i in $(seq 100); do
        curl -s -o /dev/null --max-time 1 "$@" "$url" && return 0
        sleep 0.1
    done
    return 1
}
