# SPDX-License-Identifier: BSD-2-Clause
"""OpenSSL over memory BIOs (python asyncio's sslproto, which aiohttp and
httpx.AsyncClient use) is counted and paced (issue 24, item 1;
shim/tlsbio.c).

The session has no socket: it is tied to one by its client random, which
the ClientHello the program writes carries; requests are read from the
plaintext given to SSL_write, and a request that waits holds the socket
write of its records (the socket writable only at the turn), so the
event loop never sees want-write and never spins.

nginx on loopback with TLS (`ssl http2`: these clients offer http/1.1),
`--out 'to=127.0.0.1 port=P req_rate=5/s req_burst=1 action=delay'`:
  - asyncio streams, 12 requests one after another on one connection,
    and 12 written at once (pipelined): all 200 in at least (12 - 1) / 5
    = 2.2 s (-0.05 s for clock reads) and at most that plus the unruled
    run plus 0.5 s (wake-ups);
  - aiohttp and httpx.AsyncClient (Debian's python3-aiohttp,
    python3-httpx), 12 GETs on one session: the same bounds;
  - no line saying the requests were not counted; CPU of the paced runs
    well under the 2.2 s a spinning wait would use;
  - reject (req_rate=1/m req_burst=2): the third request's socket write
    fails with ECONNREFUSED (the rule's errno), nginx served 2; reply the
    same (its fallback), the responses read through the gate.
Before shim/tlsbio.c, all of these took the unruled time.
"""
import errno
import resource

from lib import *

N, RATE = 12, 5
DUE = (N - 1) / RATE
PY = "/usr/bin/python3"  # Debian's, where python3-aiohttp and python3-httpx are

STREAMS = r"""
import asyncio, json, ssl, sys, time
async def main():
    ctx = ssl.create_default_context(); ctx.check_hostname = False; ctx.verify_mode = ssl.CERT_NONE
    port, tag, n, pipelined = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), sys.argv[4] == "1"
    t0 = time.monotonic(); codes = []
    r, w = await asyncio.open_connection("127.0.0.1", port, ssl=ctx)
    try:
        for i in range(n):
            w.write(b"GET /%s%d HTTP/1.1\r\nHost: x\r\n\r\n" % (tag.encode(), i))
            if pipelined and i < n - 1: continue
            await w.drain()
            for _ in range(n if pipelined else 1):
                head = await r.readuntil(b"\r\n\r\n")
                codes.append(int(head.split()[1]))
                k = [l.split(b":")[1] for l in head.split(b"\r\n") if l.lower().startswith(b"content-length")]
                await r.readexactly(int(k[0]))
    except OSError as e:
        codes.append(e.errno)
    print(json.dumps({"codes": codes, "took": time.monotonic() - t0}))
asyncio.run(main())
"""

CLIENTS = r"""
import asyncio, json, sys, time
async def main():
    kind, url, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    t0 = time.monotonic(); codes = []
    if kind == "aiohttp":
        import aiohttp
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=False)) as s:
            t0 = time.monotonic()
            for i in range(n):
                async with s.get(url + str(i)) as r:
                    await r.read(); codes.append(r.status)
    else:
        import httpx
        async with httpx.AsyncClient(verify=False) as c:
            t0 = time.monotonic()
            for i in range(n):
                r = await c.get(url + str(i)); codes.append(r.status_code)
    print(json.dumps({"codes": codes, "took": time.monotonic() - t0}))
asyncio.run(main())
"""


def has(module):
    return run([PY, "-c", f"import {module}"]).returncode == 0


with TempDir() as tmp:
    v = NginxVendor(tmp, connection=False)
    crt, port, log, argv = v.crt, v.port, v.log, v.argv
    served, logged = v.served, v.logged

    def client(argv, rule=None):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        r = run(sluice_argv(argv, outs=[rule]) if rule else argv, timeout=60)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        got = last_json(r.stdout)
        check(got is not None, f"{argv[-3:]}: {r.stdout} {r.stderr}")
        got["cpu"] = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
        return got, r.stderr

    delay = f"to=127.0.0.1 port={port} req_rate={RATE}/s req_burst=1 action=delay max_delay=10s"
    cases = [("sequential", [PY, "-c", STREAMS, str(port), "seq", str(N), "0"]),
             ("pipelined", [PY, "-c", STREAMS, str(port), "pip", str(N), "1"])]
    for kind in ("aiohttp", "httpx"):
        if has(kind):
            cases.append((kind, [PY, "-c", CLIENTS, kind, f"https://127.0.0.1:{port}/{kind}", str(N)]))
        else:
            print(f"SKIP {kind}: not installed (apt-get install python3-{kind})")
    with Proc(argv):
        wait_listen(port)
        for name, cmd in cases:
            free, _ = client(cmd)
            check(free["codes"] == [200] * N, f"{name} without sluice: {free}")
            got, err = client(cmd, delay)
            check(got["codes"] == [200] * N, f"{name}: {N} x 200: {got} {err}")
            check("not counted" not in err, f"{name}: the requests are counted: {err}")
            check(DUE - 0.05 <= got["took"] <= DUE + free["took"] + 0.5,
                  f"{name}: {N} at {RATE}/s burst 1 took {got['took']:.2f} s "
                  f"(without a rule {free['took']:.2f} s): {err}")
            check(got["cpu"] < 1.5, f"{name}: {got['cpu']:.2f} s of CPU: a wait spins")
            print(f"{name}: {got['took']:.2f} s (due {DUE:.2f}, without a rule "
                  f"{free['took']:.2f}), cpu {got['cpu']:.2f} s")

        rule = f"to=127.0.0.1 port={port} req_rate=1/m req_burst=2 action=reject"
        got, err = client([PY, "-c", STREAMS, str(port), "rj", "5", "0"], rule)
        check(got["codes"] == [200, 200, errno.ECONNREFUSED], f"reject: {got} {err}")
        check(len(logged("rj", 2)) == 2, f"reject: nginx served {served('rj')}")

        # reply falls back to reject over memory BIOs (no 429 can enter the
        # records), but the session's reads go through the gate that counts
        # responses (shim/gate.h, sl_gate_read_replies): they must still
        # read the server's bytes, with the library's own read
        rule = f"to=127.0.0.1 port={port} req_rate=1/m req_burst=2 action=reply"
        got, err = client([PY, "-c", STREAMS, str(port), "rp", "5", "0"], rule)
        check(got["codes"] == [200, 200, errno.ECONNREFUSED], f"reply: {got} {err}")
        check(len(logged("rp", 2)) == 2, f"reply: nginx served {served('rp')}")
print("ok")
