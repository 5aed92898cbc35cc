# SPDX-License-Identifier: BSD-2-Clause
"""Outbound `conns=2` (key: the whole rule): a client under
`sluice run --out 'to=127.0.0.1 port=P conns=2 ...'` opens two blocking
connections and holds them, then a thread makes a third connect while the
main thread waits HOLD seconds and closes the first.

Asserted:
  1. action=delay max_delay=5s: the third connect waits, and succeeds
     within 50 ms after the first is closed (it started HOLD = 0.6 s before:
     it waited, it did not get through early). 50 ms: a waiting connect
     re-checks its key every 10 ms (core/policy/policy.c), plus a wake-up on a
     loaded 2-core machine.
  2. action=delay max_delay=500ms, nothing closed for 1.5 s: the third
     connect fails with ETIMEDOUT after max_delay (450..650 ms: it gives up
     at the first re-check that would pass max_delay, so up to one 10 ms
     period early, and a late wake-up).
  3. action=reject errno=ECONNREFUSED: the third connect fails at once
     (< 50 ms) with ECONNREFUSED; after the first is closed, a fourth
     connect succeeds at once (< 50 ms), and both refused and delayed
     connects never reach the server (it counts what it accepted).
The server is a plain socket in this test process, not under the shim."""
import errno
from lib import *

CLIENT = r"""
import json, socket, sys, threading, time
port, hold, fourth = int(sys.argv[1]), float(sys.argv[2]), sys.argv[3] == '1'
ev = {}
def conn(name):
    s = socket.socket()
    t0 = time.monotonic()
    try:
        s.connect(('127.0.0.1', port))
        ev[name] = {'ok': True, 'start': t0, 'end': time.monotonic()}
        return s
    except OSError as e:
        ev[name] = {'ok': False, 'start': t0, 'end': time.monotonic(), 'errno': e.errno}
        s.close()
a, b = conn('a'), conn('b')
held = {}
th = threading.Thread(target=lambda: held.setdefault('c', conn('c')))
th.start()
time.sleep(hold)                      # the scenario: hold both places this long
ev['c_done_before_close'] = 'c' in ev
ev['close'] = time.monotonic()
a.close()
th.join(10)
if fourth:
    held['d'] = conn('d')
for s in [b] + list(held.values()):
    if s: s.close()
print(json.dumps(ev))
"""


def client(port, rule, hold, fourth=False):
    r = run(sluice_argv([sys.executable, "-c", CLIENT, str(port), str(hold), "1" if fourth else "0"],
                        outs=[f"to=127.0.0.1 port={port} conns=2 {rule}"]), timeout=30)
    check(r.returncode == 0, f"client failed ({r.returncode}): {r.stderr}")
    ev = last_json(r.stdout)
    check(ev["a"]["ok"] and ev["b"]["ok"], f"the first two connects failed: {ev}\n{r.stderr}")
    return ev, r.stderr


def accepted(srv, n):
    deadline = time.monotonic() + 2
    while srv.accepted < n and time.monotonic() < deadline:
        time.sleep(0.01)
    return srv.accepted


with TcpServer() as srv:
    # 1. delay: the third waits for a close
    HOLD = 0.6
    ev, err = client(srv.port, "action=delay max_delay=5s", HOLD)
    c = ev["c"]
    after = c["end"] - ev["close"]
    print(f"delay: third connect waited {(c['end'] - c['start']) * 1000:.0f} ms, "
          f"returned {after * 1000:.1f} ms after the close")
    check(c["ok"], f"delay: third connect failed: {c}\n{err}")
    check(not ev["c_done_before_close"] and c["end"] >= ev["close"],
          "delay: the third connect got through while both places were held")
    check(after < 0.05, f"delay: the third connect returned {after * 1000:.0f} ms after the close")
    check(accepted(srv, 3) == 3, f"server accepted {srv.accepted}, expected 3")

    # 2. delay with max_delay shorter than the hold: ETIMEDOUT after max_delay
    ev, err = client(srv.port, "action=delay max_delay=500ms", 1.5)
    c = ev["c"]
    waited = c["end"] - c["start"]
    print(f"delay max_delay=500ms: third connect failed after {waited * 1000:.0f} ms, "
          f"errno {errno.errorcode.get(c.get('errno'), c.get('errno'))}")
    check(not c["ok"] and c["errno"] == errno.ETIMEDOUT, f"max_delay: third connect {c}, expected ETIMEDOUT")
    check(0.45 <= waited <= 0.65, f"max_delay: gave up after {waited * 1000:.0f} ms, expected ~500")
    check(accepted(srv, 5) == 5, f"server accepted {srv.accepted}, expected 5")

    # 3. reject: fails at once; a place freed by a close is usable at once
    ev, err = client(srv.port, "action=reject errno=ECONNREFUSED", 0.2, fourth=True)
    c, d = ev["c"], ev["d"]
    print(f"reject: third connect failed after {(c['end'] - c['start']) * 1000:.1f} ms, errno "
          f"{errno.errorcode.get(c.get('errno'), c.get('errno'))}; after a close the fourth "
          f"{'connected' if d['ok'] else 'failed'} in {(d['end'] - d['start']) * 1000:.1f} ms")
    check(not c["ok"] and c["errno"] == errno.ECONNREFUSED, f"reject: third connect {c}")
    check(c["end"] - c["start"] < 0.05, f"reject: the refusal took {(c['end'] - c['start']):.3f}s")
    check(d["ok"] and d["end"] - d["start"] < 0.05, f"reject: after a close, the fourth: {d}")
    check(accepted(srv, 8) == 8, f"server accepted {srv.accepted}, expected 8")
    check("all connections in use" in err, "no log line for the refused connect:\n" + err)
print("ok")
