# SPDX-License-Identifier: BSD-2-Clause
"""A server that terminates TLS with GnuTLS under a per-key request rule
(issue 34, item 1: "GnuTLS servers the same"): lighttpd 1.4 with
mod_gnutls (Debian's lighttpd-mod-gnutls), which gives GnuTLS its socket
(gnutls_transport_set_int) and reads requests with gnutls_record_recv.

sluice reads them there as nginx's through SSL_read: one key on one
keep-alive TLS connection (a new one after each 429, which says
Connection: close), one key on a new TLS connection each, a second key
from the same address: each run served within burst + 1 of what is due,
every other request a 429 read through TLS with the RateLimit fields
(denylib.py), promptly. Before, lighttpd's GnuTLS records were counted by
bursts per address: the 429s were resets and the second key shared the
first's budget.

Then `action=delay` burst 1: 5 requests on one keep-alive TLS connection
all served and paced (the 4 held 0.2 s apart: at least 0.6 s, at most 3 s,
far above a loaded machine's scheduling); lighttpd, told GNUTLS_E_AGAIN
for a held request and woken at its turn, spends under 0.3 s of CPU.
And bare, then under a rule that never limits, the same client gets 15
of 15 served (the host as bare). Under `count_status=404` the answers
lighttpd sends through gnutls_record_send are read: three not-founds of one
key, then 429; another key's 200s are untouched.
"""
from denylib import *

import servers

with TempDir() as tmp:
    port = free_port()
    st = servers.lighttpd(tmp, port, tls=True, lib="gnutls")
    argv = st.argv

    with Proc(argv) as lt:
        wait_listen(port, timeout=30)
        check_bare("bare keep-alive", *key_run(port, "bare-1", keep=True, tls=True))
    check(len(st.served()) == 15, f"bare: lighttpd logged what it served: {st.served()}")

    never = f"port={port} req_rate=1000/s req_burst=1000 per=header:X-API-Key action=reply"
    with Proc(sluice_argv(argv, ins=[never])) as lt:
        wait_listen(port, timeout=30)
        check_bare("never limiting", *key_run(port, "free-1", keep=True, tls=True))

    before = len(st.served())
    with Proc(sluice_argv(argv, ins=[rule(port)])) as lt:
        wait_listen(port, timeout=30)
        served = check_limited("keep-alive", *key_run(port, "key-keep", keep=True, tls=True))
        served += check_limited("new connections", *key_run(port, "key-new", keep=False, tls=True))
        served += check_limited("second key", *key_run(port, "key-other", keep=True, tls=True))
        check(lt.p.poll() is None, f"lighttpd is still running\n{lt.stderr()}")
        say = [l for l in sluice_lines(lt.stderr()) if "TLS" in l]
        check(not say, f"nothing said of TLS sluice could not read: {say}")
    got = len(st.served()) - before  # lighttpd writes its access log out at its end
    check(got == served, f"lighttpd served {got} requests, the clients saw {served}")

    # count_status over GnuTLS: the answers lighttpd sends through
    # gnutls_record_send are read; 3 not-founds of one key spend its budget
    failed = f"port={port} req_rate=1/m req_burst=3 per=header:X-API-Key action=reply count_status=404"
    with Proc(sluice_argv(argv, ins=[failed])) as lt:
        wait_listen(port, timeout=30)
        _, miss = key_run(port, "key-miss", n=5, keep=True, tls=True, path="/missing")
        _, other = key_run(port, "key-fine", n=5, keep=True, tls=True)
        summary("count_status 404", 0, miss)
        check([r[0] for r in miss] == [404, 404, 404, 429, 429], f"count_status: three 404s, then 429: {miss}")
        check([r[0] for r in other] == [200] * 5, f"count_status: another key's 200s are not counted: {other}")

    delay = f"port={port} req_rate=5/s req_burst=1 per=header:X-API-Key action=delay"
    with Proc(sluice_argv(argv, ins=[delay])) as lt:
        wait_listen(port, timeout=30)
        check_paced("delay", lt.p.pid, port, tls=True)
print("ok")
