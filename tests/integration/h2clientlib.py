# SPDX-License-Identifier: BSD-2-Clause
"""Two HTTP/2-over-TLS clients whose TLS sluice cannot decrypt, for
test_h2_tls_reply.py and test_h2_tls_refused.py: undici (npm) with
`allowH2`, its TLS inside node's binary, and Java 17's HttpClient
(HTTP/2, JSSE). Each makes N GETs of URL0..URL(N-1) one after another on
one client and prints a line per call: "STATUS SECONDS" or "ERR NAME
SECONDS" (the call's own time), then "DONE". Java's calls time out after
60 s, or after h2_runs' `java_timeout`.

undici comes from npm into a cache that outlives the test (as the Go
build cache does): `npm install --prefix CACHE undici@7` once; without
npm or the registry the undici cases SKIP. Version 7: undici 6 loses a
request queued after an h2 connection ends without a GOAWAY (its socket's
close handler keeps the dead connection as the client's, so the request
is never dispatched and node exits with it pending); 7 drops it
(client-h2.js onHttp2SocketClose) and connects again.
"""
from lib import *

UNDICI_CLIENT = r"""
const {Agent, request} = require(process.env.SLUICE_UNDICI);
const [url, n] = [process.argv[1], +process.argv[2]];
const agent = new Agent({allowH2: true, connect: {rejectUnauthorized: false}});
(async () => {
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    try {
      const r = await request(url + i, {dispatcher: agent, headersTimeout: 60000, bodyTimeout: 60000});
      await r.body.text();
      console.log(r.statusCode, ((performance.now() - t) / 1000).toFixed(3));
    } catch (e) {
      console.log("ERR", e.code || e.name, ((performance.now() - t) / 1000).toFixed(3));
    }
  }
  console.log("DONE");
  await agent.close();
})();
"""

JAVA_CLIENT = r"""
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;

public class H2 {
    public static void main(String[] a) throws Exception {
        HttpClient c = HttpClient.newBuilder().version(HttpClient.Version.HTTP_2)
            .connectTimeout(Duration.ofSeconds(60)).build();
        for (int i = 0; i < Integer.parseInt(a[1]); i++) {
            long t = System.nanoTime();
            String said;
            try {
                HttpRequest r = HttpRequest.newBuilder(URI.create(a[0] + i))
                    .timeout(Duration.ofSeconds(a.length > 2 ? Integer.parseInt(a[2]) : 60))
                    .build();
                said = "" + c.send(r, HttpResponse.BodyHandlers.ofString()).statusCode();
            } catch (Exception e) {
                said = "ERR " + e.getClass().getSimpleName();
            }
            System.out.printf("%s %.3f%n", said, (System.nanoTime() - t) / 1e9);
        }
        System.out.println("DONE");
        System.exit(0);
    }
}
"""


def undici_path():
    """The undici package's directory (installed with npm into a cache
    outliving the test), or None with the reason printed."""
    if not shutil.which("node") or not shutil.which("npm"):
        print("undici: no node or npm")
        return None
    cache = os.path.join(tempfile.gettempdir(), "sluice-test-npm-undici7")
    path = os.path.join(cache, "node_modules", "undici")
    if not os.path.exists(os.path.join(path, "package.json")):
        os.makedirs(cache, exist_ok=True)
        r = run(["npm", "install", "--no-audit", "--no-fund", "--prefix", cache, "undici@7"],
                timeout=170, cwd=cache)
        if r.returncode != 0:
            print(f"undici: npm install failed: {r.stderr[-500:]}")
            return None
    return path


def java_build(tmp, crt):
    """(class directory of JAVA_CLIENT, trust store holding crt), or None
    with the reason printed."""
    if not shutil.which("javac") or not shutil.which("keytool"):
        print("java: no javac")
        return None
    os.makedirs(tmp.join("java"), exist_ok=True)
    src = tmp.write("java/H2.java", JAVA_CLIENT)
    r = run(["javac", "-d", tmp.join("java"), src], timeout=170)
    check(r.returncode == 0, f"javac: {r.stderr}")
    store = tmp.join("trust.p12")
    r = run(["keytool", "-importcert", "-noprompt", "-file", crt, "-keystore", store,
             "-storetype", "PKCS12", "-storepass", "trustpw", "-alias", "vendor"], timeout=60)
    check(r.returncode == 0, f"keytool: {r.stderr}")
    return tmp.join("java"), store


def h2_clients(tmp, crt, java_timeout=60):
    """[(name, argv builder(url, n), env)] of the clients installed here,
    trusting the vendor's certificate crt (undici: any); Java's calls time
    out after java_timeout seconds."""
    out = []
    undici = undici_path()
    if undici:
        out.append(("undici allowH2", lambda url, n: ["node", "-e", UNDICI_CLIENT, url, str(n)],
                    {"SLUICE_UNDICI": undici, "NODE_NO_WARNINGS": "1"}))
    java = java_build(tmp, crt)
    if java:
        classes, store = java
        # a certificate for 127.0.0.1 has no subjectAltName: skip the name check
        out.append(("java HttpClient h2", lambda url, n: [
            "java", "-Djdk.internal.httpclient.disableHostnameVerification=true",
            f"-Djavax.net.ssl.trustStore={store}", "-Djavax.net.ssl.trustStorePassword=trustpw",
            "-cp", classes, "H2", url, str(n), str(java_timeout)], {}))
    return out


def calls(stdout):
    """[(status or "ERR NAME", seconds)] of a client's lines, and whether it said DONE."""
    out = []
    for l in stdout.splitlines():
        w = l.split()
        if len(w) == 2 and w[0].isdigit():
            out.append((int(w[0]), float(w[1])))
        elif len(w) == 3 and w[0] == "ERR":
            out.append((f"ERR {w[1]}", float(w[2])))
    return out, "DONE" in stdout.split()


def h2_runs(rule, n, modes, expect, only=None, java_timeout=60):
    """Runs each client installed here against one nginx `ssl http2`
    vendor (lib.NginxVendor), once per mode: "bare", or under `sluice run
    --out RULE` (rule with {port} filled in). Yields (client name, mode,
    run, calls(), DONE said, the numbers of the calls nginx served),
    having waited (5 s at most) for `expect` of them in its log; prints
    SKIP and yields nothing when no client is here. only: the one client
    whose name begins with it; java_timeout: as h2_clients'."""
    with TempDir() as tmp:
        v = NginxVendor(tmp, connection=False)
        clients = [c for c in h2_clients(tmp, v.crt, java_timeout)
                   if only is None or c[0].startswith(only)]
        if not clients:
            print("SKIP: neither undici nor java here")
            return
        with Proc(v.argv):
            wait_listen(v.port)
            for ci, (name, argv_of, env) in enumerate(clients):
                for mode in modes:
                    tag = f"c{ci}{mode}"
                    argv = argv_of(f"https://127.0.0.1:{v.port}/{tag}/", n)
                    if mode != "bare":
                        argv = sluice_argv(argv, outs=[rule.format(port=v.port)])
                    r = run(argv, env=env, timeout=170)
                    got, done = calls(r.stdout)
                    check(all(s[1] == "HTTP/2.0" for s in v.served(tag)),
                          f"{name}: not HTTP/2: {v.served(tag)}")
                    served = [int(s[2].rsplit("/", 1)[1]) for s in v.logged(tag, expect)]
                    yield name, mode, r, got, done, served
