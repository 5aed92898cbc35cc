# SPDX-License-Identifier: BSD-2-Clause
"""Inbound `action = delay` on requests (issue 9): a held request is not
seen by the program until its turn, then served; nothing is refused.

1. Blocking server (python ThreadingHTTPServer, HTTP/1.1): 6 requests in
   turn on one keep-alive connection under `req_rate=5/s req_burst=1
   action=delay`: all 200, and the 6 take (6-1)/5 = 1.0 s. Tolerance:
   -0.05 s (clock reads) / +0.35 s (one late wake-up per held request is
   not cumulative: turns are booked on the bucket, not after the last
   response, but thread wake-ups on a loaded 2-CPU machine add up to a few
   tens of ms each).
2. Event loop (asyncio streams server, non-blocking sockets and epoll):
   10 pipelined requests in one write under the same rule: all 10 answered
   in order, in (10-1)/5 = 1.8 s (same tolerance), and the server process
   uses under 0.3 s of CPU meanwhile: a held request hides the socket from
   epoll until its turn instead of letting the loop spin on EAGAIN.
"""
from lib import *

ASYNC = r"""
import asyncio, sys
async def handle(r, w):
    while True:
        line = await r.readline()
        if not line:
            break
        while (await r.readline()) not in (b"\r\n", b""):
            pass
        path = line.split()[1]
        w.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(path), path))
        await w.drain()
    w.close()
async def main():
    s = await asyncio.start_server(handle, "127.0.0.1", int(sys.argv[1]))
    async with s:
        await s.serve_forever()
asyncio.run(main())
"""


def responses(f, n):
    out = []
    for _ in range(n):
        line = f.readline()
        if not line:
            break
        headers = {}
        while True:
            l = f.readline().strip()
            if not l:
                break
            k, _, v = l.decode().partition(":")
            headers[k.lower()] = v.strip()
        body = f.read(int(headers.get("content-length", "0")))
        out.append((int(line.split()[1]), body))
    return out


RULE = "req_rate=5/s req_burst=1 action=delay max_delay=10s"

port = free_port()
with Proc(sluice_argv(keepalive_argv(port), ins=[f"port={port} {RULE}"])):
    wait_port(port)
    time.sleep(0.3)  # the probe's request takes nothing: wait_port only connects
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    f = s.makefile("rb")
    t0 = time.monotonic()
    got = []
    for i in range(6):
        s.sendall(b"GET /%d HTTP/1.1\r\nHost: t\r\n\r\n" % i)
        got += responses(f, 1)
    took = time.monotonic() - t0
    s.close()
    check([g[0] for g in got] == [200] * 6, f"all six served: {got}")
    check(0.95 <= took <= 1.35, f"six requests at 5/s burst 1 take 1.0 s: {took:.3f}")

port = free_port()
with Proc(sluice_argv([sys.executable, "-c", ASYNC, str(port)], ins=[f"port={port} {RULE}"])) as p:
    wait_port(port)
    time.sleep(0.3)
    pids = [p.p.pid] + children(p.p.pid)
    cpu0 = sum(cpu_seconds(x) for x in pids)
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    f = s.makefile("rb")
    t0 = time.monotonic()
    s.sendall(b"".join(b"GET /%d HTTP/1.1\r\nHost: t\r\n\r\n" % i for i in range(10)))
    got = responses(f, 10)
    took = time.monotonic() - t0
    cpu = sum(cpu_seconds(x) for x in pids) - cpu0
    s.close()
    check([g[1] for g in got] == [b"/%d" % i for i in range(10)], f"answered in order: {got}")
    check(1.75 <= took <= 2.15, f"ten pipelined requests at 5/s burst 1 take 1.8 s: {took:.3f}")
    check(cpu < 0.3, f"the event loop did not spin while requests were held: {cpu:.3f} s CPU")
print("ok")
