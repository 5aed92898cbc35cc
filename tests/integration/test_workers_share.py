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
print("test_workers_share: ok")
