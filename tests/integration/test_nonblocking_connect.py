# SPDX-License-Identifier: BSD-2-Clause
"""A non-blocking connect held back by an outbound `delay` rule never sleeps
on the program's thread: connect returns EINPROGRESS at once, and the
program's event loop (epoll and poll selectors here) sees the socket become
writable when sluice has made the connect.

  1. fixed window, 4/s, max_delay 2 s, 10 connects at once: 4 complete in
     the first window, 4 in the next, 2 in the one after (windows are
     aligned on CLOCK_MONOTONIC, which time.monotonic reads), each within
     60 ms of its window's edge (the loop's wake-up and the interpreter);
  2. conns=2, max_delay 2 s: the 3rd connect completes within 60 ms of the
     program closing one of the first two;
  3. conns=2, max_delay 300 ms, nobody closes: the 3rd is reported
     writable after ~300 ms with SO_ERROR = ETIMEDOUT (the rule's errno),
     as a failed asynchronous connect would be.
No connect call may take more than 20 ms (it must not sleep)."""
import subprocess
import sys
from lib import *

CLIENT = r"""
import errno, selectors, socket, sys, time
port, n, close_after, kind = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
sel = selectors.EpollSelector() if kind == "epoll" else selectors.PollSelector()
# start well inside a window: a connect decided in the last microseconds
# of one window completes in the next and would be counted there
frac = time.monotonic() % 1
if frac > 0.8:
    time.sleep(1.02 - frac)
t0 = time.monotonic()
socks, slowest = [], 0.0
for i in range(n):
    s = socket.socket(); s.setblocking(False)
    a = time.monotonic()
    s.connect_ex(("127.0.0.1", port))
    slowest = max(slowest, time.monotonic() - a)
    socks.append(s)
    sel.register(s, selectors.EVENT_WRITE, i)
done, closed = {}, None
while len(done) < n and time.monotonic() - t0 < 8:
    if close_after and closed is None and time.monotonic() - t0 >= close_after:
        if 0 not in done: sel.unregister(socks[0])
        socks[0].close(); closed = time.monotonic() - t0
    for key, ev in sel.select(timeout=0.01):
        err = key.fileobj.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
        done[key.data] = (time.monotonic() - t0, errno.errorcode.get(err, "0") if err else "0",
                          time.monotonic())
        sel.unregister(key.fileobj)
print(repr({"done": done, "closed": closed, "slowest": slowest}))
"""


def run_client(rule, port, n, close_after, kind):
    r = subprocess.run([SLUICE, "run", "--out", rule, "--", sys.executable, "-c", CLIENT,
                        str(port), str(n), str(close_after), kind],
                       capture_output=True, text=True, timeout=30)
    check(r.returncode == 0, f"client failed: {r.stderr}")
    out = eval(r.stdout.strip().splitlines()[-1])
    print(kind, rule, out)
    check(out["slowest"] < 0.02, f"a connect call took {out['slowest']:.3f} s: it slept")
    return out


srv = socket.socket()
srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("127.0.0.1", 0))
srv.listen(128)
port = srv.getsockname()[1]
held = []
import threading
threading.Thread(target=lambda: [held.append(srv.accept()[0]) for _ in iter(int, 1)],
                 daemon=True).start()

for kind in ("epoll", "poll"):
    out = run_client(f"to=127.0.0.1 port={port} rate=4/s algorithm=fixed action=delay max_delay=2s",
                     port, 10, 0, kind)
    check(len(out["done"]) == 10 and all(d[1] == "0" for d in out["done"].values()),
          "not all connected")
    # Fixed windows are aligned on CLOCK_MONOTONIC (time.monotonic here):
    # count completions per window, and how soon after its edge they came.
    per_window = {}
    for _, _, at in out["done"].values():
        per_window.setdefault(int(at), []).append(at - int(at))
    wins = sorted(per_window)
    check([len(per_window[w]) for w in wins] == [4, 4, 2], f"per window: {per_window}")
    check(wins == list(range(wins[0], wins[0] + 3)), f"windows not consecutive: {wins}")
    for w in wins[1:]:
        check(max(per_window[w]) < 0.06, f"window {w}: completed late after its edge: {per_window[w]}")

    out = run_client(f"to=127.0.0.1 port={port} conns=2 action=delay max_delay=2s", port, 3, 0.5,
                     kind)
    t3, err, _ = out["done"][2]
    check(err == "0", f"third connect failed: {err}")
    check(0 <= t3 - out["closed"] < 0.06, f"third completed {t3 - out['closed']:.3f} s after the close")

    out = run_client(f"to=127.0.0.1 port={port} conns=2 action=delay max_delay=300ms", port, 3, 0,
                     kind)
    t3, err, _ = out["done"][2]
    check(err == "ETIMEDOUT", f"expected ETIMEDOUT, got {err}")
    check(0.28 < t3 < 0.4, f"failed after {t3:.3f} s, expected ~0.3")
print("ok")
