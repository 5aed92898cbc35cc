#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""check-cycles.py DIR... - fails when the modules of the given source
directories include each other in a circle. A module is NAME.c with its
headers NAME.h and NAME_*.h (core/table.c, table.h, table_int.h); module A
depends on module B when a file of A includes a header of B ("b.h" or
"../dir/b.h"). A circle (fd.c frees req.c's state while req.c calls fd.c)
means neither can be read, tested or replaced without the other. Prints
each circle found, then "cycles DIR...: ok" or "cycles: N circles"."""
import os
import re
import sys

root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
dirs = sys.argv[1:] or ["shim", "core"]
inc = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def module(path):
    d, f = os.path.split(os.path.normpath(path))
    name = os.path.splitext(f)[0]
    if f.endswith(".h") and not os.path.exists(os.path.join(root, d, name + ".c")) and "_" in name:
        base = name.rsplit("_", 1)[0]  # table_int.h belongs to table.c
        if os.path.exists(os.path.join(root, d, base + ".c")):
            name = base
    return os.path.join(os.path.basename(d), name)


graph = {}
for d in dirs:
    for f in sorted(os.listdir(os.path.join(root, d))):
        if not f.endswith((".c", ".h")):
            continue
        m = module(os.path.join(d, f))
        deps = graph.setdefault(m, set())
        text = open(os.path.join(root, d, f), encoding="utf-8", errors="replace").read()
        for h in inc.findall(text):
            target = os.path.normpath(os.path.join(d, h))
            if os.path.exists(os.path.join(root, target)) and target.split(os.sep)[0] in dirs:
                t = module(target)
                if t != m:
                    deps.add(t)

# strongly connected components (Tarjan): each with more than one module is a circle
index, low, stack, on, circles = {}, {}, [], set(), []


def visit(v):
    index[v] = low[v] = len(index)
    stack.append(v)
    on.add(v)
    for w in sorted(graph.get(v, ())):
        if w not in index:
            visit(w)
            low[v] = min(low[v], low[w])
        elif w in on:
            low[v] = min(low[v], index[w])
    if low[v] == index[v]:
        comp = []
        while True:
            w = stack.pop()
            on.discard(w)
            comp.append(w)
            if w == v:
                break
        if len(comp) > 1:
            circles.append(sorted(comp))


sys.setrecursionlimit(10000)
for v in sorted(graph):
    if v not in index:
        visit(v)
for c in circles:
    print("cycles: a circle of %d modules: %s" % (len(c), " ".join(c)))
print("cycles %s: ok" % " ".join(dirs) if not circles else "cycles: %d circles" % len(circles))
sys.exit(1 if circles else 0)
