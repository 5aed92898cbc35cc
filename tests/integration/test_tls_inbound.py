# SPDX-License-Identifier: BSD-2-Clause
"""Inbound request limits on TLS the program terminates itself (issue 9):
the shim reads requests through OpenSSL's SSL_read / SSL_read_ex.

A certificate is made by the test with openssl. nginx (1 worker, `listen
ssl http2`, edge-triggered epoll, SSL_read) runs under a config file with
request rules on its routes, each independent of the others:
1. /c/: req_rate=1/10s req_burst=3 per=header:X-API-Key action=reply.
   curl with 6 URLs over HTTP/1.1 in one run: exactly 200 x3 then 429 x3;
   the 429 read through TLS carries Retry-After, the RateLimit fields and
   Connection: close; nginx logged three /c/ requests.
2. /f/: req_rate=20/s req_burst=5: a python http.client keep-alive client
   over TLS (reconnecting after each 429) for 1.5 s: admitted = 5 + 20 x T
   within -4/+2 (the edges of the measured window are worth up to one
   refill each, plus the scheduling of a loaded 2-CPU machine; without
   the TLS hooks every request would pass: hundreds).
3. /d/: req_rate=5/s req_burst=1 action=delay: 6 requests on one keep-alive
   TLS connection all get 200 and take 5 x 0.2 s = 1.0 s (0.9-1.4 s). The
   held request's bytes are already decrypted, so the kernel cannot wake
   nginx when its turn comes: the shim announces it (ready.h). The worker
   uses under 0.15 s of CPU while held (a spinning event loop would use it
   all).
4. /j/: req_burst=1 action=reject: the second request on a connection
   finds it reset (or closed) without an answer; nginx logged one.
A program that reads the TLS handshake itself, not through OpenSSL 3 (a
raw-socket server standing in for a statically linked TLS stack), makes
the shim say once that it counts those requests as record bursts.
Then python's ssl module (a ThreadingHTTPServer whose socket is wrapped,
blocking sockets, SSL_read_ex) under req_rate=1/10s req_burst=2
action=reply: 4 requests with curl get 200, 200, 429, 429 and the server
served two.
"""
import http.client
import ssl
import subprocess

from lib import *


def cert(tmp):
    key, crt = tmp.join("key.pem"), tmp.join("cert.pem")
    r = run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
             "-nodes", "-keyout", key, "-out", crt, "-days", "1", "-subj", "/CN=localhost"])
    check(r.returncode == 0, f"openssl req: {r.stderr}")
    os.chmod(key, 0o644)
    return crt, key


CTX = ssl._create_unverified_context()


def https_run(port, paths, key, timeout=10.0):
    """GETs paths over keep-alive TLS, reconnecting after Connection: close.
    Returns status codes (None: the connection failed without an answer)."""
    codes, conn = [], None
    for p in paths:
        if conn is None:
            conn = http.client.HTTPSConnection("127.0.0.1", port, context=CTX, timeout=timeout)
        try:
            conn.request("GET", p, headers={"X-API-Key": key})
            r = conn.getresponse()
            r.read()
            codes.append(r.status)
            if r.getheader("Connection", "").lower() == "close":
                conn.close()
                conn = None
        except (OSError, http.client.HTTPException):
            codes.append(None)
            conn.close()
            conn = None
    if conn:
        conn.close()
    return codes


def served(log, prefix):
    with open(log) as f:
        return [l.split() for l in f if l.split() and l.split()[1].startswith(prefix)]


with TempDir() as tmp:
    crt, key = cert(tmp)
    port = free_port()
    log = tmp.join("access.log")
    www = tmp.join("www")
    for d in ("c", "f", "d", "j"):
        os.makedirs(os.path.join(www, d))
        with open(os.path.join(www, d, "x"), "w") as f:
            f.write("ok\n")
    for root, dirs, files in os.walk(www):
        os.chmod(root, 0o755)
    _, argv = nginx_config(tmp, events="use epoll;", http=f"""
    log_format brief '$status $uri';
    access_log {log} brief;
    keepalive_timeout 30;
    server {{
        listen 127.0.0.1:{port} ssl http2;
        ssl_certificate {crt};
        ssl_certificate_key {key};
        root {www};
    }}
""")
    conf = tmp.write("sluice.conf", f"""
inbound "c" {{ port = {port}  route = {{"/c"}}  req_rate = "1/10s"  req_burst = 3
               per = "header:X-API-Key"  action = reply }}
inbound "f" {{ port = {port}  route = {{"/f"}}  req_rate = "20/s"  req_burst = 5
               per = "header:X-API-Key"  action = reply }}
inbound "d" {{ port = {port}  route = {{"/d"}}  req_rate = "5/s"  req_burst = 1
               action = delay  max_delay = 5s }}
inbound "j" {{ port = {port}  route = {{"/j"}}  req_rate = "1/m"  req_burst = 1  action = reject }}
""")
    with Proc(sluice_argv(argv, config=conf)) as ng:
        wait_listen(port)
        worker = max(wait_children(ng.p.pid, 1))

        # 1. curl, several URLs, HTTP/1.1 over TLS
        urls = [f"https://127.0.0.1:{port}/c/x" for _ in range(6)]
        r = run(["curl", "-sk", "--http1.1", "-H", "X-API-Key: curl", "-w", "%{http_code}\\n"]
                + sum([["-o", "/dev/null", u] for u in urls], []), timeout=30)
        check(r.stdout.split() == ["200"] * 3 + ["429"] * 3, f"curl over TLS: {r.stdout.split()}")
        r = run(["curl", "-sk", "--http1.1", "-i", "-H", "X-API-Key: curl", urls[0]], timeout=10)
        head = r.stdout.split("\r\n\r\n")[0]
        check(head.startswith("HTTP/1.1 429"), f"a 429 through TLS: {head!r}")
        for field in ("Retry-After:", "RateLimit-Limit: 3", "RateLimit-Remaining: 0",
                      "X-RateLimit-Limit: 3", 'RateLimit-Policy: "c";q=1;w=10', "Connection: close"):
            check(field in head, f"the 429 has {field}: {head!r}")
        time.sleep(0.2)
        check(len(served(log, "/c/")) == 3, f"nginx served {len(served(log, '/c/'))} /c/ requests")

        # 2. a keep-alive flood over TLS
        ok = total = 0
        conn = None
        t0 = time.monotonic()
        while time.monotonic() - t0 < 1.5:
            if conn is None:
                conn = http.client.HTTPSConnection("127.0.0.1", port, context=CTX, timeout=5)
            conn.request("GET", "/f/x", headers={"X-API-Key": "flood"})
            resp = conn.getresponse()
            resp.read()
            total += 1
            ok += resp.status == 200
            if resp.status != 200:
                conn.close()
                conn = None
        took = time.monotonic() - t0
        if conn:
            conn.close()
        due = 5 + 20 * took
        check(due - 4 <= ok <= due + 2, f"flood over TLS: {ok} admitted of {total}, {due:.1f} due")
        check(total > 2 * ok, f"flood over TLS: most were refused ({ok} of {total} admitted)")

        # 3. delay: held requests are announced when their turn comes
        time.sleep(0.3)
        cpu0 = cpu_seconds(worker)
        t0 = time.monotonic()
        codes = https_run(port, ["/d/x"] * 6, "d")
        took = time.monotonic() - t0
        cpu = cpu_seconds(worker) - cpu0
        check(codes == [200] * 6, f"delay over TLS: every request answered: {codes}")
        check(0.9 <= took <= 1.4, f"delay over TLS: 6 requests at 5/s burst 1 take 1.0 s: {took:.3f}")
        check(cpu < 0.15, f"delay over TLS: nginx's worker used {cpu:.2f} s of CPU held")

        # 4. reject
        codes = https_run(port, ["/j/x"] * 2, "j")
        check(codes[0] == 200 and codes[1] is None, f"reject over TLS: {codes}")
        time.sleep(0.2)
        check(len(served(log, "/j/")) == 1, f"nginx served {len(served(log, '/j/'))} /j/ requests")
        check(ng.p.poll() is None, "nginx is still running")

    # python's ssl module, blocking sockets, SSL_read_ex
    port = free_port()
    srv = tmp.write("srv.py", r"""
import ssl, sys
from http.server import ThreadingHTTPServer, BaseHTTPRequestHandler
class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Length", "3")
        self.end_headers()
        self.wfile.write(b"ok\n")
        print("served", self.path, file=sys.stderr, flush=True)
    def log_message(self, *a):
        pass
s = ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H)
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(sys.argv[2], sys.argv[3])
s.socket = ctx.wrap_socket(s.socket, server_side=True)
s.serve_forever()
""")
    rule = f"port={port} req_rate=1/10s req_burst=2 action=reply"
    with Proc(sluice_argv([sys.executable, srv, str(port), crt, key], ins=[rule])) as py:
        wait_listen(port)
        urls = [f"https://127.0.0.1:{port}/{i}" for i in range(4)]
        r = run(["curl", "-sk", "-w", "%{http_code}\\n"] + sum([["-o", "/dev/null", u] for u in urls], []),
                timeout=30)
        check(r.stdout.split() == ["200", "200", "429", "429"], f"python ssl server: {r.stdout.split()}")
        time.sleep(0.2)
        n = py.stderr().count("served ")
        check(n == 2, f"the python server served {n} requests:\n{py.stderr()}")
    # a TLS stack the shim cannot see
    port = free_port()
    raw = tmp.write("raw.py", r"""
import socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(8)
while True:
    c, _ = s.accept(); c.recv(4096); c.close()
""")
    rule = f"port={port} req_rate=1/10s req_burst=2 action=reply"
    with Proc(sluice_argv([sys.executable, raw, str(port)], ins=[rule])) as p:
        wait_listen(port)
        for _ in range(2):
            run(["curl", "-sk", "--max-time", "5", f"https://127.0.0.1:{port}/"], timeout=10)
        time.sleep(0.3)
        err = p.stderr()
        # its requests are counted as the client's record bursts (the rule of
        # doubt, test_req_tls_node_in.py), said once
        check(err.count("cannot decrypt") == 1, f"said once that TLS it cannot read is counted as bursts: {err}")
print("ok")
