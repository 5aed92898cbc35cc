"""Outbound quotas aligned to the calendar, across restarts (issue 10):
"10,000 calls a day" must not reset because the nightly job restarted, and
must reset at midnight UTC. The clock is shifted with Debian's libfaketime
(its realtime only: DONT_FAKE_MONOTONIC=1, since sluice places the quota
window by realtime - monotonic), no waiting a day.

A named table (`shared`), an outbound rule to a local keep-alive server:
`req_rate=100/s quota=5/d action=reject`. Each run is a new client process
(python http.client, one keep-alive connection) making 7 requests and
stopping at the first refused one:
  1. at 23:59:50 UTC of day D: 5 pass, the 6th write fails (ECONNREFUSED);
  2. restarted, still day D (23:59:53): the first request already fails:
     the quota is in the table, not in the process;
  3. at 00:00:05 of day D+1: a new window, 5 pass again;
the server's log holds exactly the 10 requests that passed."""
import shutil

from lib import *

FAKETIME = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"

CLIENT = r"""
import http.client, sys
c = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=10)
out = []
for i in range(7):
    try:
        c.request("GET", "/%s%d" % (sys.argv[2], i))
        r = c.getresponse(); r.read(); out.append(str(r.status))
    except OSError as e:
        out.append(type(e).__name__)
        break
print(" ".join(out))
"""

if not os.path.exists(FAKETIME):
    print("SKIP: libfaketime is not installed (Debian package faketime)")
    sys.exit(0)

name = f"qt{os.getpid()}"
with TempDir() as tmp:
    port = free_port()
    conf = tmp.write("q.conf", f"""
shared = "{name}"
outbound "vendor" {{
    to       = "127.0.0.1"
    port     = {port}
    req_rate = "100/s"
    quota    = "5/d"
    action   = reject
}}
""")
    srv = Proc(keepalive_argv(port, log=True))
    try:
        wait_listen(port)

        def client(at, tag):
            env = {**os.environ, "SLUICE_PRELOAD_FIRST": FAKETIME, "FAKETIME": f"@{at}",
                   "DONT_FAKE_MONOTONIC": "1"}
            r = run([SLUICE, "run", "-c", conf, "--", sys.executable, "-c", CLIENT, str(port),
                     tag], env=env)
            check(r.returncode == 0, f"client at {at}: {r.stderr}")
            return r.stdout.split()

        got = client("2026-11-23 23:59:50", "a")
        check(got == ["200"] * 5 + ["ConnectionRefusedError"], f"day D: 5 pass, then refused: {got}")
        got = client("2026-11-23 23:59:53", "b")
        check(got == ["ConnectionRefusedError"], f"restarted on day D: refused at once: {got}")
        got = client("2026-11-24 00:00:05", "c")
        check(got == ["200"] * 5 + ["ConnectionRefusedError"], f"day D+1: 5 pass again: {got}")
        paths = [p for p, _, _ in served(srv)]
        check(paths == [f"/a{i}" for i in range(5)] + [f"/c{i}" for i in range(5)],
              f"the server saw only what passed: {paths}")
    finally:
        srv.stop()
        shm_cleanup(name)
print("ok")
