#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# redis_fleet.sh - bench/redis_fleet.py under the timing lock the
# integration tests use (it binds 127.0.0.2-4:7946 like the gossip tests).
# About 40 s. Prints markdown; asserts nothing.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
if ! command -v redis-server >/dev/null; then
    echo "_Not measured: redis-server is not installed._"
    exit 0
fi
[ -n "${BUILD:-}" ] && export SLUICE_BUILD=$root/$BUILD
exec flock /tmp/sluice-timing.lock python3 "$root/bench/redis_fleet.py"
