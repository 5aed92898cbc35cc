# SPDX-License-Identifier: BSD-2-Clause
"""Outbound `action = reply` (issue 10, item 4): a request over the limit is
not sent; the client reads a 429 with Retry-After and the RateLimit fields
in its place, and the keep-alive connection goes on.

The "vendor" is a local keep-alive HTTP/1.1 server (python
ThreadingHTTPServer) that logs every request it serves (path, client port,
body) and answers 200 with "<path>:<body>", so each 200 is checked against
the request it answers. The client is python's http.client on one
keep-alive connection, requests cycling through GET, POST with a
Content-Length body and POST with a chunked body (http.client sends the
chunks in writes of their own, so a swallowed body spans several writes):
1. exact: req_rate=1/m req_burst=3, 10 requests in well under a second (a
   token comes back after 60 s, so the allowance for the elapsed time is
   0): codes [200]*3 + [429]*7, each 429 with Retry-After >= 1 and the
   RateLimit fields, each 200 the echo of its own request (in order); the
   server saw exactly the 3 sent, bodies intact, on one connection;
2. refills: req_rate=4/s req_burst=1 (a token every 0.25 s): requests right
   after an allowed one (under 0.2 s later, as measured by the client:
   a slower pair is not asserted) get 429, a request after a 0.3 s pause
   gets 200, so allowed requests after 429s are sent and answered in order
   on the same connection;
3. the same as 1 over TLS (python's ssl, a certificate made with openssl):
   SSL_write_ex swallows, SSL_read_ex reads the 429;
4. python requests with a Session (plaintext): the same as 1;
5. asyncio (non-blocking, epoll): the same codes as 1, reading each answer
   only when the loop reports the socket readable: the queued 429 must be
   announced (sluice holds it, the kernel has nothing to report);
6. pipelined (asyncio, non-blocking): GET, POST, GET in one write under
   req_rate=1/m req_burst=1: the first goes, the other two are swallowed,
   and their 429s come after the first's 200 (the swallowed write waits,
   EAGAIN, until the client has read that response), the server saw one.
"""
import ssl

from lib import *

SERVER = r"""
import ssl, sys
from http.server import ThreadingHTTPServer, BaseHTTPRequestHandler
class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def answer(self, body):
        out = self.path.encode() + b":" + body
        self.send_response(200)
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)
        self.wfile.flush()
        sys.stderr.write("SERVED %s %s %s\n" % (self.path, self.client_address[1], body.decode()))
        sys.stderr.flush()
    def do_GET(self):
        self.answer(b"")
    def do_POST(self):
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            body = b""
            while True:
                n = int(self.rfile.readline().strip(), 16)
                if n == 0:
                    self.rfile.readline()
                    break
                body += self.rfile.read(n)
                self.rfile.readline()
        else:
            body = self.rfile.read(int(self.headers["Content-Length"]))
        self.answer(body)
    def log_message(self, *a):
        pass
srv = ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H)
if len(sys.argv) > 2:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(sys.argv[2], sys.argv[3])
    srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
srv.serve_forever()
"""

# argv: port, prefix, plan ("n" back to back, or "p" a 0.3 s pause first), tls
CLIENT = r"""
import http.client, json, ssl, sys, time
port, prefix, plan, tls = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4] == "tls"
if tls:
    c = http.client.HTTPSConnection("127.0.0.1", port, context=ssl._create_unverified_context(), timeout=10)
else:
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
out = []
for i, step in enumerate(plan):
    if step == "p":
        time.sleep(0.3)
    path = "/%s%d" % (prefix, i)
    kind = i % 3
    body = ("body-%d-" % i) * 3
    t = time.monotonic()
    if kind == 0:
        c.request("GET", path); body = ""
    elif kind == 1:
        c.request("POST", path, body=body.encode())
    else:
        c.request("POST", path, body=iter([body[:5].encode(), body[5:].encode()]), encode_chunked=True)
    r = c.getresponse()
    out.append({"path": path, "body": body, "t": t, "status": r.status,
                "headers": dict(r.getheaders()), "data": r.read().decode()})
print(json.dumps(out))
"""

REQUESTS = r"""
import json, sys
sys.path.append("/usr/lib/python3/dist-packages")
import requests
port, prefix, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
s = requests.Session(); out = []
for i in range(n):
    path = "/%s%d" % (prefix, i); body = ("body-%d-" % i) * 3; url = "http://127.0.0.1:%s%s" % (port, path)
    if i % 3 == 0:
        r = s.get(url, timeout=10); body = ""
    elif i % 3 == 1:
        r = s.post(url, data=body.encode(), timeout=10)
    else:
        r = s.post(url, data=iter([body[:5].encode(), body[5:].encode()]), timeout=10)
    out.append({"path": path, "body": body, "t": 0, "status": r.status_code,
                "headers": dict(r.headers), "data": r.text})
print(json.dumps(out))
"""

ASYNC = r"""
import asyncio, json, sys
async def main():
    r, w = await asyncio.open_connection("127.0.0.1", int(sys.argv[1]))
    out = []
    for i in range(int(sys.argv[3])):
        path = "/%s%d" % (sys.argv[2], i)
        body = ("body-%d-" % i) * 3
        w.write(b"POST %s HTTP/1.1\r\nHost: v\r\nContent-Length: %d\r\n\r\n%s" % (path.encode(), len(body), body.encode()))
        await w.drain()
        status = int((await r.readline()).split()[1]); headers = {}
        while (line := await r.readline()) != b"\r\n":
            k, v = line.decode().split(":", 1); headers[k.strip()] = v.strip()
        data = (await asyncio.wait_for(r.readexactly(int(headers["Content-Length"])), 5)).decode()
        out.append({"path": path, "body": body, "t": 0, "status": status, "headers": headers, "data": data})
    print(json.dumps(out))
asyncio.run(main())
"""

PIPELINED = r"""
import asyncio, json, sys
async def main():
    r, w = await asyncio.open_connection("127.0.0.1", int(sys.argv[1]))
    p = sys.argv[2]
    w.write(b"GET /%s0 HTTP/1.1\r\nHost: v\r\n\r\n" % p.encode()
            + b"POST /%s1 HTTP/1.1\r\nHost: v\r\nContent-Length: 4\r\n\r\nbody" % p.encode()
            + b"GET /%s2 HTTP/1.1\r\nHost: v\r\n\r\n" % p.encode())
    out = []
    for path, body in (("/%s0" % p, ""), ("/%s1" % p, "body"), ("/%s2" % p, "")):
        status = int((await asyncio.wait_for(r.readline(), 5)).split()[1]); headers = {}
        while (line := await asyncio.wait_for(r.readline(), 5)) != b"\r\n":
            k, v = line.decode().split(":", 1); headers[k.strip()] = v.strip()
        data = (await asyncio.wait_for(r.readexactly(int(headers["Content-Length"])), 5)).decode()
        out.append({"path": path, "body": body, "t": 0, "status": status, "headers": headers, "data": data})
    await w.drain()
    print(json.dumps(out))
asyncio.run(main())
"""


def served(p, prefix):
    """(path, client port, body) of each request the vendor served."""
    rows = []
    for l in p.stderr().splitlines():
        parts = l.split(" ")
        if l.startswith("SERVED /" + prefix):
            rows.append((parts[1], parts[2], parts[3] if len(parts) > 3 else ""))
    return rows


def check_answers(what, got, vendor, prefix, expect=None):
    codes = [g["status"] for g in got]
    if expect is not None:
        check(codes == expect, f"{what}: codes {codes}, expected {expect}")
    for g in got:
        if g["status"] == 200:
            check(g["data"] == g["path"] + ":" + g["body"], f"{what}: {g['path']} answered {g['data']!r}")
        else:
            check(g["status"] == 429, f"{what}: {g}")
            h = {k.lower(): v for k, v in g["headers"].items()}
            check(int(h.get("retry-after", "0")) >= 1, f"{what}: 429 without Retry-After: {h}")
            for f in ("ratelimit-limit", "ratelimit-remaining", "ratelimit-reset", "ratelimit-policy", "ratelimit"):
                check(f in h, f"{what}: 429 without {f}: {h}")
            check("close" not in h.get("connection", ""), f"{what}: the 429 closes the connection")
            check(g["data"] == "Too Many Requests\n", f"{what}: 429 body {g['data']!r}")
    time.sleep(0.1)  # the server logs after it answers
    rows = served(vendor, prefix)
    sent = [(g["path"], g["body"]) for g in got if g["status"] == 200]
    check([(p, b) for p, _, b in rows] == sent, f"{what}: the server saw {rows}, expected {sent}")
    ports = {port for _, port, _ in rows}
    check(len(ports) == 1, f"{what}: one connection: {ports}")


EXACT = [200] * 3 + [429] * 7
with TempDir() as tmp:
    port = free_port()
    exact = f"to=127.0.0.1 port={port} req_rate=1/m req_burst=3 action=reply"
    with Proc([sys.executable, "-c", SERVER, str(port)]) as vendor:
        wait_port(port)

        r = run(sluice_argv([sys.executable, "-c", CLIENT, str(port), "ex", "n" * 10, "plain"], outs=[exact]))
        got = last_json(r.stdout)
        check(got is not None, f"http.client: {r.stdout} {r.stderr}")
        check_answers("http.client", got, vendor, "ex", EXACT)

        refill = f"to=127.0.0.1 port={port} req_rate=4/s req_burst=1 action=reply"
        plan = "nnnpnpnp"
        r = run(sluice_argv([sys.executable, "-c", CLIENT, str(port), "rf", plan, "plain"], outs=[refill]))
        got = last_json(r.stdout)
        check(got is not None, f"refills: {r.stdout} {r.stderr}")
        check_answers("refills", got, vendor, "rf")
        last_ok = None
        for step, g in zip(plan, got):
            if step == "p":
                check(g["status"] == 200, f"refills: after a pause {g['path']} got {g['status']}")
            elif last_ok is not None and g["t"] - last_ok < 0.2:
                check(g["status"] == 429, f"refills: {g['path']} {g['t'] - last_ok:.3f} s after a 200 got {g['status']}")
            if g["status"] == 200:
                last_ok = g["t"]
        check(got[0]["status"] == 200, "refills: the first request passes")

        r = run(sluice_argv([sys.executable, "-c", REQUESTS, str(port), "rq", "10"], outs=[exact]))
        got = last_json(r.stdout)
        check(got is not None, f"requests: {r.stdout} {r.stderr}")
        check_answers("requests", got, vendor, "rq", EXACT)

        r = run(sluice_argv([sys.executable, "-c", ASYNC, str(port), "as", "10"], outs=[exact]))
        got = last_json(r.stdout)
        check(got is not None, f"asyncio: {r.stdout} {r.stderr}")
        check_answers("asyncio", got, vendor, "as", EXACT)

        one = f"to=127.0.0.1 port={port} req_rate=1/m req_burst=1 action=reply"
        r = run(sluice_argv([sys.executable, "-c", PIPELINED, str(port), "pp"], outs=[one]))
        got = last_json(r.stdout)
        check(got is not None, f"pipelined: {r.stdout} {r.stderr}")
        check_answers("pipelined", got, vendor, "pp", [200, 429, 429])

    key, crt = tmp.join("key.pem"), tmp.join("cert.pem")
    r = run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
             "-nodes", "-keyout", key, "-out", crt, "-days", "1", "-subj", "/CN=localhost"])
    check(r.returncode == 0, f"openssl req: {r.stderr}")
    port = free_port()
    exact = f"to=127.0.0.1 port={port} req_rate=1/m req_burst=3 action=reply"
    with Proc([sys.executable, "-c", SERVER, str(port), crt, key]) as vendor:
        wait_port(port)
        r = run(sluice_argv([sys.executable, "-c", CLIENT, str(port), "tl", "n" * 10, "tls"], outs=[exact]))
        got = last_json(r.stdout)
        check(got is not None, f"http.client over TLS: {r.stdout} {r.stderr}")
        check_answers("http.client over TLS", got, vendor, "tl", EXACT)
print("ok")
