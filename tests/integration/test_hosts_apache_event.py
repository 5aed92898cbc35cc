# SPDX-License-Identifier: BSD-2-Clause
"""apache 2.4's event MPM (Debian's default) under an inbound request rule
with action=reply (issue 34, item 2): a denial reaches the client at once.

How apache waits: after a response the worker thread reads once more
without blocking (pipelined requests?); when that read has nothing, it
hands the connection back to the listener thread, which adds it to its own
epoll set (epoll_ctl from the worker, into a set the listener is blocked
on) and waits up to KeepAliveTimeout. A denied request's head is read by
that one read: sluice keeps it and gives end-of-file, which apache takes
for "nothing pipelined". Before the fix nothing made the connection
readable again, and the 429 (written when apache closes) waited for
KeepAliveTimeout, 15 s. Now the end of the stream stays readable (as a
peer's end would): the listener is woken, a worker reads the end and
closes, and the 429 goes out.

A private apache (own ServerRoot and configuration in a temporary
directory, mpm_event, one child process with 4 threads, KeepAlive On,
KeepAliveTimeout 15, a static file, an access log of what it served) on a
loopback port, run in the foreground:
  - bare: one key sending 15 requests on one keep-alive connection one at
    a time, 15 pipelined in pairs (so that the next request is always
    there when the server looks for one after a response: the path above
    every time, where one at a time meets it only when the client wins a
    race), and 15 on new connections: all 200, each answer fast;
  - under `req_rate=5/s req_burst=5 per=header:X-API-Key action=reply`,
    the same with a key per run: what is served is within burst + 1 of
    what is due (5 + 5/s x the run's time; the run takes milliseconds, so
    5), every other request gets a 429 with the RateLimit fields, and each
    429 arrives in under 1 s (the target is 50 ms; see denylib.py for the
    bound) -- before the fix the first denial on the kept-alive
    connection got no answer in 3 s (it waited for KeepAliveTimeout);
  - apache's access log shows exactly the requests the clients saw served,
    and no 429 (the denied ones never reached it).
"""
from denylib import *

import servers


def logged(st):
    time.sleep(0.2)  # apache writes its log line after the response
    return st.served()


with TempDir() as tmp:
    port = free_port()
    st = servers.apache(tmp, port, tls=False)  # event MPM, one child of 4 threads
    argv, log = st.argv, st.log

    with Proc(argv) as ap:
        wait_listen(port)
        check_bare("bare keep-alive", *key_run(port, "bare-1", keep=True))
        check_bare("bare pipelined pairs", *key_run(port, "bare-3", depth=2))
        check_bare("bare new connections", *key_run(port, "bare-2", keep=False))
        check(ap.p.poll() is None, "apache is still running")
    os.unlink(log)

    with Proc(sluice_argv(argv, ins=[rule(port)])) as ap:
        wait_listen(port)
        served = check_limited("keep-alive", *key_run(port, "key-keep", keep=True))
        served += check_limited("pipelined pairs", *key_run(port, "key-pair", depth=2))
        served += check_limited("new connections", *key_run(port, "key-new", keep=False))
        got = logged(st)
        check(len(got) == served, f"apache logged {len(got)} requests, the clients saw {served}")
        check(all(l[0] == "200" for l in got), f"apache logged only 200s: {got}")
        check(ap.p.poll() is None, f"apache is still running\n{ap.stderr()}")
print("ok")
