# SPDX-License-Identifier: BSD-2-Clause
"""Bytes sluice holds are reported by epoll as the kernel reports bytes it
holds (issue 21: no lost readiness): to a level-triggered registration at
every wait until they are read, to an edge-triggered one once and again
after the program's ADD or MOD, to an EPOLLONESHOT one once per arming.

The case of Java's HttpClient (test_client_coverage's Java rows took the
client's 10 s timeout for 2 of 12 requests under `action=reply`): its
selector got the 429 that sluice queued as EPOLLIN, dropped the
registration (interest 0 is a DEL in Java's epoll selector) and added it
again before its reader read; the kernel would report the unread bytes
at once, sluice had reported them once and forgot them.

A python client (select.epoll, a non-blocking socket) under
`req_rate=1/m req_burst=1 action=reply`: a first connection takes the
rule's one token, the request on the second is denied and sluice queues a
429 for it. The client then waits on that socket in each mode without
reading, reads the whole answer, and waits once more. The same client
runs bare against a server that answers the second request with a 429
itself: the kernel's answers are the reference, and both runs must give
the expected ones. A wait that must report the socket has 5 s (it returns
at once when it does); one that must not has 0.2 s (the bytes are there
or not: no race with the machine's speed)."""
import json
import socket
import threading

from lib import *

CLIENT = r"""
import json, select, socket, sys
port = int(sys.argv[1])
REQ = b"GET /x HTTP/1.1\r\nHost: t\r\n\r\n"
a = socket.create_connection(("127.0.0.1", port))
a.sendall(REQ)  # takes the rule's one token
b = socket.create_connection(("127.0.0.1", port))
b.sendall(REQ)  # denied: sluice's 429 (bare: the server's)
b.setblocking(False)
fd, ep, res = b.fileno(), select.epoll(), {}

def ready(t):
    return any(f == fd and ev & select.EPOLLIN for f, ev in ep.poll(t))

ep.register(fd, select.EPOLLIN)
res["level"] = ready(5)
res["level_unread"] = ready(0.2)
ep.unregister(fd)
ep.register(fd, select.EPOLLIN)
res["level_added_again"] = ready(5)
ep.modify(fd, select.EPOLLIN | select.EPOLLET)
res["edge_after_mod"] = ready(5)
res["edge_no_new_bytes"] = ready(0.2)
ep.modify(fd, select.EPOLLIN | select.EPOLLONESHOT)
res["oneshot_armed"] = ready(5)
res["oneshot_fired"] = ready(0.2)
ep.modify(fd, select.EPOLLIN | select.EPOLLONESHOT)
res["oneshot_rearmed"] = ready(5)
ep.modify(fd, select.EPOLLIN)
data, length = b"", None
while length is None or len(data) < length:
    if not ready(5):
        break
    got = b.recv(4096)
    if not got:
        break
    data += got
    head, sep, body = data.partition(b"\r\n\r\n")
    if sep and length is None:
        n = [l.split(b":")[1] for l in head.split(b"\r\n") if l.lower().startswith(b"content-length:")]
        length = len(head) + 4 + int(n[0] if n else 0)
res["status"] = data[:12].decode("latin-1")
res["whole"] = length is not None and len(data) == length
res["level_all_read"] = ready(0.2)
print(json.dumps(res))
"""

WANT = {"level": True, "level_unread": True, "level_added_again": True, "edge_after_mod": True,
        "edge_no_new_bytes": False, "oneshot_armed": True, "oneshot_fired": False,
        "oneshot_rearmed": True, "status": "HTTP/1.1 429", "whole": True,
        "level_all_read": False}


def server(ls):
    """Answers every request with a 429 (bare, the second connection's is
    the one the client reads; under sluice only the first one's arrives)."""
    def one(c):
        with c:
            data = b""
            while b"\r\n\r\n" not in data:
                got = c.recv(4096)
                if not got:
                    return
                data += got
            try:
                c.sendall(b"HTTP/1.1 429 Too Many Requests\r\nContent-Length: 5\r\n\r\nslow\n")
                c.recv(1)  # until the client closes
            except OSError:
                pass

    while True:
        try:
            c, _ = ls.accept()
        except OSError:
            return
        threading.Thread(target=one, args=(c,), daemon=True).start()


with socket.socket() as ls:
    ls.bind(("127.0.0.1", 0))
    ls.listen(8)
    port = ls.getsockname()[1]
    threading.Thread(target=server, args=(ls,), daemon=True).start()
    rule = f"to=127.0.0.1/32 port={port} req_rate=1/m req_burst=1 action=reply"
    for how, argv in (("bare", [sys.executable, "-c", CLIENT, str(port)]),
                      ("sluice", sluice_argv([sys.executable, "-c", CLIENT, str(port)],
                                             outs=[rule]))):
        r = run(argv, timeout=60)
        res = last_json(r.stdout)
        print(how, res)
        check(res == WANT, f"{how}: {json.dumps(res)}\nwanted {json.dumps(WANT)}\n{r.stderr[-2000:]}")
print("ok")
