# SPDX-License-Identifier: BSD-2-Clause
"""puma 5.6 (Debian's) over TLS under a per-key request rule (issue 34,
items 1 and 4): requests inside a server's own TLS over memory BIOs.

puma's MiniSSL runs OpenSSL over two memory BIOs: it reads the socket
itself, writes the ciphertext into the session (BIO_write), and asks
SSL_read for the plaintext; SSL_get_rfd is -1. sluice ties the session to
the socket whose first read carried its ClientHello (the client random,
compared with SSL_get_client_random once the library has read it) and
reads the requests through SSL_read as on nginx. puma asks SSL_want_read
before SSL_get_error, so SSL_want answers as SSL_get_error does. Before
that, a per-key rule became one budget per address (TLS record bursts) and
a denial was a reset.

A private puma (single mode, 1-4 threads, `ssl://` bind with a self-signed
certificate, a minimal config.ru that counts what it serves in a file) on a
loopback port, under `req_rate=5/s req_burst=5 per=header:X-API-Key
action=reply`: one key on one keep-alive TLS connection (a new one after
each 429, which says Connection: close), one key on a new TLS connection
each, then a second key from the same address: each run served within
burst + 1 of what is due, every other request a 429 read through TLS with
the RateLimit fields (denylib.py); the app saw exactly the requests the
clients saw served.
"""
from denylib import *

import servers


def app_served(st):
    time.sleep(0.1)
    return st.served()


with TempDir() as tmp:
    port = free_port()
    st = servers.puma(tmp, port, tls=True)  # single mode, 1-4 threads, ssl:// bind
    argv, env, log = st.argv, st.env, st.log

    with Proc(argv, env=env, cwd=tmp.path) as pm:
        wait_listen(port, timeout=30)
        check_bare("bare keep-alive", *key_run(port, "bare-1", keep=True, tls=True))
        check(pm.p.poll() is None, "puma is still running")
    os.unlink(log)

    with Proc(sluice_argv(argv, ins=[rule(port)]), env=env, cwd=tmp.path) as pm:
        wait_listen(port, timeout=30)
        served = check_limited("keep-alive", *key_run(port, "key-keep", keep=True, tls=True))
        served += check_limited("new connections", *key_run(port, "key-new", keep=False, tls=True))
        served += check_limited("second key", *key_run(port, "key-other", keep=True, tls=True))
        got = app_served(st)
        check(len(got) == served, f"puma's app served {len(got)} requests, the clients saw {served}")
        check(pm.p.poll() is None, f"puma is still running\n{pm.stderr()}")
        say = [l for l in sluice_lines(pm.stderr()) if "TLS" in l]
        check(not say, f"nothing said of TLS sluice could not read: {say}")
print("ok")
