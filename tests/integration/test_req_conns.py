# SPDX-License-Identifier: BSD-2-Clause
"""req_conns: requests in flight at once per key (issue 35, item 4).

A python ThreadingHTTPServer (HTTP/1.1 keep-alive) that counts the
requests it is handling at once: each request sleeps SLEEP s, and the
server logs "IN n" at its start (n: how many it is handling then, itself
included). Five client threads of one key start together (a barrier), each
on its own keep-alive connection.

1. inbound, `req_conns=2 action=delay` (per=header:X-Key): every request
   gets its 200, and the server never has more than 2 of the key's in
   hand at once (without the rule: 5). A second key is not held behind
   the first: its request is at the server while the first key's are.
2. inbound, `req_conns=2 action=reply`: the server never has more than 2
   at once; the others get sluice's 429 (at least one of the five: all
   five are sent within the 2 s the server holds the first two, which on
   a loaded machine is still plenty; their sum is 5 either way).
3. outbound, the same five threads as the program under `--out
   to=127.0.0.1:P req_conns=2 action=delay`, against the bare server: it
   never sees more than 2 at once, and all 15 requests get their 200.
4. outbound, five processes (forked) instead of threads: the places are
   in the table every process of the program shares, so again never more
   than 2 at once, and all 15 get their 200.
5. a holder that dies: under `req_conns=1 action=delay max_delay=60s`, a
   forked child sends a request (the server holds it 5 s) and is killed
   with SIGKILL before its answer; its place is given back by the table's
   sweep (its process is gone), so the parent's request gets its 200 (it
   would wait out the 60 s and fail if the place leaked). The parent
   prints how long its request took (the server's 5 s and the wait), for
   the log only.

No timing is asserted: only counts at the server and statuses.
"""
import socket
import threading

from lib import *
from answerslib import INFLIGHT_SERVER

SLEEP = 0.4


# The program of case 3: five threads of one key, three requests each on
# their own keep-alive connection; prints the statuses.
CLIENT = r"""
import http.client, sys, threading
port, n, each = int(sys.argv[1]), 5, 3
statuses, lock = [], threading.Lock()
barrier = threading.Barrier(n)
def run():
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    barrier.wait()
    for _ in range(each):
        c.request("GET", "/", headers={"X-Key": "k"})
        r = c.getresponse()
        r.read()
        with lock:
            statuses.append(r.status)
ts = [threading.Thread(target=run) for _ in range(n)]
for t in ts: t.start()
for t in ts: t.join(60)
print("STATUSES", sorted(statuses))
"""

# Case 4: the same from five forked processes; each prints its statuses.
FORKED = r"""
import http.client, os, sys, time
port, n, each = int(sys.argv[1]), 5, 3
start = time.time() + 0.5  # a common start, in place of a barrier
kids = []
for i in range(n):
    pid = os.fork()
    if pid == 0:
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        time.sleep(max(0, start - time.time()))
        got = []
        for _ in range(each):
            c.request("GET", "/", headers={"X-Key": "k"})
            r = c.getresponse()
            r.read()
            got.append(r.status)
        os.write(1, ("STATUSES %s\n" % got).encode())  # one write: the 5 children's lines never mix
        os._exit(0)
    kids.append(pid)
for k in kids:
    os.waitpid(k, 0)
"""


def at_once(proc, key):
    """The most requests of the key the server had in hand at once."""
    ns = [int(l.split()[2]) for l in proc.stderr().splitlines()
          if l.startswith("IN ") and l.split()[1] == key]
    return max(ns) if ns else 0, len(ns)


def get(port, key, s=None):
    """One request on connection s (a new one if None): (status, socket)."""
    s = s or socket.create_connection(("127.0.0.1", port), timeout=30)
    s.sendall(f"GET / HTTP/1.1\r\nHost: t\r\nX-Key: {key}\r\n\r\n".encode())
    f = s.makefile("rb")
    line = f.readline()
    if not line:
        return None, s
    status, length = int(line.split()[1]), 0
    while True:
        l = f.readline().strip()
        if not l:
            break
        if l.lower().startswith(b"content-length:"):
            length = int(l.split(b":")[1])
    f.read(length)
    return status, s


def clients(port, n, each, key="k"):
    """n threads started together, each making `each` requests on its own
    connection; returns every status."""
    out, lock, barrier = [], threading.Lock(), threading.Barrier(n)

    def run():
        s = None
        barrier.wait()
        for _ in range(each):
            st, s = get(port, key, s)
            with lock:
                out.append(st)
            if st != 200:
                break
        s.close()

    ts = [threading.Thread(target=run) for _ in range(n)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(60)
    return out


def serve(port, rules=()):
    tmp = TempDir()
    argv = [sys.executable, "-c", INFLIGHT_SERVER, str(port), str(SLEEP)]
    p = Proc(sluice_argv(argv, ins=list(rules)) if rules else argv,
             stderr_path=tmp.join("server.log"))
    wait_port(port)
    return p


# 1. inbound, delay
port = free_port()
with serve(port, [f"port={port} per=header:X-Key req_conns=2 action=delay max_delay=30s"]) as srv:
    other = []
    t = threading.Thread(target=lambda: (time.sleep(SLEEP / 2), other.append(get(port, "o")[0])))
    t.start()
    st = clients(port, 5, 3)
    t.join(60)
    most, n = at_once(srv, "k")
    print(f"inbound delay: statuses {sorted(st)}, at most {most} at once of {n}; other key {other}")
    check(st == [200] * 15, f"every request of the key got its 200: {st}")
    check(n == 15 and most <= 2, f"the server never had more than 2 at once: {most} ({n} seen)")
    check(other == [200], f"another key is not held behind it: {other}")

# 2. inbound, reply: the server holds each request 2 s, so that the five
# sent at once are in flight together even on a loaded machine
SLEEP = 2
port = free_port()
with serve(port, [f"port={port} per=header:X-Key req_conns=2 action=reply"]) as srv:
    st = clients(port, 5, 1)
    most, n = at_once(srv, "k")
    print(f"inbound reply: statuses {sorted(st)}, at most {most} at once of {n}")
    check(len(st) == 5 and set(st) <= {200, 429}, f"200s and 429s: {st}")
    check(st.count(429) >= 1 and st.count(200) == n, f"some were refused: {st}")
    check(most <= 2, f"the server never had more than 2 at once: {most}")

# 3. outbound, delay
SLEEP = 0.4
port = free_port()
with serve(port) as srv:
    r = run_python(CLIENT.replace("int(sys.argv[1])", str(port)),
                   outs=[f"to=127.0.0.1:{port} req_conns=2 action=delay max_delay=30s"],
                   timeout=90)
    most, n = at_once(srv, "k")
    print(f"outbound delay: {r.stdout.strip()}, at most {most} at once of {n}")
    check("STATUSES " + str([200] * 15) in r.stdout, f"all 15 got their 200: {r.stdout} {r.stderr}")
    check(n == 15 and most <= 2, f"the server never had more than 2 at once: {most} ({n} seen)")

DIES = r"""
import http.client, os, signal, sys, time
port = int(sys.argv[1])
rd, wr = os.pipe()
pid = os.fork()
if pid == 0:
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    c.request("GET", "/", headers={"X-Key": "k"})  # sent: its place is taken
    os.write(wr, b"x")
    c.getresponse()
    os._exit(0)
os.read(rd, 1)  # the child's request went (or the child ended: then the test fails below)
os.kill(pid, signal.SIGKILL)
os.waitpid(pid, 0)
t = time.monotonic()
c = http.client.HTTPConnection("127.0.0.1", port, timeout=90)
c.request("GET", "/", headers={"X-Key": "k"})
r = c.getresponse()
r.read()
print("PARENT", r.status, "took %.2f s (the server holds each request 5 s)" % (time.monotonic() - t))
"""

# 4. outbound, five processes
port = free_port()
with serve(port) as srv:
    r = run_python(FORKED.replace("int(sys.argv[1])", str(port)),
                   outs=[f"to=127.0.0.1:{port} req_conns=2 action=delay max_delay=30s"],
                   timeout=90)
    most, n = at_once(srv, "k")
    lines = [l for l in r.stdout.splitlines() if l.startswith("STATUSES")]
    print(f"outbound delay, 5 processes: {lines}, at most {most} at once of {n}")
    check(lines == ["STATUSES [200, 200, 200]"] * 5, f"all 15 got their 200: {r.stdout} {r.stderr}")
    check(n == 15 and most <= 2, f"the server never had more than 2 at once: {most} ({n} seen)")

# 5. a holder that dies
SLEEP = 5
port = free_port()
with serve(port) as srv:
    r = run_python(DIES.replace("int(sys.argv[1])", str(port)),
                   outs=[f"to=127.0.0.1:{port} req_conns=1 action=delay max_delay=60s"],
                   timeout=120)
    most, n = at_once(srv, "k")
    print(f"a holder killed: {r.stdout.strip()}; the server saw {n}")
    check(n == 2, f"the child's request and the parent's reached the server: {n} {r.stderr}")
    check("PARENT 200" in r.stdout, f"the dead child's place was given back: {r.stdout} {r.stderr}")
print("ok")
