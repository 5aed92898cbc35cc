# SPDX-License-Identifier: BSD-2-Clause
"""A read larger than sluice's look-ahead gets what the kernel has, under a
byte rule and a request rule together (issue 21, the readiness edge the
stash fix left).

With a byte rule on the connection, a request connection's read looks at
the kernel's bytes first (a peek) and lets the real read take only what it
decided. That look-ahead was 16,385 bytes: a program asking for 64 KB
while 40 KB of pipelined requests waited got 16,385 bytes, a short read,
which an edge-triggered program takes for "drained"; the kernel's other
bytes had no new edge, and the program waited for ever.

The server here is that program: python, non-blocking socket, epoll with
EPOLLET, reads of 64 KB until one comes back short, then epoll_wait
again (bounded at 3 s, which only a stall reaches). The client writes
~40 KB of pipelined GET heads before the server's first read (the server
waits on a second, unlimited port for the go, so every byte is in the
kernel: deterministic). The server reports the heads it read and its
reads' sizes; then, all read, a poll(0) of the socket, which must not say
readable (sluice must not announce bytes that do not exist: a blocking
poll-based program would then block in its read).

Bare and under `recv_rate=1GB/s req_rate=1000000/s req_burst=1000000`
(neither ever limits): the same heads, in one read each. Before the fix,
under the rules: 16,385 bytes read, then the 3 s wait and 244 heads. And
under a rule that denies the 251st head: the 250 before it in one read
(16,750 bytes, still past the old look-ahead), then the end of the stream.
"""
import json
import socket

from lib import *

HEAD = b"GET /item HTTP/1.1\r\nHost: 127.0.0.1\r\nuser-agent: wide-read-test\r\n\r\n"
COUNT = 600  # 600 x 67 bytes: past the 16,385-byte look-ahead, under 64 KB
DATA = HEAD * COUNT

SERVER = r"""
import json, select, socket, sys
port, ctl_port, want = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
ls = socket.socket()
ls.bind(("127.0.0.1", port))
ls.listen(4)
cs = socket.socket()
cs.bind(("127.0.0.1", ctl_port))
cs.listen(4)
c, _ = ls.accept()
c.setblocking(False)
g, _ = cs.accept()  # the client has written everything
ep = select.epoll()
ep.register(c.fileno(), select.EPOLLIN | select.EPOLLET)
got, reads, stalled, eof = b"", [], False, False
while got.count(b"\r\n\r\n") < want and not eof:
    if not ep.poll(3.0):
        stalled = True  # no edge for bytes the kernel still holds
        break
    while True:  # as an edge-triggered program: until a short read
        try:
            b = c.recv(65536)
        except BlockingIOError:
            break
        reads.append(len(b))
        got += b
        eof = not b
        if len(b) < 65536:
            break
p = select.poll()
p.register(c.fileno(), select.POLLIN)
idle = p.poll(0)
g.sendall(json.dumps({"heads": got.count(b"\r\n\r\n"), "bytes": len(got), "reads": reads,
                      "stalled": stalled, "eof": eof, "idle_readable": bool(idle)}).encode() + b"\n")
g.close()
c.close()
"""


def one(under, limits="req_rate=1000000/s req_burst=1000000"):
    port, ctl = free_port(), free_port()
    argv = [sys.executable, "-c", SERVER, str(port), str(ctl), str(COUNT)]
    if under:
        argv = sluice_argv(argv, ins=[f"port={port} recv_rate=1GB/s {limits}"])
    with Proc(argv) as srv:
        wait_listen(port)
        wait_listen(ctl)
        with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
            s.sendall(DATA)  # loopback: in the server's kernel buffer when this returns
            with socket.create_connection(("127.0.0.1", ctl), timeout=10) as g:
                g.settimeout(10)
                out = b""
                while not out.endswith(b"\n"):
                    chunk = g.recv(4096)
                    if not chunk:
                        break
                    out += chunk
        check(out, f"the server's report (stderr: {srv.stderr()[-2000:]})")
        return json.loads(out)


bare = one(False)
check(bare["heads"] == COUNT and not bare["stalled"], f"bare: {bare}")
check(not bare["idle_readable"], f"bare: poll says readable with nothing there: {bare}")
ours = one(True)
check(not ours["stalled"] and ours["heads"] == COUNT,
      f"under the rules the server read {ours['heads']} of {COUNT} heads, reads "
      f"{ours['reads']}: a short read while the kernel held more (lost readiness)")
check(ours["reads"] == bare["reads"], f"the reads' sizes: bare {bare['reads']}, ours {ours['reads']}")
check(not ours["idle_readable"],
      f"under the rules poll(0) says readable with nothing there: {ours}")

# The wide look still stops at a request that may not pass: 250 heads
# (16,750 bytes, past the old look-ahead) in one read, then the end of the
# stream for the denied 251st (action=reply), announced at once.
EDGE = 250
denied = one(True, f"req_rate=1/m req_burst={EDGE} action=reply")
check(denied["reads"] == [EDGE * len(HEAD), 0] and denied["eof"] and not denied["stalled"],
      f"under a rule that denies the {EDGE + 1}st head: {denied} (expected reads "
      f"[{EDGE * len(HEAD)}, 0]: the allowed heads in one read, then end of stream)")
print(f"bare {bare['reads']}, under the rules {ours['reads']}, up to a denial "
      f"{denied['reads']}: ok")
