# SPDX-License-Identifier: BSD-2-Clause
"""20 % of gossip datagrams dropped (the test-only fault hook
SLUICE_TEST_GOSSIP_DROP=20 in every node's sender): the fleet stays within
the documented bound for views up to three datagrams stale (probability
of four losses in a row: 0.2^4 = 0.16 %), and within 5 % of the limit."""
from cluster_fleet import *

with TempDir() as tmp, Fleet(tmp, extra_env={"SLUICE_TEST_GOSSIP_DROP": "20"}) as fleet:
    for i in range(3):
        fleet.start(i)
    fleet.wait_alive([0, 1, 2])
    flood = Flood(HOSTS)
    t0 = time.monotonic()
    time.sleep(7.0)
    flood.stop()
    rate = rate_between(flood, t0 + 2.0, t0 + 7.0)
    bound = overshoot_bound(3, INTERVAL, lost_in_a_row=3)
    sent = dropped = 0
    for i in range(3):
        s = fleet.stats(i)
        sent += s["tx_packets"]
        dropped += s["tx_test_dropped"]
    share = dropped / (sent + dropped)
    print(f"fleet rate {rate:.1f}/s, limit {LIMIT}, bound +{100 * bound:.1f} %; "
          f"gossip dropped {dropped} of {sent + dropped} ({100 * share:.0f} %)")
    check(0.15 < share < 0.25, "the fault hook did not drop about 20 %")
    check(rate <= LIMIT * (1 + bound) + 2, f"{rate:.1f}/s is over the documented bound")
    check(abs(rate - LIMIT) <= 0.05 * LIMIT, f"{rate:.1f}/s is not within 5 %")
print("ok")
