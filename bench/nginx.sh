#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# nginx.sh - what the shim costs a real server.
#
# Starts three nginx instances from bench/nginx.conf, each in its own temp
# dir and on its own free loopback port:
#   plain    nginx alone;
#   rule     nginx under `sluice run --in 'port=PORT rate=1000000000/s
#            burst=1000000000'`: a rule that matches every connection and
#            never limits, so every accept pays for a full decision;
#   no rule  nginx with libsluice.so preloaded and no configuration.
# wrk then fetches a small file with keep-alive off (every request is an
# accept), interleaving the three (A B C A B C ...) so drift hits all of
# them alike. Prints a markdown table; with a file argument, writes the
# target row to that file. Always exits 0 unless something crashes.
#
# The target is judged on the median of the per-round ratios (rule / plain
# of the same round, run seconds apart), which other programs' load on the
# machine disturbs less than it does the medians of the raw rates.
#
# Knobs: BUILD (build), NGINX_SECONDS (5) per wrk run, NGINX_ROUNDS (5).
set -u

secs=${NGINX_SECONDS:-5}
rounds=${NGINX_ROUNDS:-5}
targets=${1:-/dev/null}

names=(plain rule "no rule")
. "$(dirname "$0")/lib.sh"
bench_init nginx

skip() {
    echo "_Not measured: $1._"
    echo "| nginx req/s under the shim with a matching rule >= 0.98 x plain | not measured ($1) | not measured |" >"$targets"
    echo "| new connection under a never-limiting connection rule: worker CPU per connection <= 1.02x plain | not measured ($1) | not measured |" >>"$targets"
    exit 0
}

for tool in nginx wrk curl python3; do
    command -v $tool >/dev/null || skip "$tool is not installed"
done
[ -x "$build/sluice" ] && [ -f "$build/libsluice.so" ] ||
    skip "$build/sluice or $build/libsluice.so is not built"

# start INDEX: starts configuration INDEX; sets port[INDEX], pid[INDEX].
declare -a port dir
start() {
    local i=$1 d=$work/$1 p
    p=$(free_port)
    nginx_prefix "$d" "$p" "$root/bench/nginx.conf" small.txt
    local cmd=(nginx -p "$d" -c "$d/nginx.conf" -g 'daemon off;')
    case $i in
    0) "${cmd[@]}" 2>>"$d/stderr" & ;;
    1) "$build/sluice" run --in "port=$p rate=1000000000/s burst=1000000000" -- "${cmd[@]}" \
        2>>"$d/stderr" & ;;
    2) LD_PRELOAD=$build/libsluice.so "${cmd[@]}" 2>>"$d/stderr" & ;;
    esac
    pids+=($!)
    port[i]=$p
    dir[i]=$d
    answers "http://127.0.0.1:$p/small.txt" && return 0
    echo "nginx ($i) did not answer on port $p: $(tail -3 "$d/error.log" "$d/stderr" 2>/dev/null)" >&2
    return 1
}

# Is libsluice.so mapped in nginx's worker (and, for "rule", are the rules
# in the master's environment)?
shim_state() {
    local master=${pids[$1]} w maps=no
    w=$(pgrep -P "$master" | head -1)
    grep -q libsluice.so "/proc/${w:-$master}/maps" 2>/dev/null && maps=yes
    echo "$maps"
}

worker() { pgrep -P "${pids[$1]}" | head -1; }
cpu_ns() { awk '{print $1}' "/proc/$1/schedstat" 2>/dev/null || echo 0; }
# user and system clock ticks of a process (fields 14 and 15 of stat; the
# name in field 2 has no spaces here)
ticks() { awk '{print $14, $15}' "/proc/$1/stat" 2>/dev/null || echo 0 0; }

# run INDEX [SECONDS]: one wrk run. Sets RPS (requests/s) and CPU (the
# nginx worker's CPU time per request, microseconds, from schedstat: user +
# system, much less disturbed by other programs than the rate is); appends
# wrk's error lines to dir/errors.
run() {
    local out w c0 c1 n t0 t1 u0 s0 u1 s1
    w=$(worker "$1")
    c0=$(cpu_ns "$w")
    t0=$(ticks "$w")
    out=$(timeout $((secs + 10)) wrk -t1 -c16 -d"${2:-$secs}s" -H 'Connection: close' \
        "http://127.0.0.1:${port[$1]}/small.txt" 2>&1)
    c1=$(cpu_ns "$w")
    t1=$(ticks "$w")
    if [ -z "${2:-}" ]; then # a counted run
        read -r u0 s0 u1 s1 <<<"$t0 $t1"
        user_ticks[$1]=$((${user_ticks[$1]:-0} + u1 - u0))
        sys_ticks[$1]=$((${sys_ticks[$1]:-0} + s1 - s0))
    fi
    RPS=$(awk '/^Requests\/sec:/ {print $2}' <<<"$out")
    RPS=${RPS:-0}
    n=$(awk '/ requests in / {print $1}' <<<"$out")
    CPU=$(awk -v a="$c0" -v b="$c1" -v n="${n:-0}" 'BEGIN {printf "%.2f", (n > 0) ? (b - a) / n / 1000 : 0}')
    grep -E 'Socket errors|Non-2xx' <<<"$out" >>"${dir[$1]}/errors"
}

median() { printf '%s\n' "$@" | sort -g | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }

for i in 0 1 2; do start $i || skip "nginx configuration $i did not start"; done
for i in 0 1 2; do run $i 1; done # warm-up, not counted

declare -A rps cpu
declare -a user_ticks sys_ticks
for r in $(seq "$rounds"); do
    for i in 0 1 2; do
        run $i
        rps[$i,$r]=$RPS
        cpu[$i,$r]=$CPU
    done
done

ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.3f", (b > 0) ? a / b : 0}'; }

declare -a med pmed cmed
cpu_ratios=()
for r in $(seq "$rounds"); do cpu_ratios+=("$(ratio "${cpu[1,$r]}" "${cpu[0,$r]}")"); done
cpu_pmed=$(median "${cpu_ratios[@]}")
hdr="| configuration | libsluice.so in the worker |"
sep="|---|---|"
for r in $(seq "$rounds"); do hdr+=" round $r req/s |"; sep+="---:|"; done
echo "$hdr median req/s | median / plain median | median of per-round ratios to plain | worker CPU µs per request (median) |"
echo "$sep---:|---:|---:|---:|"
for i in 0 1 2; do
    vals=() pr=() cp=()
    for r in $(seq "$rounds"); do
        vals+=("${rps[$i,$r]}")
        pr+=("$(ratio "${rps[$i,$r]}" "${rps[0,$r]}")")
        cp+=("${cpu[$i,$r]}")
    done
    med[i]=$(median "${vals[@]}")
    pmed[i]=$(median "${pr[@]}")
    cmed[i]=$(median "${cp[@]}")
    row="| ${names[i]} | $(shim_state $i) |"
    for v in "${vals[@]}"; do row+=$(printf ' %.0f |' "$v"); done
    row+=$(printf ' %.0f | %s | %s | %s |' "${med[i]}" "$(ratio "${med[i]}" "${med[0]}")" \
        "${pmed[i]}" "${cmed[i]}")
    echo "$row"
    [ "$i" = 1 ] && rule_ratios="${pr[*]}"
done
echo
echo "Per-round ratios rule / plain: ${rule_ratios}. Worker CPU per request, rule / plain: $(ratio "${cmed[1]}" "${cmed[0]}") (no rule / plain: $(ratio "${cmed[2]}" "${cmed[0]}"))."
echo "Per-round worker CPU per connection, rule / plain: ${cpu_ratios[*]} (median ${cpu_pmed})."
user_share=$(awk -v u="${user_ticks[0]:-0}" -v s="${sys_ticks[0]:-0}" 'BEGIN {printf "%.3f", ((u + s) > 0 ? u / (u + s) : 0)}')
echo "User-space share of the plain worker's CPU: ${user_share} (${user_ticks[0]:-0} user and ${sys_ticks[0]:-0} system clock ticks over the counted runs)."
[ "$targets" != /dev/null ] && echo "$user_share" >"$targets.user-share"
errs=$(cat "$work"/*/errors 2>/dev/null | sed 's/^ *//' | sort | uniq -c | sed 's/^ *//' | paste -sd ';' -)
echo "wrk errors over all runs: ${errs:-none}."

ok=$(awk -v x="${pmed[1]}" 'BEGIN {print (x >= 0.98) ? "met" : "**not met**"}')
echo "| nginx req/s under the shim with a matching rule >= 0.98 x plain (median of per-round ratios) | ${pmed[1]} (medians: ${med[1]%.*} vs ${med[0]%.*} req/s; worker CPU per request ${cmed[1]} vs ${cmed[0]} µs) | $ok |" >"$targets"
ok=$(awk -v x="$cpu_pmed" 'BEGIN {print (x > 0 && x <= 1.02) ? "met" : "**not met**"}')
echo "| new connection under a never-limiting connection rule: worker CPU (user + system) per connection <= 1.02x plain (median of the $rounds interleaved per-round ratios) | ${cpu_pmed} (rounds: ${cpu_ratios[*]}) | $ok |" >>"$targets"
exit 0
