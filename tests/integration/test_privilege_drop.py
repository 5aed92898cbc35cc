# SPDX-License-Identifier: BSD-2-Clause
"""A child that runs as another user gets no writable table (issue 31,
defect 3).

A root program under `sluice run` (a shell) starts python's http.server
with exec (so the server shares the shell's table: one budget for the
program's tree) and a child that drops to uid/gid 1001 with setpriv, as a
worker or a CGI would. The rule: 2 connections per client, refilled once
a minute (`rate=1/m burst=2`), on the server's port.

Before the fix the child inherited the table's read-write descriptor:
as uid 1001 it ran `sluice reload --pid $$ --in 'port=P rate=1000/s
burst=1000'` on its own pid, which rewrote the root program's table, and
the server went from 2/10 to 9/10 connections answered. Now:
  - the inherited descriptor is read-only: in a child without the shim
    (a hostile program need not load it), a write mapping of it and a
    write open of /proc/self/fd/N both fail (EACCES);
  - a child with the shim: its sluice logs that the table is not its user's and counts in a
    table of its own;
  - `sluice reload --pid <server pid>` as uid 1001 fails (exit non-zero),
    and the reload on its own pid changes only its own table;
  - the server still answers 2 of 10 connections from one client.
Runs only as root (setpriv needs it); skipped otherwise.
"""
from lib import *

if os.geteuid() != 0:
    print("SKIP: needs root for setpriv")
    sys.exit(0)

CHILD = r"""
import mmap, os, subprocess, sys
sluice, server_pid, port, mode = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
fd = os.environ.get("SLUICE_TABLE_FD")
out = []
if mode == "check":
    fd = int(fd)
    try:
        mmap.mmap(fd, 4096, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
        out.append("WRITABLE-MAP")
    except OSError as e:
        out.append("map:%s" % e.errno)
    try:
        os.close(os.open("/proc/self/fd/%d" % fd, os.O_RDWR))
        out.append("WRITABLE-OPEN")
    except OSError as e:
        out.append("open:%s" % e.errno)
    sys.stderr.write("CHECK " + " ".join(out) + "\n")
    sys.exit(0)
fast = "port=%s rate=1000/s burst=1000" % port
r = subprocess.run([sluice, "reload", "--pid", server_pid, "--in", fast],
                   capture_output=True, text=True, timeout=20)
out.append("reload-server:%d" % r.returncode)
r = subprocess.run([sluice, "reload", "--pid", str(os.getpid()), "--in", fast],
                   capture_output=True, text=True, timeout=20)
out.append("reload-own:%d" % r.returncode)
sys.stderr.write("CHILD " + " ".join(out) + "\n")
"""

with TempDir() as tmp:
    os.chmod(tmp.path, 0o755)
    child = tmp.write("child.py", CHILD)
    port = free_port()
    rule = f"port={port} rate=1/m burst=2"
    script = (f"{sys.executable} -m http.server {port} --bind 127.0.0.1 "
              f">/dev/null 2>&1 </dev/null & s=$!; echo SERVER $s; "
              f"env -u LD_PRELOAD setpriv --reuid 1001 --regid 1001 --clear-groups "
              f"{sys.executable} {child} {SLUICE} $s {port} check; "
              f"setpriv --reuid 1001 --regid 1001 --clear-groups "
              f"{sys.executable} {child} {SLUICE} $s {port} reload; wait")
    proc = Proc(sluice_argv(["sh", "-c", script], ins=[rule]), cwd=SERVE_DIR)
    try:
        wait_listen(port)
        deadline = time.monotonic() + 30
        while "reload-own:" not in proc.stderr() and time.monotonic() < deadline:
            time.sleep(0.1)
        log = proc.stderr()
        line = next((l for l in log.splitlines() if l.startswith("CHECK ")), "")
        check(line and "WRITABLE" not in line, f"the child could write the table: {line}\n{log}")
        check("map:13" in line and "open:13" in line, f"not refused with EACCES: {line}")
        line = next((l for l in log.splitlines() if l.startswith("CHILD ")), "")
        check("reload-server:0" not in line and "reload-server:" in line,
              f"uid 1001 reloaded the root server: {line}\n{log}")
        check("not writable by this process (uid 1001" in log,
              f"the child's sluice did not say it counts in a table of its own:\n{log}")
        answered = sum(1 for _ in range(10) if http_get(port)[0] == 200)
        check(answered == 2, f"the root server answered {answered} of 10 (bound 2) after the "
              f"child's reloads:\n{log}")
        print(f"ok: the server answered {answered}/10 after the uid 1001 child's reloads")
    finally:
        proc.stop()
print("test_privilege_drop: ok")
