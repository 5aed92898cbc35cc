# SPDX-License-Identifier: BSD-2-Clause
"""The rule of doubt inbound over TLS sluice cannot decrypt: node's https
server (OpenSSL inside node's binary, so no SSL_read of the program's is
seen). Its requests used to pass uncounted (one warning: "not limited").
Now each burst of the client's application-data records read after the
server answered is counted as one request (shim/bursts.c, inbound).

node's https.createServer (keep-alive; a line on stderr per request it
handles), a python client on one keep-alive TLS connection (ALPN
http/1.1, one request at a time: waits for each answer):
- `--in 'port=P req_rate=2/s req_burst=2'` (action reject): 40 requests;
  the burst of 2 is handled, the 3rd is refused (the connection reset),
  so node handled exactly 2; before: 40.
- `action=delay max_delay=10s`: 8 requests, all handled, the last no
  sooner than (8 - 2) / 2 = 3 s after the first (GCRA: tokens come back
  every 500 ms; the lower bound holds on any machine, a slow one only
  takes longer: the upper bound is loose).
- the same 40 with a byte rule beside (`recv_rate=10MB/s`: reads take
  the byte-limited path): 2.
- the warning that says how node's requests are counted, once.
And nginx over TLS under the same rule: its handshake goes through
OpenSSL's SSL_do_handshake, which sluice sees, so its requests are read
through SSL_read as before (curl, 3 URLs on one connection: 200 200 and
a reset) and nothing is said about TLS it cannot decrypt.
"""
import http.client
import ssl

from lib import *

NODE = shutil.which("node")
check(NODE, "node is not installed")

NODE_SERVER = r"""
const https = require('https'), fs = require('fs');
const s = https.createServer({cert: fs.readFileSync(process.argv[2]),
                              key: fs.readFileSync(process.argv[3])}, (q, r) => {
  process.stderr.write('SERVED ' + q.url + '\n');
  r.end('ok\n');
});
s.keepAliveTimeout = 30000;
s.listen(+process.argv[4], '127.0.0.1');
"""

CTX = ssl._create_unverified_context()
CTX.set_alpn_protocols(["http/1.1"])


def client(port, n):
    """n requests on one connection, one at a time: (handled, seconds)."""
    c = http.client.HTTPSConnection("127.0.0.1", port, context=CTX, timeout=15)
    ok, t0 = 0, time.monotonic()
    try:
        for i in range(n):
            c.request("GET", f"/r{i}")
            r = c.getresponse()
            r.read()
            ok += r.status == 200
    except (ConnectionError, ssl.SSLError, http.client.HTTPException, OSError):
        pass
    finally:
        c.close()
    return ok, time.monotonic() - t0


with TempDir() as tmp:
    crt, key = make_cert(tmp, cn="localhost")
    js = tmp.write("server.js", NODE_SERVER)
    rows = []
    for action, n in (("", 40), ("action=delay max_delay=10s", 8), ("recv_rate=10MB/s", 40)):
        port = free_port()
        rule = f"port={port} req_rate=2/s req_burst=2 {action}".strip()
        srv = Proc(sluice_argv([NODE, js, crt, key, str(port)], ins=[rule]))
        try:
            wait_listen(port)
            got, secs = client(port, n)
            time.sleep(0.2)  # node writes its line before its answer: already there
        finally:
            srv.stop()
        err = srv.stderr()
        served = sum(1 for l in err.splitlines() if l.startswith("SERVED "))
        said = [l for l in sluice_lines(err) if "cannot decrypt" in l]
        rows.append((rule, n, got, served, secs, len(said)))
        check(len(said) == 1, f"{rule}: the warning said {len(said)} times:\n{err}")
        if not action.startswith("action"):
            check(served == 2 and got == 2, f"{rule}: node handled {served} of 40 (client saw {got}), want 2")
        else:
            check(served == n and got == n, f"{rule}: node handled {served} of {n}, want all")
            check(2.9 <= secs < 30, f"{rule}: {n} requests in {secs:.2f}s, want >= 3s (6 tokens at 2/s)")
    port = free_port()
    _, ng_argv = nginx_config(tmp, f"""
    server {{
        listen 127.0.0.1:{port} ssl;
        ssl_certificate {crt};
        ssl_certificate_key {key};
        location / {{ return 200 "ok\\n"; }}
    }}""")
    ng = Proc(sluice_argv(ng_argv, ins=[f"port={port} req_rate=2/s req_burst=2"]))
    try:
        wait_listen(port)
        url = f"https://127.0.0.1:{port}/"
        r = run(["curl", "-sk", "-o", "/dev/null", "-o", "/dev/null", "-o", "/dev/null",
                 "-w", "%{http_code} ", url, url, url], timeout=30)
        time.sleep(0.2)
    finally:
        ng.stop()
    err = ng.stderr()
    if os.path.exists(tmp.join("error.log")):
        err += open(tmp.join("error.log"), errors="replace").read()
    print(f"nginx TLS, 3 URLs on one connection: {r.stdout.split()}")
    check(r.stdout.split() == ["200", "200", "000"], f"nginx TLS: {r.stdout.split()}")
    check("cannot decrypt" not in err, f"nginx's TLS is read through SSL_read, yet:\n{err[-2000:]}")
    print("| rule | sent | answered | node handled | seconds | warnings |")
    print("|---|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| `{r[0]}` | {r[1]} | {r[2]} | {r[3]} | {r[4]:.2f} | {r[5]} |")
print("ok")
