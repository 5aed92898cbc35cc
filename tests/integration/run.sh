#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Runs every tests/integration/test_*.py in its own process with a timeout.
# Prints one line per test and ends with "N passed, N failed".
set -u
here=$(cd "$(dirname "$0")" && pwd)
pass=0; fail=0; failed=()
# Arguments: substrings; only tests whose names contain one of them run.
matches() {
    [ $# -le 1 ] && return 0
    local name=$1; shift
    for f in "$@"; do [[ "$name" == *"$f"* ]] && return 0; done
    return 1
}
for t in "$here"/test_*.py; do
    name=$(basename "$t" .py)
    matches "$name" "$@" || continue
    log=$(mktemp /tmp/sluice-it-XXXXXX.log)
    start=$(date +%s.%N)
    if timeout -k 5 180 python3 "$t" >"$log" 2>&1; then
        pass=$((pass + 1)); status=PASS
    else
        fail=$((fail + 1)); status=FAIL; failed+=("$name")
    fi
    printf '%-4s %-40s %6.1fs\n' "$status" "$name" "$(awk "BEGIN{print $(date +%s.%N) - $start}")"
    if [ "$status" = FAIL ] || [ -n "${VERBOSE:-}" ]; then sed 's/^/    /' "$log"; fi
    rm -f "$log"
done
echo "integration: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
