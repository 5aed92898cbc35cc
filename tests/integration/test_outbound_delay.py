# SPDX-License-Identifier: BSD-2-Clause
"""Outbound action=delay: a client under
`sluice run --out 'to=127.0.0.1 port=P rate=5/s burst=1 action=delay'`
making N=11 sequential connections sees every one succeed, and the whole
run take (N-1)/rate = 2.0 s; then two threads of one process sharing the
queue get their turns one at a time, 200 ms apart, first come first served
(in the order they were asked for, alternating while both wait); and with
max_delay=300ms, of 5 simultaneous connects the 2 whose turn comes within
300 ms succeed and 3 fail at once with ETIMEDOUT.

Why the timing is this tight: with burst=1 the first connect goes at once
and each later one is scheduled 1/rate after the previous *scheduled* time
(a GCRA reservation), not after the previous connect returned, so wake-up
latency does not add up over the 10 waits. The client makes its next
connect a fraction of a millisecond after the previous one returns, which
is always before the next turn. So elapsed >= 2.0 s minus 5 ms (clock
reads on either side), and <= 2.0 s plus 100 ms: one late wake-up on a
loaded 2-core machine plus the last connect's own latency. Each gap between
successive connects must be 200 ms +-50 ms (one wake-up late, the next on
time, so a gap can shrink as much as one can grow).

The server is a plain socket in this test process, not under the shim, so
it counts what actually reached it."""
import errno
from lib import *

N, RATE = 11, 5

CLIENT = r"""
import json, socket, sys, threading, time
host, port, n, threads = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
done, errors, fails = [], [], []
lock = threading.Lock()
go = threading.Barrier(threads)
def worker(k):
    go.wait()
    for i in range(n):
        t0 = time.monotonic()
        s = socket.socket()
        try:
            s.connect((host, port))
            with lock: done.append((k, t0, time.monotonic()))
        except OSError as e:
            with lock: errors.append(e.errno); fails.append(time.monotonic() - t0)
        finally:
            s.close()
start = time.monotonic()
ts = [threading.Thread(target=worker, args=(k,)) for k in range(threads)]
for t in ts: t.start()
for t in ts: t.join()
print(json.dumps({"start": start, "end": time.monotonic(), "done": done, "errors": errors, "fails": fails}))
"""

rule = lambda port: f"to=127.0.0.1 port={port} rate={RATE}/s burst=1 action=delay"

with TcpServer() as srv:
    # 1. N sequential connects from one thread
    r = run(sluice_argv([sys.executable, "-c", CLIENT, "127.0.0.1", str(srv.port), str(N), "1"],
                        outs=[rule(srv.port)]), timeout=30)
    check(r.returncode == 0, f"client failed: {r.returncode}\n{r.stderr}")
    res = last_json(r.stdout)
    elapsed = res["done"][-1][2] - res["done"][0][1] if res["done"] else 0
    gaps = [b[2] - a[2] for a, b in zip(res["done"], res["done"][1:])]
    expected = (N - 1) / RATE
    print(f"sequential: {len(res['done'])} connected, errors {res['errors']}, "
          f"elapsed {elapsed:.3f}s (expected {expected:.1f}s), gaps "
          + " ".join(f"{g * 1000:.0f}" for g in gaps) + " ms")
    check(res["errors"] == [], f"connects failed: {res['errors']}")
    check(len(res["done"]) == N, f"{len(res['done'])} of {N} connected")
    check(expected - 0.005 <= elapsed <= expected + 0.1,
          f"elapsed {elapsed:.3f}s, expected {expected:.1f}s -5 ms/+100 ms")
    check(all(0.15 <= g <= 0.25 for g in gaps), f"gaps not 200+-50 ms: {gaps}")

    # 2. two threads, 5 connects each, through the same queue
    r = run(sluice_argv([sys.executable, "-c", CLIENT, "127.0.0.1", str(srv.port), "5", "2"],
                        outs=[rule(srv.port)]), timeout=30)
    check(r.returncode == 0, f"client failed: {r.returncode}\n{r.stderr}")
    res = last_json(r.stdout)
    ends = sorted(d[2] for d in res["done"])
    gaps = [b - a for a, b in zip(ends, ends[1:])]
    per_thread = [sum(1 for d in res["done"] if d[0] == k) for k in (0, 1)]
    elapsed = ends[-1] - res["start"] if ends else 0
    print(f"two threads: {len(ends)} connected {per_thread}, elapsed {elapsed:.3f}s "
          f"(expected 1.8s), gaps " + " ".join(f"{g * 1000:.0f}" for g in gaps) + " ms")
    check(res["errors"] == [] and len(ends) == 10, f"errors {res['errors']}, {len(ends)} of 10")
    check(1.8 - 0.005 <= elapsed <= 1.8 + 0.1, f"elapsed {elapsed:.3f}s, expected 1.8s -5/+100 ms")
    check(all(0.15 <= g <= 0.25 for g in gaps),
          f"two connects got the same turn or a turn was skipped: gaps {gaps}")
    # FCFS: turns are given in the order the connects were asked for (a
    # later request never overtakes; 2 ms for the clock read just before
    # the call), and once both threads are queued they alternate: each
    # re-queues behind the other as soon as its connect returns. At either
    # end one thread may go twice (the other has not asked yet / is done).
    by_turn = sorted(res["done"], key=lambda d: d[2])
    asked = [d[1] for d in by_turn]
    order = [d[0] for d in by_turn]
    print("turn order", order)
    check(all(b >= a - 0.002 for a, b in zip(asked, asked[1:])),
          f"a later request got an earlier turn: asked at {asked}")
    mid = order[1:-1]
    check(all(a != b for a, b in zip(mid, mid[1:])), f"turns did not alternate: {order}")

    # the server saw every connect (none were faked by the shim)
    deadline = time.monotonic() + 2
    while srv.accepted < N + 10 and time.monotonic() < deadline:
        time.sleep(0.01)
    check(srv.accepted == N + 10, f"server accepted {srv.accepted}, expected {N + 10}")

    # 3. max_delay=300ms, 5 threads at once: turns at 0, 200 ms fit; the
    # rest are 400 ms or more away and fail at once with ETIMEDOUT
    r = run(sluice_argv([sys.executable, "-c", CLIENT, "127.0.0.1", str(srv.port), "1", "5"],
                        outs=[rule(srv.port) + " max_delay=300ms"]), timeout=30)
    check(r.returncode == 0, f"client failed: {r.returncode}\n{r.stderr}")
    res = last_json(r.stdout)
    waits = sorted(d[2] - d[1] for d in res["done"])
    print(f"max_delay: {len(res['done'])} connected after " + " ".join(f"{w * 1000:.0f}" for w in waits)
          + f" ms, errors {res['errors']} after " + " ".join(f"{f * 1000:.1f}" for f in res["fails"]) + " ms")
    check(len(res["done"]) == 2, f"{len(res['done'])} connected, expected 2 (turns 0 and 200 ms)")
    check(res["errors"] == [errno.ETIMEDOUT] * 3, f"errors {res['errors']}, expected 3 x ETIMEDOUT")
    # "at once": well under the 200 ms the first queued connect waits
    check(max(res["fails"]) < 0.1, f"the refused connects waited: {res['fails']}")
print("ok")
