# SPDX-License-Identifier: BSD-2-Clause
"""A table name another user made first never means "no limits" (issue 31,
defect 5).

A local user (nobody) creates /dev/shm/sluice.NAME before the service
starts. The service (python's http.server under `shared = "NAME"`, rule
`rate=1/m burst=2` on its port) refuses that file, as before (and `sluice
check` says so before it starts, naming the owner). Before the
fix, with the default `on_error = open`, it then ran with no limits: 10 of
10 connections answered (bound 2), one log line. Now it logs the refusal
naming the owner and that it counts in a table of its own, and answers
2 of 10. `on_error = closed` still refuses to start (exit 78).
"""
import pwd

from lib import *

if os.geteuid() != 0:
    print("SKIP: needs root to act as nobody")
    sys.exit(0)

name = f"it-squat-{os.getpid()}"
path = f"/dev/shm/sluice.{name}"
nobody = pwd.getpwnam("nobody")
with TempDir() as tmp:
    try:
        run(["setpriv", f"--reuid={nobody.pw_uid}", f"--regid={nobody.pw_gid}", "--clear-groups",
             "sh", "-c", f"umask 077; : > {path}"])
        check(os.stat(path).st_uid == nobody.pw_uid, "nobody did not make the file")
        port = free_port()
        conf = tmp.write("squat.conf", f'shared = "{name}"\n'
                         f"inbound \"web\" {{ port = {port} rate = 1/m burst = 2 }}\n")
        r = run([SLUICE, "check", "-c", conf])
        check(r.returncode == 0 and "owned by nobody" in r.stderr and "table of its own" in r.stderr,
              f"sluice check does not say the name is taken: {r.stderr}")
        print("ok: sluice check names the squatter")
        srv = Proc(sluice_argv([sys.executable, "-m", "http.server", str(port), "--bind",
                                "127.0.0.1"], config=conf), cwd=SERVE_DIR)
        try:
            wait_listen(port)
            answered = sum(1 for _ in range(10) if http_get(port)[0] == 200)
            log = srv.stderr()
            check("owned by nobody" in log, f"the owner is not named:\n{log}")
            check("counting in a table of this program's own" in log,
                  f"no private table said:\n{log}")
            check(answered == 2, f"answered {answered} of 10 (bound 2):\n{log}")
            print(f"ok: a squatted name: the owner named, {answered}/10 answered")
        finally:
            srv.stop()
        closed = tmp.write("closed.conf", f'shared = "{name}"\non_error = closed\n'
                           f"inbound \"web\" {{ port = {port} rate = 1/m burst = 2 }}\n")
        r = run(sluice_argv(["true"], config=closed))
        check(r.returncode == 78, f"on_error = closed: exit {r.returncode}: {r.stderr}")
        print("ok: on_error = closed still refuses to start (78)")
    finally:
        if os.path.exists(path):
            os.unlink(path)
print("test_squatted_table: ok")
