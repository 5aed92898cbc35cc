#!/usr/bin/env python3
"""spdx.py - every source file of sluice starts with its licence identifier,
one line, as the Linux kernel does: `/* SPDX-License-Identifier: BSD-2-Clause */`
in C, `# SPDX-License-Identifier: BSD-2-Clause` in scripts (after a #! line).
Usage: scripts/spdx.py [--fix]; without --fix, lists the files without it and
exits 1 if there are any (tests/integration/test_licence.py runs that)."""
import os
import subprocess
import sys

TAG = "SPDX-License-Identifier: BSD-2-Clause"
root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
files = subprocess.run(["git", "ls-files"], cwd=root, capture_output=True, text=True).stdout.split()
C = (".c", ".h")
HASH = (".py", ".sh", ".lua", ".mk")
missing = []
for f in files:
    base = os.path.basename(f)
    if f.startswith(("debian/", "tests/fixtures/", "tests/fuzz/seeds/")):
        continue
    if not (f.endswith(C + HASH) or base == "Makefile"):
        continue
    path = os.path.join(root, f)
    with open(path) as fh:
        text = fh.read()
    if TAG in "\n".join(text.splitlines()[:3]):
        continue
    missing.append(f)
    if "--fix" not in sys.argv:
        continue
    if f.endswith(C):
        text = f"/* {TAG} */\n" + text
    elif f.endswith(".lua"):
        text = f"-- {TAG}\n" + text
    elif text.startswith("#!"):
        first, _, rest = text.partition("\n")
        text = f"{first}\n# {TAG}\n{rest}"
    else:
        text = f"# {TAG}\n" + text
    with open(path, "w") as fh:
        fh.write(text)
if "--fix" in sys.argv:
    print(f"spdx: added the identifier to {len(missing)} files")
    sys.exit(0)
for f in missing:
    print(f"spdx: {f} has no '{TAG}' line at its top")
sys.exit(1 if missing else 0)
