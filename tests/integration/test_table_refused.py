# SPDX-License-Identifier: BSD-2-Clause
"""A shared table that cannot be opened is refused with its reason (issue
12, defects 4 and 9): the message names why, never "table: ;".

1. A directory where the table should be (/dev/shm/sluice.NAME): the
   program runs unlimited (on_error = open) and says why once.
2. A table file made by another user (nobody): refused with a message
   naming the owner, so that user cannot plant or switch off the limit.
"""
import pwd

from lib import *

NAME = f"itrefused{os.getpid()}"
path = f"/dev/shm/sluice.{NAME}"

with TempDir() as tmp:
    conf = tmp.write("t.conf", f'shared = "{NAME}"\ninbound "web" {{\n    port = 9\n    rate = "1/s"\n}}\n')
    try:
        os.mkdir(path)
        r = run(sluice_argv([sys.executable, "-c", "print('ran')"], config=conf), timeout=20)
        check(r.returncode == 0 and "ran" in r.stdout, f"on_error = open: the program runs: {r}")
        lines = sluice_lines(r.stderr)
        check(len(lines) == 1, f"one message: {lines}")
        check("table: ;" not in lines[0] and re.search(r"table: \S", lines[0]),
              f"the message says why: {lines[0]}")
    finally:
        os.rmdir(path)

    nobody = pwd.getpwnam("nobody")
    try:
        with open(path, "wb") as f:
            f.write(b"\0" * 4096)
        os.chown(path, nobody.pw_uid, nobody.pw_gid)
        os.chmod(path, 0o600)
        r = run(sluice_argv([sys.executable, "-c", "print('ran')"], config=conf), timeout=20)
        lines = sluice_lines(r.stderr)
        check(any("nobody" in l or str(nobody.pw_uid) in l for l in lines),
              f"the refusal names the owner: {lines}")
    finally:
        os.unlink(path)
print("ok")
