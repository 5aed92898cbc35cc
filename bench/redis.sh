#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# redis.sh - the cost of sluice's recv/send interposition when no byte rule
# matches: redis-server plain vs redis-server under
# `sluice run --in 'port=1 recv_rate=1MB/s send_rate=1MB/s'` (a byte rule on
# another port, so every read/write of redis goes through the shim's hooks
# and is found not limited). redis-benchmark GET and SET, one request in
# flight per connection (50 connections) and pipelined (-P 16); the two
# servers run side by side and the runs alternate (plain, shim, plain, ...)
# so drift in the machine's load hits both alike; medians of ROUNDS runs.
# Prints a markdown table to stdout (ratio = shim / plain requests per
# second; 1.00 is free). About 45 s. Asserts nothing.
#
# Knobs: BUILD (build), ROUNDS (5), N (100000 requests per plain run;
# pipelined runs use 5 x N).
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-$root/build}
case $build in /*) ;; *) build=$root/$build ;; esac
rounds=${ROUNDS:-5}
n=${N:-100000}

if ! command -v redis-server >/dev/null || ! command -v redis-benchmark >/dev/null; then
    echo "_Not measured: redis-server / redis-benchmark are not installed (apt-get install redis-server redis-tools)._"
    echo "bench/redis.sh: redis-server/redis-tools missing (scripts/deps.sh installs them)" >&2
    exit 0
fi

tmp=$(mktemp -d /tmp/sluice-bench-redis.XXXXXX)
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
    wait 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT

port_free() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_up() {
    for _ in $(seq 100); do
        redis-cli -h 127.0.0.1 -p "$1" ping 2>/dev/null | grep -q PONG && return 0
        sleep 0.05
    done
    echo "bench/redis.sh: redis on port $1 did not start" >&2
    exit 1
}
redis_args() { echo --port "$1" --bind 127.0.0.1 --save '' --appendonly no --protected-mode no --dir "$tmp" --loglevel warning; }

p_plain=$(port_free)
p_shim=$(port_free)
# shellcheck disable=SC2046
redis-server $(redis_args "$p_plain") >"$tmp/plain.log" 2>&1 &
pids+=($!)
# shellcheck disable=SC2046
"$build/sluice" run --in 'port=1 recv_rate=1MB/s send_rate=1MB/s' -- redis-server $(redis_args "$p_shim") \
    >"$tmp/shim.log" 2>&1 &
pids+=($!)
wait_up "$p_plain"
wait_up "$p_shim"
grep -q libsluice "/proc/${pids[1]}/maps" || { echo "bench/redis.sh: the shim is not loaded in redis" >&2; exit 1; }

# one run: prints "GET rps" and "SET rps" lines into $tmp/<mode>-<which>
bench() { # mode(plain|pipe) which(plain|shim) port
    local extra=() count=$n
    [ "$1" = pipe ] && { extra=(-P 16); count=$((n * 5)); }
    redis-benchmark -h 127.0.0.1 -p "$3" -t get,set -n "$count" -c 50 "${extra[@]}" --csv 2>/dev/null |
        awk -F'"' '/^"(GET|SET)"/ {print $2, $4}' >>"$tmp/$1-$2"
}

for r in $(seq "$rounds"); do
    echo "bench/redis.sh: round $r of $rounds" >&2
    for mode in plain pipe; do
        bench "$mode" plain "$p_plain"
        bench "$mode" shim "$p_shim"
    done
done

median() { sort -n | awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
echo "| test | mode | plain req/s (median) | under the shim, no rule matching (median) | ratio | plain min..max | shim min..max |"
echo "|---|---|---|---|---|---|---|"
for mode in plain pipe; do
    for t in SET GET; do
        a=$(awk -v t=$t '$1 == t {print $2}' "$tmp/$mode-plain" | median)
        b=$(awk -v t=$t '$1 == t {print $2}' "$tmp/$mode-shim" | median)
        ra=$(awk -v t=$t '$1 == t {print $2}' "$tmp/$mode-plain" | sort -n | awk 'NR == 1 {lo = $1} {hi = $1} END {printf "%.0f..%.0f", lo, hi}')
        rb=$(awk -v t=$t '$1 == t {print $2}' "$tmp/$mode-shim" | sort -n | awk 'NR == 1 {lo = $1} {hi = $1} END {printf "%.0f..%.0f", lo, hi}')
        label=$([ $mode = pipe ] && echo "pipelined (-P 16)" || echo "one in flight")
        awk -v t=$t -v m="$label" -v a="$a" -v b="$b" -v ra="$ra" -v rb="$rb" \
            'BEGIN {printf "| %s | %s | %.0f | %.0f | %.3f | %s | %s |\n", t, m, a, b, (a > 0 ? b / a : 0), ra, rb}'
    done
done
echo
echo "_redis-benchmark -c 50, $n requests per run ($((n * 5)) pipelined), $rounds interleaved rounds; the shim's" \
     "rule is on port 1, so redis's reads and writes pass through the hooks and match nothing._"
