# SPDX-License-Identifier: BSD-2-Clause
"""Faults of the Redis backend, under a flood of one client address against
two http.servers (scope = redis, 60/s, on_backend_error = local,
local_share 50 %):
  1. redis-server killed with SIGKILL: each program falls back to 50 % of
     the limit on its own counts within timeout + 2 intervals (240 ms), so
     the pair stays at or under 60/s (plus 10 % for the window edge), says
     so once, and the connections never wait on Redis;
  2. redis-server started again on the same port: the programs reconnect
     (backoff at most 2 s), say so once, write their counts back (both
     fields of the current window exist within a second), and the pair is
     at 60/s again;
  3. redis-server answering slowly (DEBUG SLEEP 2): the programs fall back
     after their 200 ms timeout and come back after it; no connection
     takes anywhere near the 2 s a call waiting on Redis would take (the
     slowest is bounded at 0.5 s, the python server's own jitter on a
     shared machine included)."""
import threading

from redis_fleet import *


with TempDir() as tmp:
    redis = Redis(tmp)
    progs = Programs(tmp, redis.port)
    flood = None
    try:
        flood = Flood(HOSTS[:2], progs.port)
        t0 = time.monotonic()
        time.sleep(3.0)
        base = flood.rate(t0 + 1.0, t0 + 3.0)
        base_slow = flood.slowest(t0 + 1.0, t0 + 3.0)
        print(f"healthy: pair {base:.1f}/s, slowest connection {1000 * base_slow:.0f} ms")
        check(abs(base - LIMIT) <= 0.1 * LIMIT, f"healthy pair {base:.1f}/s, limit {LIMIT}")

        # 1. SIGKILL
        redis.kill()
        tk = time.monotonic()
        time.sleep(3.0)
        down = flood.rate(tk + 1.0, tk + 3.0)
        slow = flood.slowest(tk, tk + 3.0)
        fell = count_lines(progs, "on_backend_error = local")
        print(f"redis killed: pair {down:.1f}/s, slowest connection {1000 * slow:.0f} ms, "
              f"fallback lines per program {fell}")
        check(down <= 1.1 * LIMIT, f"fallback admitted {down:.1f}/s, over the limit")
        check(down >= 0.3 * LIMIT, f"fallback admitted {down:.1f}/s: local share not used")
        check(fell == [1, 1], f"each program should say once that it fell back: {fell}")
        check(slow < 0.5, f"a connection took {slow:.2f} s while Redis was down")

        # 2. back on the same port
        redis.start()
        tr = time.monotonic()
        wait_for(progs, lambda: count_lines(progs, "answers") == [1, 1], 5.0,
                 "both programs say Redis answers again")
        back = time.monotonic() - tr
        def fields():
            w = int(time.time())
            return int(redis.cli("HLEN", key(CLIENT, w)) or 0)
        try:
            wait_for(progs, lambda: fields() >= 2, 1.0, "both programs' counts back in Redis")
        except AssertionError:
            print(redis.cli("KEYS", "*"), redis.cli("HGETALL", key(CLIENT, int(time.time()))))
            raise
        tb = time.monotonic()
        time.sleep(2.5)
        up = flood.rate(tb + 0.5, tb + 2.5)
        print(f"redis back after {back:.2f} s: pair {up:.1f}/s")
        # 15 %: one CI run on the loaded 2-CPU machine measured 67/s here
        # (the lead's note for issue 11); 60-63 is usual
        check(abs(up - LIMIT) <= 0.15 * LIMIT, f"after the restart the pair admits {up:.1f}/s")

        # 3. DEBUG SLEEP 2
        sleeper = subprocess.Popen(["redis-cli", "-p", str(redis.port), "DEBUG", "SLEEP", "2"],
                                   stdout=subprocess.DEVNULL)
        ts = time.monotonic()
        sleeper.wait(10)
        wait_for(progs, lambda: count_lines(progs, "answers") == [2, 2], 5.0,
                 "both programs say Redis answers again after DEBUG SLEEP")
        te = time.monotonic()
        time.sleep(0.5)
        slow = flood.slowest(ts, te)
        during = flood.rate(ts + 0.3, ts + 2.0)
        fell = count_lines(progs, "on_backend_error = local")
        print(f"DEBUG SLEEP 2: pair {during:.1f}/s during it, slowest connection "
              f"{1000 * slow:.0f} ms, back {te - ts:.2f} s after it began, fallback lines {fell}")
        check(fell == [2, 2], f"each program should have fallen back once more: {fell}")
        check(slow < 0.5, f"a connection took {slow:.2f} s while Redis slept")
        check(during <= 1.1 * LIMIT, f"{during:.1f}/s while Redis slept")
    finally:
        if flood:
            flood.stop()
        progs.stop()
        redis.stop()
print("ok")
