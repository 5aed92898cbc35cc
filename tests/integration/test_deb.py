# SPDX-License-Identifier: BSD-2-Clause
"""The Debian package (issue 13, item 6): `dpkg-buildpackage -us -uc -b`
builds a .deb from a copy of this tree (the tracked files as they are now),
`dpkg -c` lists the binary, the library, both man pages, the examples, the
systemd drop-in and the bash completion in their FHS places; unpacked with
`dpkg -x` into a scratch directory, its `sluice version` runs and finds its
library beside it (`sluice run` of a program works), and `man -l` renders
sluice.conf(5) with the options. As root it is also installed with
`apt-get install ./sluice_*.deb`: /usr/bin/sluice runs a program under a
rule, `man sluice.conf` renders, and the package is removed again so the
machine is left as it was."""
import glob
import re
import shutil

from lib import *

NEEDED = ["usr/bin/sluice", "usr/lib/sluice/libsluice.so", "usr/share/man/man1/sluice.1.gz",
          "usr/share/man/man5/sluice.conf.5.gz", "usr/share/doc/sluice/examples/api-keys.conf",
          "usr/share/doc/sluice/examples/paid-api.conf",
          "usr/share/doc/sluice/examples/systemd/sluice.conf",
          "usr/share/bash-completion/completions/sluice", "usr/share/doc/sluice/copyright"]

if not shutil.which("dpkg-buildpackage") or not shutil.which("dh"):
    print("SKIP: dpkg-buildpackage or debhelper is not installed")
    sys.exit(0)

with TempDir() as tmp:
    src = tmp.join("src")
    files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True,
                           check=True).stdout.decode().split("\0")
    for f in filter(None, files):
        if os.path.exists(os.path.join(ROOT, f)):
            os.makedirs(os.path.dirname(os.path.join(src, f)), exist_ok=True)
            shutil.copy2(os.path.join(ROOT, f), os.path.join(src, f))
    r = run(["dpkg-buildpackage", "-us", "-uc", "-b"], cwd=src, timeout=170)
    check(r.returncode == 0, f"dpkg-buildpackage: {r.stdout[-2000:]}{r.stderr[-2000:]}")
    debs = [d for d in glob.glob(tmp.join("sluice_*_*.deb"))]
    check(len(debs) == 1, f"one .deb built: {os.listdir(tmp.path)}")
    deb = debs[0]

    listing = run(["dpkg", "-c", deb]).stdout
    for f in NEEDED:
        check(f"./{f}\n" in listing, f"dpkg -c lists {f}:\n{listing}")
    info = run(["dpkg", "-I", deb]).stdout
    check("libssl" not in info, f"libssl is loaded lazily, never a dependency:\n{info}")

    root = tmp.join("root")
    r = run(["dpkg", "-x", deb, root])
    check(r.returncode == 0, f"dpkg -x: {r.stderr}")
    sluice = os.path.join(root, "usr/bin/sluice")
    r = run([sluice, "version"])
    check(r.returncode == 0 and r.stdout.startswith("sluice 0.1.0"), f"sluice version: {r.stdout}")
    r = run([sluice, "run", "--in", "port=1 rate=1/s", "--", sys.executable, "-c",
             "import os; print(os.environ['LD_PRELOAD'])"])
    check(r.returncode == 0 and os.path.join(root, "usr/lib/sluice/libsluice.so") in r.stdout,
          f"the unpacked sluice runs a program with the unpacked library: {r.stdout}{r.stderr}")
    r = run(["man", "-l", os.path.join(root, "usr/share/man/man5/sluice.conf.5.gz")],
            env={**os.environ, "MANWIDTH": "100"})
    text = re.sub(".\b", "", r.stdout)  # bold and underline as overstrikes
    check(r.returncode == 0 and "req_rate" in text and "table_slots" in text,
          f"man -l sluice.conf.5: {text[:300]} {r.stderr}")

    if os.geteuid() == 0 and shutil.which("apt-get"):
        was = run(["dpkg-query", "-W", "-f=${Status}", "sluice"]).stdout
        check("install ok installed" not in was, "sluice is not installed on this machine already")
        try:
            r = run(["apt-get", "install", "-y", "-qq", "--no-install-recommends", deb],
                    env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"}, timeout=120)
            check(r.returncode == 0, f"apt-get install ./{os.path.basename(deb)}: {r.stderr}")
            r = run(["/usr/bin/sluice", "run", "--in", "port=1 rate=1/s", "--", sys.executable,
                     "-c", "import os; print(os.environ['LD_PRELOAD'])"])
            check(r.returncode == 0 and "/usr/lib/sluice/libsluice.so" in r.stdout,
                  f"the installed sluice runs a program: {r.stdout}{r.stderr}")
            r = run(["man", "sluice.conf"], env={**os.environ, "MANWIDTH": "100"})
            check(r.returncode == 0 and "req_rate" in re.sub(".\b", "", r.stdout),
                  f"man sluice.conf: {r.stderr}")
        finally:
            run(["dpkg", "--purge", "sluice"], timeout=120)
        check(not os.path.exists("/usr/bin/sluice"), "removed again")
print("ok")
