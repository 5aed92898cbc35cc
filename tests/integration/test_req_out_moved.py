# SPDX-License-Identifier: BSD-2-Clause
"""Outbound writes that no hook read before (issue 31, defect 8).

Before the fix each of these reached the server 10 times of 10 under a
rule whose bound is 2, and nothing was logged:
  (a) sendfile of a file holding a request head (the scanner passed
      "bodies from files" unread);
  (b) splice from a pipe holding a request head;
  (c) TCP Fast Open: sendto(MSG_FASTOPEN, address) on an unconnected
      socket connects as it sends, and the connect was never decided.
The client is python under the shim; the server python's
ThreadingHTTPServer (lib.py's KEEPALIVE_SERVER), not under it.
  (a), (b): `req_rate=1/m req_burst=2 action=reject`, 10 requests each on
      a new connection: 2 served, 8 refused (ECONNREFUSED);
  (c): `rate=1/m burst=2 action=reject` (connections): 2 connects made,
      8 refused, and each made one sent its request.
"""
from lib import *

CLIENT = r"""
import os, socket, sys, tempfile
port, how = int(sys.argv[1]), sys.argv[2]
ok = refused = 0
for i in range(10):
    head = b"GET /%s%d HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n" % (how.encode(), i)
    try:
        if how == "fastopen":
            s = socket.socket()  # blocking: a timeout makes python's socket non-blocking
            s.sendto(head, socket.MSG_FASTOPEN, ("127.0.0.1", port))
            s.settimeout(5)
        else:
            s = socket.create_connection(("127.0.0.1", port), timeout=5)
            if how == "sendfile":
                with tempfile.TemporaryFile() as f:
                    f.write(head)
                    f.flush()
                    sent = 0
                    while sent < len(head):
                        sent += os.sendfile(s.fileno(), f.fileno(), sent, len(head) - sent)
            else:
                r, w = os.pipe()
                os.write(w, head)
                os.close(w)
                sent = 0
                while sent < len(head):
                    sent += os.splice(r, s.fileno(), len(head) - sent)
                os.close(r)
        data = s.recv(4096)
        ok += data.startswith(b"HTTP/1.")
        s.close()
    except ConnectionRefusedError:
        refused += 1
print("OK", ok, "REFUSED", refused)
"""

port = free_port()
srv = Proc(keepalive_argv(port, log=True))
try:
    wait_listen(port)
    for how, rule in (("sendfile", "req_rate=1/m req_burst=2"), ("splice", "req_rate=1/m req_burst=2"),
                      ("fastopen", "rate=1/m burst=2")):
        r = run(sluice_argv([sys.executable, "-c", CLIENT, str(port), how],
                            outs=[f"to=127.0.0.1 port={port} {rule} action=reject"]))
        check(r.returncode == 0, f"{how}: {r.stdout} {r.stderr}")
        check("OK 2 REFUSED 8" in r.stdout, f"{how}: expected 2 answered, 8 refused: {r.stdout}"
              f" {r.stderr[-1500:]}")
        deadline = time.monotonic() + 5
        while len(served(srv, "/" + how)) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        n = len(served(srv, "/" + how))
        check(n == 2, f"{how}: the server served {n} (bound 2)")
        print(f"ok: {how}: 2 served, 8 refused")
finally:
    srv.stop()
print("test_req_out_moved: ok")
