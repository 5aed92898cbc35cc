# SPDX-License-Identifier: BSD-2-Clause
"""Hosts we did not write (issue 21): what python's own test_socket found
(tests/integration/test_hosts_pysuite.py), made quick. A server that
peeks (MSG_PEEK) and reads into several buffers at once (recvmsg_into,
readv), bare and under rules that never limit (hostlib.MODES), sees the
same bytes:
  - recv(20, MSG_PEEK) of the first 20 bytes, then, once the rest
    arrived, recv(64, MSG_PEEK): the second peek shows everything (under a request rule it showed only the 20
    the first peek had stashed, for ever: a program peeking until it sees
    enough would spin);
  - recvmsg_into into buffers of 4, 7 and 14 bytes, and readv into 3 and
    30: filled in order with everything that arrived (under a request
    rule only the first buffer was filled);
  - the same on an HTTP request, whose head sluice reads.
The server reads only once the bytes it reads arrived (FIONREAD says so),
so bare is deterministic.
"""
from hostlib import *

SERVER = r"""
import fcntl, os, socket, struct, sys, termios, time
srv = socket.socket()
srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("127.0.0.1", int(sys.argv[1])))
srv.listen(8)
def arrived(c, n):
    # the kernel holds them (nothing read them yet)
    for _ in range(500):
        if struct.unpack("i", fcntl.ioctl(c, termios.FIONREAD, b"\0\0\0\0"))[0] >= n:
            return
        time.sleep(0.01)
for size in map(int, sys.argv[2:]):     # each case's length, in order
    c, _ = srv.accept()
    arrived(c, 20)                       # its first 20 bytes
    out = []
    out.append(c.recv(20, socket.MSG_PEEK))
    c.sendall(b"g")                      # the client sends the rest now
    arrived(c, size - 20)                # (bare, FIONREAD counts the 20 too)
    out.append(c.recv(64, socket.MSG_PEEK))
    b1, b2, b3 = bytearray(4), bytearray(7), bytearray(14)
    n, _, _, _ = c.recvmsg_into([b1, b2, b3])
    out.append(n.to_bytes(2, "big") + bytes(b1) + bytes(b2) + bytes(b3))
    v1, v2 = bytearray(3), bytearray(30)
    n = os.readv(c.fileno(), [v1, v2])
    out.append(n.to_bytes(2, "big") + bytes(v1) + bytes(v2))
    # the rest, so the server closes with nothing unread (no reset)
    left = size - int.from_bytes(out[2][:2], "big") - n
    rest = b""
    while len(rest) < left:
        r = c.recv(left - len(rest))
        if not r:
            break
        rest += r
    out.append(rest)
    c.sendall(repr(out).encode())
    c.close()
import signal
signal.pause()  # until the test stops it (after `sluice stats` read its table)
"""

CASES = {
    "plain bytes": b"Michael Gilfix was here\xe1\x88\xb4\r\nand some more bytes after it, 60",
    "an HTTP request": b"GET /peek HTTP/1.1\r\nHost: x\r\n\r\nGET /2 HTTP/1.1\r\nHost: y\r\n\r\n",
}

results = {}
for mode in MODES:
    port = free_port()
    with Proc(wrap(mode, [sys.executable, "-c", SERVER, str(port)] + [str(len(d)) for d in CASES.values()],
                   ins=rules(mode, port))) as p:
        wait_listen(port)
        got = {}
        for name, data in CASES.items():
            with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
                s.sendall(data[:20])
                check(s.recv(1) == b"g", "the server peeked")
                s.sendall(data[20:])
                buf = b""
                while True:
                    try:
                        c = s.recv(65536)
                    except socket.timeout:
                        buf += b"<timeout>"
                        break
                    if not c:
                        break
                    buf += c
            got[name] = buf
        results[mode] = got
        print(mode, got, "sluice counted", applied(mode, p, "the server", http=False))

check(b"Michael Gilfix was here" in results["bare"]["plain bytes"], f"bare: {results['bare']}")
bad = compare(results)
check(not bad, "\n".join(bad))
print("ok")
