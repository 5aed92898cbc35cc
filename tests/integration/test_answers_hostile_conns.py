# SPDX-License-Identifier: BSD-2-Clause
"""req_conns against hostile clients and a stalling server: the review of
the options that hold calls by what the answers say.

The server (as in test_req_conns.py) is python's ThreadingHTTPServer that
counts the requests of each key it handles at once ("IN key n" at the
start of each) and holds each SLEEP = 0.5 s before its 200. GET /stall
writes its head (Content-Length: 3) at once, then stalls STALL = 3 s
before the body.

1. inbound, `req_conns=2 action=delay max_delay=2s`: 20 clients of one
   key send at once (a barrier), each on its own connection, and 3 more
   send and hang up 0.3 s later while they wait. The server never has more
   than 2 of the key's at once (a waiter that left freed nothing it did
   not take), and every client has its answer (a 200, or sluice's refusal
   once max_delay ran out) within max_delay + SLEEP + 3 s: max_delay is
   the most a request waits for a place, SLEEP the server's own time once
   it has one, and the 3 s are for the scheduling of 24 threads and 2
   processes on a loaded 2-CPU machine (a leak or a hold without bound
   waits forever: the clients give up at 30 s). The worst wait is printed.
   A refused client waited max_delay first (0.1 s off for timer rounding:
   the wait is what `delay` means). Afterwards a request of the key gets
   its 200 within SLEEP + 3 s: no place leaked.
2. outbound, the same 20 threads as the program under `--out
   to=127.0.0.1:P req_conns=2 action=delay max_delay=2s` against the bare
   server: the server never sees more than 2 at once; every call ends
   (its 200, or the refusal: an error) within the same bound.
3. a response that never ends (inbound, `req_conns=1 action=delay
   max_delay=1s`): A asks for /stall and reads its head; B's request
   waits and is refused after max_delay (A's place lasts while its
   response is unfinished: that is what in flight means). A then hangs up:
   C's request is refused too, since the server still holds its end of
   the connection and still owes the body; once the server writes it (3 s
   after A's request), D's request gets its 200. Nothing but the
   response's end or the server's close bounds a place (no timeout of its
   own): a server that stalls a response forever keeps the key's place.
"""
import socket
import threading

from lib import *
from answerslib import INFLIGHT_SERVER

SLEEP, STALL, MAX_DELAY, SLACK = 0.5, 3.0, 2, 3.0  # MAX_DELAY whole seconds (a duration)


# The outbound program: 20 threads at once, one call each; prints the
# outcome and how long each took.
CLIENT = r"""
import http.client, json, sys, threading, time
port, n = int(sys.argv[1]), 20
out, lock = [], threading.Lock()
barrier = threading.Barrier(n)
def run():
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    c.connect()  # not timed
    barrier.wait()
    t = time.monotonic()
    try:
        c.request("GET", "/", headers={"X-Key": "k"})
        r = c.getresponse()
        r.read()
        what = r.status
    except Exception as e:
        what = type(e).__name__
    with lock:
        out.append((what, time.monotonic() - t))
ts = [threading.Thread(target=run) for _ in range(n)]
for t in ts: t.start()
for t in ts: t.join(60)
print(json.dumps(out))
"""


def at_once(proc, key):
    ns = [int(l.split()[2]) for l in proc.stderr().splitlines()
          if l.startswith("IN ") and l.split()[1] == key]
    return max(ns) if ns else 0, len(ns)


def get(port, key, path="/", timeout=30, s=None, barrier=None):
    """One request on connection s (a new one if None), sent after the
    barrier: (status or error name, seconds from the send to the answer;
    the connect is not timed)."""
    s = s or socket.create_connection(("127.0.0.1", port), timeout=timeout)
    if barrier:
        barrier.wait()
    t = time.monotonic()
    try:
        with s:
            s.sendall(f"GET {path} HTTP/1.1\r\nHost: t\r\nX-Key: {key}\r\n\r\n".encode())
            f = s.makefile("rb")
            line = f.readline()
            if not line:
                return "closed", time.monotonic() - t
            st = int(line.split()[1])
            while f.readline().strip():
                pass
            return st, time.monotonic() - t
    except (ConnectionResetError, socket.timeout, BrokenPipeError) as e:
        return type(e).__name__, time.monotonic() - t


def serve(port, rules=()):
    tmp = TempDir()
    argv = [sys.executable, "-c", INFLIGHT_SERVER, str(port), str(SLEEP), str(STALL)]
    p = Proc(sluice_argv(argv, ins=list(rules)) if rules else argv,
             stderr_path=tmp.join("server.log"))
    wait_listen(port)
    return p


def leaver(port, barrier):
    """Sends a request of the key, then hangs up 0.3 s later while it waits."""
    s = socket.create_connection(("127.0.0.1", port), timeout=30)
    barrier.wait()
    s.sendall(b"GET / HTTP/1.1\r\nHost: t\r\nX-Key: k\r\n\r\n")
    time.sleep(0.3)
    s.close()


def main():
    bound = MAX_DELAY + SLEEP + SLACK
    # 1. inbound
    port = free_port()
    with serve(port, [f"port={port} per=header:X-Key req_conns=2 action=delay "
                      f"max_delay={MAX_DELAY}s"]) as srv:
        out, lock, barrier = [], threading.Lock(), threading.Barrier(23)

        def client():
            s = socket.create_connection(("127.0.0.1", port), timeout=30)
            r = get(port, "k", s=s, barrier=barrier)
            with lock:
                out.append(r)

        ts = [threading.Thread(target=client) for _ in range(20)]
        ts += [threading.Thread(target=leaver, args=(port, barrier)) for _ in range(3)]
        for t in ts:
            t.start()
        for t in ts:
            t.join(60)
        most, n = at_once(srv, "k")
        worst = max(w for _, w in out)
        whats = sorted({str(s) for s, _ in out})
        counts = [(w, sum(1 for s, _ in out if str(s) == w)) for w in whats]
        print(f"inbound: {len(out)} answers {counts}, "
              f"worst wait {worst:.3f} s (bound {bound} s); the server had at most {most} at once "
              f"of {n}")
        print("inbound waits by outcome:", sorted((str(x), round(w, 3)) for x, w in out))
        check(len(out) == 20, f"every client had an answer: {out}")
        check(most <= 2, f"the server never had more than 2 at once: {most}")
        check(worst <= bound, f"every waiter bounded: worst {worst:.3f} s > {bound} s: {out}")
        check(any(s == 200 for s, _ in out), f"some got their 200: {out}")
        check(all(w >= MAX_DELAY - 0.1 for s, w in out if s != 200),
              f"a refused client waited max_delay first (0.1 s for timer rounding): {out}")
        st, w = get(port, "k")
        print(f"afterwards: {st} in {w:.3f} s; requests of the 3 that hung up while waiting "
              f"that reached the server later: {n - sum(1 for s, _ in out if s == 200)}")
        check(st == 200 and w < SLEEP + SLACK, f"no place leaked: {st} in {w:.3f} s")

    # 2. outbound
    port = free_port()
    with serve(port) as srv:
        r = run_python(CLIENT.replace("int(sys.argv[1])", str(port)),
                       outs=[f"to=127.0.0.1:{port} req_conns=2 action=delay "
                             f"max_delay={MAX_DELAY}s"], timeout=90)
        res = last_json(r.stdout)
        most, n = at_once(srv, "k")
        worst = max(w for _, w in res)
        whats = sorted({str(s) for s, _ in res})
        print(f"outbound: {[(w, sum(1 for s, _ in res if str(s) == w)) for w in whats]}, "
              f"worst {worst:.3f} s (bound {bound} s); the server had at most {most} at once "
              f"of {n}")
        print("outbound waits by outcome:", sorted((str(x), round(w, 3)) for x, w in res))
        check(len(res) == 20, f"every call ended: {res}\n{r.stderr}")
        check(most <= 2, f"the server never had more than 2 at once: {most}")
        check(worst <= bound, f"every waiter bounded: worst {worst:.3f} s: {res}")
        check(all(w >= MAX_DELAY - 0.1 for s, w in res if s != 200),
              f"a refused call waited max_delay first: {res}")

    # 3. a response that never ends
    port = free_port()
    rule = f"port={port} per=header:X-Key req_conns=1 action=delay max_delay=1s"
    with serve(port, [rule]) as srv:
        a = socket.create_connection(("127.0.0.1", port), timeout=30)
        t_a = time.monotonic()
        a.sendall(b"GET /stall HTTP/1.1\r\nHost: t\r\nX-Key: s\r\n\r\n")
        fa = a.makefile("rb")
        head = fa.readline()
        while fa.readline().strip():
            pass
        b = get(port, "s")
        a.close()
        c = get(port, "s")
        # the server ends A's response STALL s after A's request: wait for it
        # (bounded), then D's request has the place
        deadline = time.monotonic() + STALL + 10
        while time.monotonic() < deadline and at_once(srv, "s")[1] < 1:
            time.sleep(0.05)
        time.sleep(max(0.0, t_a + STALL + 0.3 - time.monotonic()))
        d = get(port, "s")
        print(f"stalled response: A {head.strip()}; B {b[0]} after {b[1]:.3f} s; "
              f"right after A hung up, C {c[0]} after {c[1]:.3f} s; once the server ended "
              f"A's response, D {d[0]} after {d[1]:.3f} s")
        check(head.startswith(b"HTTP/1.1 200"), f"A read its head: {head}")
        check(b[0] != 200 and 1.0 - 0.1 <= b[1] <= 1.0 + SLACK,
              f"B waited max_delay for the stalled response's place, then was refused: {b}")
        check(c[0] != 200 and 1.0 - 0.1 <= c[1] <= 1.0 + SLACK,
              f"A's hang-up alone does not free the place (the server still owes the body): {c}")
        check(d[0] == 200, f"the response's end gave its place back: D {d}")
    print("ok")


if __name__ == "__main__":
    main()
