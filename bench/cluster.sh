#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Cluster benchmark: builds bench/bench_cluster.c and prints markdown tables
# (fleet accuracy vs gossip interval and nodes; worst window under flood and
# steady load, early sends off and on, 2/3/5 nodes, 100 and 10000/s; gossip bytes/s per node vs
# active keys) to stdout, for BENCH.md. About a minute on 2 cores.
set -eu
cd "$(dirname "$0")/.."
make --no-print-directory build/bench/bench_cluster >&2
exec build/bench/bench_cluster
