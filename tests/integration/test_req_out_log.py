# SPDX-License-Identifier: BSD-2-Clause
"""`algorithm = log` (issue 10): an exact sliding log for vendors that
count "N in any rolling period" and punish N + 1.

A python http.client keep-alive client sends 15 requests as fast as it may
under `--out 'to=127.0.0.1 port=P req_rate=5/2s algorithm=log
action=delay max_delay=1m'`; the local server records when each arrives.
- log: no rolling 2 s window holds more than 5 arrivals (windows measured
  1.98 s long: a request may arrive a few ms after its stamp, and the next
  batch a few ms before its own, on a loaded machine), all 15 succeed, and
  the batches come at 0, 2 and 4 s (the last arrival 4.0 s after the first,
  -0.02/+0.3 s);
- the same with GCRA and req_burst=5 (the default algorithm), for contrast:
  some rolling 2 s window holds 9 (5 at once, then one every 0.4 s), which
  is what a strict vendor punishes;
- `sluice check` refuses algorithm = log with a per other than rule."""
import subprocess

from lib import *

CLIENT = r"""
import http.client, sys
c = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=30)
codes = []
for i in range(15):
    c.request("GET", "/%d" % i)
    r = c.getresponse(); r.read(); codes.append(r.status)
print(" ".join(map(str, codes)))
"""


def arrivals(srv):
    return [t for _, _, t in served(srv)]


def most_in_window(ts, width):
    return max(sum(1 for u in ts if t <= u < t + width) for t in ts)


def run_client(port, rule):
    r = run([SLUICE, "run", "--out", f"to=127.0.0.1 port={port} req_rate=5/2s {rule} action=delay "
             "max_delay=1m", "--", sys.executable, "-c", CLIENT, str(port)], timeout=60)
    check(r.returncode == 0 and r.stdout.split() == ["200"] * 15, f"all 15 served: {r.stdout}{r.stderr}")


with TempDir() as tmp:
    for rule, exact in (("algorithm=log", True), ("req_burst=5", False)):
        port = free_port()
        srv = Proc(keepalive_argv(port, log=True))
        try:
            wait_listen(port)
            run_client(port, rule)
            ts = arrivals(srv)
            check(len(ts) == 15, f"{rule}: the server saw 15: {len(ts)}")
            most = most_in_window(ts, 1.98)
            if exact:
                check(most == 5, f"log: at most 5 in any rolling 2 s, saw {most}")
                span = ts[-1] - ts[0]
                check(3.98 <= span <= 4.3, f"log: batches at 0, 2, 4 s: span {span:.3f}")
            else:
                check(most >= 8, f"gcra burst 5: {most} in some rolling 2 s (expected 9)")
        finally:
            srv.stop()
    r = run([SLUICE, "check", "--out", "to=127.0.0.1 port=1 req_rate=5/m algorithm=log "
             "per=destination"])
    check(r.returncode == 1 and "must be rule with algorithm = log" in r.stderr,
          f"check refuses per=destination: {r.stderr}")
print("ok")
