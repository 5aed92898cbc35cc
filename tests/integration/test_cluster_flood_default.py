"""Gossip at its default interval (20 ms) under a flood that saturates
this 2-CPU machine (issue 11): three python3 http.server nodes (the
cluster examples with their `interval` line removed), 100 connections/s
per client address across the fleet, six client threads connecting to all
three as fast as they can for 6 s.

What was measured when issue 11 was filed (1.26-1.45 x the limit over 6 s)
is the sum of two things this test separates:
- the steady state, seconds 2 to 6: each second's admissions must be
  within docs/cluster.md's bound at the default interval,
  (n-1)s/(nW-(n-1)s) with s = 20 ms + 5 ms: 1.7 % (+2 for the edges of a
  one-second count), and the 4 s together within it too (+1). At 100 ms,
  the old default, the steady state measured 103 to 111/s against a bound
  of 107.5: the reason the default changed;
- the start of the flood on a cold key, the first second: measured 1.7 to
  2.6 N here. Two things add up: a sliding window counter lets up to 2N
  through in a window-length span when the previous window was empty (one
  node alone: 1.26 N in its first second here, depending on where in the
  window the flood starts), and each node admits up to its own N before it
  hears the others' counts for the new key ((n-1) r s with r the flood's
  rate per node, so up to nN). Not fixed yet (issue 11's note); asserted:
  at most nN + 2, the most the mechanism can let through.
"""
from cluster_fleet import *

N = LIMIT
with TempDir() as tmp:
    fleet = Fleet(tmp)
    for c in fleet.confs:
        text = open(c).read()
        check("interval = 20ms" in text, "the example lost its interval line")
        open(c, "w").write(text.replace("interval = 20ms", "").replace("peer_timeout = 500ms", ""))
    with fleet:
        for i in range(3):
            fleet.start(i)
        fleet.wait_alive([0, 1, 2])
        time.sleep(1.5)  # the key's previous window is empty: the flood starts cold
        flood = Flood(HOSTS)
        t0 = time.monotonic()
        time.sleep(6.0)
        flood.stop()
        per_s = [flood.count(t0 + k, t0 + k + 1) for k in range(6)]
        bound = overshoot_bound(3, 0.020)
        print(f"attempts {flood.attempts}; admitted per second {per_s}; "
              f"steady bound {N * (1 + bound):.1f}/s at the default interval")
        check(flood.attempts > 20 * N, "client too slow to test the limit")
        for k in range(2, 6):
            check(per_s[k] <= N * (1 + bound) + 2, f"second {k}: {per_s[k]} over the bound {N * (1 + bound):.1f}")
        steady = sum(per_s[2:]) / 4
        check(abs(steady - N) <= N * bound + 1, f"steady {steady:.1f}/s, limit {N}/s, bound {100 * bound:.1f} %")
        check(per_s[0] <= 3 * N + 2, f"first second {per_s[0]}: over nN")
print("ok")
