# SPDX-License-Identifier: BSD-2-Clause
"""The client coverage table (issue 24, item 9): which real HTTP clients
sluice paces, refuses or cannot see, measured, and docs/clients.md's table
checked against it so the two never drift.

One nginx on loopback, a TLS port (`ssl http2`, a certificate the test
makes) and a plain one. Each client that Debian (or the machine's node,
and undici from the npm cache of h2clientlib.py) provides makes 12 GETs,
one after another, the way it naturally does (keep-alive where it keeps
connections), each run under its own `sluice run --out 'to=127.0.0.1
port=P ...'`, so each run has its own private table (no `shared`): runs
in parallel threads do not share a budget, and nginx tells them apart by
a path prefix of their own. grpcio speaks gRPC, not GETs: it makes 12
unary calls one after another to grpclib.py's servers (TLS, and h2c for
the HTTP columns), named by the same prefix, and the time each call
started executing there stands for nginx's $msec.

  delay   req_rate=5/s req_burst=1: the 12 requests nginx serves span
          (12 - 1) / 5 = 2.2 s when paced (from nginx's $msec: the client's
          start and handshake are not in it). Paced: 12 served and a span
          of at least 2.2 - 0.1 s (clock reads and nginx's log stamp, ms)
          and at most 2.2 + 3 s (wake-ups of parallel runs on a loaded
          2-CPU machine; lateness does not add up, each request waits on
          its booking), and sluice logged the rule limiting a request. A
          row sluice counts approximately (h2 over TLS it cannot decrypt:
          write bursts) may be one interval short, 2.0 - 0.1 s: two
          requests in one burst count once.
          Unpaced clients take 0.01-0.5 s for all 12, well under the floor.
  reject  req_rate=1/m req_burst=2 (independent of how fast a client is:
          only 2 may pass in the run): refused = nginx served at most 2.
  reply   the same rate: refused (429) when the client read 429s, refused
          when it saw errors instead (HTTP/2, memory BIOs: reply falls back
          to reject, README).
  A run that nginx served 12 times under reject or reply, or with a span
  below the floor under delay, is "not seen": the test fails unless sluice
  wrote a warning naming a cause (the row's "why"), so no client is
  silently unpaced. "approximate" is a row whose connections sluice said
  it counted approximately (TLS it cannot decrypt, h2 offered).

The table (cells are categories only, so it does not move with the
machine's speed) is compared with docs/clients.md's, between
`<!-- coverage:begin -->` and `<!-- coverage:end -->`, and with
docs/coverage.md: a difference fails the test. SLUICE_COVERAGE_WRITE=1
(scripts/gen-coverage.py) rewrites both instead, with the measured spans
in docs/coverage.md. A client that is not installed is a row saying so
and is left out of the comparison.
"""
import concurrent.futures
import contextlib

import grpclib
import h2clientlib
from lib import *

N, RATE = 12, 5
DUE = (N - 1) / RATE
FLOOR, SLACK = DUE - 0.1, 3.0
# TLS sluice cannot decrypt, h2 offered: it counts write bursts, and two
# requests a client writes in one burst count once (README, "approximate"):
# such a row's run may be one interval short. Unpaced clients stay far below.
FLOOR_APPROX = FLOOR - 1 / RATE
# Debian's: python3-requests, python3-httpx, python3-aiohttp, python3-grpcio
PY = "/usr/bin/python3"
GRPC_CLIENT = grpclib.CLIENT
GRPC_ROW = "python grpcio (gRPC: 12 unary calls)"
ACTIONS = ("delay", "reject", "reply")
SCHEMES = ("https", "http")
WRITE = os.environ.get("SLUICE_COVERAGE_WRITE") == "1"
# For a quick look while working: only the clients whose row name contains
# this (the others are neither run nor compared; nothing is written).
ONLY = os.environ.get("SLUICE_COVERAGE_ONLY", "")

# Unpaced runs that sluice does not warn about yet, each a known defect
# with its issue: the row says so (never a silent gap), and the test fails
# once the run is paced or warned about, so that this list only shrinks.
# Rows known to be unpaced with nothing logged: none since the rule of doubt
# keeps counting a request that carries Upgrade until a real 101 (Java's h2c
# was one). A row added here shows as "not seen (silent)" in the table.
KNOWN_SILENT = {}
CLIENTS = os.path.join(ROOT, "docs", "clients.md")
DOC = os.path.join(ROOT, "docs", "coverage.md")
BEGIN, END = "<!-- coverage:begin -->", "<!-- coverage:end -->"

# Every client: 12 calls of URL + i, one line per call on stdout: the
# status, or ERR when the call failed (then it goes on with the next).
PY_CLIENT = r"""
import asyncio, sys, warnings
warnings.filterwarnings("ignore")
kind, url, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
def each(call):
    for i in range(n):
        try:
            print(call(url + str(i)), flush=True)
        except Exception as e:
            print("ERR", type(e).__name__, flush=True)
if kind == "requests":
    import requests
    s = requests.Session()
    each(lambda u: s.get(u, verify=False, timeout=10).status_code)
elif kind == "http.client":
    import http.client, ssl, urllib.parse
    p = urllib.parse.urlsplit(url)
    def conn():
        if p.scheme == "https":
            return http.client.HTTPSConnection(p.hostname, p.port, timeout=10,
                                               context=ssl._create_unverified_context())
        return http.client.HTTPConnection(p.hostname, p.port, timeout=10)
    c = [conn()]
    def get(u):
        try:
            c[0].request("GET", urllib.parse.urlsplit(u).path)
            r = c[0].getresponse(); r.read(); return r.status
        except Exception:
            c[0].close(); c[0] = conn(); raise
    each(get)
elif kind == "urllib":
    import ssl, urllib.error, urllib.request
    ctx = ssl._create_unverified_context()
    def get(u):
        try:
            with urllib.request.urlopen(u, timeout=10, context=ctx) as r:
                r.read(); return r.status
        except urllib.error.HTTPError as e:
            return e.code
    each(get)
elif kind == "httpx":
    import httpx
    with httpx.Client(verify=False, timeout=10) as c:
        each(lambda u: c.get(u).status_code)
else:
    async def main():
        if kind == "aiohttp":
            import aiohttp
            async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=False),
                                             timeout=aiohttp.ClientTimeout(total=10)) as s:
                for i in range(n):
                    try:
                        async with s.get(url + str(i)) as r:
                            await r.read(); print(r.status, flush=True)
                    except Exception as e:
                        print("ERR", type(e).__name__, flush=True)
        else:
            import httpx
            async with httpx.AsyncClient(verify=False, timeout=10) as c:
                for i in range(n):
                    try:
                        print((await c.get(url + str(i))).status_code, flush=True)
                    except Exception as e:
                        print("ERR", type(e).__name__, flush=True)
    asyncio.run(main())
"""

NODE_HTTPS = r"""
const [url, n] = [process.argv[1], +process.argv[2]];
const mod = require(url.startsWith("https") ? "https" : "http");
const agent = new mod.Agent({keepAlive: true, maxSockets: 1, rejectUnauthorized: false});
function get(u) {
  return new Promise((ok) => {
    const rq = mod.get(u, {agent, timeout: 10000}, (r) => { r.resume(); r.on("end", () => ok(r.statusCode)); });
    rq.on("error", (e) => ok("ERR " + e.code));
    rq.on("timeout", () => rq.destroy(new Error("timeout")));
  });
}
(async () => { for (let i = 0; i < n; i++) console.log(await get(url + i)); agent.destroy(); })();
"""

NODE_FETCH = r"""
const [url, n] = [process.argv[1], +process.argv[2]];
(async () => {
  for (let i = 0; i < n; i++) {
    try { const r = await fetch(url + i, {signal: AbortSignal.timeout(10000)}); await r.text(); console.log(r.status); }
    catch (e) { console.log("ERR " + e.name); }
  }
})();
"""

JAVA = r"""
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.security.cert.X509Certificate;
import java.time.Duration;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManager;
import javax.net.ssl.X509TrustManager;

public class Cov {
    public static void main(String[] a) throws Exception {
        TrustManager[] all = {new X509TrustManager() {
            public void checkClientTrusted(X509Certificate[] c, String s) {}
            public void checkServerTrusted(X509Certificate[] c, String s) {}
            public X509Certificate[] getAcceptedIssuers() { return new X509Certificate[0]; }
        }};
        SSLContext ctx = SSLContext.getInstance("TLS");
        ctx.init(null, all, null);
        HttpClient c = HttpClient.newBuilder().sslContext(ctx)
            .version(a[0].equals("h2") ? HttpClient.Version.HTTP_2 : HttpClient.Version.HTTP_1_1)
            .connectTimeout(Duration.ofSeconds(10)).build();
        int n = Integer.parseInt(a[2]);
        for (int i = 0; i < n; i++) {
            try {
                HttpRequest r = HttpRequest.newBuilder(URI.create(a[1] + i))
                    .timeout(Duration.ofSeconds(10)).build();
                System.out.println(c.send(r, HttpResponse.BodyHandlers.ofString()).statusCode());
            } catch (Exception e) {
                System.out.println("ERR " + e.getClass().getSimpleName());
            }
        }
        System.exit(0);
    }
}
"""

PHP = r"""
[$url, $n] = [$argv[1], (int)$argv[2]];
$c = curl_init();
curl_setopt($c, CURLOPT_RETURNTRANSFER, true);
curl_setopt($c, CURLOPT_SSL_VERIFYPEER, false);
curl_setopt($c, CURLOPT_SSL_VERIFYHOST, 0);
curl_setopt($c, CURLOPT_TIMEOUT, 10);
for ($i = 0; $i < $n; $i++) {
    curl_setopt($c, CURLOPT_URL, $url . $i);
    echo curl_exec($c) === false ? "ERR " . curl_errno($c) : curl_getinfo($c, CURLINFO_HTTP_CODE), "\n";
}
"""

RUBY = r"""
require "net/http"; require "openssl"
url, n = URI(ARGV[0]), ARGV[1].to_i
def open_conn(url)
  h = Net::HTTP.new(url.host, url.port)
  h.use_ssl = url.scheme == "https"; h.verify_mode = OpenSSL::SSL::VERIFY_NONE
  h.open_timeout = h.read_timeout = 10; h.max_retries = 0
  h.start
end
h = nil
n.times do |i|
  begin
    h ||= open_conn(url)
    puts h.get(url.path + i.to_s).code
  rescue StandardError => e
    puts "ERR #{e.class}"; h = nil
  end
  $stdout.flush
end
"""

PHP_FGC = r"""
[$url, $n] = [$argv[1], (int)$argv[2]];
$ctx = stream_context_create(["http" => ["ignore_errors" => true, "timeout" => 2],
                              "ssl" => ["verify_peer" => false, "verify_peer_name" => false]]);
for ($i = 0; $i < $n; $i++) {
    $body = @file_get_contents($url . $i, false, $ctx);
    echo $body === false ? "ERR" : explode(" ", $http_response_header[0])[1], "\n";
}
"""

# undici from npm (h2clientlib.undici_path: the cache the HTTP/2 tests
# fill), with allowH2: HTTP/2 over node's own TLS when the server offers
# it, HTTP/1.1 over plain HTTP (no h2c). node's built-in fetch is undici
# too, HTTP/1.1 only: the "node fetch" row.
UNDICI = r"""
const {Agent, request} = require(process.env.SLUICE_UNDICI);
const [url, n] = [process.argv[1], +process.argv[2]];
const agent = new Agent({allowH2: true, connect: {rejectUnauthorized: false}});
(async () => {
  for (let i = 0; i < n; i++) {
    try {
      const r = await request(url + i,
                              {dispatcher: agent, headersTimeout: 10000, bodyTimeout: 10000});
      await r.body.text(); console.log(r.statusCode);
    } catch (e) { console.log("ERR " + (e.code || e.name)); }
  }
  await agent.close();
})();
"""

# apt's http method (/usr/lib/apt/methods/http, https too: GnuTLS), run by
# apt-helper as apt runs it (a child apt execs after closing every
# descriptor but its pipes, dropping to the user _apt), fetching the 12
# URLs in one run (one connection, pipelined). Retries off: a refused
# download is not tried again (apt's default is 3 tries, seconds apart).
# A line per URL: 200 when its file came, else the status apt's error
# names, else ERR.
APT = r"""
import os, re, shutil, subprocess, sys, tempfile
url, n = sys.argv[1], int(sys.argv[2])
out = tempfile.mkdtemp(prefix="sluice-apt-")
os.chmod(out, 0o777)  # writable by _apt: apt's method runs sandboxed
pairs = []
for i in range(n):
    pairs += [url + str(i), os.path.join(out, str(i))]
r = subprocess.run(["/usr/lib/apt/apt-helper", "-o", "Acquire::Retries=0",
                    "-o", "Acquire::https::Verify-Peer=false",
                    "-o", "Acquire::https::Verify-Host=false",
                    "download-file", *pairs], capture_output=True, text=True, timeout=40)
said = r.stdout + r.stderr
for i in range(n):
    if os.path.exists(os.path.join(out, str(i))):
        print(200)
        continue
    m = re.search(re.escape(url + str(i)) + r"\s+(\d{3})\b", said)
    print(m.group(1) if m else "ERR")
sys.stderr.write(said)
shutil.rmtree(out, ignore_errors=True)
"""

PERL = r"""
use LWP::UserAgent; $| = 1;
my ($url, $n) = @ARGV;
my $ua = LWP::UserAgent->new(keep_alive => 1, timeout => 10,
                             ssl_opts => {verify_hostname => 0, SSL_verify_mode => 0});
for my $i (0 .. $n - 1) {
    my $r = $ua->get($url . $i);
    print(($r->header("Client-Warning") ? "ERR " : "") . $r->code . "\n");
}
"""

def py_has(module):
    return run([PY, "-c", f"import {module}"]).returncode == 0


def has(prog):
    return shutil.which(prog) is not None


def node_ok():
    return has("node") and run(["node", "-e", "fetch"]).returncode == 0


def clients(tmp, built):
    """(row name, installed?, argv builder(url) -> (argv, env), vendor):
    the vendor the client calls, "nginx" or "grpc" (grpclib.py's servers,
    whose TLS port stands as HTTPS and whose h2c port as HTTP)."""
    def py(kind):
        return lambda url: ([PY, "-c", PY_CLIENT, kind, url, str(N)], {})

    def curl(extra):
        def argv(url):
            a = ["curl", "-sk", *extra, "-w", "%{http_code}\\n"]
            for i in range(N):
                a += ["-o", "/dev/null", url + str(i)]
            return a, {}
        return argv

    def java(version):
        # a certificate for 127.0.0.1 has no subjectAltName: the client
        # trusts any certificate and skips the name check (the other
        # clients' -k / verify=False)
        return lambda url: (["java", "-Djdk.internal.httpclient.disableHostnameVerification=true",
                             "-cp", built.get("java", ""), "Cov", version, url, str(N)], {})

    undici = h2clientlib.undici_path() if node_ok() else None

    def grpc(url):
        # the URL's scheme, port and tag name the server and the calls
        # (grpclib's client names its calls TAG-0..TAG-(N-1))
        scheme, _, port, tag = re.match(r"(\w+)://([\d.]+):(\d+)/(\w+)-$", url).groups()
        argv = [PY, "-c", GRPC_CLIENT, port, str(N), tag, "seq"]
        return argv + ([built["grpc"].crt] if scheme == "https" else []), {}

    rows = [
        ("curl (defaults: HTTP/2 over TLS)", has("curl"), curl([])),
        ("curl --http1.1", has("curl"), curl(["--http1.1"])),
        ("wget (GnuTLS)", has("wget"), lambda url: (
            ["wget", "-q", "-S", "--no-check-certificate", "-O", "/dev/null", "-T", "10", "-t", "1"]
            + [url + str(i) for i in range(N)], {})),
        ("python requests", py_has("requests"), py("requests")),
        ("python http.client", True, py("http.client")),
        ("python urllib", True, py("urllib")),
        ("python httpx", py_has("httpx"), py("httpx")),
        ("python httpx.AsyncClient", py_has("httpx"), py("httpx-async")),
        ("python aiohttp", py_has("aiohttp"), py("aiohttp")),
        ("node https (agent)", node_ok(), lambda url: (["node", "-e", NODE_HTTPS, url, str(N)], {})),
        ("node fetch", node_ok(), lambda url: (["node", "-e", NODE_FETCH, url, str(N)],
                                               {"NODE_TLS_REJECT_UNAUTHORIZED": "0",
                                                "NODE_NO_WARNINGS": "1"})),
        ("java HttpClient HTTP/1.1", "java" in built, java("h1")),
        ("java HttpClient (defaults: HTTP/2)", "java" in built, java("h2")),
        ("undici (npm) allowH2", bool(undici), lambda url: (
            ["node", "-e", UNDICI, url, str(N)], {"SLUICE_UNDICI": undici or "",
                                                  "NODE_NO_WARNINGS": "1"})),
        ("php-curl", has("php") and "curl" in run(["php", "-m"]).stdout,
         lambda url: (["php", "-r", PHP, url, str(N)], {})),
        ("php file_get_contents", has("php"),
         lambda url: (["php", "-r", PHP_FGC, url, str(N)], {})),
        ("ruby net/http", has("ruby"), lambda url: (["ruby", "-e", RUBY, url, str(N)], {})),
        ("perl LWP", run(["perl", "-MLWP::Protocol::https", "-e", "1"]).returncode == 0,
         lambda url: (["perl", "-e", PERL, url, str(N)], {})),
        ("apt http method (apt-helper)", os.path.exists("/usr/lib/apt/apt-helper"),
         lambda url: ([PY, "-c", APT, url, str(N)], {})),
    ]
    go = ("Go net/http", "go" in built,
          lambda url: ([built.get("go", ""), url, str(N)], {}), "nginx")
    return ([(*r, "nginx") for r in rows]
            + [(GRPC_ROW, not grpclib.grpc_missing(), grpc, "grpc"), go])


def build(tmp):
    """Compiles the Java and Go clients (in parallel: the slow part of the
    test's start). Returns {"java": class dir, "go": binary} for those
    that built."""
    out = {}
    jobs = []
    if has("javac") and has("java"):
        os.makedirs(tmp.join("java"))
        src = tmp.write("java/Cov.java", JAVA)
        jobs.append(("java", ["javac", "-d", tmp.join("java"), src], {}, tmp.join("java")))
    if has("go"):
        argv, env, path = go_client_build(tmp)
        jobs.append(("go", argv, env, path))

    def one(job):
        name, argv, env, result = job
        r = run(argv, env=env, timeout=240, cwd=tmp.path)
        return name, r, result

    with concurrent.futures.ThreadPoolExecutor(2) as ex:
        for name, r, result in ex.map(one, jobs):
            if r.returncode == 0:
                out[name] = result
            else:
                print(f"{name} client did not build: {r.stderr[-500:]}")
    return out


def cause(lines):
    """A short reason from sluice's warning lines (empty when none)."""
    text = " ".join(lines)
    for key, short in (("a Go program", "Go makes its system calls itself (raw system calls)"),
                       ("statically linked", "a static binary (raw system calls)"),
                       ("TLS in the binary", "TLS in the binary (OpenSSL inside node)"),
                       ("a memory BIO", "OpenSSL over memory BIOs, not tied to its socket"),
                       ("does not interpose", "a TLS library sluice does not interpose (JSSE)"),
                       ("RTLD_DEEPBIND", "a library opened with RTLD_DEEPBIND")):
        if key in text:
            return short
    return re.sub(r"^sluice(\[\d+\])?: warning: ", "", lines[0])[:100] if lines else ""


def classify(action, served, statuses, log):
    """(category, note) of one run. served: nginx's $msec of each request
    it served; statuses: what the client printed; log: sluice's lines."""
    warned = [l for l in log if ": warning: " in l]
    limited = any(re.search(r'rule "[^"]+": (limited|paced|delayed|held)', l) for l in log)
    # shim/bursts.c says once which count a connection it cannot decrypt got
    approx = any("cannot decrypt" in l and "approximate:" in l for l in log)
    span = max(served) - min(served) if served else 0.0
    if action == "delay":
        floor = FLOOR_APPROX if approx else FLOOR
        if len(served) == N and floor <= span <= DUE + SLACK and limited:
            return ("approximate" if approx else "paced"), f"{span:.2f} s"
        if len(served) == N and span < floor:
            return "not seen", f"{span:.2f} s"
        return "broken", f"served {len(served)}, span {span:.2f} s, limited {limited}"
    if len(served) <= 2:
        if action == "reply" and "429" in statuses:
            return "refused (429)", f"served {len(served)}"
        return "refused", f"served {len(served)}, {statuses.count('429')} x 429"
    if len(served) == N:
        return "not seen", f"served {N}"
    return "broken", f"served {len(served)} of {N}"


def table(rows):
    """The markdown table; rows: {name: {(scheme, action): category, "why": ...}}."""
    head = ["client"] + [f"{s.upper()} {a}" for a in ACTIONS for s in SCHEMES] + ["why not paced"]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name, row in rows.items():
        cells = [row.get((s, a), "") for a in ACTIONS for s in SCHEMES]
        out.append("| " + " | ".join([name] + cells + [row.get("why", "")]) + " |")
    return out


def between(path):
    with open(path) as f:
        text = f.read()
    check(BEGIN in text and END in text, f"{path} has no {BEGIN} ... {END} section")
    return text, text.split(BEGIN)[1].split(END)[0]


def table_rows(section):
    """{client: row line} of the first markdown table in a section (in
    docs/coverage.md the measured details follow it)."""
    rows, started = {}, False
    for l in section.splitlines():
        if not l.startswith("|"):
            if started:
                break
            continue
        started = True
        if l.startswith("| ") and not l.startswith("| client"):
            rows[l.split("|")[1].strip()] = l.strip()
    return rows


def rewrite(path, inner):
    text, _ = between(path)
    before, rest = text.split(BEGIN)
    after = rest.split(END)[1]
    with open(path, "w") as f:
        f.write(before + BEGIN + "\n" + inner + END + after)


def main():
    if "asan" in os.environ.get("SLUICE_BUILD", ""):
        print("SKIP: curl hangs under a preloaded ASan runtime (test_tls_outbound.py)")
        return
    t_start = time.monotonic()
    with TempDir() as tmp:
        crt, key = make_cert(tmp)
        tport, pport = free_port(), free_port()
        log = tmp.join("access.log")
        _, nginx = nginx_config(tmp, events="use epoll;", http=f"""
    log_format stamp '$msec $status $uri';
    access_log {log} stamp;
    keepalive_timeout 30;
    keepalive_requests 1000;
    server {{
        listen 127.0.0.1:{tport} ssl http2;
        listen 127.0.0.1:{pport};
        ssl_certificate {crt};
        ssl_certificate_key {key};
        location / {{ return 200 "ok\\n"; }}
    }}
""")
        built = build(tmp)
        cl = clients(tmp, built)
        grpc = None  # grpclib's servers, started below when grpcio's row runs

        def served(tag, vendor):
            """The times the vendor started serving each call of the run."""
            if vendor == "grpc":
                return sorted(grpc.executed(tag).values())
            try:
                lines = open(log).read().splitlines()
            except FileNotFoundError:
                return []
            return [float(l.split()[0]) for l in lines
                    if l.split()[2].startswith(f"/{tag}-") and l.split()[1] == "200"]

        def one(job):
            ci, name, argv_of, vendor, scheme, action = job
            tag = f"c{ci}{'s' if scheme == 'https' else 'p'}{action}"
            if vendor == "grpc":
                port = grpc.port(scheme == "https")
            else:
                port = tport if scheme == "https" else pport
            url = f"{scheme}://127.0.0.1:{port}/{tag}-"
            rate = f"req_rate={RATE}/s req_burst=1" if action == "delay" else \
                "req_rate=1/m req_burst=2"
            rule = f"to=127.0.0.1 port={port} {rate} action={action} max_delay=10s"
            argv, env = argv_of(url)
            t0 = time.monotonic()
            try:
                r = run(sluice_argv(argv, outs=[rule]), env=env, timeout=45)
                out, err = r.stdout, r.stderr
            except AssertionError as e:
                out, err = "", f"timed out: {e}"
            took = time.monotonic() - t0
            # nginx logs a request after answering it: a bounded wait for
            # the lines of a client that exited on its last answer
            deadline = time.monotonic() + 1.0
            got = served(tag, vendor)
            while len(got) < N and time.monotonic() < deadline:
                time.sleep(0.05)
                got = served(tag, vendor)
            statuses = re.findall(r"^(?:ERR\b.*|\d{3})$", out, re.M)
            if name.startswith("wget"):
                statuses = re.findall(r"HTTP/\S+ (\d{3})", err)
            log_lines = sluice_lines(err)
            cat, note = classify(action, got, statuses, log_lines)
            return name, scheme, action, cat, note, took, log_lines, out, err

        check(not (WRITE and ONLY), "SLUICE_COVERAGE_ONLY measures part of the table: not written")
        cl = [c for c in cl if ONLY in c[0]]
        jobs = [(ci, name, argv_of, vendor, s, a)
                for ci, (name, ok, argv_of, vendor) in enumerate(cl) if ok
                for a in ACTIONS for s in SCHEMES]
        rows = {name: ({} if ok else {(s, a): "not installed" for s in SCHEMES for a in ACTIONS})
                for name, ok, _, _ in cl}
        measured = {}
        problems = []
        report = []  # a line per run, printed after any problem (CI shows a failure's head)
        want_grpc = any(name == GRPC_ROW and ok for name, ok, _, _ in cl)
        with Proc(nginx), (grpclib.GrpcServers(tmp) if want_grpc
                           else contextlib.nullcontext()) as g:
            grpc = built["grpc"] = g
            wait_listen(tport)
            wait_listen(pport)
            # Delay runs first (the long ones), 6 at a time: each is mostly
            # waiting, and a run's own table keeps them apart.
            with concurrent.futures.ThreadPoolExecutor(6) as ex:
                for name, scheme, action, cat, note, took, lines, out, err in ex.map(one, jobs):
                    row = rows[name]
                    row[(scheme, action)] = cat
                    measured[(name, scheme, action)] = (cat, note, took)
                    why = cause([l for l in lines if ": warning: " in l])
                    if cat == "approximate":
                        why = "TLS sluice cannot decrypt, h2 offered: counted as write bursts"
                    report.append(f"{name:38} {scheme:5} {action:6} {cat:14} {note:30} "
                                  f"({took:.1f} s) {why}")
                    if cat not in ("paced", "refused", "refused (429)"):  # say why
                        if why and why not in row.get("why", ""):
                            row["why"] = "; ".join(filter(None, [row.get("why"), why]))
                        known = KNOWN_SILENT.get((name, scheme))
                        if cat == "not seen" and not why and known:
                            row[(scheme, action)] = "not seen (silent)"
                            if known not in row.get("why", ""):
                                row["why"] = "; ".join(filter(None, [row.get("why"), known]))
                        elif cat == "not seen" and not why:
                            problems.append(f"{name} {scheme} {action}: unpaced and sluice said "
                                            f"nothing:\n{err[-1500:]}")
                        if cat == "broken":
                            problems.append(f"{name} {scheme} {action}: {note}\nstdout: "
                                            f"{out[-800:]}\nstderr: {err[-1500:]}")
        for name, ok, _, _ in cl:
            if not ok:
                rows[name]["why"] = "not installed on this machine"
        lines = table(rows)
        inner = "\n".join(lines) + "\n"
        if not WRITE:
            # docs/clients.md and docs/coverage.md show what was measured, row by row
            # (a client not installed here is not compared)
            want = table_rows(inner)
            for path in (CLIENTS, DOC):
                have = table_rows(between(path)[1])
                for name, ok, _, _ in cl:
                    if ok and have.get(name) != want[name]:
                        problems.append(f"{os.path.relpath(path, ROOT)} differs from what was "
                                        f"measured for {name}:\n  file:     {have.get(name)}\n"
                                        f"  measured: {want[name]}\n"
                                        "(regenerate: scripts/gen-coverage.py)")
        if problems:
            print("FAILED:\n" + "\n\n".join(problems) + "\n")
        print("\n".join(report + lines))
        print(f"took {time.monotonic() - t_start:.1f} s")
        check(not problems, f"{len(problems)} problem(s), above")
        if WRITE:
            rewrite(CLIENTS, "\n" + inner + "\n")
            detail = ["| client | scheme | action | result | measured | run took |",
                      "|---|---|---|---|---|---|"]
            for (name, scheme, action), (cat, note, took) in measured.items():
                detail.append(f"| {name} | {scheme} | {action} | {cat} | {note} | {took:.1f} s |")
            rewrite(DOC, "\n" + inner + "\n" + f"""Measured by `{os.path.relpath(__file__, ROOT)}` \
on {time.strftime('%Y-%m-%d', time.gmtime())} (nginx's span between the first and the last of the \
12 requests it served; paced: {DUE:.1f} s):

""" + "\n".join(detail) + "\n\n")
            print(f"wrote {CLIENTS} and {DOC}")
            return
    print("ok")


main()
