# SPDX-License-Identifier: BSD-2-Clause
"""`sluice metrics` of a program with a `scope = redis` rule (issue 13:
"gossip or Redis peers lost" can be alerted on). One http.server under the
redis fleet config (no `shared` table), found by --pid: before its first
decision the age is -1 (the sender starts with the first decision); after
one connection, once Redis has answered, sluice_redis_last_sync_age_seconds is under 0.2 s (the 20 ms
interval, with room for a loaded machine) and the sender's syncs count;
redis-server killed: within 2 s the age is over 0.5 s (no round completes)
and failures count, which is what the example alert watches."""
import sys

from redis_fleet import *


def wait_for(cond, timeout, what):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        m = cond()
        if m:
            return m
        time.sleep(0.05)
    raise AssertionError(what)


with TempDir() as tmp:
    redis = Redis(tmp)
    progs = Programs(tmp, redis.port, n=1)
    try:
        pid = progs.procs[0].p.pid
        check(metrics(pid)[("sluice_redis_last_sync_age_seconds", None)] == -1,
              "no round before the first decision (the sender starts with it)")
        connect_once(HOSTS[0], progs.port)

        def synced():
            m = metrics(pid)
            age = m.get(("sluice_redis_last_sync_age_seconds", None))
            return m if age is not None and 0 <= age < 0.2 else None

        m = wait_for(synced, 5, "Redis answered within 5 s")
        check(m[("sluice_redis_events_total", "syncs")] > 0, f"syncs counted: {m}")
        failures = m[("sluice_redis_events_total", "failures")]
        redis.kill()

        def lost():
            m = metrics(pid)
            return m if m[("sluice_redis_last_sync_age_seconds", None)] > 0.5 else None

        m = wait_for(lost, 2, "the age grows once Redis is gone")
        check(m[("sluice_redis_events_total", "failures")] > failures, f"failures counted: {m}")
    finally:
        progs.stop()
        redis.stop()
print("ok")
