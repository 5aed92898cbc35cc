# SPDX-License-Identifier: BSD-2-Clause
"""Calls a program makes through libc's syscall() go through sluice's hooks
(issue 31, defect 8; issue 34, item 2).

libuv (uvloop, node) closes descriptors with syscall(SYS_close); a program
may connect with syscall(SYS_connect). Before the fix neither was seen:
  (a) inbound, a python server that reads each request and closes the
      socket with syscall(SYS_close) (ctypes), under `req_rate=1/m
      req_burst=1 action=reply`: the denied clients got an empty answer
      (the 429 sluice owes them is written at the close it never saw);
      now: the first client 200, the next two 429 with Retry-After;
  (b) outbound, syscall(SYS_connect) under `rate=1/m burst=2
      action=reject`: 10 of 10 connects were made (bound 2); now 2 made,
      8 refused with ECONNREFUSED.
Every other system call number goes to libc's syscall() untouched
(getpid through syscall() still answers).
"""
from lib import *

SERVER = r"""
import ctypes, os, socket, sys
libc = ctypes.CDLL(None, use_errno=True)
SYS_close = 3
srv = socket.socket()
srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("127.0.0.1", int(sys.argv[1])))
srv.listen(8)
assert libc.syscall(39) == os.getpid()  # SYS_getpid: any other number, untouched
while True:
    c, _ = srv.accept()
    data = c.recv(4096)
    if data:
        c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
    fd = c.detach()
    libc.syscall(SYS_close, fd)
"""

CLIENT = r"""
import ctypes, socket, struct, sys
libc = ctypes.CDLL(None, use_errno=True)
SYS_connect = 42
port = int(sys.argv[1])
addr = struct.pack("!HH4s8x", socket.AF_INET, port, socket.inet_aton("127.0.0.1"))
addr = struct.pack("=H", socket.AF_INET) + addr[2:]
made = refused = 0
for _ in range(10):
    s = socket.socket()
    rc = libc.syscall(SYS_connect, s.fileno(), addr, len(addr))
    if rc == 0:
        made += 1
    elif ctypes.get_errno() == 111:
        refused += 1
    s.close()
print("MADE", made, "REFUSED", refused)
"""

port = free_port()
srv = Proc(sluice_argv([sys.executable, "-c", SERVER, str(port)],
                       ins=[f"port={port} req_rate=1/m req_burst=1 action=reply"]))
try:
    wait_listen(port)
    answers = [http_get(port) for _ in range(3)]
    codes = [a[0] for a in answers]
    check(codes == [200, 429, 429], f"raw close: codes {codes}\n{srv.stderr()[-2000:]}")
    check(all("retry-after" in a[1] for a in answers[1:]), f"no Retry-After: {answers[1:]}")
    print(f"ok: a server closing with syscall(SYS_close): {codes}")
finally:
    srv.stop()

with TcpServer() as tcp:
    r = run(sluice_argv([sys.executable, "-c", CLIENT, str(tcp.port)],
                        outs=[f"to=127.0.0.1 port={tcp.port} rate=1/m burst=2 action=reject"]))
    check("MADE 2 REFUSED 8" in r.stdout, f"raw connect: {r.stdout} {r.stderr[-1500:]}")
    check(tcp.accepted == 2, f"the server accepted {tcp.accepted} (bound 2)")
    print("ok: syscall(SYS_connect): 2 made, 8 refused")
print("test_raw_syscalls: ok")
