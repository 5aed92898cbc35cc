# SPDX-License-Identifier: BSD-2-Clause
"""A learned hold shared through Redis (issue 35, item 2): with scope =
redis, what one program learns from a vendor's 429 holds the calls of
every program counting into the same Redis, on other tables (other hosts).

A redis-server on a free loopback port; a vendor (ThreadingHTTPServer in
this test process, not under the shim) answering GET /A/0 with 429 and
Retry-After: 3, everything else 200. Two programs, each its own `sluice
run` (its own table, its own Redis sender, as two hosts would have), both
with the config

    redis { address = 127.0.0.1:R  interval = 20ms }
    outbound "api" { to = 127.0.0.1  port = P  req_rate = 1000/m
                     scope = redis  learn = yes  action = reply }

(1000 a minute: the rule's own budget holds nothing here; a minute's
window keeps the key live in both programs' senders, which sync only the
keys counted in their last two windows.)

1. B calls /B/0 (200: its key is live), then waits for A.
2. A calls /A/0: the vendor's 429 with Retry-After: 3. A marks the time it
   read it, then calls /A/1 at once: sluice answers 429 itself (A's own
   table... A's own entry: never sent, the vendor does not see /A/1).
3. B, 0.5 s after A's mark (25 sender intervals: A's early round writes the
   hold to Redis, B's next round reads it; 0.5 s leaves room for a loaded
   machine), calls /B/1: sluice answers 429 in B (the vendor never sees
   /B/1), with a Retry-After of at most 3 s.
4. B calls /B/2 3.3 s after A's mark (the hold is over: 0.3 s for timer
   rounding, the ms the hold is kept in and the wall clock's step): 200.
5. The control: the same without learn: /B/1 reaches the vendor (200).
"""
import json
import threading

from lib import *
from vendorlib import Vendor
import redis_fleet


# argv: port, then steps: call:PATH, mark:FILE (its content: time.time()),
# at:FILE:SECONDS (waits for FILE, then until SECONDS after the time in it)
CLIENT = r"""
import http.client, json, os, sys, time
port, out = int(sys.argv[1]), []
for step in sys.argv[2:]:
    kind, _, arg = step.partition(":")
    if kind == "call":
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
        c.request("GET", arg)
        r = c.getresponse()
        r.read()
        out.append([arg, r.status, r.getheader("Retry-After")])
        c.close()
    elif kind == "mark":
        with open(arg + ".tmp", "w") as f:
            f.write(repr(time.time()))
        os.rename(arg + ".tmp", arg)
    elif kind == "at":
        path, _, secs = arg.rpartition(":")
        deadline = time.monotonic() + 30
        while not os.path.exists(path) and time.monotonic() < deadline:
            time.sleep(0.005)
        t = float(open(path).read()) + float(secs)
        while time.time() < t:
            time.sleep(min(0.01, t - time.time()))
print(json.dumps(out))
"""


def two_programs(tmp, redis, tag, learn):
    v = Vendor(lambda i, t, path: (429, {"Retry-After": "3"}) if path == "/A/0" else (200, {}))
    try:
        conf = tmp.write(f"{tag}.conf", f"""
redis {{
    address  = "127.0.0.1:{redis.port}"
    interval = 20ms
}}
outbound "api" {{
    to       = 127.0.0.1
    port     = {v.port}
    req_rate = "1000/m"
    scope    = redis
    action   = reply
    {"learn = yes" if learn else ""}
}}
""")
        client = tmp.write(f"client_{tag}.py", CLIENT)
        mark = tmp.join(f"mark_{tag}")
        got = {}

        def prog(name, steps):
            got[name] = run([SLUICE, "run", "-c", conf, "--", sys.executable, client,
                             str(v.port)] + steps, timeout=60)

        b = threading.Thread(target=prog, args=("B", [
            "call:/B/0", f"at:{mark}:0.5", "call:/B/1", f"at:{mark}:3.3", "call:/B/2"]))
        b.start()
        deadline = time.monotonic() + 20
        while "/B/0" not in v.paths() and time.monotonic() < deadline:
            time.sleep(0.01)
        check("/B/0" in v.paths(), f"{tag}: B never called")
        time.sleep(0.1)  # B's sender has sent its key once
        prog("A", ["call:/A/0", f"mark:{mark}", "call:/A/1"])
        b.join(70)
        res = {}
        for name, p in got.items():
            check(p.returncode == 0, f"{tag}: {name} exit {p.returncode}\n{p.stderr}")
            res.update({path: (status, ra) for path, status, ra in last_json(p.stdout)})
        return res, v.paths(), got["A"].stderr + got["B"].stderr
    finally:
        v.close()


def main():
    with TempDir() as tmp:
        redis = redis_fleet.Redis(tmp)
        try:
            res, seen, err = two_programs(tmp, redis, "learn", True)
            print("learn, scope = redis: answers", res)
            print("  the vendor saw", seen)
            check(res["/A/0"][0] == 429 and res["/A/1"][0] == 429 and "/A/1" not in seen,
                  f"A: {res}, vendor saw {seen}\n{err}")
            check(res["/B/1"][0] == 429 and "/B/1" not in seen,
                  f"B was not held by what A learned: {res}, vendor saw {seen}\n{err}")
            check(res["/B/1"][1] is not None and 1 <= int(res["/B/1"][1]) <= 3,
                  f"B's Retry-After {res['/B/1'][1]}")
            check(res["/B/2"][0] == 200 and "/B/2" in seen, f"B after the hold: {res}\n{err}")
            check("learned from retry-after in a 429 response" in err, f"no learn line:\n{err}")
            keys = redis.cli("--scan", "--pattern", "sluice:*:hold").split()
            print("  redis hold keys:", keys)

            res, seen, err = two_programs(tmp, redis, "ctl", False)
            print("control (no learn): answers", res)
            check(res["/B/1"][0] == 200 and "/B/1" in seen, f"control held: {res}\n{err}")
        finally:
            redis.stop()
    print("ok")


if __name__ == "__main__":
    main()
