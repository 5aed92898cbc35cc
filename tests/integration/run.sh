#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Runs every tests/integration/test_*.py in its own process with a timeout.
# Prints one line per test and ends with "N passed, N failed".
# The tests listed in parallel.txt (they time nothing) run first,
# PARALLEL_JOBS (1) at a time; every other test runs after them, alone.
set -u
here=$(cd "$(dirname "$0")" && pwd)
jobs=${PARALLEL_JOBS:-1}
results=$(mktemp -d /tmp/sluice-it-XXXXXX)
trap 'rm -rf "$results"' EXIT
# Arguments: substrings; only tests whose names contain one of them run.
matches() {
    [ $# -le 1 ] && return 0
    local name=$1; shift
    for f in "$@"; do [[ "$name" == *"$f"* ]] && return 0; done
    return 1
}
# one TEST: runs it, writes its line (and its log when it failed) to
# $results/NAME.out and its status to $results/NAME.status
one() {
    local t=$1 name log start status
    name=$(basename "$t" .py)
    log=$(mktemp /tmp/sluice-it-XXXXXX.log)
    start=$(date +%s.%N)
    if timeout -k 5 180 python3 "$t" >"$log" 2>&1; then status=PASS; else status=FAIL; fi
    {
        printf '%-4s %-40s %6.1fs\n' "$status" "$name" "$(awk "BEGIN{print $(date +%s.%N) - $start}")"
        if [ "$status" = FAIL ] || [ -n "${VERBOSE:-}" ]; then sed 's/^/    /' "$log"; fi
    } >"$results/$name.out"
    echo "$status" >"$results/$name.status"
    rm -f "$log"
}
export -f one
export results
parallel=() alone=()
for t in "$here"/test_*.py; do
    name=$(basename "$t" .py)
    matches "$name" "$@" || continue
    if grep -qx "$name" "$here/parallel.txt"; then parallel+=("$t"); else alone+=("$t"); fi
done
if [ ${#parallel[@]} -gt 0 ]; then
    printf '%s\n' "${parallel[@]}" | xargs -P "$jobs" -I{} bash -c 'one "$1"' _ {}
    for t in "${parallel[@]}"; do cat "$results/$(basename "$t" .py).out"; done
fi
for t in "${alone[@]}"; do
    one "$t"
    cat "$results/$(basename "$t" .py).out"
done
pass=$(grep -lx PASS "$results"/*.status 2>/dev/null | wc -l)
fail=$(grep -lx FAIL "$results"/*.status 2>/dev/null | wc -l)
echo "integration: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
