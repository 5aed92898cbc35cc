#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# outbound.sh - bench/outbound.py (its opening comment is the method) under
# the timing lock the integration tests use. About 60 s. Prints markdown.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
for tool in nginx curl openssl; do
    command -v $tool >/dev/null || { echo "_Not measured: $tool is not installed._"; exit 0; }
done
[ -n "${BUILD:-}" ] && export SLUICE_BUILD=$root/$BUILD
exec flock /tmp/sluice-timing.lock python3 "$root/bench/outbound.py" "$@"
