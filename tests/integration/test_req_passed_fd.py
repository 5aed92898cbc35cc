# SPDX-License-Identifier: BSD-2-Clause
"""Connections handed from one process to another over a Unix socket
(SCM_RIGHTS) keep being read (issue 31, defect 8).

A master that accepts and passes each connection to a worker (a pattern
of prefork servers and brokers): before the fix the worker's received
descriptor was unknown to sluice and every request on it was served (10
of 10 under a bound of 2). Now the received connection is tracked from
its receipt as its addresses say (here: an inbound request rule takes its
local port).

Both processes are python under one `sluice run` (the worker is forked
from the master); the rule `port=P req_rate=1/m req_burst=2
per=header:X-API-Key action=reply`; the client sends 10 requests of one
key on one keep-alive connection, one after another: 2 answered 200, the
third a 429, after which the connection ends.
"""
from lib import *

PROGRAM = r"""
import os, socket, sys
port = int(sys.argv[1])
a, b = socket.socketpair()
if os.fork() == 0:  # the worker: serves what the master hands over
    a.close()
    while True:
        msg, fds, _, _ = socket.recv_fds(b, 16, 1)
        if not fds:
            os._exit(0)
        c = socket.socket(fileno=fds[0])
        buf = b""
        while True:
            d = c.recv(4096)
            if not d:
                break
            buf += d
            while b"\r\n\r\n" in buf:
                head, _, buf = buf.partition(b"\r\n\r\n")
                c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
        c.close()
b.close()
srv = socket.socket()
srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("127.0.0.1", port))
srv.listen(8)
while True:
    c, _ = srv.accept()
    socket.send_fds(a, [b"c"], [c.fileno()])
    c.close()
"""

port = free_port()
proc = Proc(sluice_argv([sys.executable, "-c", PROGRAM, str(port)],
                        ins=[f"port={port} req_rate=1/m req_burst=2 per=header:X-API-Key action=reply"]))
try:
    wait_listen(port)
    codes = []
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        for i in range(10):
            try:
                s.sendall(b"GET /p%d HTTP/1.1\r\nHost: x\r\nX-API-Key: k\r\n\r\n" % i)
                data = s.recv(4096)
            except OSError:
                break
            if not data:
                break
            codes.append(int(data.split()[1]))
            if codes[-1] == 429:
                break
    check(codes == [200, 200, 429], f"a passed connection: codes {codes}\n{proc.stderr()[-2000:]}")
    print(f"ok: a connection passed by SCM_RIGHTS: {codes}")
finally:
    proc.stop()
print("test_req_passed_fd: ok")
