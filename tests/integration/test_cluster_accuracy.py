# SPDX-License-Identifier: BSD-2-Clause
"""Three python3 http.server nodes under the shim (examples/cluster-node*.conf:
100 connections per second per client address across the fleet, gossip
every 20 ms), one client address flooding all three round robin: the
fleet admits 100/s within 5 % (docs/cluster.md bounds the steady-state
overshoot at (n-1)s/(nW-(n-1)s) = 1.7 % here), and no node alone would
have held it (each admits about a third)."""
from cluster_fleet import *

with TempDir() as tmp, Fleet(tmp) as fleet:
    for i in range(3):
        fleet.start(i)
    fleet.wait_alive([0, 1, 2])
    flood = Flood(HOSTS)
    t0 = time.monotonic()
    time.sleep(7.0)
    flood.stop()
    # skip the first two seconds: the first window admits its burst
    rate = rate_between(flood, t0 + 2.0, t0 + 7.0)
    bound = overshoot_bound(3, INTERVAL)
    print(f"attempts {flood.attempts}, fleet rate {rate:.1f}/s over 5 s, limit {LIMIT}/s, "
          f"documented steady overshoot <= {100 * bound:.1f} %")
    check(flood.attempts > 20 * LIMIT, "client too slow to test the limit")
    check(abs(rate - LIMIT) <= 0.05 * LIMIT, f"fleet admitted {rate:.1f}/s, limit {LIMIT} +-5 %")
    check(rate <= LIMIT * (1 + bound) + 2, f"{rate:.1f}/s is over the documented bound")
    per_node = [fleet.stats(i) for i in range(3)]
    for i, s in enumerate(per_node):
        print(f"node {i + 1}: tx {s['tx_packets']} rx {s['rx_packets']} "
              f"forged {s['drop_forged']} replayed {s['drop_replayed']}")
        check(s["rx_packets"] > 0 and s["drop_forged"] == 0, f"node {i + 1} gossip unhealthy")
print("ok")
