"""TLS that sluice cannot see into says so (issue 10: statically linked TLS
is not covered, and the log tells the user; GnuTLS is covered since issue
24, test_gnutls_outbound.py).

A python https server on loopback (certificate made by the test with
openssl). node (v20 from nodesource: OpenSSL built into the binary)
fetches 3 URLs one after another over one keep-alive connection under an
outbound request rule that would refuse the second (`req_rate=1/m
req_burst=1 action=reject`): all 3 arrive (the requests were not seen, so
not limited), and the log says once that this connection spoke TLS
without OpenSSL's SSL_write, naming the destination and the likely cause
(TLS in the binary). curl (OpenSSL) under
the same rule: no such line, and its second request is refused (counted)."""
import shutil

from lib import *

NODE = r"""
const https = require("https");
const agent = new https.Agent({keepAlive: true, maxSockets: 1});
const urls = process.argv.slice(1);
(function next(i) {
    if (i == urls.length) { agent.destroy(); return; }
    https.get(urls[i], {agent, rejectUnauthorized: false}, (res) => {
        res.resume();
        res.on("end", () => next(i + 1));
    }).on("error", (e) => { console.log("error " + e.code); next(i + 1); });
})(0);
"""

node = shutil.which("node")
if not node or "libssl" in run(["ldd", node]).stdout:
    print("SKIP: no node with OpenSSL built in")
    sys.exit(0)
with TempDir() as tmp:
    crt, key = make_cert(tmp)
    port = free_port()
    srv = Proc(keepalive_argv(port, log=True, tls=(crt, key)))
    try:
        wait_listen(port)
        rule = f"to=127.0.0.1 port={port} req_rate=1/m req_burst=1 action=reject"
        urls = [f"https://127.0.0.1:{port}/w{i}" for i in range(3)]
        r = run(sluice_argv([node, "-e", NODE] + urls, outs=[rule]), cwd=tmp.path)
        got = served(srv, "/w")
        check(len(got) == 3, f"node's 3 requests were not seen, so all arrived: {got} {r.stdout}")
        lines = [l for l in r.stderr.splitlines() if "without OpenSSL 3's SSL_write" in l]
        check(len(lines) == 1 and f"127.0.0.1 port {port}" in lines[0]
              and "likely cause: TLS in the binary" in lines[0],
              f"the log says once that they were not counted, and why: {r.stderr}")
        r = run(sluice_argv(["curl", "-sk", "--http1.1", "-o", "/dev/null", "-o", "/dev/null",
                             "-w", "%{http_code}\\n", f"https://127.0.0.1:{port}/c0",
                             f"https://127.0.0.1:{port}/c1"], outs=[rule]))
        check("without OpenSSL" not in r.stderr, f"curl's TLS is seen: {r.stderr}")
        got = served(srv, "/c")
        check(len(got) == 1, f"curl's second request was refused: {got} {r.stdout}")
    finally:
        srv.stop()
print("ok")
