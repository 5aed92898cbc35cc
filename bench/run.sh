#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# run.sh - runs sluice's benchmarks and writes BENCH.md at the repository
# root: the table bench (build/bench/bench_table) and the nginx bench
# (bench/nginx.sh), then the targets with met / not met computed from the
# numbers. About two minutes. A benchmark asserts nothing: this exits 0
# unless a benchmark crashes.
#
# Knobs: BUILD (build), TABLE_SECONDS (0.25) per table case and repetition,
#        NGINX_SECONDS (5) per wrk run, NGINX_ROUNDS (5).
set -u

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 1
build=${BUILD:-build}
tmp=$(mktemp -d /tmp/sluice-bench-run.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
status=0

load_now() { cut -d' ' -f1-3 /proc/loadavg; }
busy() {
    ps -eo pcpu=,comm= --sort=-pcpu | awk '$1 >= 20 {printf "%s%s (%s%%)", n++ ? ", " : "", $2, $1}'
}

load_before=$(load_now)
busy_before=$(busy)
start=$(date +%s)

echo "bench: table (about 40 s)" >&2
if [ -x "$build/bench/bench_table" ]; then
    "$build/bench/bench_table" "${TABLE_SECONDS:-0.25}" --targets "$tmp/targets-table" \
        >"$tmp/table.md" 2>"$tmp/table.err"
    rc=$?
    if [ $rc -ne 0 ]; then
        echo "bench_table failed (exit $rc): $(tail -5 "$tmp/table.err")" >&2
        printf '_bench_table failed (exit %d)._\n' "$rc" >>"$tmp/table.md"
        status=1
    fi
else
    echo "_Not measured: $build/bench/bench_table is not built (make bench)._" >"$tmp/table.md"
fi

echo "bench: nginx (about 90 s)" >&2
BUILD=$build bash bench/nginx.sh "$tmp/targets-nginx" >"$tmp/nginx.md" 2>"$tmp/nginx.err"
rc=$?
if [ $rc -ne 0 ]; then
    echo "nginx bench failed (exit $rc): $(tail -5 "$tmp/nginx.err")" >&2
    printf '_nginx bench failed (exit %d)._\n' "$rc" >>"$tmp/nginx.md"
    status=1
fi

# Standalone benchmarks that print their own markdown (method included).
extra() {  # extra NAME SCRIPT
    echo "bench: $1" >&2
    if ! bash "$2" >"$tmp/$1.md" 2>"$tmp/$1.err"; then
        echo "$1 bench failed: $(tail -5 "$tmp/$1.err")" >&2
        printf '_%s bench failed._\n' "$1" >>"$tmp/$1.md"
        status=1
    fi
}
echo "bench: instructions (callgrind, about 90 s)" >&2
USER_SHARE_FILE="$tmp/targets-nginx.user-share" BUILD=$build bash bench/insn.sh "$tmp/targets-insn" >"$tmp/insn.md" 2>"$tmp/insn.err" || {
    echo "instructions bench failed: $(tail -5 "$tmp/insn.err")" >&2
    printf '_instructions bench failed._\n' >>"$tmp/insn.md"
    status=1
}
echo "bench: the head scanner alone (callgrind, about 10 s)" >&2
BUILD=$build bash bench/h1_insn.sh "$tmp/targets-h1" >"$tmp/h1.md" 2>"$tmp/h1.err" || {
    echo "head scanner bench failed: $(tail -5 "$tmp/h1.err")" >&2
    printf '_head scanner bench failed._\n' >>"$tmp/h1.md"
    status=1
}
echo "bench: memory per idle connection (about 30 s)" >&2
BUILD=$build bash bench/conn_mem.sh "$tmp/targets-mem" >"$tmp/mem.md" 2>"$tmp/mem.err" || {
    echo "memory bench failed: $(tail -5 "$tmp/mem.err")" >&2
    printf '_memory bench failed._\n' >>"$tmp/mem.md"
    status=1
}
echo "bench: requests (about 2 minutes)" >&2
BUILD=$build bash bench/requests.sh "$tmp/targets-requests" >"$tmp/requests.md" 2>"$tmp/requests.err" || {
    echo "requests bench failed: $(tail -5 "$tmp/requests.err")" >&2
    printf '_requests bench failed._\n' >>"$tmp/requests.md"
    status=1
}
echo "bench: outbound requests (about 60 s)" >&2
BUILD=$build bash bench/outbound.sh "$tmp/targets-outbound" >"$tmp/outbound.md" 2>"$tmp/outbound.err" || {
    echo "outbound bench failed: $(tail -5 "$tmp/outbound.err")" >&2
    printf '_outbound bench failed._\n' >>"$tmp/outbound.md"
    status=1
}
extra bandwidth bench/bw.sh
extra redis bench/redis.sh
extra cluster bench/cluster.sh
extra redis-fleet bench/redis_fleet.sh
echo "bench: redis decisions" >&2
"$build/bench/bench_redis" >"$tmp/redis-decide.md" 2>"$tmp/redis-decide.err" ||
    { printf '_bench_redis failed._\n' >>"$tmp/redis-decide.md"; status=1; }

model=$(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo)
{
    echo "# sluice benchmarks"
    echo
    echo "Written by \`bench/run.sh\` (\`make bench\`); do not edit by hand."
    echo
    echo "- Date: $(date -u '+%Y-%m-%d %H:%M UTC')"
    echo "- Machine: $(nproc) CPUs, ${model:-unknown}, Linux $(uname -r)"
    echo "- Compiler: $(${CC:-cc} --version 2>/dev/null | head -1)"
    echo "- Load average before / after: $load_before / $(load_now); programs using >= 20% CPU before: ${busy_before:-none}"
    echo "- Duration: $(($(date +%s) - start)) s"
    echo
    echo "Figures from a shared machine move by 10-30% between runs; compare rows of one run, not runs."
    echo
    echo "## Targets"
    echo
    echo "| target | measured | |"
    echo "|---|---|---|"
    cat "$tmp/targets-table" 2>/dev/null ||
        echo "| table targets | not measured | not measured |"
    cat "$tmp/targets-nginx" 2>/dev/null ||
        echo "| nginx req/s under the shim with a matching rule >= 0.98 x plain | not measured | not measured |"
    cat "$tmp/targets-requests" 2>/dev/null ||
        echo "| request targets | not measured | not measured |"
    cat "$tmp/targets-outbound" 2>/dev/null ||
        echo "| keep-alive TLS client under an outbound request rule >= 0.97 x no shim | not measured | not measured |"
    cat "$tmp/targets-insn" 2>/dev/null ||
        echo "| instructions (callgrind) | not measured | not measured |"
    cat "$tmp/targets-h1" 2>/dev/null ||
        echo "| head scanner instructions per byte (callgrind) | not measured | not measured |"
    cat "$tmp/targets-mem" 2>/dev/null ||
        echo "| memory per idle keep-alive connection | not measured | not measured |"
    echo
    echo "## Decisions: sluice's table against a sharded-mutex map"
    echo
    echo "\`build/bench/bench_table\` (source: \`bench/bench_table.c\`, whose opening comment is the full method)."
    echo "Each row times \`sl_table_decide\` for one request: hash the key, find or claim its 16-byte slot,"
    echo "GCRA step, publish by CAS. Keys come from \`sl_key_make\` over distinct peers (half IPv4 /32, half"
    echo "IPv6 /64), walked in a random order fixed in advance; the table has 1.25x as many slots as keys and is"
    echo "warmed by one pass first. The baseline runs the same \`sl_limit_step\` on a plain word behind 16"
    echo "shards, each a pthread mutex and an open-addressing map keyed by the same hash (the design measured"
    echo "elsewhere at 200-300 ns per check). \`now\` is given (a counter: pure table cost), or read per"
    echo "decision from CLOCK_MONOTONIC (what the shim does) or CLOCK_MONOTONIC_COARSE. The limit is"
    echo "1e9/s with a burst of 1e9, so everything is allowed; \"mixed\" denies some (the last column says how many). Each case runs"
    echo "${TABLE_SECONDS:-0.25} s per thread, 3 times, interleaved with the baseline; medians. Nothing is pinned."
    echo
    cat "$tmp/table.md"
    echo
    echo "## nginx: the shim's cost on a real server"
    echo
    echo "\`bench/nginx.sh\` starts nginx 1.22 (\`bench/nginx.conf\`: 1 worker, a 13-byte static file,"
    echo "access log off) three times on free loopback ports: plain; under"
    echo "\`build/sluice run --in 'port=PORT rate=1000000000/s burst=1000000000'\` (matches every connection,"
    echo "never limits: each accept pays for a full decision; getsockname once per listener); and with libsluice.so"
    echo "preloaded but no rule. wrk \`-t1 -c16 -d${NGINX_SECONDS:-5}s -H 'Connection: close'\` (every request"
    echo "is a new connection and an accept) runs against them in turn, A B C A B C ..., ${NGINX_ROUNDS:-5}"
    echo "rounds after a 1 s warm-up each. The target uses the median of the per-round ratios, since"
    echo "neighbouring runs share the machine's load. Worker CPU per request comes from the worker's"
    echo "\`/proc/PID/schedstat\` (user + system time) divided by the requests wrk completed; the"
    echo "new-connection CPU target uses the median of its per-round ratios. The no-rule row is the"
    echo "control: its code path adds a few dozen instructions, so its distance from 1.000 is this"
    echo "machine's noise. The user-space share comes from the worker's clock ticks (\`/proc/PID/stat\`)."
    echo
    cat "$tmp/nginx.md"
    echo
    echo "## Requests: a keep-alive server, beside nginx's limit_req"
    echo
    echo "\`bench/requests.sh\` (its opening comment is the full method): nginx 1 worker, keep-alive, a 13-byte file;"
    echo "wrk \`-t1 -c32\` with an X-API-Key header; plain, under a request rule keyed by that header that never"
    echo "limits, and with nginx's own \`limit_req\` keyed the same way; ${REQ_ROUNDS:-5} interleaved rounds of ${REQ_SECONDS:-4} s."
    echo "Then the same three on realistic heads (\`bench/wrk_real.lua\` sending 20,000 of \`bench/heads.py\`'s, the heads of"
    echo "\`bench/insn.sh\`'s realistic case: a trace id per request, 1,000 keys, 40 routes, SDK headers, 1 in 10 a POST), one"
    echo "connection in a closed loop so that every configuration reads one request a wait, nginx and wrk on one CPU"
    echo "(taskset: with a CPU each, every request wakes an idle CPU, and the worker's CPU then measures the wake-ups"
    echo "more than the request). Worker CPU is user + system time: the kernel's share, which callgrind's counts leave"
    echo "out, is in it."
    echo
    cat "$tmp/requests.md"
    echo
    echo "## Instructions (callgrind): per request, per connection, start-up, outbound TLS"
    echo
    cat "$tmp/insn.md"
    echo
    echo "## The head scanner alone: instructions per byte of a realistic head (callgrind)"
    echo
    echo "\`bench/h1_insn.sh\` over \`bench/bench_h1.c\`'s seeded generator (its opening comment is the method)."
    echo
    cat "$tmp/h1.md"
    echo
    echo "## Memory: an inbound request rule per idle keep-alive connection"
    echo
    cat "$tmp/mem.md"
    echo
    echo "## Bandwidth: sluice beside trickle"
    echo
    echo "\`bench/bw.sh\`: python3 http.server and curl on loopback, the same rates for sluice"
    echo "(inbound \`send_rate\` for downloads, outbound \`send_rate\` on curl for uploads) and trickle"
    echo "(\`trickle -s -u/-d\` in KB/s of 1024 bytes). Accuracy is measured / configured; \"excl. burst\""
    echo "subtracts sluice's 0.1 s burst. CPU is user + system of each side per GB moved."
    echo
    cat "$tmp/bandwidth.md"
    echo
    echo "## Cost of the recv/send hooks when no byte rule matches"
    echo
    echo "\`bench/redis.sh\`: redis-server 7 plain, and under the shim with a byte rule on another port"
    echo "(every read and write goes through the hooks and finds nothing to do); redis-benchmark GET/SET,"
    echo "one request in flight and pipelined (-P 16), 5 interleaved rounds, medians, ratio shim / plain."
    echo
    cat "$tmp/redis.md"
    echo
    echo "## Outbound requests: the cost of counting a TLS client's calls, pacing accuracy"
    echo
    echo "\`bench/outbound.py\` (its opening comment is the method): curl over TLS to local nginx."
    echo
    cat "$tmp/outbound.md"
    echo
    echo "## Cluster: fleet accuracy and gossip traffic"
    echo
    cat "$tmp/cluster.md"
    echo
    echo "## Redis backend: fleet accuracy beside gossip, Redis traffic, decision cost"
    echo
    echo "\`bench/redis_fleet.py\` (its opening comment is the method): 2, 3 and 5 real programs on"
    echo "127.0.0.2-6; at 100/s python servers under one connection rule shared through gossip"
    echo "(\`scope = cluster\`) and through Redis (\`scope = redis\`), flooded or loaded steadily at 1.2 x;"
    echo "at 10,000/s nginx under one request rule shared through Redis, flooded by wrk. The bound is"
    echo "docs/redis.md's steady-state one."
    echo
    cat "$tmp/redis-fleet.md"
    echo
    echo "\`build/bench/bench_redis\` (source \`bench/bench_redis.c\`):"
    echo
    cat "$tmp/redis-decide.md"
} >"$tmp/BENCH.md"
mv "$tmp/BENCH.md" "$root/BENCH.md"
echo "bench: wrote BENCH.md ($(($(date +%s) - start)) s)" >&2
exit $status
