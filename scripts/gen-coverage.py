#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Regenerates the client coverage table: runs
tests/integration/test_client_coverage.py with SLUICE_COVERAGE_WRITE=1,
which rewrites docs/clients.md's section between <!-- coverage:begin --> and
<!-- coverage:end --> and docs/coverage.md from what it measured.
Needs a built tree (make all) and the clients of scripts/deps.sh."""
import os
import subprocess
import sys

root = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
test = os.path.join(root, "tests", "integration", "test_client_coverage.py")
env = dict(os.environ, SLUICE_COVERAGE_WRITE="1")
sys.exit(subprocess.call([sys.executable, test], env=env, cwd=os.path.dirname(test)))
