# SPDX-License-Identifier: BSD-2-Clause
"""sluice remembers each listening socket's port (so a port-only rule costs
no getsockname per accept) and must forget it when the descriptor is
closed: a program that closes its listener on port A and opens another on
port B, which gets the same descriptor number, must not have B's
connections judged by A's rule. Checked for close() and for close_range()."""
import subprocess
import sys
from lib import *

PROG = r"""
import os, socket, sys
a, b, how = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
def serve(port, n):
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", port)); s.listen(16)
    got = 0
    for _ in range(n):
        c = socket.create_connection(("127.0.0.1", port))
        s.settimeout(0.5)
        try:
            x, _ = s.accept(); x.close(); got += 1
        except socket.timeout:
            pass
        c.close()
    fd = s.fileno()
    if how == "close_range":
        os.closerange(fd, fd + 1)  # CPython calls libc close_range() where it exists
        s.detach()
    else:
        s.close()
    return fd, got
fa, got_a = serve(a, 3)
fb, got_b = serve(b, 3)
print(fa, fb, got_a, got_b)
"""

a, b = free_port(), free_port()
for how in ("close", "close_range"):
    r = subprocess.run([SLUICE, "run", "--in", f"port={a} rate=1/m burst=1", "--", sys.executable,
                        "-c", PROG, str(a), str(b), how], capture_output=True, text=True, timeout=30)
    print(how, r.stdout.strip(), r.returncode)
    check(r.returncode == 0, f"program failed: {r.stderr}")
    fa, fb, got_a, got_b = map(int, r.stdout.split())
    check(fa == fb, f"the test needs the same descriptor for both listeners: {fa} {fb}")
    check(got_a == 1, f"port {a} (limited, burst 1) accepted {got_a}, expected 1")
    check(got_b == 3, f"port {b} (no rule) accepted {got_b}, expected 3: stale listener port")
print("ok")
