# SPDX-License-Identifier: BSD-2-Clause
"""uvicorn over TLS (Debian's python3-uvicorn and python3-uvloop) under a
per-key request rule (issue 34, items 1 and 4): requests inside a server's
own TLS over memory BIOs.

uvicorn terminates TLS with python's ssl.MemoryBIO and SSLObject, both
under asyncio's sslproto and under uvloop's (the program reads the socket
itself and feeds the ciphertext to the session; SSL_get_rfd is -1). sluice
ties the session to the socket whose first read carried its ClientHello
(the client random, compared with SSL_get_client_random once the library
has read it) and reads the requests through SSL_read_ex as on nginx: a
denial is end-of-file there (python's SSLObject.read returns b""), the
protocol shuts the session down, and the 429 is written through the
session (SSL_shutdown) before the close_notify. Before that, a per-key
rule became one budget per address (TLS record bursts) and a denial was a
reset.

For each loop (asyncio; uvloop when installed) a private uvicorn
(`--ssl-keyfile/--ssl-certfile`, a self-signed certificate, a minimal ASGI
app that counts what it serves in a file) on a loopback port, under
`req_rate=5/s req_burst=5 per=header:X-API-Key action=reply`: one key on
one keep-alive TLS connection (a new one after each 429, which says
Connection: close), one key on a new TLS connection each, then a second
key from the same address: each run served within burst + 1 of what is due,
every other request a 429 read through TLS with the RateLimit fields
(denylib.py); the app saw exactly the requests the clients saw served.

Under `req_rate=5/s req_burst=1 per=header:X-API-Key action=delay` the
sessions are not tied (the loops ask SSLObject.read again only when new
bytes arrive, so a request held after decryption would never be read at
its turn): their record bursts are paced at the socket, per address, and
that is said once with the cause. 5 requests on one keep-alive connection
are all served, paced (0.6-3 s: the 4 held ones 0.2 s apart, allowing the
window's edges and a loaded machine).
"""
from denylib import *

PY = "/usr/bin/python3"  # Debian's python3-uvicorn is for Debian's python
if run([PY, "-c", "import uvicorn"]).returncode != 0:
    print("SKIP: no python3-uvicorn (apt-get install python3-uvicorn)")
    sys.exit(0)

import servers


def app_served(st):
    time.sleep(0.1)
    return st.served()


loops = ["asyncio"]
if run([PY, "-c", "import uvloop"]).returncode == 0:
    loops.append("uvloop")
else:
    print("uvloop: not installed (python3-uvloop), asyncio only")

for loop in loops:
    with TempDir() as tmp:
        port = free_port()
        st = servers.uvicorn(tmp, port, tls=True, workers=None, loop=loop, http="h11")
        argv, env, log = st.argv, st.env, st.log

        with Proc(argv, env=env, cwd=tmp.path) as uv:
            wait_listen(port, timeout=30)
            check_bare(f"{loop} bare keep-alive", *key_run(port, "bare-1", keep=True, tls=True))
            check(uv.p.poll() is None, f"uvicorn is still running\n{uv.stderr()}")
        os.unlink(log)

        with Proc(sluice_argv(argv, ins=[rule(port)]), env=env, cwd=tmp.path) as uv:
            wait_listen(port, timeout=30)
            served = check_limited(f"{loop} keep-alive",
                                   *key_run(port, "key-keep", keep=True, tls=True))
            served += check_limited(f"{loop} new connections",
                                    *key_run(port, "key-new", keep=False, tls=True))
            served += check_limited(f"{loop} second key",
                                    *key_run(port, "key-other", keep=True, tls=True))
            got = app_served(st)
            check(len(got) == served, f"{loop}: the app served {len(got)}, the clients saw {served}")
            check(uv.p.poll() is None, f"uvicorn is still running\n{uv.stderr()}")
            say = [l for l in sluice_lines(uv.stderr()) if "TLS" in l]
            check(not say, f"{loop}: nothing said of TLS sluice could not read: {say}")

        delay = f"port={port} req_rate=5/s req_burst=1 per=header:X-API-Key action=delay"
        with Proc(sluice_argv(argv, ins=[delay]), env=env, cwd=tmp.path) as uv:
            wait_listen(port, timeout=30)
            elapsed, res = key_run(port, "key-delay", n=5, keep=True, tls=True)
            summary(f"{loop} delay", elapsed, res)
            check([r[0] for r in res] == [200] * 5, f"{loop} delay: all served: {res}")
            check(0.6 <= elapsed <= 3.0, f"{loop} delay: paced over {elapsed:.3f} s")
            time.sleep(0.2)
            said = [l for l in sluice_lines(uv.stderr()) if "a delay rule" in l]
            check(len(said) == 1, f"{loop} delay: the cause said once: {uv.stderr()}")
print("ok")
