# SPDX-License-Identifier: BSD-2-Clause
"""apache 2.4 with mod_ssl (event MPM, Debian's) under a per-key request
rule (issue 34, items 1 and 4): requests inside a server's own TLS read
through OpenSSL over a BIO that is not a socket.

mod_ssl gives OpenSSL its own BIO (bio_filter_in/out over apache's bucket
brigades): SSL_get_rfd is -1, apache reads the socket itself and hands the
ciphertext to the library. sluice ties the session to the socket whose
read carried its ClientHello (the client random, compared with
SSL_get_client_random once the library has read it) and reads the
requests through SSL_read as on nginx. Before that, a per-key rule became
one budget per address (TLS record bursts) and a denial was a reset.

A private apache (own ServerRoot, mpm_event, one child with 4 threads,
mod_ssl on a loopback port, a self-signed certificate) under
`req_rate=5/s req_burst=5 per=header:X-API-Key action=reply`:
  - bare: 15 requests on one TLS keep-alive connection: all 200;
  - under the rule, one key on one keep-alive TLS connection (a new one
    after each 429, which says Connection: close), then one key on a new
    TLS connection each, then a second key from the same address: each
    run served within burst + 1 of what is due, every other request a 429
    read through TLS with the RateLimit fields (denylib.py), so the second
    key is not charged for the first;
  - apache's access log shows exactly the requests the clients saw served.
"""
from denylib import *

import servers


def logged(st):
    time.sleep(0.2)  # apache writes its log line after the response
    return st.served()


with TempDir() as tmp:
    port = free_port()
    st = servers.apache(tmp, port, tls=True)  # event MPM, one child of 4 threads, mod_ssl
    argv, log = st.argv, st.log

    with Proc(argv) as ap:
        wait_listen(port)
        check_bare("bare keep-alive", *key_run(port, "bare-1", keep=True, tls=True))
        check(ap.p.poll() is None, "apache is still running")
    os.unlink(log)

    with Proc(sluice_argv(argv, ins=[rule(port)])) as ap:
        wait_listen(port)
        served = check_limited("keep-alive", *key_run(port, "key-keep", keep=True, tls=True))
        served += check_limited("new connections", *key_run(port, "key-new", keep=False, tls=True))
        served += check_limited("second key", *key_run(port, "key-other", keep=True, tls=True))
        got = logged(st)
        check(len(got) == served, f"apache logged {len(got)} requests, the clients saw {served}")
        check(all(l[0] == "200" for l in got), f"apache logged only 200s: {got}")
        check(ap.p.poll() is None, f"apache is still running\n{ap.stderr()}")
        say = [l for l in sluice_lines(ap.stderr()) if "TLS" in l]
        check(not say, f"nothing said of TLS sluice could not read: {say}")
print("ok")
