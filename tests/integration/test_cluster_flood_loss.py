"""test_cluster_flood with 20 % of gossip datagrams lost
(SLUICE_TEST_GOSSIP_DROP=20 in every node's sender, early sends included):
every window within the documented flood bound for views up to three
datagrams stale."""
import sys

sys.argv = [sys.argv[0], "20"]
import test_cluster_flood  # noqa: E402,F401  (runs the test)
