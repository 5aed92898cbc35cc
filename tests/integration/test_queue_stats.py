# SPDX-License-Identifier: BSD-2-Clause
"""The queue of an outbound delay rule, seen from outside (issue 10 item 6,
issue 13 "queue lengths"): `sluice stats` and `sluice metrics` show how
many requests hold a turn still to come and the longest wait still to go.

A client program under `--out 'to=127.0.0.1 port=P req_rate=2/s
req_burst=1 action=delay max_delay=30s'` starts 6 threads at once, each
sending one request over its own keep-alive connection to a local server:
their turns are 0, 0.5, ..., 2.5 s. 0.3 s after the threads start (polled
on the client's "go" line), `sluice stats --pid` shows 5 waiting and a
longest wait of 2.2 s (tolerance 0.35 s: the poll's own time and wake-ups
on a loaded machine), `sluice metrics` the same in its gauges; once all
are served, 0 waiting, and sluice_wait_seconds_total is the sum of the
waits, 0.5 + 1 + 1.5 + 2 + 2.5 = 7.5 s (+-0.1: the threads start within a
few ms of each other)."""
import subprocess
import sys

try:
    from prometheus_client.parser import text_string_to_metric_families
except ImportError:
    sys.path.append("/usr/lib/python3/dist-packages")
    from prometheus_client.parser import text_string_to_metric_families

from lib import *

CLIENT = r"""
import http.client, sys, threading, time
port = int(sys.argv[1])
conns = [http.client.HTTPConnection("127.0.0.1", port, timeout=20) for _ in range(6)]
for c in conns:
    c.connect()
codes = []
def one(c):
    c.request("GET", "/")
    codes.append(c.getresponse().status)
ts = [threading.Thread(target=one, args=(c,)) for c in conns]
print("go", flush=True)
for t in ts:
    t.start()
for t in ts:
    t.join()
print("codes", sorted(codes), flush=True)
sys.stdin.readline()  # stays until the test has read its counters
"""


def queue_row(pid):
    r = run([SLUICE, "stats", "--pid", str(pid)])
    check(r.returncode == 0, f"stats: {r.stderr}")
    lines = r.stdout.splitlines()
    i = next(i for i, l in enumerate(lines) if l.startswith("requests"))
    head = lines[i + 1].split()
    row = lines[i + 2].split()
    return dict(zip(head, row)), r.stdout


def metric(pid, name):
    r = run([SLUICE, "metrics", "--pid", str(pid)])
    check(r.returncode == 0, f"metrics: {r.stderr}")
    for fam in text_string_to_metric_families(r.stdout):
        for s in fam.samples:
            if s.name == name and s.labels.get("kind") == "requests":
                return s.value
    raise AssertionError(f"{name} missing:\n{r.stdout}")


with TempDir() as tmp:
    port = free_port()
    srv = Proc(keepalive_argv(port))
    try:
        wait_listen(port)
        client = subprocess.Popen(
            [SLUICE, "run", "--out", f"to=127.0.0.1 port={port} req_rate=2/s req_burst=1 "
             "action=delay max_delay=30s name=vendor", "--", sys.executable, "-c", CLIENT, str(port)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        try:
            check(client.stdout.readline().strip() == "go", "client started")
            t0 = time.monotonic()
            time.sleep(0.3)
            row, text = queue_row(client.pid)
            took = time.monotonic() - t0
            check(row.get("waiting") == "5", f"5 requests wait their turn:\n{text}")
            longest = float(row["longest_ms"]) / 1000
            check(abs(longest - (2.5 - took)) < 0.35, f"longest wait {longest:.2f} s, "
                  f"expected {2.5 - took:.2f} s:\n{text}")
            w = metric(client.pid, "sluice_queue_waiting")
            check(w >= 4, f"metrics: {w} waiting (4-5: the poll took time)")
            out = client.stdout.readline()
            check(out.strip() == "codes [200, 200, 200, 200, 200, 200]", f"all served: {out}")
            row, text = queue_row(client.pid)
            check(row.get("waiting") == "0", f"none waits once all were served:\n{text}")
            total = metric(client.pid, "sluice_wait_seconds_total")
            check(abs(total - 7.5) < 0.1, f"waits add up to 7.5 s: {total:.3f}")
        finally:
            client.kill()
            client.wait()
    finally:
        srv.stop()
print("ok")
