#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# conn_mem.sh - what an inbound request rule costs in memory per idle
# keep-alive connection (issue 23 item 5).
#
# nginx 1.22, one process (`master_process off`: it is the worker), serving
# a 13-byte file on loopback; bench/conn_mem_client.py opens N connections
# (2,000), sends one keep-alive request on each, reads its answer and keeps
# every connection open and idle. The worker's resident memory (VmRSS of
# /proc/PID/status) is read then, and once before the connections (after
# one warm-up request, so nginx's own first-request allocations are in
# both). Two configurations: bare, and under `in port=P
# req_rate=1000000000/s req_burst=1000000000 per=header:X-API-Key` (every
# request scanned, keyed and decided, none limited). What the rule adds
# per idle connection is (rule's RSS with the connections - bare's) / N,
# and also, within each run, (after - before) / N. ROUNDS (3) runs of
# each, interleaved; medians. RSS counts whole touched pages, so the
# figures move by a few bytes per connection (4 KiB / N) between runs.
#
# Prints markdown; with a file argument, writes the target row there.
# Knobs: BUILD (build), MEM_CONNS (2000), ROUNDS (3), MEM_PARTIAL (set: each
# connection then holds the first lines of a second head, never its end),
# MEM_RULES (the rule
# measured, to see what another one costs; P is the port).
set -u

root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-build}
case $build in /*) ;; *) build=$root/$build ;; esac
n=${MEM_CONNS:-2000}
rounds=${ROUNDS:-3}
targets=${1:-/dev/null}
lib=$build/libsluice.so
py=/usr/bin/python3
client=$root/bench/conn_mem_client.py
rules=${MEM_RULES:-in port=P req_rate=1000000000/s req_burst=1000000000 per=header:X-API-Key}

work=$(mktemp -d /tmp/sluice-bench-mem.XXXXXX)
chmod 755 "$work"
pids=()
stop_all() {
    local p i
    for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null; done
    for p in "${pids[@]}"; do
        for i in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$p" 2>/dev/null
        wait "$p" 2>/dev/null
    done
    pids=()
}
trap 'stop_all; rm -rf "$work"' EXIT
trap 'exit 1' INT TERM

skip() {
    echo "_Not measured: $1._"
    echo "| memory per idle keep-alive connection | not measured ($1) | not measured |" >"$targets"
    exit 0
}
for tool in nginx curl $py; do
    command -v $tool >/dev/null || skip "$tool is not installed"
done
[ -f "$lib" ] || skip "$lib is not built"

free_port() {
    $py -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
rss() { awk '/^VmRSS:/ {print $2 * 1024}' "/proc/$1/status"; }

# one KIND: prints "BEFORE AFTER" (bytes of the worker's RSS).
one() {
    local kind=$1 d p i
    d=$work/ngx-$kind-$RANDOM
    p=$(free_port)
    mkdir -p "$d/www" "$d/tmp"
    printf 'hello, world\n' >"$d/www/f"
    cat >"$d/nginx.conf" <<CONF
worker_processes 1;
worker_rlimit_nofile $((n + 256));
error_log $d/error.log warn;
pid $d/nginx.pid;
events { worker_connections $((n + 128)); }
http {
    access_log off;
    keepalive_timeout 300;
    keepalive_requests 1000000;
    client_body_temp_path $d/tmp;
    proxy_temp_path $d/tmp;
    fastcgi_temp_path $d/tmp;
    uwsgi_temp_path $d/tmp;
    scgi_temp_path $d/tmp;
    server {
        listen 127.0.0.1:$p backlog=4096;
        root $d/www;
    }
}
CONF
    local envs=()
    [ "$kind" = rule ] &&
        envs=(LD_PRELOAD="$lib" "SLUICE_RULES=${rules//P/$p}")
    env "${envs[@]}" nginx -p "$d" -c "$d/nginx.conf" -g 'daemon off; master_process off;' \
        >"$d/stdout" 2>"$d/stderr" &
    local pid=$!
    pids+=($pid)
    for i in $(seq 100); do curl -s -o /dev/null -H 'X-API-Key: warm' "http://127.0.0.1:$p/f" && break; sleep 0.1; done
    local before after
    before=$(rss $pid)
    exec {cin}> >(exec $py "$client" "$p" "$n" ${MEM_PARTIAL:+partial} >"$d/client.out" 2>"$d/client.err")
    for i in $(seq 600); do grep -q ready "$d/client.out" 2>/dev/null && break; sleep 0.1; done
    if ! grep -q ready "$d/client.out"; then
        echo "conn_mem $kind: the client failed: $(tail -3 "$d/client.err")" >&2
        exec {cin}>&-
        stop_all
        return 1
    fi
    after=$(rss $pid)
    exec {cin}>&- # the client closes its connections and exits
    stop_all
    echo "$before $after"
}

median() { sort -n | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }

: >"$work/bare" >"$work/rule"
for r in $(seq "$rounds"); do
    echo "conn_mem: round $r" >&2
    for kind in bare rule; do
        one "$kind" >>"$work/$kind" || skip "the client failed"
    done
done
bare_after=$(awk '{print $2}' "$work/bare" | median)
rule_after=$(awk '{print $2}' "$work/rule" | median)
bare_growth=$(awk -v n="$n" '{print ($2 - $1) / n}' "$work/bare" | median)
rule_growth=$(awk -v n="$n" '{print ($2 - $1) / n}' "$work/rule" | median)
added=$(((rule_after - bare_after) / n))

echo "nginx worker resident memory (VmRSS) with $n idle keep-alive connections, one request served on each"
echo "(\`bench/conn_mem.sh\`, whose opening comment is the method; medians of $rounds interleaved runs)."
echo
echo "| configuration | worker RSS with $n idle connections | growth per connection | added per connection by the rule |"
echo "|---|---:|---:|---:|"
echo "| bare | $((bare_after / 1024)) KiB | ${bare_growth%.*} B | |"
echo "| sluice \`$rules\` | $((rule_after / 1024)) KiB | ${rule_growth%.*} B | **$added B** |"

echo "| an inbound request rule adds <= 2 KB per idle keep-alive connection (nginx worker RSS, $n connections, rule minus bare) | $added B | $([ "$added" -le 2048 ] && echo met || echo "**not met**") |" >"$targets"
