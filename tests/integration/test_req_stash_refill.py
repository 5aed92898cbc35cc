# SPDX-License-Identifier: BSD-2-Clause
"""No lost readiness when a read empties sluice's stash while the kernel
has more (issue 21: nginx stopped answering h2load's pipelined HTTP/1.1
under a request rule that never limits).

nginx reads with edge-triggered epoll and EPOLLRDHUP: a read shorter than
its buffer means "drained", and it reads again only at the next edge. When
a read ends inside a head, sluice keeps the bytes from that head on (its
stash) and serves later reads from it. The stall: the stash held complete
heads, new bytes arrived in the kernel and their edge was reported while
nginx was busy, then nginx's read was served from the stash alone, came
back short, and nobody ever read the kernel's bytes again.

The byte pattern, made deterministic with a slow upstream (a socket this
test answers when it chooses) that keeps nginx busy at the right moments:
  1. batch 1 (one write of 1,024 bytes, nginx's first read): GET /slow,
     12 small heads, the first 23 bytes of another; the read ends inside
     that head, sluice stashes it; nginx waits for the upstream;
  2. batch 2, sent while nginx waits: the head's rest, 12 heads, another
     GET /slow, 200 heads; released, nginx reads again: sluice completes
     the stashed head from the kernel (all of batch 2) and gives nginx a
     buffer's worth; nginx stops at the second /slow with ~15 KB of
     complete heads still in the stash;
  3. batch 3 (5 heads), sent while nginx waits again: the kernel's edge
     fires while nginx does not read;
  4. released, nginx drains the stash; its last read there was short.
Bare nginx answers all 232 requests; before the fix nginx answered 227
and stalled (batch 3 left in the kernel). Each step waits on an event
(the upstream's accept, the count of responses); the final wait is
bounded at 5 s, which only a stall reaches. Run bare and under
`req_rate=1000000/s req_burst=1000000`, three times each.
"""
import socket

from lib import *


def head(path):
    return f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:18621\r\nuser-agent: h2load nghttp2/1.52.0\r\n\r\n".encode()


A = head("/a")
SLOW = head("/slow")
PART = A[:1024 - len(SLOW) - 12 * len(A)]  # batch 1 is exactly nginx's first read
BATCH1 = SLOW + A * 12 + PART
check(0 < len(PART) < len(A), "batch 1 ends inside a head")
BATCH2 = A[len(PART):] + A * 12 + SLOW + A * 200
BATCH3 = A * 5
TOTAL = 1 + 12 + 1 + 12 + 1 + 200 + 5  # the split head counts once


class Upstream:
    """A listening socket nginx proxies /slow to; each accept is answered
    when release() is called."""

    def __init__(self):
        self.s = socket.socket()
        self.s.bind(("127.0.0.1", 0))
        self.s.listen(4)
        self.port = self.s.getsockname()[1]
        self.conn = None

    def wait_request(self, timeout=10.0):
        self.s.settimeout(timeout)
        self.conn, _ = self.s.accept()
        self.conn.settimeout(timeout)
        got = b""
        while b"\r\n\r\n" not in got:
            chunk = self.conn.recv(4096)
            check(chunk, "nginx's upstream request")
            got += chunk

    def release(self):
        self.conn.sendall(b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
        self.conn.close()


class Client:
    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""
        self.n = 0

    def read_until(self, n, timeout):
        """Reads responses until n came or timeout passed; returns the count."""
        deadline = time.monotonic() + timeout
        while self.n < n:
            while True:
                end = self.buf.find(b"\r\n\r\n")
                if end < 0:
                    break
                m = re.search(rb"(?im)^content-length:\s*(\d+)", self.buf[:end])
                blen = int(m.group(1)) if m else 0
                if len(self.buf) < end + 4 + blen:
                    break
                check(self.buf.startswith(b"HTTP/1.1 200"), f"a 200: {self.buf[:80]!r}")
                self.buf = self.buf[end + 4 + blen:]
                self.n += 1
            left = deadline - time.monotonic()
            if self.n >= n or left <= 0:
                break
            self.s.settimeout(left)
            try:
                chunk = self.s.recv(1 << 16)
            except socket.timeout:
                break
            if not chunk:
                break
            self.buf += chunk
        return self.n


def one_run(port, up):
    c = Client(port)
    try:
        c.s.sendall(BATCH1)
        up.wait_request()             # nginx read batch 1 and waits for /slow
        c.s.sendall(BATCH2)           # into the kernel (loopback: within sendall)
        up.release()
        check(c.read_until(1 + 12, 10) >= 13, "the first /slow and the 12 behind it")
        up.wait_request()             # nginx pulled batch 2 and waits for the second /slow
        c.s.sendall(BATCH3)           # the kernel's edge fires while nginx does not read
        up.release()
        return c.read_until(TOTAL, 5.0)
    finally:
        c.s.close()


def serve(tmp, under):
    port = free_port()
    up = Upstream()
    www = tmp.join("www")
    os.makedirs(www, exist_ok=True)
    os.chmod(www, 0o755)
    with open(os.path.join(www, "a"), "w") as f:
        f.write("ok\n")
    _, argv = nginx_config(tmp, f"""
    access_log off;
    keepalive_requests 100000;
    server {{
        listen 127.0.0.1:{port};
        root {www};
        location /slow {{ proxy_pass http://127.0.0.1:{up.port}; }}
    }}""", events="use epoll;")
    if under:
        argv = sluice_argv(argv, ins=[f"port={port} req_rate=1000000/s req_burst=1000000"])
    got = []
    with Proc(argv) as ng:
        wait_listen(port)
        for _ in range(3):
            got.append(one_run(port, up))
            if got[-1] != TOTAL:
                break  # a stall: the next runs would each wait the 5 s too
        check(ng.p.poll() is None, "nginx is still running")
    up.s.close()
    return got


with TempDir() as tmp:
    bare = serve(tmp, False)
check(bare == [TOTAL] * 3, f"bare nginx answered {bare}, expected {TOTAL} each run")
with TempDir() as tmp:
    ours = serve(tmp, True)
check(ours == bare, f"under a never-limiting request rule nginx answered {ours} of {TOTAL} "
      "(a stall: bytes left in the kernel after a short read from the stash)")
print(f"bare {bare}, under the rule {ours}: ok")
