# SPDX-License-Identifier: BSD-2-Clause
"""Pacing made visible (issue 19.3): a delayed request is logged at info,
the first ones a line each, then one summary per rule and 10 s; `sluice
run --verbose` prints every decision.

1. Outbound, a paced client: python's http.client under `req_rate=20/s
   req_burst=1 action=delay` sends 15 requests on one keep-alive connection
   to a plain server in this process: the first passes, the other 14 wait
   their turn; the log has exactly 10 "paced a request to 127.0.0.1" lines
   (the first ones of the spell) and no more.
2. The same client with `sluice run --verbose`: one line per decision, 1
   "allowed a request" and 14 "paced a request", nothing held back.
3. Outbound connects under `rate=10/s burst=1 action=delay`: 5 connects
   to a plain TCP server in this process; the first passes, the other 4
   wait their turn and each gets a "paced a connect to 127.0.0.1 port P"
   line.
4. Inbound, under a flood: 6 client threads keep requests queued on a
   keep-alive server under `req_rate=20/s req_burst=1 action=delay` for
   just over one interval (until the summary appears, at most 16 s). The
   server's log has 10 paced lines, then exactly one summary, whose count
   is what the limit lets through in its span: 20/s x 10 s, -2 / +8. The
   bucket is always backlogged, so the rate is the limiter's, not the
   machine's; the span is 10 s to 10 s + one turn (50 ms); +6: the 6
   threads' first requests are decided at once, each booked a turn up to
   0.3 s ahead; 2 either way for a turn straddling each end. Its longest wait is under the 6 queued turns (0.3 s) plus
   0.1 s. Hundreds of paced requests, 11 lines.
"""
from lib import *

CLIENT = r"""
import http.client, sys
c = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=20)
for i in range(15):
    c.request("GET", "/%d" % i)
    r = c.getresponse()
    r.read()
    assert r.status == 200, r.status
print("done")
"""

RULE = "req_rate=20/s req_burst=1 action=delay max_delay=30s"

# 1 and 2: outbound, plain and verbose
port = free_port()
with Proc(keepalive_argv(port)):
    wait_port(port)
    r = run(sluice_argv([sys.executable, "-c", CLIENT, str(port)],
                        outs=[f"to=127.0.0.1 port={port} {RULE}"]))
    check(r.returncode == 0 and "done" in r.stdout, f"client ran: {r.stdout} {r.stderr}")
    paced = [l for l in sluice_lines(r.stderr) if "paced a request to 127.0.0.1" in l]
    check(len(paced) == 10, f"the first 10 paced requests are told, no more: {r.stderr}")
    check(all(": info: " in l and "key #" in l and "waits" in l for l in paced),
          f"at info, with the key's hash and the wait: {paced}")

    argv = sluice_argv([sys.executable, "-c", CLIENT, str(port)],
                       outs=[f"to=127.0.0.1 port={port} {RULE}"])
    argv.insert(2, "--verbose")
    r = run(argv)
    check(r.returncode == 0 and "done" in r.stdout, f"verbose client ran: {r.stderr}")
    lines = sluice_lines(r.stderr)
    allowed = [l for l in lines if "allowed a request to 127.0.0.1" in l]
    paced = [l for l in lines if "paced a request to 127.0.0.1" in l]
    check(len(allowed) == 1 and len(paced) == 14,
          f"--verbose: every decision, 1 allowed and 14 paced: {r.stderr}")
    check(not any("suppressed" in l for l in lines), f"nothing held back: {lines}")

# 3: outbound connects
CONNECTS = r"""
import socket, sys
for i in range(5):
    socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=10).close()
print("done")
"""
with TcpServer() as ts:
    r = run(sluice_argv([sys.executable, "-c", CONNECTS, str(ts.port)],
                        outs=[f"to=127.0.0.1 port={ts.port} rate=10/s burst=1 action=delay"]))
    check(r.returncode == 0 and "done" in r.stdout, f"connects ran: {r.stderr}")
    paced = [l for l in sluice_lines(r.stderr)
             if f"paced a connect to 127.0.0.1 port {ts.port}" in l]
    check(len(paced) == 4, f"4 paced connects told: {r.stderr}")

# 4: inbound under a flood
FLOOD = r"""
import http.client, sys, threading, time
port, until = int(sys.argv[1]), time.monotonic() + float(sys.argv[2])
n = [0]
def go():
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
    while time.monotonic() < until and not stop.is_set():
        c.request("GET", "/")
        c.getresponse().read()
        n[0] += 1
stop = threading.Event()
ts = [threading.Thread(target=go) for _ in range(6)]
for t in ts: t.start()
import os
while time.monotonic() < until:
    if os.path.exists(sys.argv[3]) and "paced in the last" in open(sys.argv[3]).read():
        break
    time.sleep(0.1)
stop.set()
for t in ts: t.join()
print(n[0])
"""
port = free_port()
with Proc(sluice_argv(keepalive_argv(port), ins=[f"port={port} {RULE}"])) as srv:
    wait_listen(port)
    r = run([sys.executable, "-c", FLOOD, str(port), "16", srv.stderr_path], timeout=40)
    sent = int(r.stdout.strip() or 0)
    lines = sluice_lines(srv.stderr())
    paced = [l for l in lines if "paced a request from 127.0.0.1" in l]
    summaries = [l for l in lines if "paced in the last" in l]
    print(f"{sent} requests; {len(lines)} sluice lines:\n  " + "\n  ".join(lines))
    check(sent > 150, f"the flood kept the rule busy for an interval: {sent}")
    check(len(paced) == 10, f"10 paced lines, then silence: {lines}")
    check(len(summaries) == 1, f"one summary for the interval: {lines}")
    m = re.search(r'rule "in-1": (\d+) requests paced in the last (\d+) s, longest wait ([\d.]+) s',
                  summaries[0])
    check(m, f"the summary's words: {summaries[0]}")
    count, span, longest = int(m.group(1)), int(m.group(2)), float(m.group(3))
    check(span == 10, f"the interval is 10 s: {span}")
    check(198 <= count <= 208, f"20/s for 10 s paced: {count}")
    check(0.0 < longest <= 0.4, f"longest wait under 6 queued turns: {longest}")
    check(len(lines) == 11, f"hundreds of paced requests, 11 lines: {lines}")
print("ok")
