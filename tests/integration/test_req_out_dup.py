# SPDX-License-Identifier: BSD-2-Clause
"""A copy of a connection's descriptor is the same connection (issue 31,
defect 8).

Before the fix a descriptor made by dup, dup2, dup3, fcntl(F_DUPFD) or
python's socket.fromfd (a dup) had no request state: what the program
wrote through it was never read, and 10 of 10 requests reached the
server under a bound of 2. Now the copy shares the connection's gate:
requests written through any copy are counted as one stream, and the
connection's state goes with its last descriptor.

The client is python under the shim, the server lib.py's
KEEPALIVE_SERVER; rule `req_rate=1/m req_burst=2 action=reject`; for each
way of copying, one keep-alive connection writes 10 requests through the
copy, reading each answer: 2 answered, then the write fails with the
rule's errno (ECONNREFUSED) and the server served 2. The original is
closed first in the dup2 case: the copy then holds the connection alone.
"""
from lib import *

CLIENT = r"""
import fcntl, os, socket, sys
port, how = int(sys.argv[1]), sys.argv[2]
s = socket.create_connection(("127.0.0.1", port))  # blocking: os.read waits
if how == "dup":
    fd = os.dup(s.fileno())
elif how == "dup2":
    fd = os.dup2(s.fileno(), 200)
    os.close(s.detach())  # the copy holds the connection alone
elif how == "fcntl":
    fd = fcntl.fcntl(s.fileno(), fcntl.F_DUPFD, 300)
else:
    c = socket.fromfd(s.fileno(), socket.AF_INET, socket.SOCK_STREAM)
    fd = c.fileno()
ok = refused = 0
for i in range(10):
    head = b"GET /%s%d HTTP/1.1\r\nHost: x\r\n\r\n" % (how.encode(), i)
    try:
        os.write(fd, head)
        data = os.read(fd, 4096)
        ok += data.startswith(b"HTTP/1.")
    except ConnectionRefusedError:
        refused += 1
        break
print("OK", ok, "REFUSED", refused)
"""

port = free_port()
srv = Proc(keepalive_argv(port, log=True))
try:
    wait_listen(port)
    for how in ("dup", "dup2", "fcntl", "fromfd"):
        r = run(sluice_argv([sys.executable, "-c", CLIENT, str(port), how],
                            outs=[f"to=127.0.0.1 port={port} req_rate=1/m req_burst=2 action=reject"]))
        check(r.returncode == 0, f"{how}: {r.stdout} {r.stderr}")
        check("OK 2 REFUSED 1" in r.stdout, f"{how}: expected 2 answered, then refused: {r.stdout}")
        n = len(served(srv, "/" + how))
        check(n == 2, f"{how}: the server served {n} (bound 2)")
        print(f"ok: {how}: 2 served, the third refused")
finally:
    srv.stop()
print("test_req_out_dup: ok")
