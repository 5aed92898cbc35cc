# SPDX-License-Identifier: BSD-2-Clause
"""core/fleet/redis.lua called directly with redis-cli EVALSHA, as a service
sharing the budget would call it (docs/redis.md): "add" counts a request
only when the sliding estimate stays within the limit, "set" keeps each
node's count at its maximum (so a repeated or late call counts nothing
twice), totals cover every node, keys expire, a wrong call is an error.
With a third key (a learned hold, rules with learn): the later of the
stored hold and ARGV[8] is kept, living ARGV[9] ms, and comes back as a
sixth element; the counts are as without it."""
from redis_fleet import *

with TempDir() as tmp:
    redis = Redis(tmp)
    try:
        sha = redis.cli("SCRIPT", "LOAD", open(SCRIPT).read()).strip()
        check(len(sha) == 40, f"SCRIPT LOAD: {sha!r}")
        cur, prev = "sluice:{web:10.0.0.1}:1001", "sluice:{web:10.0.0.1}:1000"

        def call(node, op, n, p=0, limit=0, weight=0, ttl=3000):
            out = redis.cli("EVALSHA", sha, "2", cur, prev, node, op, str(n), str(p), str(limit),
                            str(weight), str(ttl))
            return [int(x) for x in out.split()] if out.split() and out.split()[0].lstrip("-").isdigit() else out

        # a node says it admitted 5 in this window and 4 in the previous one
        check(call("a", "set", 5, 4) == [1, 5, 4, 5, 4], "set")
        # said again, or said late with less: nothing changes
        check(call("a", "set", 5, 4) == [1, 5, 4, 5, 4], "set twice")
        check(call("a", "set", 3, 1) == [1, 5, 4, 5, 4], "a late, smaller set")
        # a service adds 1 under limit 10, the previous window weighing half:
        # 4 * 0.5 + 5 + 1 = 8 <= 10: counted
        check(call("svc", "add", 1, limit=10, weight=500000) == [1, 6, 4, 1, 0], "add within")
        # 4 * 0.5 + 6 + 3 = 11 > 10: refused, nothing counted
        check(call("svc", "add", 3, limit=10, weight=500000) == [0, 6, 4, 1, 0], "add over")
        # limit 0: counted without a check
        check(call("svc", "add", 3) == [1, 9, 4, 4, 0], "add unchecked")
        check(redis.cli("HGETALL", cur).split() in (["a", "5", "svc", "4"], ["svc", "4", "a", "5"]),
              "one field per node")
        ttl = int(redis.cli("PTTL", cur))
        check(0 < ttl <= 3000, f"the window's key expires ({ttl} ms)")
        err = redis.cli("EVALSHA", sha, "2", cur, prev, "x", "bogus", "1", "0", "0", "0", "1000")
        check("add or set" in err, f"a wrong call is an error: {err!r}")

        # a learned hold: KEYS[3], ARGV[8] (UNIX ms), ARGV[9] (its lifetime)
        hold = "sluice:{web:10.0.0.1}:hold"

        def held(node, mine, keep=5000):
            out = redis.cli("EVALSHA", sha, "3", cur, prev, hold, node, "set", "0", "0", "0", "0",
                            "3000", str(mine), str(keep))
            return [int(x) for x in out.split()]

        check(held("a", 0) == [1, 9, 4, 5, 4, 0], "no hold: 0, counts unchanged")
        check(redis.cli("EXISTS", hold).strip() == "0", "no hold: no key")
        check(held("a", 1700000003000) == [1, 9, 4, 5, 4, 1700000003000], "a hold is kept")
        check(held("b", 1700000001000)[5] == 1700000003000, "an earlier one changes nothing")
        check(held("b", 0)[5] == 1700000003000, "another node reads it")
        check(held("b", 1700000009000)[5] == 1700000009000, "a later one wins")
        ttl = int(redis.cli("PTTL", hold))
        check(0 < ttl <= 5000, f"the hold's key expires ({ttl} ms)")
    finally:
        redis.stop()
print("ok")
