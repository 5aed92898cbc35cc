# SPDX-License-Identifier: BSD-2-Clause
"""Outbound request limits on plaintext HTTP/1.1 (issue 10): the client's
requests, counted where it writes them, wait their turn (delay) or fail
(reject), over keep-alive connections.

The "vendor" is a local keep-alive server (python ThreadingHTTPServer,
HTTP/1.1) that logs each request it serves. Under `--out 'to=127.0.0.1
port=P req_rate=10/s req_burst=2 action=delay'`, N requests take
(N - 2) / 10 s: tolerance -0.05 s (clock reads) / +0.35 s (each request
waits on the bucket's booking, not after the last answer, so lateness does
not add up; wake-ups on a loaded 2-CPU machine do). Each client:
1. python http.client, one keep-alive connection, 12 requests (blocking
   writes sleep): 1.0 s, all 200, the server served 12 on one connection;
2. curl with 12 URLs in one run (one connection reused): 1.0 s, all 200;
3. python requests with a Session (python3-requests): 12 in 1.0 s;
4. asyncio, a non-blocking client writing on an event loop: 12 in 1.0 s,
   and the process uses under 0.3 s of CPU (a write held with EAGAIN must
   not make the loop spin: the socket is reported writable at the turn);
5. two processes of one program (a shell starting two curls of 6 URLs
   each) share the budget: 12 requests in 1.0 s together, not 0.4 s;
6. two programs started separately (two cron jobs, each curl with 6 URLs)
   under a config naming one `shared` table: 12 requests in 1.0 s;
7. reject (req_rate=1/m req_burst=2 action=reject): the third request's
   write fails (ECONNREFUSED, the rule's errno) and the server never sees it.
"""
import subprocess

from lib import *

HTTP_CLIENT = r"""
import http.client, json, sys, time
c = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=10)
t0 = time.monotonic(); codes = []
for i in range(int(sys.argv[2])):
    try:
        c.request("GET", "/hc%d" % i); r = c.getresponse(); r.read(); codes.append(r.status)
    except OSError as e:
        codes.append(e.errno); break
print(json.dumps({"codes": codes, "took": time.monotonic() - t0}))
"""

REQUESTS_CLIENT = r"""
import json, sys, time
sys.path.append("/usr/lib/python3/dist-packages")
import requests
s = requests.Session()
t0 = time.monotonic()
codes = [s.get("http://127.0.0.1:%s/rq%d" % (sys.argv[1], i), timeout=10).status_code for i in range(int(sys.argv[2]))]
print(json.dumps({"codes": codes, "took": time.monotonic() - t0}))
"""

ASYNC_CLIENT = r"""
import asyncio, json, os, sys, time
async def main():
    r, w = await asyncio.open_connection("127.0.0.1", int(sys.argv[1]))
    t0 = time.monotonic(); codes = []
    for i in range(int(sys.argv[2])):
        w.write(b"GET /as%d HTTP/1.1\r\nHost: v\r\n\r\n" % i)
        await w.drain()
        line = await r.readline(); codes.append(int(line.split()[1]))
        while (await r.readline()) != b"\r\n":
            pass
        await r.readexactly(3)
    took = time.monotonic() - t0
    t = os.times()
    print(json.dumps({"codes": codes, "took": took, "cpu": t.user + t.system}))
asyncio.run(main())
"""


def timed(argv):
    t0 = time.monotonic()
    r = run(argv, timeout=60)
    return r, time.monotonic() - t0


DUE = (12 - 2) / 10
port = free_port()
rule = f"to=127.0.0.1 port={port} req_rate=10/s req_burst=2 action=delay max_delay=10s"
with Proc(keepalive_argv(port, log=True)) as vendor:
    wait_port(port)

    r = run(sluice_argv([sys.executable, "-c", HTTP_CLIENT, str(port), "12"], outs=[rule]))
    got = last_json(r.stdout)
    check(got["codes"] == [200] * 12, f"http.client: {got} {r.stderr}")
    check(DUE - 0.05 <= got["took"] <= DUE + 0.35, f"http.client: 12 requests took {got['took']:.3f} s")
    conns = {port for _, port, _ in served(vendor, "/hc")}
    check(len(served(vendor, "/hc")) == 12 and len(conns) == 1, f"one keep-alive connection: {conns}")

    urls = sum([["-o", "/dev/null", f"http://127.0.0.1:{port}/cu{i}"] for i in range(12)], [])
    r, took = timed(sluice_argv(["curl", "-s", "-w", "%{http_code}\\n"] + urls, outs=[rule]))
    check(r.stdout.split() == ["200"] * 12, f"curl: {r.stdout.split()} {r.stderr}")
    check(DUE - 0.05 <= took <= DUE + 0.45, f"curl: 12 requests took {took:.3f} s")

    r = run(sluice_argv([sys.executable, "-c", REQUESTS_CLIENT, str(port), "12"], outs=[rule]))
    got = last_json(r.stdout)
    check(got["codes"] == [200] * 12, f"requests: {got} {r.stderr}")
    check(DUE - 0.05 <= got["took"] <= DUE + 0.35, f"requests: 12 took {got['took']:.3f} s")

    r = run(sluice_argv([sys.executable, "-c", ASYNC_CLIENT, str(port), "12"], outs=[rule]))
    got = last_json(r.stdout)
    check(got["codes"] == [200] * 12, f"asyncio: {got} {r.stderr}")
    check(DUE - 0.05 <= got["took"] <= DUE + 0.35, f"asyncio: 12 took {got['took']:.3f} s")
    check(got["cpu"] < 0.3 + 0.2, f"asyncio: {got['cpu']:.2f} s of CPU (start-up about 0.1 s)")

    half = " ".join(f"-o /dev/null http://127.0.0.1:{port}/tw{i}" for i in range(6))
    script = f"curl -s {half} & curl -s {half.replace('/tw', '/tv')} & wait"
    r, took = timed(sluice_argv(["sh", "-c", script], outs=[rule]))
    check(len(served(vendor, "/tw")) + len(served(vendor, "/tv")) == 12, "two processes: all served")
    check(DUE - 0.05 <= took <= DUE + 0.45, f"two processes share one budget: 12 took {took:.3f} s")

    # two programs started separately (two cron jobs) naming one `shared`
    # table: one budget between them
    name = f"ro{os.getpid()}"
    with TempDir() as tmp:
        conf = tmp.write("cron.conf", f'shared = "{name}"\noutbound "vendor" {{ to = "127.0.0.1" '
                                      f'port = {port} req_rate = "10/s" req_burst = 2 '
                                      f'action = delay max_delay = 10s }}\n')
        try:
            t0 = time.monotonic()
            jobs = [subprocess.Popen(sluice_argv(["curl", "-s"] + sum(
                [["-o", "/dev/null", f"http://127.0.0.1:{port}/{tag}{i}"] for i in range(6)], []),
                config=conf)) for tag in ("cj", "ck")]
            for j in jobs:
                j.wait(60)
            took = time.monotonic() - t0
        finally:
            shm_cleanup(name)
    check(len(served(vendor, "/cj")) + len(served(vendor, "/ck")) == 12, "two programs: all served")
    check(DUE - 0.05 <= took <= DUE + 0.45, f"two programs share one budget: 12 took {took:.3f} s")

    rej = f"to=127.0.0.1 port={port} req_rate=1/m req_burst=2 action=reject"
    r = run(sluice_argv([sys.executable, "-c", HTTP_CLIENT.replace("/hc", "/rj"), str(port), "4"], outs=[rej]))
    got = last_json(r.stdout)
    check(got["codes"][:2] == [200, 200] and got["codes"][2] == 111, f"reject: {got} {r.stderr}")
    check(len(served(vendor, "/rj")) == 2, f"the server saw only the two sent: {served(vendor, '/rj')}")
print("ok")
