#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# h1_insn.sh - the head scanner's instructions per byte of head on realistic
# heads (bench/bench_h1.c's seeded generator: ~300-byte heads, none
# repeated), counted by callgrind over feed_real alone (the generator is
# outside it): the one-pass reader alone (sl_h1fast_read, with the
# thread's shapes of header lines: core/http/h1fast.c), the scan alone
# (no thread memory), the scanner with the reader (sl_h1_feed, http1.c's
# glue included) and http-parser alone.
# Prints markdown rows; with a file argument, writes the target row there
# (the one-pass reader alone: <= 1.5 instructions per byte, issue 32).
# Knobs: BUILD (build), H1_N (20000 heads).
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-build}
case $build in /*) ;; *) build=$root/$build ;; esac
n=${H1_N:-20000}
targets=${1:-/dev/null}
bin=$build/bench/bench_h1
skip() {
    echo "_Not measured: $1._"
    echo "| head scanner instructions per byte (callgrind) | not measured ($1) | not measured |" >"$targets"
    exit 0
}
[ -x "$bin" ] || skip "$bin is not built"
command -v valgrind >/dev/null || skip "valgrind is not installed"
work=$(mktemp -d /tmp/sluice-h1insn.XXXXXX)
trap 'rm -rf "$work"' EXIT
echo "| realistic heads ($n, ~300 bytes, none repeated) | instructions per head | per byte of head |"
echo "|---|---:|---:|"
for mode in realscan realbare real realslow; do
    out=$(valgrind --tool=callgrind --callgrind-out-file="$work/cg.$mode" \
        --toggle-collect="feed_real*" "$bin" "$mode" "$n" 2>/dev/null) || { echo "| $mode | failed | |"; continue; }
    bytes=$(echo "$out" | sed -n 's/.* heads, \([0-9]*\) bytes of head.*/\1/p')
    total=$(awk '/^(summary|totals):/ {print $2; exit}' "$work/cg.$mode")
    case $mode in
    realscan) what="one-pass reader alone (\`sl_h1fast_read\`, with the thread's shapes of header lines)" ;;
    realbare) what="the scan alone (\`sl_h1fast_scan_path\`: no thread memory, every line read)" ;;
    real) what="scanner, fast path (\`sl_h1_feed\`, http1.c's glue included)" ;;
    realslow) what="http-parser alone (\`sl_h1_feed\`, slow only)" ;;
    esac
    awk -v w="$what" -v t="$total" -v b="$bytes" -v n="$n" \
        'BEGIN {printf "| %s | %.0f | %.2f |\n", w, t / n, t / b}'
    [ "$mode" = realscan ] && per_byte=$(awk -v t="$total" -v b="$bytes" 'BEGIN {printf "%.2f", t / b}')
    [ "$mode" = realbare ] && bare_byte=$(awk -v t="$total" -v b="$bytes" 'BEGIN {printf "%.2f", t / b}')
done
awk -v x="${per_byte:-}" -v y="${bare_byte:-?}" 'BEGIN {
    if (x == "") print "| head scanner on realistic heads <= 1.5 instructions per byte of head (callgrind, bench_h1 realscan) | ? | **not met** |"
    else printf "| head scanner on realistic heads <= 1.5 instructions per byte of head (callgrind, bench_h1 realscan: the one-pass reader with its shapes) | %s (the scan alone, realbare: %s) | %s |\n", x, y, (x + 0 <= 1.5 ? "met" : "**not met**")
}' >"$targets"
