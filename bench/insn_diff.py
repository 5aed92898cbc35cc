#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""insn_diff.py - per-function instructions per request from two callgrind
files of bench/insn.sh (INSN_KEEP): the runs of N and 2N requests.

    insn_diff.py N RUN_N.out RUN_2N.out [BASE_N.out BASE_2N.out] [--top K]

Prints, for each function (self cost, callgrind_annotate's), what one
request costs in it: (2N run - N run) / N, as insn.sh's totals are taken.
With a base pair (plain nginx's runs) beside, the difference to it too:
what the rule adds, function by function."""
import re
import subprocess
import sys


def per_fn(path):
    out = subprocess.run(["callgrind_annotate", "--auto=no", "--threshold=100", path],
                         capture_output=True, text=True).stdout
    fns = {}
    for line in out.splitlines():
        m = re.match(r"^\s*([\d,]+)\s+\([^)]*\)\s+(.*)$", line)
        if not m or "PROGRAM TOTALS" in line or "events annotated" in line:
            continue
        name = re.sub(r"\s*\[[^\]]*\]$", "", m.group(2))
        name = name.split(":", 1)[-1] if ":" in name else name
        fns[name] = fns.get(name, 0) + int(m.group(1).replace(",", ""))
    return fns


def per_request(n, a, b):
    fa, fb = per_fn(a), per_fn(b)
    return {k: (fb.get(k, 0) - fa.get(k, 0)) / n for k in set(fa) | set(fb)}


args = [x for x in sys.argv[1:] if not x.startswith("--top")]
top = 25
if "--top" in sys.argv:
    top = int(sys.argv[sys.argv.index("--top") + 1])
    args.remove(str(top))
n = int(args[0])
run = per_request(n, args[1], args[2])
base = per_request(n, args[3], args[4]) if len(args) >= 5 else None
rows = []
for k, v in run.items():
    d = v - base.get(k, 0) if base else v
    rows.append((d, v, k))
rows.sort(key=lambda r: -abs(r[0]))
print("| function | per request | %s" % ("added to plain |" if base else ""))
print("|---|---:|%s" % ("---:|" if base else ""))
for d, v, k in rows[:top]:
    print("| `%s` | %.0f |%s" % (k, v, " %+.0f |" % d if base else ""))
tot = sum(r[0] for r in rows)
print("| (all functions) | %.0f |%s" % (sum(r[1] for r in rows), " %+.0f |" % tot if base else ""))
