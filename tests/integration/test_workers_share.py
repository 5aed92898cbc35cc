# SPDX-License-Identifier: BSD-2-Clause
"""Workers share one budget even when their program closes inherited
descriptors before exec (issue 34, item 3).

A program tree shares one table through a descriptor its exec'd children
inherit (SLUICE_TABLE_FD). Python's multiprocessing "spawn" (uvicorn's
and gunicorn's workers use it), apt's download methods and others close
every inherited descriptor but a few before exec: before the fix each such
worker made a table of its own, so N workers had N budgets, silently
(uvicorn --workers 4 served 56 and 56 where 14 were due). Now the child
finds the table through the process that handed it down
(SLUICE_TABLE_PID, /proc/PID/fd/N; only the table's own user can open it
read-write).
  (a) python multiprocessing, spawn: 2 workers each try 3 connects to a
      local server under `out to=127.0.0.1 port=P rate=1/m burst=3
      action=reject`: 3 are made in all (6 before: 3 each);
  (b) uvicorn --workers 2 (Debian's python3-uvicorn, a minimal ASGI app)
      under `in port=P rate=1/m burst=3`: of 12 connections, 3 answered
      in all (up to 6 before).
  (c) uvicorn --workers 4 --loop uvloop, and (d) gunicorn -w 4 (threaded
      workers, which keep connections alive), each under a request rule
      with no `shared=` line, `in port=P req_rate=1/m req_burst=2
      per=header:X-API-Key action=reply`. Once the 4 workers said they
      serve (uvicorn's "Application startup complete", gunicorn's "Booting
      worker": the first ready worker takes every connection made before
      the others are), a client opens 24 keep-alive
      connections one after another and on each first sends a request
      with a key of its own (always served: the app logs the pid of the
      worker that served it, so the test knows which worker holds that
      connection), then, on every connection, one request with key A.
      One budget: A served exactly 2 times in all, 22 x 429. Separate
      budgets would serve A min(2, n) times in each worker holding n of
      the connections; the test checks from the workers' pids that this
      sum exceeds 2 (the connections were spread: measured 3 or 4 workers
      of 4, e.g. 11/6/4/3), so the run could tell one budget from four.
      Without SLUICE_TABLE_PID (a build that ignores it), (c) served A 4
      and 7 times in two runs; gunicorn's workers are forked (the table
      is inherited), so (d) shows only that the rule holds there too.
      Bare (no sluice) the same client is served A 24 times, spread the
      same way over the workers.
The budget's refill (1 a minute) adds nothing within the test's seconds.
"""
from lib import *

SPAWN = r"""
import multiprocessing as mp, socket, sys
def work(port, q):
    ok = 0
    for _ in range(3):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=5).close()
            ok += 1
        except OSError:
            pass
    q.put(ok)
if __name__ == "__main__":
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    ps = [ctx.Process(target=work, args=(int(sys.argv[1]), q)) for _ in range(2)]
    for p in ps: p.start()
    for p in ps: p.join(20)
    print("MADE", sum(q.get(timeout=5) for _ in ps))
"""

APP = r"""
async def app(scope, receive, send):
    if scope["type"] != "http":
        return
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-length", b"2")]})
    await send({"type": "http.response.body", "body": b"ok"})
"""

UVICORN = "/usr/bin/python3"  # Debian's python3-uvicorn is for Debian's python

with TcpServer() as srv, TempDir() as tmp:
    script = tmp.write("spawn.py", SPAWN)  # spawn imports __main__ from its file
    rule = f"to=127.0.0.1 port={srv.port} rate=1/m burst=3 action=reject"
    r = run(sluice_argv([sys.executable, script, str(srv.port)], outs=[rule]), timeout=60)
    check(r.returncode == 0, f"spawn: {r.stdout} {r.stderr}")
    check("MADE 3" in r.stdout, f"spawn workers: expected 3 connects in all: {r.stdout}")
    check(srv.accepted == 3, f"the server accepted {srv.accepted} (bound 3)")
    print("ok: multiprocessing spawn: 2 workers, one budget: 3 connects in all")

if run([UVICORN, "-c", "import uvicorn"]).returncode != 0:
    print("SKIP (b): no python3-uvicorn")
else:
    with TempDir() as tmp:
        tmp.write("app.py", APP)
        port = free_port()
        srv = Proc(sluice_argv([UVICORN, "-m", "uvicorn", "--workers", "2", "--port", str(port), "--host",
                                "127.0.0.1", "--log-level", "warning", "app:app"],
                               ins=[f"port={port} rate=1/m burst=3"]), cwd=tmp.path)
        try:
            wait_listen(port)
            answered = sum(1 for _ in range(12) if http_get(port)[0] == 200)
            check(answered == 3, f"uvicorn --workers 2: {answered} of 12 answered (bound 3)\n"
                  f"{srv.stderr()[-3000:]}")
            print(f"ok: uvicorn --workers 2: {answered}/12 answered, one budget")
        finally:
            srv.stop()

LOGGING_ASGI = r"""
import os
LOG = open(os.environ["SERVED_LOG"], "a", buffering=1)
async def app(scope, receive, send):
    if scope["type"] != "http":
        return
    key = dict(scope["headers"]).get(b"x-api-key", b"-").decode()
    LOG.write("%d %s %s\n" % (os.getpid(), key, scope["path"]))
    body = str(os.getpid()).encode()  # the client learns which worker holds its connection
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})
"""

LOGGING_WSGI = r"""
import os
LOG = open(os.environ["SERVED_LOG"], "a", buffering=1)
def app(environ, start_response):
    LOG.write("%d %s %s\n" % (os.getpid(), environ.get("HTTP_X_API_KEY", "-"), environ["PATH_INFO"]))
    body = str(os.getpid()).encode()
    start_response("200 OK", [("Content-Length", str(len(body)))])
    return [body]
"""

CONNS, MAX_CONNS, BURST, WORKERS = 24, 96, 2, 4


def ask(s, key, path):
    """One request with X-API-Key `key` on keep-alive socket s: (status, body)."""
    s.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\nX-API-Key: {key}\r\n\r\n".encode())
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = s.recv(4096)
        check(chunk, f"{path}: the connection closed before an answer")
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    size = [int(l.split(b":")[1]) for l in head.split(b"\r\n") if l.lower().startswith(b"content-length")]
    while len(body) < size[0]:
        chunk = s.recv(4096)
        check(chunk, f"{path}: the connection closed inside a body")
        body += chunk
    return int(head.split()[1]), body.decode(errors="replace")


def one_key_many_workers(name, argv, ready, log, port, ruled):
    """The client of (c) and (d); returns the statuses of the A requests
    and {worker pid: connections it holds}. Workers that have not reached
    their accept loop yet take no connections: the client opens them (at
    least CONNS) until 3 workers hold some, or MAX_CONNS (bounded)."""
    srv = Proc(sluice_argv(argv, ins=[f"port={port} req_rate=1/m req_burst={BURST} "
                                      "per=header:X-API-Key action=reply"]) if ruled else argv,
               cwd=os.path.dirname(log), env={"SERVED_LOG": log})
    socks, holds = [], {}
    try:
        wait_listen(port)
        # each worker says when it serves (a worker still starting takes no
        # connection, and the first ready one would take them all)
        deadline = time.monotonic() + 30
        while srv.stderr().count(ready) < WORKERS and time.monotonic() < deadline:
            time.sleep(0.05)
        check(srv.stderr().count(ready) == WORKERS, f"{name}: {WORKERS} workers did not start:\n"
              f"{srv.stderr()[-2000:]}")
        while len(socks) < MAX_CONNS and (len(socks) < CONNS or len(holds) < 3):
            s = socket.create_connection(("127.0.0.1", port), timeout=10)
            socks.append(s)
            code, pid = ask(s, f"own{len(socks)}", f"/own/{len(socks)}")
            check(code == 200, f"{name}: own key {len(socks)} not served: {code}")
            holds[pid] = holds.get(pid, 0) + 1
        codes = [ask(s, "A", f"/a/{i}")[0] for i, s in enumerate(socks)]
    finally:
        for s in socks:
            s.close()
        srv.stop()
    with open(log) as f:
        lines = [l.split() for l in f if l.strip()]
    served_a = sum(1 for _, key, _ in lines if key == "A")
    check(served_a == codes.count(200), f"{name}: the app served A {served_a} times, the client "
          f"read {codes.count(200)} x 200")
    return codes, holds


def workers_case(name, argv_of, ready):
    for ruled in (False, True):
        with TempDir() as tmp:
            os.chmod(tmp.path, 0o755)
            port = free_port()
            log = tmp.join("served.log")
            argv = argv_of(tmp, port)
            codes, holds = one_key_many_workers(name, argv, ready, log, port, ruled)
            apart = sum(min(BURST, n) for n in holds.values())
            what = "under sluice" if ruled else "bare"
            print(f"{name} {what}: A served {codes.count(200)} of {len(codes)}; connections per worker "
                  f"{sorted(holds.values(), reverse=True)} (separate budgets would serve {apart})")
            if not ruled:
                check(codes == [200] * len(codes), f"{name} bare: {codes}")
                continue
            check(apart > BURST, f"{name}: the connections went to too few workers ({holds}) "
                  "to tell one budget from several")
            check(codes.count(200) == BURST and codes.count(429) == len(codes) - BURST,
                  f"{name}: {codes.count(200)} x 200 (one budget: {BURST}), {codes}")


if run([UVICORN, "-c", "import uvicorn, uvloop"]).returncode != 0:
    print("SKIP (c): no python3-uvicorn or python3-uvloop")
else:
    def uvicorn_argv(tmp, port):
        tmp.write("app.py", LOGGING_ASGI)
        return [UVICORN, "-m", "uvicorn", "--workers", str(WORKERS), "--loop", "uvloop",
                "--port", str(port), "--host", "127.0.0.1", "--log-level", "info", "--no-access-log",
                "app:app"]
    workers_case("(c) uvicorn --workers 4 --loop uvloop", uvicorn_argv, "Application startup complete")

if run([UVICORN, "-c", "import gunicorn"]).returncode != 0:
    print("SKIP (d): no gunicorn")
else:
    def gunicorn_argv(tmp, port):
        tmp.write("app.py", LOGGING_WSGI)
        return [UVICORN, "-m", "gunicorn", "-b", f"127.0.0.1:{port}", "-w", str(WORKERS),
                "-k", "gthread", "--threads", "2", "--keep-alive", "30", "--log-level", "info",
                "app:app"]
    workers_case("(d) gunicorn -w 4 -k gthread", gunicorn_argv, "Booting worker with pid")
print("test_workers_share: ok")
