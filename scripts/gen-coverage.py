#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Regenerates the coverage tables: runs
tests/integration/test_client_coverage.py and test_server_coverage.py with
SLUICE_COVERAGE_WRITE=1, which rewrite docs/clients.md's section between
<!-- coverage:begin --> and <!-- coverage:end --> and docs/coverage.md (the
clients), and docs/servers.md's between <!-- servers:begin --> and
<!-- servers:end --> (the servers), from what they measured.
Needs a built tree (make all) and the programs of scripts/deps.sh."""
import os
import subprocess
import sys

root = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
env = dict(os.environ, SLUICE_COVERAGE_WRITE="1")
status = 0
for name in ("test_client_coverage.py", "test_server_coverage.py"):
    test = os.path.join(root, "tests", "integration", name)
    status |= subprocess.call([sys.executable, test], env=env, cwd=os.path.dirname(test))
sys.exit(status)
