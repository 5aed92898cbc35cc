# SPDX-License-Identifier: BSD-2-Clause
"""puma 5.6 (Debian's) under an inbound request rule with action=reply
(issue 34, item 2): a denial reaches the client at once.

How puma waits: after a response the worker thread waits up to 0.2 s for
the next request on the connection (ppoll) and reads it without blocking;
an end-of-file there is swallowed (Client#reset rescues IOError, of which
EOFError is one), and the connection goes to the reactor thread, which
registers it with nio4r (libev over epoll: EPOLL_CTL_ADD, then
epoll_wait) for up to persistent_timeout (20 s). A denied request's head
is read by that read: sluice keeps it and gives end-of-file. Before the
fix nothing made the connection readable again, and the 429 (written when
puma closes) waited 20 s. Now the end of the stream stays readable (as a
peer's end would): the reactor's registration reports it, puma reads the
end and closes, and the 429 goes out.

A private puma (single mode, 1-4 threads, a minimal config.ru that counts
what it serves in a file) on a loopback port:
  - bare: one key sending 15 requests on one keep-alive connection one at
    a time, 15 pipelined in pairs (so that the next request is always
    there when the server looks for one after a response: the path above
    every time, where one at a time meets it only when the client wins a
    race), and 15 on new connections: all 200, each answer fast;
  - under `req_rate=5/s req_burst=5 per=header:X-API-Key action=reply`,
    the same with a key per run: what is served is within burst + 1 of
    what is due (5 + 5/s x the run's time), every other request gets a 429
    with the RateLimit fields, and each 429 arrives in under 1 s (the
    target is 50 ms; see denylib.py for the bound) -- before the fix the
    first denial on the kept-alive connection got no answer in 3 s;
  - the app saw exactly the requests the clients saw served.
"""
from denylib import *

import servers


def app_served(st):
    time.sleep(0.1)
    return st.served()


with TempDir() as tmp:
    port = free_port()
    st = servers.puma(tmp, port, tls=False)  # single mode, 1-4 threads
    argv, env, log = st.argv, st.env, st.log

    with Proc(argv, env=env, cwd=tmp.path) as pm:
        wait_listen(port, timeout=30)
        check_bare("bare keep-alive", *key_run(port, "bare-1", keep=True))
        check_bare("bare pipelined pairs", *key_run(port, "bare-3", depth=2))
        check_bare("bare new connections", *key_run(port, "bare-2", keep=False))
        check(pm.p.poll() is None, "puma is still running")
    os.unlink(log)

    with Proc(sluice_argv(argv, ins=[rule(port)]), env=env, cwd=tmp.path) as pm:
        wait_listen(port, timeout=30)
        served = check_limited("keep-alive", *key_run(port, "key-keep", keep=True))
        served += check_limited("pipelined pairs", *key_run(port, "key-pair", depth=2))
        served += check_limited("new connections", *key_run(port, "key-new", keep=False))
        got = app_served(st)
        check(len(got) == served, f"puma's app served {len(got)} requests, the clients saw {served}")
        check(pm.p.poll() is None, f"puma is still running\n{pm.stderr()}")
print("ok")
