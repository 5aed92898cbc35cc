# SPDX-License-Identifier: BSD-2-Clause
"""test_cluster_flood with 20 % of gossip datagrams lost
(SLUICE_TEST_GOSSIP_DROP=20 in every node's sender, early sends included):
every window within the documented flood bound for views up to three
datagrams stale. At 100 ms: a lost early send is repaired by the next one, not by
a fast tick."""
import os
import sys

sys.argv = [sys.argv[0], "20"]
os.environ.setdefault("FLOOD_INTERVAL", "100ms")  # the slower repair by the tick
import test_cluster_flood  # noqa: E402,F401  (runs the test)
