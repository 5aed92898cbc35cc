#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Runs unit-test binaries, each in its own process with a timeout; prints
# cmocka's output and returns non-zero if any failed.
set -u
fail=0
for t in "$@"; do
    echo "== $t"
    timeout 300 "$t" 2>&1 || { echo "FAILED: $t"; fail=1; }
done
exit $fail
