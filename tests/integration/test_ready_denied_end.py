# SPDX-License-Identifier: BSD-2-Clause
"""A denied request's end of file stays readable, to every wait (issue 34,
item 2): what apache's event MPM and puma need (test_hosts_apache_event.py,
test_hosts_puma.py), checked one wait at a time.

A python server under `req_rate=1/10s req_burst=1 action=reply` (the
first request passes, every later one is denied) reads a denied request
(end of file), and only then adds the connection to an epoll set that
another thread is already blocked on (epoll_wait, 5 s), as apache's worker
hands a connection to its listener: level-triggered, edge-triggered and
EPOLLONESHOT. That thread must be woken with EPOLLIN for the connection
(within 1 s: the failure is the 5 s timeout); an ADD into a second set
after the denial reports it too, and so does poll(). The server then
closes, and the client's 429 must come within 1 s of its request (the
server waits 0.2 s before it reads; the failure is seconds). Before
the fix the end was forgotten at the denial: nothing woke the thread, and
neither the second set nor poll() reported it.
"""
import select
import subprocess

from lib import *

port = free_port()
SERVER = f"""
import json, os, select, socket, threading, time
ls = socket.socket()
ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
ls.bind(("127.0.0.1", {port}))
ls.listen(16)
c, _ = ls.accept()                      # the one request that passes
c.recv(65536)
c.sendall(b"HTTP/1.1 200 OK\\r\\nContent-Length: 3\\r\\nConnection: close\\r\\n\\r\\nok\\n")
c.close()
S = select.epoll()
r, w = os.pipe()
S.register(r, select.EPOLLIN)           # the set has something of its own
res = {{}}
for mode, flags in (("level", select.EPOLLIN), ("edge", select.EPOLLIN | select.EPOLLET),
                    ("oneshot", select.EPOLLIN | select.EPOLLONESHOT)):
    c, _ = ls.accept()
    got = {{}}
    def wait():
        got["ev"] = S.poll(5)
        got["t"] = time.monotonic()
    th = threading.Thread(target=wait)
    th.start()
    time.sleep(0.2)                     # blocked in epoll_wait by now
    select.select([c], [], [], 5)
    data = c.recv(65536)                # the denied request: end of file
    t0 = time.monotonic()
    S.register(c.fileno(), flags)       # from this thread, into the set the other waits on
    th.join(6)
    S2 = select.epoll()
    S2.register(c.fileno(), flags)
    p = select.poll()
    p.register(c.fileno(), select.POLLIN)
    res[mode] = {{"eof": data == b"",
                 "woken_ms": round((got.get("t", t0 + 99) - t0) * 1000, 1),
                 "woken_for": [e for fd, e in got.get("ev", []) if fd == c.fileno()],
                 "second_set": [e for fd, e in S2.poll(0) if fd == c.fileno()],
                 "poll": [e for fd, e in p.poll(0)]}}
    S.unregister(c.fileno())
    S2.close()
    c.close()                           # the 429 goes out
print(json.dumps(res), flush=True)
"""


def ask(timeout=5.0):
    """One request on a new connection: (status, seconds to its answer)."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        t = time.monotonic()
        s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        data = b""
        try:
            while b"\r\n\r\n" not in data:
                chunk = s.recv(65536)
                if not chunk:
                    break
                data += chunk
        except socket.timeout:
            return None, time.monotonic() - t
        return (int(data.split()[1]) if data else None), time.monotonic() - t


rule = f"port={port} req_rate=1/10s req_burst=1 action=reply"
srv = subprocess.Popen(sluice_argv([sys.executable, "-c", SERVER], ins=[rule]),
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       start_new_session=True)
try:
    wait_listen(port)
    check(ask()[0] == 200, "the first request passes")
    answers = [ask() for _ in range(3)]
    out, err = srv.communicate(timeout=30)
except BaseException:
    os.killpg(srv.pid, signal.SIGKILL)
    raise
print("answers", answers)
res = last_json(out)
print(res)
for (mode, r), (st, took) in zip(res.items(), answers):
    check(r["eof"], f"{mode}: the denied request reads as end of file")
    check(r["woken_for"] and r["woken_for"][0] & select.EPOLLIN,
          f"{mode}: the blocked thread was not woken for the connection: {r}\n{err}")
    check(r["woken_ms"] < 1000, f"{mode}: woken after {r['woken_ms']} ms")
    check(r["second_set"] and r["second_set"][0] & select.EPOLLIN,
          f"{mode}: an ADD into another set after the denial does not report it: {r}")
    check(r["poll"] and r["poll"][0] & select.POLLIN, f"{mode}: poll() does not report it: {r}")
    check(st == 429 and took < 1.0, f"{mode}: the client got {st} after {took:.3f} s")
print("ok")
