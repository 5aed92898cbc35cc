# SPDX-License-Identifier: BSD-2-Clause
"""Outbound `reply` where no 429 can be given waits its turn (issue 34,
item 4): over HTTP/2, over a memory BIO (python asyncio's TLS) and over
TLS sluice cannot decrypt (node's own OpenSSL, counted from its records),
a request over a `reply` rule's limit used to be refused like `reject`
(the client saw an error for a call it was told to expect a 429 for). It
now waits within the rule's max_delay, as under `delay`, and the log says
so once with the cause; beyond max_delay it is refused as before.

The vendor is nginx over TLS (lib.NginxVendor, `ssl http2`). Each client
makes 6 calls one after another under `sluice run --out 'to=127.0.0.1
port=P req_rate=5/s req_burst=1 action=reply'` (max_delay: the default
10 s): all 6 reach nginx and answer 200, and the client's run takes at
least 0.9 s (5 waits of 0.2 s, less 0.1 s for timer rounding; the span
includes the program's start, so a slow machine makes it longer, never
shorter; unpaced, a run takes a few tens of milliseconds).
  - curl --http2 (one HTTP/2 connection): before, calls 2..6 failed;
  - python asyncio streams over TLS (a memory BIO), HTTP/1.1 keep-alive;
  - node's fetch (undici, HTTP/1.1; TLS inside node's binary).
"""
from lib import *

ASYNCIO = r"""
import asyncio, ssl, sys
async def main(port, n):
    ctx = ssl._create_unverified_context()
    r, w = await asyncio.open_connection("127.0.0.1", port, ssl=ctx)
    for i in range(n):
        w.write(b"GET /asyncio/%d HTTP/1.1\r\nHost: v\r\n\r\n" % i)
        await w.drain()
        head = await r.readuntil(b"\r\n\r\n")
        size = [int(l.split(b":")[1]) for l in head.split(b"\r\n") if l.lower().startswith(b"content-length")]
        await r.readexactly(size[0] if size else 0)
        print(int(head.split()[1]), flush=True)
    w.close()
asyncio.run(main(int(sys.argv[1]), int(sys.argv[2])))
"""

NODE_FETCH = r"""
const [url, n] = [process.argv[1], +process.argv[2]];
(async () => {
  for (let i = 0; i < n; i++) {
    try { const r = await fetch(url + i, {signal: AbortSignal.timeout(15000)}); await r.text(); console.log(r.status); }
    catch (e) { console.log("ERR " + e.name); }
  }
})();
"""

N = 6
with TempDir() as tmp:
    v = NginxVendor(tmp, connection=False)
    with Proc(v.argv):
        wait_listen(v.port)
        url = f"https://127.0.0.1:{v.port}"
        cases = [
            ("curl-h2", ["curl", "-sk", "--http2", "-o", "/dev/null", "-w", "%{http_code}\\n"]
             + [f"{url}/curl-h2/{i}" for i in range(N)] + ["-o", "/dev/null"] * (N - 1), {},
             "HTTP/2"),
            ("asyncio", [sys.executable, "-c", ASYNCIO, str(v.port), str(N)], {}, "a memory BIO"),
        ]
        if "asan" in os.environ.get("SLUICE_BUILD", ""):
            cases.pop(0)  # curl hangs under a preloaded ASan runtime, with or without sluice
        if shutil.which("node") and run(["node", "-e", "fetch"]).returncode == 0:
            cases.append(("node", ["node", "-e", NODE_FETCH, f"{url}/node/", str(N)],
                          {"NODE_TLS_REJECT_UNAUTHORIZED": "0", "NODE_NO_WARNINGS": "1"},
                          "TLS that sluice cannot decrypt"))
        else:
            print("node fetch: not installed here")
        rule = f"to=127.0.0.1 port={v.port} req_rate=5/s req_burst=1 action=reply"
        for tag, argv, env, cause in cases:
            t0 = time.monotonic()
            r = run(sluice_argv(argv, outs=[rule]), env=env, timeout=60)
            took = time.monotonic() - t0
            codes = r.stdout.split()
            served = v.logged(tag, N)
            print(f"{tag}: client read {codes} in {took:.2f} s; nginx served {len(served)}")
            check(took >= 0.9, f"{tag}: paced: {took:.3f} s")
            check(codes == ["200"] * N, f"{tag}: every call answered 200: {codes}\n{r.stderr[-1500:]}")
            check(len(served) == N, f"{tag}: nginx served {len(served)} of {N}")
            said = [l for l in sluice_lines(r.stderr) if "cannot answer on" in l]
            check(len(said) == 1 and cause in said[0], f"{tag}: the cause said once: {said}")
            paced = [l for l in sluice_lines(r.stderr) if "paced a request" in l]
            check(paced, f"{tag}: the calls were paced: {r.stderr[-1500:]}")
print("ok")
