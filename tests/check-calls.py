#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""check-calls.py BUILD - fails when source files call each other in a
circle, read from the compiled objects, not from #include lines (which
check-cycles.py reads): file A calls file B when A's object has an
undefined symbol that B's object defines as a function (nm: U in A, T in
B). A prototype parked in a lower header (the way a call up hides from an
include check) cannot hide a call here. Each group is checked on its own:
the library's objects (core/, conf/, shim/) together, and the command's
(cli/) together. No exceptions list. Prints each circle with the calls
that make it, then "calls BUILD: ok" or "calls: N circles".

check-calls.py --self-test compiles two files that call each other, and
two that do not, and fails unless the first pair is refused and the second
passed: the check itself is tested (make boundary runs both)."""
import collections
import os
import subprocess
import sys
import tempfile

from graphs import components


def symbols(obj):
    defs, uses = set(), set()
    out = subprocess.run(["nm", obj], capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        w = line.split()
        if len(w) == 3 and w[1] == "T":
            defs.add(w[2])
        elif len(w) == 2 and w[0] == "U":
            uses.add(w[1])
    return defs, uses


def circles(objs):
    """The strongly connected groups of more than one object, each with the
    calls between its members."""
    owner, uses = {}, {}
    for o in objs:
        defs, uses[o] = symbols(o)
        for d in defs:
            owner[d] = o
    calls = collections.defaultdict(lambda: collections.defaultdict(set))
    for o in objs:
        for u in uses[o]:
            if u in owner and owner[u] != o:
                calls[o][owner[u]].add(u)
    found = components({o: set(calls[o]) for o in objs})
    return [(g, {(a, b): sorted(calls[a][b]) for a in g for b in g if calls[a][b]})
            for g in found]


def objects(build, dirs):
    out = []
    for d in dirs:
        for top, _, files in os.walk(os.path.join(build, "obj", d)):
            out += [os.path.join(top, f) for f in sorted(files) if f.endswith(".o")]
    return out


def report(groups, build):
    for g, edges in groups:
        names = [os.path.relpath(o, os.path.join(build, "obj")) for o in g]
        print(f"circle of {len(g)}: {' '.join(names)}")
        for (a, b), syms in sorted(edges.items()):
            rel = lambda p: os.path.relpath(p, os.path.join(build, "obj"))
            print(f"  {rel(a)} -> {rel(b)}: {', '.join(syms)}")


def self_test():
    with tempfile.TemporaryDirectory() as t:
        src = {
            "obj/x/a.c": "void b1(void); void a1(void) { b1(); }",
            "obj/x/b.c": "void a1(void); void b1(void) { a1(); }",
            "obj/y/c.c": "void d1(void); void c1(void) { d1(); }",
            "obj/y/d.c": "void d1(void) {}",
        }
        for p, text in src.items():
            path = os.path.join(t, p)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as f:
                f.write(text + "\n")
            subprocess.run([os.environ.get("CC", "cc"), "-c", "-o", path[:-2] + ".o", path],
                           check=True)
        bad, good = circles(objects(t, ["x"])), circles(objects(t, ["y"]))
        if len(bad) != 1 or good:
            print(f"calls --self-test: FAILED (a circle made on purpose: {bad}; none: {good})")
            return 1
        print("calls --self-test: ok (a circle made on purpose is refused, a chain passes)")
        return 0


def main():
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    build = sys.argv[1] if len(sys.argv) > 1 else "build"
    total = 0
    for group in (["core", "conf", "shim"], ["cli"]):
        objs = objects(build, group)
        if not objs:
            print(f"calls: no objects under {build}/obj for {' '.join(group)}: build first")
            return 2
        found = circles(objs)
        report(found, build)
        total += len(found)
    if total:
        print(f"calls: {total} circles")
        return 1
    print(f"calls {build}: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
