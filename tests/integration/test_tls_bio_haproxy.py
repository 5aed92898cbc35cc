# SPDX-License-Identifier: BSD-2-Clause
"""haproxy 2.6 (Debian's) terminating TLS under a per-key request rule
(issue 34, items 1 and 4): requests inside a server's own TLS over a BIO
that is not a socket.

haproxy gives OpenSSL BIO methods of its own (ha_meth: the library reads
and writes through haproxy's transport layer, which calls recv and send):
SSL_get_rfd is -1. sluice ties the session to the socket whose first read
carried its ClientHello (the client random, compared with
SSL_get_client_random once the library has read it) and reads the
requests through SSL_read as on nginx; a denial is end-of-file there and
the 429 is written through the session when haproxy shuts it down.

A private haproxy (foreground, `bind ssl crt` with a self-signed
certificate, mode http, keep-alive, `option http-ignore-probes` as the
plain-HTTP test of issue 34 needs for haproxy's own 400 on an empty
connection) in front of a tiny python backend that counts what it serves,
under `req_rate=5/s req_burst=5 per=header:X-API-Key action=reply` on
haproxy's port: one key on one keep-alive TLS connection (a new one after
each 429, which says Connection: close), one key on a new TLS connection
each, then a second key from the same address: each run served within
burst + 1 of what is due, every other request a 429 read through TLS with
the RateLimit fields (denylib.py); the backend saw exactly the requests
the clients saw served.

Then under `req_rate=5/s req_burst=1 per=header:X-API-Key action=delay`:
5 requests on one keep-alive TLS connection are all served, paced (the
4 held ones 0.2 s apart: at least 0.6 s in all, allowing the edges of the
window; at most 3 s, far above a loaded machine's scheduling), and haproxy
uses under 0.3 s of CPU meanwhile: a held request is reported as
want-read, and haproxy, which remembers its socket as readable until a
read meets its end, would otherwise ask again at once, for ever (a peek
through its BIO meets the end: tls.c drain).
"""

from denylib import *

import servers


def served_count(st, before):
    time.sleep(0.1)
    return len(st.served()) - before


with TempDir() as tmp:
    port = free_port()
    st = servers.haproxy(tmp, port, tls=True)  # `bind ssl crt`, a python backend here
    argv = st.argv

    with Proc(argv, cwd=tmp.path) as hp:
        wait_listen(port, timeout=30)
        check_bare("bare keep-alive", *key_run(port, "bare-1", keep=True, tls=True))
        check(hp.p.poll() is None, f"haproxy is still running\n{hp.stderr()}")

    before = len(st.served())
    with Proc(sluice_argv(argv, ins=[rule(port)]), cwd=tmp.path) as hp:
        wait_listen(port, timeout=30)
        served = check_limited("keep-alive", *key_run(port, "key-keep", keep=True, tls=True))
        served += check_limited("new connections", *key_run(port, "key-new", keep=False, tls=True))
        served += check_limited("second key", *key_run(port, "key-other", keep=True, tls=True))
        got = served_count(st, before)
        check(got == served, f"the backend served {got} requests, the clients saw {served}")
        check(hp.p.poll() is None, f"haproxy is still running\n{hp.stderr()}")
        say = [l for l in sluice_lines(hp.stderr()) if "TLS" in l]
        check(not say, f"nothing said of TLS sluice could not read: {say}")

    delay = f"port={port} req_rate=5/s req_burst=1 per=header:X-API-Key action=delay"
    with Proc(sluice_argv(argv, ins=[delay]), cwd=tmp.path) as hp:
        wait_listen(port, timeout=30)
        check_paced("delay", hp.p.pid, port, tls=True)
    st.stop()
print("ok")
