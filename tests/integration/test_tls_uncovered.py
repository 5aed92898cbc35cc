# SPDX-License-Identifier: BSD-2-Clause
"""TLS that sluice cannot decrypt is counted from its records (issue 24,
item 3; shim/bursts.c), and says so once (before: issue 10 left it
uncounted, with a warning; GnuTLS is covered since issue 24,
test_gnutls_outbound.py).

A python https server on loopback (certificate made by the test with
openssl). node (v20 from nodesource: OpenSSL built into the binary)
fetches 3 URLs one after another over one keep-alive connection under an
outbound request rule that refuses the second (`req_rate=1/m
req_burst=1 action=reject`): 1 arrives, the second and third writes fail
with ECONNREFUSED (before item 3 all 3 arrived), and the log says once
that the connection's TLS cannot be decrypted, naming the destination,
its ALPN offer (node's https agent offers none) and that the count is
exact for a client that does not pipeline. curl (OpenSSL, interposed)
under the same rule: no such line, and its second request is refused
(counted from SSL_write, not twice)."""
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
        check(len(got) == 1 and r.stdout.split() == ["error", "ECONNREFUSED"] * 2,
              f"node's first request arrived, the next two were refused: {got} {r.stdout}")
        lines = [l for l in r.stderr.splitlines() if "cannot decrypt" in l]
        check(len(lines) == 1 and f"127.0.0.1 port {port}" in lines[0]
              and "ALPN offer: none" in lines[0] and "exact for a client" in lines[0],
              f"the log says once how they were counted: {r.stderr}")
        check("without OpenSSL 3's SSL_write" not in r.stderr, f"no 'not counted' line: {r.stderr}")
        r = run(sluice_argv(["curl", "-sk", "--http1.1", "-o", "/dev/null", "-o", "/dev/null",
                             "-w", "%{http_code}\\n", f"https://127.0.0.1:{port}/c0",
                             f"https://127.0.0.1:{port}/c1"], outs=[rule]))
        check("without OpenSSL" not in r.stderr and "cannot decrypt" not in r.stderr,
              f"curl's TLS is seen through SSL_write: {r.stderr}")
        got = served(srv, "/c")
        check(len(got) == 1, f"curl's second request was refused: {got} {r.stdout}")
    finally:
        srv.stop()
print("ok")
