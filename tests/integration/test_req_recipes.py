# SPDX-License-Identifier: BSD-2-Clause
"""The README's request recipes on a keep-alive python server (issue 9).

1. Retiring an old API: `req_rate=100/s ramp_to=2/s ramp_from=<yesterday>
   ramp_over=1d ramp_every=1h` has stepped all the way down today, so its
   burst (which follows the rate) is 2: of 6 requests sent at once on one
   connection, 2 are served and the rest get 429. The same rule starting
   tomorrow is still at 100/s: all 6 are served. (The wall clock decides;
   core/limit/ramp.c's steps are unit-tested with an injected one.)
2. A soft limit before the hard one, as two rules on the same key (the
   hard one first): `req_rate=80/s req_burst=8 action=reply`, then
   `req_rate=50/s req_burst=5 action=delay max_delay=2s`.
   - One client sending 30 requests one after another as fast as it can
     (it offers about 1000/s alone, but waits for each answer) is slowed
     down, never refused: 30 x 200, taking (30 - 5) / 50 = 0.5 s (-0.05 s
     for clock reads, +0.35 s for wake-ups on a loaded machine).
   - Four clients flooding for 2 s (each sends again as soon as it is
     answered, so together they arrive above 80/s) : some are refused at
     once, and the server sees the soft rate: 50 x (T - 0.5) <= served <=
     5 + 50 x T + 3 (one refill at each edge of the measured window and
     one for scheduling; the lower bound only shows the soft rate is
     used, not starved).
"""
import datetime
import threading

from lib import *

SERVER = r"""
import sys
from http.server import ThreadingHTTPServer, BaseHTTPRequestHandler
class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    wbufsize = -1  # one write per response: no Nagle / delayed-ACK stall between head and body
    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Length", "3")
        self.end_headers()
        self.wfile.write(b"ok\n")
        sys.stderr.write("HANDLED\n")
        sys.stderr.flush()
    def log_message(self, *a):
        pass
ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
"""


def statuses(port, n, key="k"):
    """n requests in one write on one connection: their status codes."""
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(b"".join(b"GET /%d HTTP/1.1\r\nHost: t\r\nX-API-Key: %s\r\n\r\n" % (i, key.encode())
                       for i in range(n)))
    data = b""
    while True:
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
        if data.count(b"HTTP/1.1 ") >= n:
            break
    s.close()
    return [int(c) for c in re.findall(rb"HTTP/1\.1 (\d{3}) ", data)]


def one_by_one(port, n, key):
    """n requests in turn on keep-alive connections: codes and seconds."""
    import http.client
    codes, conn = [], None
    t0 = time.monotonic()
    for i in range(n):
        if conn is None:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        conn.request("GET", f"/{i}", headers={"X-API-Key": key})
        r = conn.getresponse()
        r.read()
        codes.append(r.status)
        if r.getheader("Connection", "").lower() == "close":
            conn.close()
            conn = None
    took = time.monotonic() - t0
    if conn:
        conn.close()
    return codes, took


def handled(p):
    return p.stderr().count("HANDLED")


# 1. ramps
today = datetime.datetime.now(datetime.timezone.utc).date()
for start, want in ((today - datetime.timedelta(days=1), [200, 200] + [429] * 4),
                    (today + datetime.timedelta(days=1), [200] * 6)):
    port = free_port()
    rule = (f"port={port} req_rate=100/s ramp_to=2/s ramp_from={start.isoformat()} ramp_over=1d "
            f"ramp_every=1h action=reply")
    with Proc(sluice_argv([sys.executable, "-c", SERVER, str(port)], ins=[rule])) as p:
        wait_port(port)
        got = statuses(port, 6)
        got += [429] * (6 - len(got))  # the connection closes after the first 429
        check(got == want, f"ramp from {start}: {got}, want {want}")

# 2. a soft limit before the hard one
port = free_port()
conf = f"""
inbound "hard" {{ port = {port}  per = "header:X-API-Key"  req_rate = "80/s"  req_burst = 8
                  action = reply }}
inbound "soft" {{ port = {port}  per = "header:X-API-Key"  req_rate = "50/s"  req_burst = 5
                  action = delay  max_delay = 2s }}
"""
with TempDir() as tmp:
    path = tmp.write("soft.conf", conf)
    with Proc(sluice_argv([sys.executable, "-c", SERVER, str(port)], config=path)) as p:
        wait_port(port)
        time.sleep(0.3)
        codes, took = one_by_one(port, 30, "closed-loop")
        check(codes == [200] * 30, f"one client in turn is slowed, never refused: {codes}")
        check(0.45 <= took <= 0.85, f"30 requests paced at 50/s after a burst of 5: {took:.3f} s")

        before = handled(p)
        ok = [0]
        refused = [0]
        stop = time.monotonic() + 2.0

        def flood():
            import http.client
            conn = None
            while time.monotonic() < stop:
                try:
                    if conn is None:
                        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
                    conn.request("GET", "/f", headers={"X-API-Key": "flood"})
                    r = conn.getresponse()
                    r.read()
                    if r.status == 200:
                        ok[0] += 1
                    else:
                        refused[0] += 1
                        conn.close()
                        conn = None
                except OSError:
                    conn = None
            if conn:
                conn.close()

        t0 = time.monotonic()
        ts = [threading.Thread(target=flood) for _ in range(4)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        took = time.monotonic() - t0
        time.sleep(0.3)
        served = handled(p) - before
        check(served <= 5 + 50 * took + 3, f"flood: the server saw {served} in {took:.2f} s (soft rate 50/s)")
        check(served >= 50 * (took - 0.5), f"flood: the soft rate is used: {served} in {took:.2f} s")
        check(refused[0] > 0, f"flood: the hard rule refused some: {refused[0]} vs {served} served")
print("ok")
