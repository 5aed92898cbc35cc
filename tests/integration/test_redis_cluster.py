# SPDX-License-Identifier: BSD-2-Clause
"""scope = redis on a Redis Cluster: three primaries on loopback (`redis-cli
--cluster create`), two http.servers sharing 10 connections a second per
client address (`cluster = ...`), twelve client addresses whose keys
spread over all three primaries, flooded together:
  1. every primary holds some of the keys, and the pair admits 10/s per
     address (the sum within 15 %: small limits count in whole
     connections, each address's own within 35 %);
  2. some slots holding keys are resharded (`redis-cli --cluster
     reshard`) during the flood: the programs follow MOVED and ASK
     (counted in `sluice metrics`), the limit holds during the move
     (at most +15 %), and no connection waits on Redis (slowest under
     0.5 s);
  3. after it, the moved keys count on their new primary (both programs'
     fields are there) and the pair admits the limit again;
  4. ASK, with a slot left half migrated by hand (CLUSTER SETSLOT
     MIGRATING on its primary, IMPORTING on another) and a new address
     whose key is in it flooded: its keys exist on neither node, so the
     old primary answers ASK, which the programs follow with ASKING
     (counted as `ask`); the importing node then answers TRYAGAIN (a
     script's two keys, not both there: Redis's rule for multi-key calls
     during a migration), so the key cannot sync and follows
     on_backend_error = local after 240 ms: the pair holds it at the
     limit (two local shares of 50 %, +15 %), counted as fallback
     decisions, and not at twice the limit as two programs counting apart
     would (19/s seen before the key's own staleness was checked).
"""
from redis_fleet import *

L = CLUSTER_L
CLIENTS = CLUSTER_CLIENTS


with TempDir() as tmp:
    cf = ClusterFlood(tmp)
    cl, progs, flood, by_node, t0 = cf.cl, cf.progs, cf.flood, cf.by_node, cf.t0
    try:
        time.sleep(3.5)
        rates = flood.admitted_by(t0 + 1.5, t0 + 3.5)
        total = sum(rates.values())
        print(f"before: {total:.1f}/s for {len(CLIENTS)} addresses (limit {L} each), "
              f"{flood.attempts(t0 + 1.5, t0 + 3.5) / 2:.0f} attempts/s, "
              f"slowest {1000 * flood.slowest(t0, t0 + 3.5):.0f} ms")
        print(redis_lines(progs))
        check(abs(total - L * len(CLIENTS)) <= 0.15 * L * len(CLIENTS), f"{total:.1f}/s in all")
        for c, r in rates.items():
            check(abs(r - L) <= 0.35 * L, f"{c}: {r:.1f}/s")
        w = int(time.time()) - 1  # a whole window: both programs admitted in it
        for port, cs in by_node.items():
            n = cl.node(port)
            fields = n.cli("HKEYS", key(cs[0], w)).split()
            check(len(fields) == 2, f"{cs[0]} on {port}: fields {fields}")

        # 2. reshard the slots of two keys of one primary to another
        src = max(by_node, key=lambda p: len(by_node[p]))
        dst = next(p for p in by_node if p != src)
        prim = cl.primaries()
        first = min(a for a, _ in prim[src][1])
        slots = sorted(key_slot(key(c, 0)) for c in by_node[src])
        count = slots[1] - first + 1
        moved = [c for c in by_node[src] if key_slot(key(c, 0)) <= slots[1]]
        before = metrics(progs.procs[0].p.pid)
        tr, te = cl.reshard(src, dst, count)
        cl.wait_ok()
        # The rate is read over at least 2 s (as before and after): the
        # counters' windows are whole seconds, so a span shorter than one
        # may hold a window's whole budget (CI once read 141.7/s over the
        # 0.6 s of a 0.1 s reshard, 85 connections, within one window's 120).
        tm = max(te + 0.5, tr + 2.0)
        time.sleep(max(0.0, tm - time.monotonic()))
        after_m = [metrics(p.p.pid) for p in progs.procs]
        redirects = [m.get(("sluice_redis_events_total", "moved"), 0) +
                     m.get(("sluice_redis_events_total", "ask"), 0) for m in after_m]
        slow = flood.slowest(tr, tm)
        during = sum(flood.admitted_by(tr, tm).values())
        print(f"reshard of {count} slots ({len(moved)} keys) from {src} to {dst} took "
              f"{te - tr:.1f} s: {during:.1f}/s meanwhile, slowest connection "
              f"{1000 * slow:.0f} ms, MOVED+ASK per program {redirects}")
        check(all(x > 0 for x in redirects), f"each program should follow redirections: {redirects}")
        check(slow < 0.5, f"a connection took {slow:.2f} s during the reshard")
        check(during <= 1.15 * L * len(CLIENTS), f"{during:.1f}/s during the reshard")

        # 3. the moved keys on their new primary; the limit again
        ta = time.monotonic()
        time.sleep(2.5)
        w = int(time.time()) - 1
        dn = cl.node(dst)
        for c in moved:
            fields = dn.cli("HKEYS", key(c, w)).split()
            check(len(fields) == 2, f"{c} moved to {dst}: fields {fields}")
        rates = flood.admitted_by(ta + 0.5, ta + 2.5)
        total = sum(rates.values())
        print(f"after: {total:.1f}/s in all; moved keys {[round(rates[c], 1) for c in moved]}/s")
        check(abs(total - L * len(CLIENTS)) <= 0.15 * L * len(CLIENTS), f"{total:.1f}/s after")
        # 4. ASK, with a slot half migrated
        newc = next(f"127.0.2.{i}" for i in range(1, 250)
                    if cl.node_of(key_slot(key(f"127.0.2.{i}", 0))) == src)
        slot = key_slot(key(newc, 0))
        prim = cl.primaries()
        sn = cl.node(src)
        dn = cl.node(dst)
        check(dn.cli("CLUSTER", "SETSLOT", str(slot), "IMPORTING", prim[src][0]).strip() == "OK" and
              sn.cli("CLUSTER", "SETSLOT", str(slot), "MIGRATING", prim[dst][0]).strip() == "OK",
              "SETSLOT")
        m0 = [metrics(p.p.pid) for p in progs.procs]
        flood2 = Flood(HOSTS[:2], progs.port, threads=2, clients=[newc])
        try:
            t2 = time.monotonic()
            time.sleep(3.0)
            rate = flood2.rate(t2 + 1.0, t2 + 3.0)
        finally:
            flood2.stop()
        m1 = [metrics(p.p.pid) for p in progs.procs]
        asks = [b.get(("sluice_redis_events_total", "ask"), 0) -
                a.get(("sluice_redis_events_total", "ask"), 0) for a, b in zip(m0, m1)]
        fb = [b.get(("sluice_redis_events_total", "fallback"), 0) -
              a.get(("sluice_redis_events_total", "fallback"), 0) for a, b in zip(m0, m1)]
        print(f"slot {slot} migrating {src} -> {dst}: {newc} admitted {rate:.1f}/s (limit {L}), "
              f"ASK per program {asks}, fallback decisions {fb}")
        check(all(a > 0 for a in asks), f"each program should follow ASK: {asks}")
        check(all(f > 0 for f in fb), f"the unsynced key should follow on_backend_error: {fb}")
        check(rate <= 1.15 * L, f"{newc}: {rate:.1f}/s during the migration")
        dn.cli("CLUSTER", "SETSLOT", str(slot), "STABLE")
        sn.cli("CLUSTER", "SETSLOT", str(slot), "STABLE")

        nodes = node_calls(progs.procs[0].p.pid)
        print("calls per node:", nodes)
        check(sorted(nodes) == sorted(f"127.0.0.1:{p}" for p in by_node) and
              all(v > 0 for v in nodes.values()),
              f"sluice metrics should name the three primaries, each with calls: {nodes}")
    finally:
        cf.stop()
print("ok")
