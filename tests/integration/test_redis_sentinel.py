# SPDX-License-Identifier: BSD-2-Clause
"""scope = redis behind Redis Sentinel: a primary, one replica and three
sentinels on loopback (down-after 1 s), two http.servers sharing 60
connections a second per client address (on_backend_error = local,
local_share 50 %), found through `sentinels = ...; master = mymaster`.
Under a flood of one client address:
  1. before the failover the pair admits the limit (within 10 %);
  2. the primary is killed with SIGKILL: each program falls back (one
     line each), the pair stays at or under the limit (+10 % for the window
     edge) while the sentinels fail over, and no connection waits on Redis
     (slowest bounded at 0.5 s; a call that waited would take the 2 s
     backoff or the failover's seconds);
  3. each program follows the failover to the promoted replica (the
     +switch-master line or the sentinels' answer) and counts with the
     fleet again; the pair admits the limit again (within 15 %, as after a
     restart in test_redis_faults), and no more than the limit (+10 %) in
     the window in which they came back: a program counting with the fleet
     from its first round there saw none of the other's counts of the
     failover (written by the other's own first round) and admitted its
     whole view of the room (80 in that window, 52 from one program, seen
     in one run of five before the second round was waited for);
  4. the new primary holds the counts: the first round after the
     reconnection writes both programs' fields (checked as soon as both say
     they answer), and a whole window after it holds what the flood got
     admitted in it (within 3 connections or 5 %: connections in flight at
     the window's edges)."""
from redis_fleet import *


with TempDir() as tmp:
    sen = Sentinels(tmp)
    progs = None
    flood = None
    try:
        sen.ready()
        progs = Programs(tmp, 0, where=sen.where())
        wall = time.time() - time.monotonic()
        flood = Flood(HOSTS[:2], progs.port)
        t0 = time.monotonic()
        wait_for(progs, lambda: count_lines(progs, "connected") == [1, 1], 5.0, "both programs connect")
        time.sleep(3.0)
        base = flood.rate(t0 + 1.0, t0 + 3.0)
        print(f"before: pair {base:.1f}/s, slowest {1000 * flood.slowest(t0, t0 + 3.0):.0f} ms")
        check(abs(base - LIMIT) <= 0.1 * LIMIT, f"pair {base:.1f}/s before the failover")
        check(f"127.0.0.1:{sen.primary.port}" in redis_lines(progs),
              "the programs should name the primary the sentinels gave")

        # 2. SIGKILL the primary
        old = sen.primary.port
        sen.primary.kill()
        tk = time.monotonic()
        wait_for(progs, lambda: sen.master_port() == sen.replica.port, 30.0, "the sentinels fail over")
        tf = time.monotonic()
        wait_for(progs, lambda: count_lines(progs, "answers") == [1, 1], 10.0,
                 "both programs count with the fleet again")
        ta = time.monotonic()
        # 4a. the round that made them say so wrote their counts
        fields = {f for w in (int(time.time()) - 1, int(time.time()))
                  for f in sen.replica.cli("HKEYS", key(CLIENT, w)).split()}
        during = flood.rate(tk + 0.3, tf) if tf > tk + 0.8 else None
        slow = flood.slowest(tk, ta)
        fell = count_lines(progs, "on_backend_error = local")
        followed = count_lines(progs, f"-> 127.0.0.1:{sen.replica.port}")
        print(f"failover: sentinels switched after {tf - tk:.2f} s, programs back after "
              f"{ta - tk:.2f} s; pair {during if during is None else round(during, 1)}/s "
              f"meanwhile, slowest connection {1000 * slow:.0f} ms, fallback lines {fell}, "
              f"follow lines {followed}, fields in the new primary {len(fields)}")
        print(redis_lines(progs))
        check(fell == [1, 1], f"each program should say once that it fell back: {fell}")
        check(followed == [1, 1], f"each program should say once it follows the failover")
        check(slow < 0.5, f"a connection took {slow:.2f} s during the failover")
        if during is not None:
            check(during <= 1.1 * LIMIT, f"{during:.1f}/s during the failover")
        check(len(fields) >= 2, f"the new primary has {len(fields)} programs' counts: {fields}")

        # 3. the limit again, with the new primary
        time.sleep(2.5)
        after = flood.rate(ta + 0.5, ta + 2.5)
        wr = int(ta + wall)  # the whole window in which they came back
        back = flood.rate(wr - wall, wr + 1 - wall)
        print(f"after: pair {after:.1f}/s; {back:.0f} in the window of the return")
        check(abs(after - LIMIT) <= 0.15 * LIMIT, f"pair {after:.1f}/s after the failover")
        check(back <= 1.1 * LIMIT, f"{back:.0f} admitted in the window the programs came back")

        # 4b. a whole window after the reconnection holds what was admitted in it
        w = int(ta + wall) + 1
        while time.time() < w + 1.1:
            time.sleep(0.05)
        held = sum(int(v) for v in sen.replica.cli("HVALS", key(CLIENT, w)).split())
        admitted = flood.rate(w - wall, w + 1 - wall)
        print(f"window {w}: the new primary holds {held}, the flood got {admitted:.0f} admitted")
        check(abs(held - admitted) <= max(3, 0.05 * admitted),
              f"window {w}: Redis holds {held}, {admitted:.0f} admitted")
        check(flood.attempts(ta, ta + 2.5) > 2 * after, "the flood should be a flood")

        # 5. metrics and stats name the new primary and count the failover
        for p in progs.procs:
            m, nodes = metrics(p.p.pid), node_calls(p.p.pid)
            fo = m.get(("sluice_redis_events_total", "failovers"), 0)
            print(f"program {p.p.pid}: failovers {fo:.0f}, nodes {nodes}")
            check(fo == 1, f"one failover should be counted, not {fo}")
            check(list(nodes) == [f"127.0.0.1:{sen.replica.port}"] and
                  list(nodes.values())[0] > 0, f"metrics should name the new primary: {nodes}")
        st = run([SLUICE, "stats", "--pid", str(progs.procs[0].p.pid)])
        print(st.stdout[st.stdout.find("redis:"):])
        check(f"127.0.0.1:{sen.replica.port}" in st.stdout and "failovers 1" in st.stdout,
              "sluice stats should name the primary and count the failover")
    finally:
        if flood:
            flood.stop()
        if progs:
            progs.stop()
        sen.stop()
print("ok")
