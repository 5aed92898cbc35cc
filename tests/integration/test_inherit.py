# SPDX-License-Identifier: BSD-2-Clause
"""inherit: whether programs started by the limited program are limited.

Config: an outbound rule to 127.0.0.1:P with rate=1/m burst=1
action=reject (so within the test, exactly one connect per budget passes
and every other one fails with ECONNREFUSED).

inherit = no:
  - `sh -c 'echo $LD_PRELOAD'` under sluice prints an LD_PRELOAD without
    libsluice.so (and without the SLUICE_* variables);
  - a python parent under sluice is limited itself (1 ok, 2 refused), and
    its child (subprocess) sees no libsluice.so and is not limited (3 ok);
  - an LD_PRELOAD the user had before sluice stays in the child's.
inherit = yes (the default): the child's LD_PRELOAD holds libsluice.so and
the child is limited, in the parent's budget: python's subprocess closes
the table's descriptor before exec, and the child finds the table through
its parent (issue 34, item 3; before, it had a budget of its own). The
child connects first: 1 ok, 2 refused; then the parent: 3 refused."""
import errno as E
from lib import *

PARENT = r"""
import json, os, socket, subprocess, sys
port = int(sys.argv[1])
def conns():
    out = []
    for _ in range(3):
        s = socket.socket(); out.append(s.connect_ex(("127.0.0.1", port))); s.close()
    return out
child = subprocess.run([sys.executable, "-c",
    "import json, os, socket, sys\n"
    "port = int(sys.argv[1]); out = []\n"
    "for _ in range(3):\n"
    "    s = socket.socket(); out.append(s.connect_ex(('127.0.0.1', port))); s.close()\n"
    "print(json.dumps({'ld_preload': os.environ.get('LD_PRELOAD'), 'sluice_env': sorted(k for k in os.environ if k in ('SLUICE_CONFIG', 'SLUICE_RULES', 'SLUICE_ON_ERROR')), 'conns': out}))",
    str(port)], capture_output=True, text=True, timeout=20)
print(json.dumps({"parent": conns(), "child": json.loads(child.stdout), "child_err": child.stderr}))
"""

R = E.ECONNREFUSED
OTHER = "/lib/x86_64-linux-gnu/libm.so.6"   # harmless to preload: stands for the user's own

with TempDir() as tmp, TcpServer() as srv:
    def conf(inherit):
        return tmp.write(f"inherit-{inherit}.conf", f"""
inherit = {inherit}
outbound "api" {{
    to     = "127.0.0.1"
    port   = {srv.port}
    rate   = "1/m"
    burst  = 1
    action = reject
}}
""")
    no, yes = conf("no"), conf("yes")

    r = run(sluice_argv(["sh", "-c", 'echo "LD_PRELOAD=$LD_PRELOAD"; env | grep -E "^SLUICE_(CONFIG|RULES|ON_ERROR)=" || true'],
                        config=no), env={"LD_PRELOAD": None})
    print("inherit=no, sh:", r.stdout.strip().replace("\n", " | "))
    check(r.returncode == 0, r.stderr)
    check("libsluice.so" not in r.stdout, f"the shell still passes libsluice.so on:\n{r.stdout}")
    check("SLUICE_" not in r.stdout.replace("LD_PRELOAD=", ""), f"SLUICE_* variables passed on:\n{r.stdout}")

    for label, cfg, pre in (("inherit=no", no, None), ("inherit=no, user preload", no, OTHER),
                            ("inherit=yes", yes, None)):
        r = run(sluice_argv([sys.executable, "-c", PARENT, str(srv.port)], config=cfg),
                env={"LD_PRELOAD": pre})
        check(r.returncode == 0, f"{label}: {r.returncode} {r.stderr}")
        res = last_json(r.stdout)
        ch = res["child"]
        print(f"{label}: parent {res['parent']}, child {ch['conns']}, child LD_PRELOAD "
              f"{ch['ld_preload']!r}, child SLUICE_* {ch['sluice_env']}")
        if cfg == no:
            check(res["parent"] == [0, R, R], f"{label}: parent not limited: {res['parent']}")
            check(ch["conns"] == [0, 0, 0], f"{label}: child limited: {ch['conns']}")
            check("libsluice" not in (ch["ld_preload"] or ""), f"{label}: {ch['ld_preload']}")
            check(ch["sluice_env"] == [], f"{label}: {ch['sluice_env']}")
            check(ch["ld_preload"] == pre, f"{label}: the user's LD_PRELOAD became {ch['ld_preload']!r}")
        else:
            check(ch["conns"] == [0, R, R], f"{label}: child not limited: {ch['conns']}")
            check(res["parent"] == [R, R, R], f"{label}: not one budget: {res['parent']}")
            check("libsluice.so" in (ch["ld_preload"] or ""), f"{label}: {ch['ld_preload']}")
print("ok")
