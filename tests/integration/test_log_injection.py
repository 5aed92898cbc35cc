# SPDX-License-Identifier: BSD-2-Clause
"""A request's bytes cannot forge a line in the program's log (issue 18.8).

nginx (h2c, `listen ... http2`, 1 worker) runs under `sluice run` with
`req_rate = 1/m  req_burst = 1  action = reply` on its port; sluice's lines
go to nginx's stderr, which nginx points at its error log. A client on
one HTTP/2 connection sends two GETs: /ok (allowed) and one whose :path
holds a newline, a carriage return, a fake nginx error line and terminal
escape codes (HPACK literals: nghttp2's inflater does not judge values).
The second is denied, and sluice logs "limited request GET <path>".

Asserts: the error log holds the sluice line for it, with the path
written escaped (\\n, \\r, \\x1b) on that one line; no line of the log
starts with the forged text; the log holds no byte below 0x20 but the
newlines ending lines, and no 0x7f. Before the change the forged text
began a line of its own (the review's finding).
"""
from lib import *

FORGED = b"2026/11/23 00:00:00 [emerg] 4242: forged"
EVIL = b"/x\n" + FORGED + b"\r\x1b[2K\x1b[31mred\x7f"

H2 = r"""
import socket, struct, sys
port = int(sys.argv[1]); evil = sys.argv[2].encode("latin-1").decode("unicode_escape").encode("latin-1")
def frame(t, f, sid, p): return struct.pack(">I", len(p))[1:] + bytes([t, f]) + struct.pack(">I", sid) + p
def lit(k, v): return b"\x00" + bytes([len(k)]) + k + bytes([len(v)]) + v
s = socket.create_connection(("127.0.0.1", port), timeout=10)
s.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + frame(4, 0, 0, b""))
for i, path in enumerate((b"/ok", evil)):
    blk = lit(b":method", b"GET") + lit(b":scheme", b"http") + lit(b":path", path) + lit(b":authority", b"v")
    s.sendall(frame(1, 5, 2 * i + 1, blk))
s.settimeout(3)
try:
    while s.recv(65536):
        pass
except OSError:
    pass
"""

with TempDir() as tmp:
    port = free_port()
    _, argv = nginx_config(tmp, f"""
    access_log off;
    server {{
        listen 127.0.0.1:{port} http2;
        location / {{ return 200 "ok\\n"; }}
    }}
""")
    conf = tmp.write("sluice.conf", f"""
inbound "h2" {{ port = {port}  req_rate = "1/m"  req_burst = 1  action = reply }}
""")
    with Proc(sluice_argv(argv, config=conf)) as ng:
        wait_listen(port)
        evil = EVIL.decode("latin-1").encode("unicode_escape").decode("latin-1")
        run([sys.executable, "-c", H2, str(port), evil], timeout=20)
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:  # bounded: the line is written as the request is read
            with open(tmp.join("error.log"), "rb") as f:
                log = f.read()
            if b"limited request" in log:
                break
            time.sleep(0.05)
    lines = log.split(b"\n")
    print("\n".join(repr(l) for l in lines if b"sluice" in l or b"forged" in l))
    limited = [l for l in lines if b"limited request GET /x" in l]
    check(len(limited) == 1, f"one sluice line for the denied request: {lines}")
    check(b"/x\\n2026/11/23 00:00:00 [emerg] 4242: forged\\r\\x1b[2K\\x1b[31mred\\x7f" in limited[0],
          f"the path escaped on its line: {limited[0]!r}")
    check(not any(l.startswith(FORGED) for l in lines), f"a forged line: {lines}")
    bad = sorted(set(c for c in log if (c < 0x20 and c != 0x0a) or c == 0x7f))
    check(not bad, f"control bytes in the log: {bad}")
print("ok")
