# SPDX-License-Identifier: BSD-2-Clause
"""TLS sluice cannot decrypt, paced by write bursts (issue 24, item 3;
core/http/tlsrec.c, shim/bursts.c).

node v20 (nodesource: OpenSSL inside the binary, so no SSL_write sluice
could interpose) fetches 12 URLs one after another over one keep-alive
connection (https.Agent, maxSockets 1) from a logging python https
server on loopback, under `--out 'to=127.0.0.1 port=P req_rate=5/s
req_burst=1 action=delay'`:
  (a) the agent offers no ALPN: all 12 answered 200, and the server saw
      them over (12 - 1) / 5 = 2.2 s (-0.1 s: clock reads; +1.0 s:
      wake-ups on a loaded machine; each request waits on its booking, so
      lateness does not add up). Before item 3 the same run took about
      0.1 s (test_client_coverage measured 0.10 s). node's event loop is
      not made to spin: a held write gets EAGAIN and the socket is
      reported writable at the turn, so node uses under 1.5 s of CPU
      (its start alone takes 0.1-0.3 s). The log says once that the
      connection is counted by bursts, exactly (no h2 offered).
  (b) the agent offers h2 and http/1.1 (the server picks neither): paced
      the same, and the log says the count is approximate.
  (c) reject (req_rate=1/m req_burst=2): 2 served, the rest refused.
  (d) rules match by name: the server name of the ClientHello stands as
      each burst's Host, so a rule with `host=api.vendor.example` refuses
      after 2 when node sends that name (SNI), and lets all 12 through
      when it sends another (the rule does not match: nothing counted).
"""
import resource
import shutil

from lib import *

N, RATE = 12, 5
DUE = (N - 1) / RATE

NODE = r"""
const https = require("https");
const [url, n, alpn, sni] = [process.argv[1], +process.argv[2], process.argv[3], process.argv[4]];
const opts = {keepAlive: true, maxSockets: 1, rejectUnauthorized: false};
if (alpn === "h2") opts.ALPNProtocols = ["h2", "http/1.1"];
if (sni) opts.servername = sni;
const agent = new https.Agent(opts);
function get(u) {
  return new Promise((ok) => {
    https.get(u, {agent}, (r) => { r.resume(); r.on("end", () => ok(r.statusCode)); })
         .on("error", (e) => ok("ERR"));
  });
}
(async () => { for (let i = 0; i < n; i++) console.log(await get(url + i)); agent.destroy(); })();
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

        def fetch(tag, rule, alpn="none", sni=""):
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            r = run(sluice_argv([node, "-e", NODE, f"https://127.0.0.1:{port}/{tag}-", str(N),
                                 alpn, sni], outs=[rule]), cwd=tmp.path, timeout=60)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
            deadline = time.monotonic() + 2
            got = served(srv, f"/{tag}-")
            while len(got) < N and "ERR" not in r.stdout and time.monotonic() < deadline:
                time.sleep(0.02)
                got = served(srv, f"/{tag}-")
            return r, got, cpu

        delay = f"to=127.0.0.1 port={port} req_rate={RATE}/s req_burst=1 action=delay"
        for tag, alpn, mode in (("a", "none", "exact for a client"), ("b", "h2", "approximate")):
            r, got, cpu = fetch(tag, delay, alpn)
            span = got[-1][2] - got[0][2] if got else 0
            check(r.stdout.split() == ["200"] * N and len(got) == N,
                  f"({tag}) 12 x 200: {r.stdout} {r.stderr}")
            check(len({g[1] for g in got}) == 1, f"({tag}) one connection: {got}")
            check(DUE - 0.1 <= span <= DUE + 1.0, f"({tag}) 12 requests at 5/s took {span:.3f} s")
            check(cpu < 1.5, f"({tag}) node used {cpu:.2f} s of CPU while held")
            said = [l for l in r.stderr.splitlines() if "cannot decrypt" in l]
            check(len(said) == 1 and mode in said[0] and f"127.0.0.1 port {port}" in said[0],
                  f"({tag}) the mode, said once: {r.stderr}")
            print(f"({tag}) {span:.3f} s, {cpu:.2f} s CPU: {said[0]}")

        r, got, _ = fetch("c", f"to=127.0.0.1 port={port} req_rate=1/m req_burst=2 action=reject")
        check(len(got) == 2 and r.stdout.split() == ["200", "200"] + ["ERR"] * (N - 2),
              f"(c) 2 served, the rest refused: {got} {r.stdout}")

        by_name = f"to=127.0.0.1 port={port} host=api.vendor.example req_rate=1/m req_burst=2 " \
            "action=reject"
        r, got, _ = fetch("d1", by_name, sni="api.vendor.example")
        check(len(got) == 2 and r.stdout.split() == ["200", "200"] + ["ERR"] * (N - 2),
              f"(d) the rule matches the server name: {got} {r.stdout} {r.stderr}")
        r, got, _ = fetch("d2", by_name, sni="other.example")
        check(len(got) == N and r.stdout.split() == ["200"] * N,
              f"(d) another name: not matched, all served: {got} {r.stdout} {r.stderr}")
    finally:
        srv.stop()
print("ok")
