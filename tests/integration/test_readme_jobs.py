# SPDX-License-Identifier: BSD-2-Clause
"""The README's first screen works as pasted.

The three commands under "Three jobs, one command each" are read from
README.md and run with bash as written, with two substitutions only: the
port 8080 becomes a free one (CI may have 8080 taken) and `build/sluice`
the build under test.
1. The server under `req_rate=60/s per=header:X-API-Key action=reply`:
   240 quick requests (4 threads) with one key get both 200s and 429s, and no more
   200s than the limit allows in the time they took (burst 60 + 60/s).
2. The curl line: six 200s, paced (at 2/s with burst 1, the sixth leaves
   2.5 s after the first; the limiter fixes that lower bound, so it is
   checked at 2.4 s whatever the machine's speed).
3. The reload line: exit 0, and 100 quick requests with a fresh key now
   all pass (burst 120), where job 1's key got 429s.
"""
import re
import subprocess
import time
import urllib.error
import urllib.request

from lib import *

with open(os.path.join(ROOT, "README.md")) as f:
    readme = f.read()
sec = readme.split("## Three jobs, one command each", 1)[1]
block = sec.split("```", 2)[1]
cmds = [l for l in block.splitlines() if l.startswith("build/sluice")]
check(len(cmds) == 3, f"expected three commands on the first screen, found {cmds}")

port = free_port()


def prep(cmd):
    return cmd.replace("8080", str(port)).replace("build/sluice", SLUICE, 1)


def burst(key, n=100, threads=4):
    """n requests with one key from `threads` threads (python's server
    takes a new connection per request: several at once outrun 60/s)."""
    codes = []

    def one():
        for _ in range(n // threads):
            req = urllib.request.Request(f"http://127.0.0.1:{port}/", headers={"X-API-Key": key})
            try:
                with urllib.request.urlopen(req, timeout=5) as r:
                    codes.append(r.status)
            except urllib.error.HTTPError as e:
                codes.append(e.code)

    t0 = time.monotonic()
    ts = [threading.Thread(target=one) for _ in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return codes, time.monotonic() - t0


with TempDir() as tmp:
    server = Proc(["bash", "-c", "exec " + prep(cmds[0])], cwd=tmp.path)
    try:
        wait_port(port)
        codes, took = burst("key-a", 240)
        ok = codes.count(200)
        check(codes.count(429) >= 10 and ok <= 60 + 60 * took + 1,
              f"job 1: {ok} x 200, {codes.count(429)} x 429 in {took:.2f}s")
        print(f"job 1: {ok} x 200 and {codes.count(429)} x 429 for one key in {took:.2f}s")

        t0 = time.monotonic()
        r = run(["bash", "-c", prep(cmds[1])], timeout=30, cwd=tmp.path)
        took = time.monotonic() - t0
        lines = r.stdout.split()
        check(r.returncode == 0 and lines == ["200"] * 6, f"job 2: {r.returncode} {r.stdout} {r.stderr}")
        check(2.4 <= took < 15, f"job 2: six calls at 2/s took {took:.2f}s")
        print(f"job 2: six calls paced in {took:.2f}s")

        r = run(["bash", "-c", prep(cmds[2])], timeout=30, cwd=tmp.path)
        check(r.returncode == 0 and "published" in r.stdout + r.stderr,
              f"job 3: {r.returncode} {r.stdout} {r.stderr}")
        # published in the table before reload returns: the next decision takes it
        codes, took = burst("key-b")
        check(codes == [200] * 100, f"job 3: after the reload {codes.count(429)} x 429")
        print(f"job 3: after the reload, 100 of 100 pass for a new key in {took:.2f}s")
    finally:
        server.stop()
print("ok")
