"""Outbound quotas per UTC day survive a restart, and the next day brings
a new quota (issue 10), tested with a shifted clock instead of a day's wait.

Debian's libfaketime (`faketime`) starts the client's CLOCK_REALTIME at a
chosen instant; libsluice reads the wall clock with the interposable
clock_gettime (core/request.c wall_offset), so it sees the same fake time.
FAKETIME_DONT_FAKE_MONOTONIC=1 keeps CLOCK_MONOTONIC real: the table stores
a quota window's end as a monotonic time, shared by every process of the
named table, so every run must agree on it.

Rule: a named table (`shared`), `req_rate=100/s quota=5/d` to a local
keep-alive server that logs what it serves.
(a) run 1 at 23:59:50 of day D: 5 requests pass, the 6th fails (reject:
    ECONNREFUSED), and the log says retry at midnight (~9 s, not a day);
(b) run 2, a new process (a restart), 23:59:52 of day D: the first request
    fails: the quota survived the restart in the table;
(c) run 3 at 00:00:05 of day D+1: 5 pass again, the 6th fails; only if
    libsluice sees the fake day does this pass (real time is one day);
(d) delay variant (another table), max_delay=2s: at 23:59:50 the 6th
    request fails at once with ETIMEDOUT (the delay errno: the new window
    is ~10 s away, beyond max_delay); at 23:59:59 a request waits for the
    new window (under 1 s away, within max_delay) and is answered, by the
    fake clock, no earlier than midnight;
(e) quota_offset=+1h: days are those of the zone UTC+1, so the window
    changes at 23:00 UTC: 22:59:50 of D, 5 pass; 22:59:58, the first fails;
    23:00:05 of D (still day D in UTC), 5 pass again.
The server's log holds exactly the requests that passed.
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

        got, err = client(rej, f"{D} 23:59:50", port, "a", 7)
        check(got["codes"] == OK5 + [errno.ECONNREFUSED], f"(a) day D: {got} {err}")
        # the fake clock reached libsluice: the retry is the time to midnight
        # (10 s minus the run's start-up), not a whole day
        m = re.search(r"limited request GET /a5 .*retry in (\d+) ms", err)
        check(m and 5000 <= int(m.group(1)) <= 10000, f"(a) retry until midnight: {err}")

        got, err = client(rej, f"{D} 23:59:52", port, "b", 3)
        check(got["codes"] == [errno.ECONNREFUSED], f"(b) restart, same day: {got} {err}")

        got, err = client(rej, f"{D1} 00:00:05", port, "c", 7)
        check(got["codes"] == OK5 + [errno.ECONNREFUSED], f"(c) day D+1: {got} {err}")

        dly = conf(tmp, "delay.conf", tables[1], port, '    action = delay\n    max_delay = "2s"\n')
        got, err = client(dly, f"{D} 23:59:50", port, "d", 6)
        check(got["codes"] == OK5 + [errno.ETIMEDOUT], f"(d) delay, exhausted: {got} {err}")
        got, err = client(dly, f"{D} 23:59:59", port, "e", 1)
        # queued until midnight, which is within max_delay: answered, and
        # not before midnight (the fake clock, so independent of start-up)
        midnight = calendar.timegm(time.strptime(D1, "%Y-%m-%d"))
        check(got["codes"] == [200] and got["wall"] >= midnight, f"(d) near midnight: {got} {err}")

        off = conf(tmp, "offset.conf", tables[2], port,
                   '    action = reject\n    quota_offset = "+1h"\n')
        got, err = client(off, f"{D} 22:59:50", port, "f", 6)
        check(got["codes"] == OK5 + [errno.ECONNREFUSED], f"(e) offset, first window: {got} {err}")
        got, err = client(off, f"{D} 22:59:58", port, "g", 1)
        check(got["codes"] == [errno.ECONNREFUSED], f"(e) 22:59:58 is still that window: {got} {err}")
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
