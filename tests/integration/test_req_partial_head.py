# SPDX-License-Identifier: BSD-2-Clause
"""Bounded holds of partial heads, with no bypass (issue 21 item 3).

1. A client that sends one byte and waits: under an inbound request rule
   that never limits, the server's read returns that byte, over plaintext
   and TLS (a blocking python server that answers with what its first read
   got). Before: the read waited for the rest of a head that never came.
2. The attacker who sends `G`, waits, then the rest: the request is still
   counted. Python's keep-alive server (plaintext and TLS) under
   `req_rate=1/m req_burst=1 action=reply`: a first request is served; a
   second, sent as `G`, a pause, then the rest on the same connection,
   gets the 429 and never reaches the server (its log shows one request).
   The server already has the `G` when the head completes, so it reads
   end-of-file after it: python answers that truncated request with its
   own 400 (an HTTP/0.9 error page, no status line), then sluice's 429
   follows; the client reads to the end and finds the 429.
   The same split request under a rule with room is served (200): the
   partial head reaching the program early changes nothing for it.
"""
import socket
import ssl

from lib import *

FIRST_READ = r"""
import socket, ssl, sys
port, tls = int(sys.argv[1]), sys.argv[2:]
ls = socket.socket()
ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
ls.bind(("127.0.0.1", port))
ls.listen(8)
ctx = None
if tls:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(tls[0], tls[1])
while True:
    c, _ = ls.accept()
    if ctx:
        c = ctx.wrap_socket(c, server_side=True)
    c.settimeout(10)
    try:
        got = c.recv(100)
        c.sendall(b"GOT %r\n" % got)
    except OSError:
        pass
    c.close()
"""


def connect(port, tls):
    s = socket.create_connection(("127.0.0.1", port), timeout=3)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    if tls:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        s = ctx.wrap_socket(s)
    return s


def read_all(s):
    """Everything until the end of the connection (or a reset, or 3 s)."""
    buf = b""
    try:
        while True:
            chunk = s.recv(4096)
            if not chunk:
                return buf
            buf += chunk
    except (OSError, ssl.SSLError):
        return buf


def read_response(s):
    """One HTTP response (status, or None at end/reset/timeout)."""
    buf = b""
    try:
        while b"\r\n\r\n" not in buf:
            chunk = s.recv(4096)
            if not chunk:
                return None
            buf += chunk
        head, _, body = buf.partition(b"\r\n\r\n")
        m = re.search(rb"(?im)^content-length:\s*(\d+)", head)
        n = int(m.group(1)) if m else 0
        while len(body) < n:
            chunk = s.recv(4096)
            if not chunk:
                break
            body += chunk
        return int(head.split()[1])
    except (OSError, ssl.SSLError):
        return None


REQ = b"GET /x HTTP/1.1\r\nHost: x\r\n\r\n"

with TempDir() as tmp:
    crt, key = make_cert(tmp)
    for tls in (False, True):
        name = "TLS" if tls else "plaintext"
        # 1. one byte, then wait
        port = free_port()
        argv = [sys.executable, "-c", FIRST_READ, str(port)] + ([crt, key] if tls else [])
        with Proc(sluice_argv(argv, ins=[f"port={port} req_rate=1000000/s req_burst=1000000"])) as srv:
            wait_listen(port)
            s = connect(port, tls)
            s.sendall(b"B")
            try:
                line = s.recv(100)
            except (socket.timeout, ssl.SSLError, OSError) as e:
                line = repr(e).encode()
            s.close()
            check(line == b"GOT b'B'\n",
                  f"{name}: the server's first read of one byte answered {line!r}\n{srv.stderr()}")

        # 2. G, a pause, the rest: counted
        for rule, want in (("req_rate=1/m req_burst=1 action=reply", [200, 429]),
                           ("req_rate=100/s req_burst=10 action=reply", [200, 200])):
            port = free_port()
            argv = keepalive_argv(port, log=True, tls=(crt, key) if tls else None)
            with Proc(sluice_argv(argv, ins=[f"port={port} {rule}"])) as srv:
                wait_listen(port)
                s = connect(port, tls)
                s.sendall(REQ)
                codes = [read_response(s)]
                s.sendall(REQ[:1])
                time.sleep(0.3)  # the attacker's pause: the server reads `G` alone
                s.sendall(REQ[1:])
                if want[1] == 429:
                    rest = read_all(s)
                    codes.append(429 if b"HTTP/1.1 429 Too Many Requests" in rest else rest)
                else:
                    codes.append(read_response(s))
                s.close()
                time.sleep(0.1)  # the server's log line follows its response
                got = served(srv, "/x")
                check(codes == want, f"{name}, {rule}: G, pause, rest: {codes}, want {want}")
                check(len(got) == want.count(200),
                      f"{name}, {rule}: the server served {len(got)} requests, want {want.count(200)}")
        print(f"{name}: one byte read at once; G-pause-rest counted")
print("ok")
