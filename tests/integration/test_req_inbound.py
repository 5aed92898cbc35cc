# SPDX-License-Identifier: BSD-2-Clause
"""Inbound request limits on a keep-alive HTTP/1.1 server (issue 9).

The server is python's ThreadingHTTPServer with protocol_version HTTP/1.1
(keep-alive), under `sluice run --in 'port=P req_rate=R/s req_burst=B
action=reply'`; it logs one line per request it handles, so the test knows
exactly which requests reached the program.

1. Flood: 2 client threads, each reusing one connection (reconnecting only
   when the server closes it after a 429), for T = 2 s. Admitted requests
   must be B + R*T: with R=20, B=5 that is 45. Tolerance +-4: the window
   the test measures starts at the first request and ends at the last, so
   up to one interval (50 ms = 1 request) of credit on either edge, plus
   thread scheduling on a loaded 2-CPU machine; without the request layer
   the server would see thousands. Every other response is a 429 with
   Retry-After >= 1, the RateLimit-* and X-RateLimit-* fields, the draft-10
   RateLimit-Policy/RateLimit fields and Connection: close; the server's
   log shows exactly the admitted requests.
2. Pipelining: three requests in one write under burst 2: two responses,
   then the 429; the server logs two requests.
3. A head sent one byte at a time is one request (the server logs one).
4. Per key: under per=header:X-API-Key, two keys from one address get a
   budget each (burst 3: 3 + 3 admitted); a request without the key counts
   under the peer (per_missing = peer, the default).
"""
import json
import socket
import threading

from lib import *

SERVER = r"""
import sys
from http.server import ThreadingHTTPServer, BaseHTTPRequestHandler
class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_GET(self):
        body = b"ok\n"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        sys.stderr.write("HANDLED %s %s\n" % (self.path, self.headers.get("X-API-Key", "-")))
        sys.stderr.flush()
    def log_message(self, *a):
        pass
ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
"""


def handled(proc):
    return [l for l in proc.stderr().splitlines() if l.startswith("HANDLED ")]


def read_response(f):
    """(status, headers) of one response from a socket file; None at EOF."""
    line = f.readline()
    if not line:
        return None
    status = int(line.split()[1])
    headers = {}
    while True:
        l = f.readline().decode("latin-1").strip()
        if not l:
            break
        k, _, v = l.partition(":")
        headers[k.strip().lower()] = v.strip()
    f.read(int(headers.get("content-length", "0")))
    return status, headers


class Client:
    """Keeps one connection and reuses it; reconnects after a close."""

    def __init__(self, port, key=None):
        self.port, self.key, self.s = port, key, None

    def get(self, path="/"):
        if self.s is None:
            self.s = socket.create_connection(("127.0.0.1", self.port), timeout=5)
            self.f = self.s.makefile("rb")
        key = f"X-API-Key: {self.key}\r\n" if self.key else ""
        try:
            self.s.sendall(f"GET {path} HTTP/1.1\r\nHost: t\r\n{key}\r\n".encode())
            r = read_response(self.f)
        except (ConnectionResetError, BrokenPipeError):
            r = None
        if r is None or r[1].get("connection", "").lower() == "close":
            self.s.close()
            self.s = None
        return r


def serve(port, rule):
    tmp = TempDir()
    p = Proc(sluice_argv([sys.executable, "-c", SERVER, str(port)], ins=[rule]),
             stderr_path=tmp.join("server.log"))
    wait_port(port)
    return p


# 1. flood over keep-alive connections
port = free_port()
R, B, T = 20, 5, 2.0
with serve(port, f"port={port} req_rate={R}/s req_burst={B} action=reply") as srv:
    results, lock = [], threading.Lock()
    start = time.monotonic()

    def flood():
        c = Client(port)
        while time.monotonic() - start < T:
            t = time.monotonic()
            r = c.get()
            with lock:
                results.append((t, r))

    ts = [threading.Thread(target=flood) for _ in range(2)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(T + 30)
    ok = [r for _, r in results if r and r[0] == 200]
    denied = [r for _, r in results if r and r[0] == 429]
    span = max(t for t, _ in results) - min(t for t, _ in results)
    expected = B + R * span
    check(abs(len(ok) - expected) <= 4,
          f"admitted {len(ok)} requests in {span:.2f} s, expected {expected:.1f} +-4 "
          f"({len(denied)} denied, {len(results)} sent)")
    check(len(denied) > 3 * len(ok), f"the flood was denied far more than admitted: {len(denied)}")
    print(f"flood: admitted {len(ok)} (expected {expected:.1f}), denied {len(denied)}, sent {len(results)}")
    h = denied[0][1]
    for field in ("retry-after", "ratelimit-limit", "ratelimit-remaining", "ratelimit-reset",
                  "x-ratelimit-limit", "x-ratelimit-remaining", "x-ratelimit-reset",
                  "ratelimit-policy", "ratelimit"):
        check(field in h, f"429 carries {field}: {h}")
    check(int(h["retry-after"]) >= 1, f"Retry-After >= 1: {h}")
    check(h["ratelimit-limit"] == str(R) or h["ratelimit-limit"] == str(B), f"limit: {h}")
    check(h["connection"].lower() == "close", f"Connection: close: {h}")
    time.sleep(0.3)  # let the server's log lines land
    seen = handled(srv)
    check(len(seen) == len(ok), f"the server handled exactly the admitted requests: "
                                f"{len(seen)} handled, {len(ok)} admitted")

# 2. pipelining, 3. a head byte by byte
port = free_port()
with serve(port, f"port={port} req_rate=1/m req_burst=2 action=reply") as srv:
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    s.sendall(b"".join(b"GET /p%d HTTP/1.1\r\nHost: t\r\n\r\n" % i for i in range(3)))
    f = s.makefile("rb")
    got = [read_response(f) for _ in range(3)]
    check([g[0] for g in got if g] == [200, 200, 429], f"pipelined: 200, 200, 429: {got}")
    check(read_response(f) is None, "the connection closes after the 429")
    s.close()
    time.sleep(0.2)
    check([l.split()[1] for l in handled(srv)] == ["/p0", "/p1"],
          f"the server saw the first two: {handled(srv)}")

port = free_port()
with serve(port, f"port={port} req_rate=1/m req_burst=1 action=reply") as srv:
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    for b in b"GET /slow HTTP/1.1\r\nHost: t\r\n\r\n":
        s.send(bytes([b]))
        time.sleep(0.002)
    f = s.makefile("rb")
    r = read_response(f)
    check(r and r[0] == 200, f"a head sent byte by byte is served: {r}")
    s.sendall(b"GET /again HTTP/1.1\r\nHost: t\r\n\r\n")
    r = read_response(f)
    check(r and r[0] == 429, f"... and counted once: the next one is the second: {r}")
    s.close()
    time.sleep(0.2)
    check(len(handled(srv)) == 1, f"one request handled: {handled(srv)}")

# 4. budgets per API key
port = free_port()
with serve(port, f"port={port} req_rate=1/m req_burst=3 per=header:X-API-Key action=reply") as srv:
    a, b, anon = Client(port, "alpha"), Client(port, "beta"), Client(port)
    sa = [a.get()[0] for _ in range(4)]
    sb = [b.get()[0] for _ in range(4)]
    sn = [anon.get()[0] for _ in range(4)]
    check(sa == [200, 200, 200, 429], f"key alpha: burst 3: {sa}")
    check(sb == [200, 200, 200, 429], f"key beta has its own: {sb}")
    check(sn == [200, 200, 200, 429], f"no key: counted under the peer: {sn}")
    time.sleep(0.2)
    keys = [l.split()[2] for l in handled(srv)]
    check(keys.count("alpha") == 3 and keys.count("beta") == 3 and keys.count("-") == 3,
          f"handled 3 per key: {keys}")
print("ok")
