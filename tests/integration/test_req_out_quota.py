# SPDX-License-Identifier: BSD-2-Clause
"""Outbound quotas per UTC day survive a restart, and the next day brings
a new quota (issue 10), tested with a shifted clock instead of a day's wait.

Debian's libfaketime (`faketime`) starts the client's CLOCK_REALTIME at a
chosen instant; libsluice reads the wall clock with the interposable
clock_gettime (core/http/request.c wall_offset), so it sees the same fake time.
FAKETIME_DONT_FAKE_MONOTONIC=1 keeps CLOCK_MONOTONIC real: the table stores
a quota window's end as a monotonic time, shared by every process of the
named table, so every run must agree on it.

Rule: a named table (`shared`), `req_rate=100/s quota=5/d` to a local
keep-alive server that logs what it serves.
(a) run 1 at 23:59:00 of day D: 5 requests pass, the 6th fails (reject:
    ECONNREFUSED), and the log says retry at midnight (under a minute, not
    a day: exactly midnight minus the client's fake time, give or take the
    moment between the refusal and the client's last look at its clock);
(b) run 2, a new process (a restart), 23:59:30 of day D: the first request
    fails: the quota survived the restart in the table;
(c) run 3 at 00:00:05 of day D+1: 5 pass again, the 6th fails; only if
    libsluice sees the fake day does this pass (real time is one day);
(d) delay variant (another table), max_delay=5s: at 23:30:00 of D 5 pass
    and the 6th fails at once with ETIMEDOUT (the delay errno: the new
    window is 30 minutes away, beyond max_delay); at 23:59:57 a request
    waits for the new window (within max_delay) and is answered, by the
    fake clock, no earlier than midnight (a process slower than 3 s to
    start would find the new day already there and pass at once: the check
    holds either way, so it never depends on machine speed);
(e) quota_offset=+1h: days are those of the zone UTC+1, so the window
    changes at 23:00 UTC: 22:59:00 of D, 5 pass; 22:59:30, the first fails;
    23:00:05 of D (still day D in UTC), 5 pass again.
The server's log holds exactly the requests that passed.

Margins: each fake clock starts when its process does and then runs in real
time, so a run that must stay before a window's end starts 30 s or more
before it (a run takes well under a second; the run times out at 30 s, so
a slower machine fails there, never by crossing the boundary unseen).
(d) once started at 23:59:59 with max_delay=2s, expected a failure, and
failed when the process took over a second to start (issue 21: the request
went out at 00:00:00.07 of the next day and passed).
"""
import calendar
import errno
import re
import time

from lib import *

SERVER = r"""
import sys
from http.server import ThreadingHTTPServer, BaseHTTPRequestHandler
class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Length", "3")
        self.end_headers()
        self.wfile.write(b"ok\n")
        sys.stderr.write("SERVED %s\n" % self.path)
        sys.stderr.flush()
    def log_message(self, *a):
        pass
ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
"""

CLIENT = r"""
import http.client, json, sys, time
c = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=10)
codes = []
t0 = time.monotonic()
for i in range(int(sys.argv[3])):
    try:
        c.request("GET", "/%s%d" % (sys.argv[2], i)); r = c.getresponse(); r.read()
        codes.append(r.status)
    except OSError as e:
        codes.append(e.errno); break
print(json.dumps({"codes": codes, "wall": time.time(), "took": time.monotonic() - t0}))
"""

D, D1 = "2026-11-24", "2026-11-25"
FAKE_ENV = {"FAKETIME_DONT_FAKE_MONOTONIC": "1"}


def conf(tmp, name, table, port, extra):
    return tmp.write(name, f'shared = "{table}"\noutbound "vendor" {{\n    to = "127.0.0.1:{port}"\n'
                f'    req_rate = "100/s"\n    quota = "5/d"\n{extra}}}\n')


def client(cfg, at, port, tag, n):
    r = run(sluice_argv(["faketime", at, sys.executable, "-c", CLIENT, str(port), tag, str(n)],
                        config=cfg), env=FAKE_ENV)
    got = last_json(r.stdout)
    check(got is not None, f"{tag}: no result: {r.stdout} {r.stderr}")
    return got, r.stderr


def served(p, tag):
    return [l.split()[1] for l in p.stderr().splitlines() if l.startswith("SERVED /" + tag)]


OK5 = [200] * 5
tables = [f"qt{os.getpid()}", f"qtd{os.getpid()}", f"qto{os.getpid()}"]
port = free_port()
try:
    with TempDir() as tmp, Proc([sys.executable, "-c", SERVER, str(port)]) as vendor:
        wait_port(port)
        rej = conf(tmp, "reject.conf", tables[0], port, "    action = reject\n")

        got, err = client(rej, f"{D} 23:59:00", port, "a", 7)
        check(got["codes"] == OK5 + [errno.ECONNREFUSED], f"(a) day D: {got} {err}")
        # the fake clock reached libsluice: the retry is the time to midnight
        # as the client's fake clock tells it (read just after the refusal),
        # not a whole day
        m = re.search(r"limited request GET /a5 .*retry in (\d+) ms", err)
        to_midnight = (calendar.timegm(time.strptime(D1, "%Y-%m-%d")) - got["wall"]) * 1000
        # (the log gives whole milliseconds, and the clocks' readings differ
        # by a few: -10 ms of slack)
        check(m and -10 <= int(m.group(1)) - to_midnight <= 2000 and int(m.group(1)) <= 60000,
              f"(a) retry until midnight ({to_midnight:.0f} ms from the client's last look): {err}")

        got, err = client(rej, f"{D} 23:59:30", port, "b", 3)
        check(got["codes"] == [errno.ECONNREFUSED], f"(b) restart, same day: {got} {err}")

        got, err = client(rej, f"{D1} 00:00:05", port, "c", 7)
        check(got["codes"] == OK5 + [errno.ECONNREFUSED], f"(c) day D+1: {got} {err}")

        dly = conf(tmp, "delay.conf", tables[1], port, '    action = delay\n    max_delay = "5s"\n')
        got, err = client(dly, f"{D} 23:30:00", port, "d", 6)
        check(got["codes"] == OK5 + [errno.ETIMEDOUT], f"(d) delay, exhausted: {got} {err}")
        got, err = client(dly, f"{D} 23:59:57", port, "e", 1)
        # queued until midnight, which is within max_delay: answered, and
        # not before midnight (the fake clock, so independent of start-up)
        midnight = calendar.timegm(time.strptime(D1, "%Y-%m-%d"))
        check(got["codes"] == [200] and got["wall"] >= midnight, f"(d) near midnight: {got} {err}")

        off = conf(tmp, "offset.conf", tables[2], port,
                   '    action = reject\n    quota_offset = "+1h"\n')
        got, err = client(off, f"{D} 22:59:00", port, "f", 6)
        check(got["codes"] == OK5 + [errno.ECONNREFUSED], f"(e) offset, first window: {got} {err}")
        got, err = client(off, f"{D} 22:59:30", port, "g", 1)
        check(got["codes"] == [errno.ECONNREFUSED], f"(e) 22:59:30 is still that window: {got} {err}")
        got, err = client(off, f"{D} 23:00:05", port, "h", 6)
        check(got["codes"] == OK5 + [errno.ECONNREFUSED], f"(e) window from 23:00 UTC: {got} {err}")

        want = {t: [f"/{t}{i}" for i in range(5)] for t in "acdfh"}
        want["e"] = ["/e0"]
        for t in "abcdefgh":
            check(served(vendor, t) == want.get(t, []), f"server log for {t}: {served(vendor, t)}")
finally:
    for t in tables:
        shm_cleanup(t)
print("ok")
