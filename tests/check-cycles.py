#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""check-cycles.py DIR... - fails when the modules of the given source
directories include each other in a circle, or when their folders do. A
module is NAME.c with its headers NAME.h and NAME_*.h (core/limit/table.c,
table.h, table_int.h); module A depends on module B when a file of A
includes a header of B ("b.h" or "../http/b.h"). A circle (fd.c frees
req.c's state while req.c calls fd.c) means neither can be read, tested or
replaced without the other. Folders are checked the same way one level up:
core/http may use core/limit, but then nothing in core/limit may use
core/http, so each folder can be read knowing only those below it.
Prints each circle found, then "cycles DIR...: ok" or "cycles: N circles"."""
import os
import re
import sys

from graphs import components

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
    return os.path.join(d, name)


def sources(d):
    for top, subdirs, files in os.walk(os.path.join(root, d)):
        subdirs.sort()
        for f in sorted(files):
            if f.endswith((".c", ".h")):
                yield os.path.relpath(os.path.join(top, f), root)


graph = {}
for d in dirs:
    for path in sources(d):
        m = module(path)
        deps = graph.setdefault(m, set())
        text = open(os.path.join(root, path), encoding="utf-8", errors="replace").read()
        for h in inc.findall(text):
            target = os.path.normpath(os.path.join(os.path.dirname(path), h))
            if os.path.exists(os.path.join(root, target)) and target.split(os.sep)[0] in dirs:
                t = module(target)
                if t != m:
                    deps.add(t)

# the same graph one level up: a module's folder (core/http, core, shim)
folders = {}
for m, deps in graph.items():
    fm = os.path.dirname(m)
    fdeps = folders.setdefault(fm, set())
    for t in deps:
        if os.path.dirname(t) != fm:
            fdeps.add(os.path.dirname(t))


circles = components(graph)
for c in circles:
    print("cycles: a circle of %d modules: %s" % (len(c), " ".join(c)))
fcircles = components(folders)
for c in fcircles:
    uses = []
    for a in c:
        for b in sorted(folders[a]):
            if b in c:
                why = sorted(m + " -> " + t for m in graph if os.path.dirname(m) == a
                             for t in graph[m] if os.path.dirname(t) == b)
                uses.append("%s -> %s (%s)" % (a, b, ", ".join(why[:3])))
    print("cycles: a circle of %d folders: %s: %s" % (len(c), " ".join(c), "; ".join(uses)))
n = len(circles) + len(fcircles)
print("cycles %s: ok" % " ".join(dirs) if not n else "cycles: %d circles" % n)
sys.exit(1 if n else 0)
