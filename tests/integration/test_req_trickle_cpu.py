# SPDX-License-Identifier: BSD-2-Clause
"""No CPU burn on incomplete heads (issue 18 item 7).

200 connections each trickle one byte of a request head every 100 ms for
3 s to nginx (one worker, epoll), bare and under a rule with `recv_rate`
beside `req_rate` (the reads then take the peek path) that never limits.
An incomplete head must wait for the next byte's readiness, never for a
timer: the worker's CPU (user + system, /proc/PID/stat) under the rule
must stay within 2x bare's, plus 0.1 s.

Why that tolerance: both runs do the same work (6,000 one-byte reads,
each through epoll), and sluice adds a scan and a peek per read, which
stays well under the bare cost again; the 0.1 s covers the 10 ms ticks
the kernel counts CPU in and a loaded machine's noise. Before the fix
the peek path re-looked at every incomplete head every 2 ms: 500
connections cost the worker 96 % of a CPU (bare 3 %); here it took
1.06 s of the 3 (bare 0.03 s), and 0.04 s after it.
"""
import socket

from lib import *

CONNS, ROUNDS, TICK = 200, 30, 0.1


def trickle(port):
    """Opens CONNS connections, then sends one byte of a never-ending head
    on each, every TICK, ROUNDS times. Returns how many stayed open."""
    socks = []
    for _ in range(CONNS):
        s = socket.create_connection(("127.0.0.1", port), timeout=5)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nX-Slow: ")
        socks.append(s)
    start = time.monotonic()
    for i in range(ROUNDS):
        for s in socks:
            s.send(b"a")
        left = start + (i + 1) * TICK - time.monotonic()
        if left > 0:
            time.sleep(left)  # the trickle's pace, not a wait for a result
    open_ = 0
    for s in socks:
        s.setblocking(False)
        try:
            open_ += s.recv(1) == b"" and 0 or 1
        except BlockingIOError:
            open_ += 1  # nothing to read: nginx still waits for the head
        except OSError:
            pass
        s.close()
    return open_


def worker_cpu(tmp, under):
    port = free_port()
    _, argv = nginx_config(tmp, f"""
    access_log off;
    server {{ listen 127.0.0.1:{port}; root {tmp.path}; }}""",
                           events="use epoll;")
    if under:
        argv = sluice_argv(argv, ins=[f"port={port} recv_rate=100MB/s req_rate=1000000/s "
                                      "req_burst=1000000"])
    with Proc(argv) as ng:
        wait_listen(port)
        worker = wait_children(ng.p.pid, 1)[0]
        before = cpu_seconds(worker)
        still = trickle(port)
        cpu = cpu_seconds(worker) - before
        check(still == CONNS, f"{'under the rule' if under else 'bare'}: {still} of {CONNS} "
                              "connections still waited for their heads")
    return cpu


with TempDir() as tmp:
    bare = worker_cpu(tmp, False)
with TempDir() as tmp:
    ours = worker_cpu(tmp, True)
print(f"worker CPU over {ROUNDS * TICK:.0f} s of {CONNS} trickling connections: "
      f"bare {bare:.2f} s, under recv_rate + req_rate {ours:.2f} s")
check(ours <= 2 * bare + 0.1, f"under the rule the worker used {ours:.2f} s of CPU, bare {bare:.2f} s")
print("ok")
