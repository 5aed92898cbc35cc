# SPDX-License-Identifier: BSD-2-Clause
"""Moving the load from one node to another, then killing a node, keeps
the fleet within the documented bounds (docs/cluster.md):
  - all load on node 1: it sees its own counts exactly: 100/s within 5 %;
  - the load moves to node 2: node 2 learns node 1's counts within one
    gossip interval: the window of the move admits at most
    L + rate * s more (s = interval + delay), within 5 % over 3 s;
  - node 3 killed while all three serve: after peer_timeout its counts stop
    counting, so the window after the kill admits at most its share (L/n)
    more; the two survivors then hold 100/s within 5 %."""
from cluster_fleet import *

with TempDir() as tmp, Fleet(tmp) as fleet:
    for i in range(3):
        fleet.start(i)
    fleet.wait_alive([0, 1, 2])
    flood = Flood([HOSTS[0]])
    t0 = time.monotonic()
    time.sleep(4.0)
    flood.targets = [HOSTS[1]]
    t_move = time.monotonic()
    time.sleep(4.0)
    flood.targets = HOSTS
    time.sleep(2.0)
    t_kill = time.monotonic()
    fleet.stop(2)
    flood.targets = HOSTS[:2]
    time.sleep(5.0)
    flood.stop()
    t_end = time.monotonic()

    s = INTERVAL + 0.005
    one = rate_between(flood, t0 + 1.5, t_move)
    move_window = flood.count(t_move - 1.0, t_move + 1.0) / 2.0
    moved = rate_between(flood, t_move + 1.0, t_move + 4.0)
    kill_window = flood.count(t_kill, t_kill + PEER_TIMEOUT + WINDOW)
    survivors = rate_between(flood, t_kill + PEER_TIMEOUT + 2 * WINDOW, t_end)
    print(f"node 1 alone {one:.1f}/s; around the move {move_window:.1f}/s; after it {moved:.1f}/s; "
          f"{kill_window} in the {PEER_TIMEOUT + WINDOW:.1f} s after the kill; survivors {survivors:.1f}/s")
    check(abs(one - LIMIT) <= 0.05 * LIMIT, f"one node: {one:.1f}/s")
    check(move_window <= LIMIT * (1 + s) + 5, f"move window {move_window:.1f}/s")
    check(abs(moved - LIMIT) <= 0.05 * LIMIT, f"after the move: {moved:.1f}/s")
    kill_bound = (LIMIT * (PEER_TIMEOUT + WINDOW) * (1 + overshoot_bound(3, INTERVAL))
                  + LIMIT / 3 + 5)
    check(kill_window <= kill_bound, f"{kill_window} after the kill, bound {kill_bound:.0f}")
    check(abs(survivors - LIMIT) <= 0.05 * LIMIT, f"survivors: {survivors:.1f}/s")
print("ok")
