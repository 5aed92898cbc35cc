# SPDX-License-Identifier: BSD-2-Clause
"""Two threads writing requests on one connection are counted exactly
(issue 31, defect 8).

Before the fix the scan of one thread's write could interleave with
another's on the same connection, and a request slipped through: 3
reached the server under a bound of 2 in 6 runs of 10. Now a
connection's requests are read, let go and written one thread at a time
(shim/gate.c: sl_gate_lock), as the kernel serialises a stream socket's
writes.

The client is python under the shim: two threads write 10 requests each
(a full head per sendall) on one keep-alive connection; then it shuts its
side and reads the answers until the server closes, so every request
that reached the server has been answered when it prints their count.
The rule `req_rate=1/m req_burst=2 action=reject`. Ten runs, each a new
program (a fresh budget): the client reads exactly 2 answers and the
server (lib.py's KEEPALIVE_SERVER, not under the shim, which logs a
request before answering it) logged exactly 2, in every run.
"""
from lib import *

CLIENT = r"""
import socket, sys, threading
port, run = int(sys.argv[1]), sys.argv[2]
s = socket.create_connection(("127.0.0.1", port))
refused = [0]
go = threading.Barrier(2)
def writer(t):
    go.wait()
    for i in range(10):
        try:
            s.sendall(b"GET /t%s-%d-%d HTTP/1.1\r\nHost: x\r\n\r\n" % (run.encode(), t, i))
        except OSError:
            refused[0] += 1
ws = [threading.Thread(target=writer, args=(t,)) for t in range(2)]
for w in ws: w.start()
for w in ws: w.join(20)
s.shutdown(socket.SHUT_WR)
s.settimeout(10)
got = b""
while True:
    try:
        chunk = s.recv(65536)
    except OSError:
        break
    if not chunk:
        break
    got += chunk
print("REFUSED", refused[0], "ANSWERS", got.count(b"HTTP/1."))
"""

port = free_port()
srv = Proc(keepalive_argv(port, log=True))
try:
    wait_listen(port)
    for run_no in range(10):
        tag = f"/t{run_no}-"
        r = run(sluice_argv([sys.executable, "-c", CLIENT, str(port), str(run_no)],
                            outs=[f"to=127.0.0.1 port={port} req_rate=1/m req_burst=2 action=reject"]))
        check(r.returncode == 0, f"run {run_no}: {r.stdout} {r.stderr[-1500:]}")
        answers = int(r.stdout.split("ANSWERS")[1])
        check(answers == 2, f"run {run_no}: the client read {answers} answers (bound 2): {r.stdout}")
        deadline = time.monotonic() + 3  # the log lines of answers already read
        while len(served(srv, tag)) < answers and time.monotonic() < deadline:
            time.sleep(0.02)
        n = len(served(srv, tag))
        check(n == 2, f"run {run_no}: the server served {n} (bound 2): {r.stdout}")
    print("ok: two threads on one connection: 2 served in each of 10 runs")
finally:
    srv.stop()
print("test_req_out_threads: ok")
