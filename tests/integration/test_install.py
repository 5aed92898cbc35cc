# SPDX-License-Identifier: BSD-2-Clause
"""`make install` and the man pages (issue 13):
- scripts/gen-man.py regenerates docs/sluice.conf.5 byte for byte from the
  option table in conf/options.c (the page cannot drift from the parser),
  and every option the parser knows has its entry;
- `man -l` renders sluice(1) and sluice.conf(5) without a warning;
- `make install DESTDIR=tmp PREFIX=/usr` lays out the binary, the library,
  both pages, the examples and the systemd drop-in in their FHS places, and
  the installed binary runs the installed library: `sluice version`, and
  `sluice run` with an inline rule through /usr/lib/sluice's library
  (LD_PRELOAD as the drop-in sets it) refuses a second connection under
  rate=1/m burst=1.
"""
import glob
import subprocess

from lib import *

page = open(os.path.join(ROOT, "docs", "sluice.conf.5")).read()
r = run([sys.executable, os.path.join(ROOT, "scripts", "gen-man.py")])
check(r.returncode == 0 and r.stdout == page,
      "docs/sluice.conf.5 is not what scripts/gen-man.py makes from conf/options.c: regenerate it")
names = re.findall(r'^\s*\{"(\w+)",\s*(?:STR|INT|LIST|BOOL),', open(os.path.join(ROOT, "conf", "options.c")).read(), re.M)
check(len(names) > 40, f"options found: {names}")
for n in names:
    check(f".B {n.replace('_', '_')}\n" in page, f"sluice.conf(5) has no entry for {n}")

for p in ("sluice.1", "sluice.conf.5"):
    r = run(["man", "--warnings", "-l", os.path.join(ROOT, "docs", p)], env={"MANWIDTH": "80"})
    check(r.returncode == 0 and len(r.stdout) > 1000, f"man -l {p}: {r.returncode} {r.stderr}")
    check("warning" not in r.stderr, f"man -l {p} warns: {r.stderr}")

with TempDir() as tmp:
    r = run(["make", "-s", "-C", ROOT, "install", f"DESTDIR={tmp.path}", "PREFIX=/usr"], timeout=120)
    check(r.returncode == 0, f"make install: {r.stderr}")
    for f in ("usr/bin/sluice", "usr/lib/sluice/libsluice.so", "usr/share/man/man1/sluice.1",
              "usr/share/man/man5/sluice.conf.5", "usr/share/doc/sluice/examples/api-keys.conf",
              "usr/share/doc/sluice/examples/systemd/sluice.conf",
              "usr/share/doc/sluice/docs/configuration.md",
              "usr/share/doc/sluice/examples/monitoring/prometheus.yml"):
        check(os.path.isfile(tmp.join(f)), f"make install: {f} is missing")
    sluice = tmp.join("usr/bin/sluice")
    r = run([sluice, "version"])
    check(r.returncode == 0 and r.stdout.strip(), f"installed sluice version: {r.stdout} {r.stderr}")
    port = free_port()
    lib = tmp.join("usr/lib/sluice/libsluice.so")
    with Proc([sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1"],
              env={"LD_PRELOAD": lib, "SLUICE_RULES": f"in port={port} rate=1/m burst=1 action=reply"}):
        wait_port(port)  # a connect: takes the one turn
        r = http_get(port)
        check(r[0] == 429, f"through the installed library the second connection is refused: {r[:2]}")
print("ok")
