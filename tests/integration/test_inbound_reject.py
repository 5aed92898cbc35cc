# SPDX-License-Identifier: BSD-2-Clause
"""python3 http.server under `sluice run --in 'port=P rate=20/s burst=10'`:
a client opening connections as fast as it can for 3 s gets exactly
burst + rate*T accepted, the rest reset before the program sees them.

Tolerance +-2: GCRA admits burst + floor(rate*t) over a span t; the span the
server sees differs from the one the client measures by the time one
connection takes to reach accept (well under 50 ms = one token), and the one
request in flight when the client stops may or may not be counted."""
import time
from lib import *

RATE, BURST, T = 20, 10, 3.0

port = free_port()
with http_server(port, [f"port={port} rate={RATE}/s burst={BURST} action=reject"]) as srv:
    wait_port(port)          # this probe is admitted too: let the bucket refill
    time.sleep(BURST / RATE + 0.1)
    ok = bad = 0
    start = time.monotonic()
    first = last = None
    while time.monotonic() - start < T:
        t = time.monotonic()
        status, *_ = http_get(port)
        first = first or t
        last = t
        if status == 200:
            ok += 1
        else:
            bad += 1
    span = last - first
    expected = BURST + RATE * span
    print(f"accepted {ok}, reset {bad}, span {span:.3f}s, expected {expected:.1f}")
    check(bad > 0, "the client was never limited")
    check(abs(ok - expected) <= 2, f"accepted {ok}, expected {expected:.1f} +-2")
    check(ok + bad > 3 * (BURST + RATE * T), "client too slow to test the limit")
    err = srv.stderr()
    check('rule "in-1": limited peer 127.0.0.1' in err, "no log line for the limited peer:\n" + err)
print("ok")
