# SPDX-License-Identifier: BSD-2-Clause
"""hiredis inside libsluice.so changes nothing the program can see: the
library exports only the interposed libc names (no hiredis symbol a
program's own hiredis could collide with), refers to no malloc, calloc,
realloc, free or strdup of the program's (hiredis's allocations were
renamed into sluice's arena at link time), and needs no libhiredis at run
time."""
from lib import *

nm = run(["nm", "-D", "--defined-only", LIB])
check(nm.returncode == 0, nm.stderr)
exported = {l.split()[-1].split("@")[0] for l in nm.stdout.splitlines() if l.strip()}
leaked = sorted(n for n in exported if "redis" in n.lower() or n.startswith(("sds", "hi_", "sl_")))
check(not leaked, f"libsluice.so exports {leaked}")

und = run(["nm", "-D", "--undefined-only", LIB])
names = {l.split()[-1].split("@")[0] for l in und.stdout.splitlines() if l.strip()}
heap = sorted(names & {"malloc", "calloc", "realloc", "free", "strdup", "posix_memalign"})
check(not heap, f"libsluice.so calls the program's allocator: {heap}")

ldd = run(["ldd", LIB])
check("hiredis" not in ldd.stdout, f"libsluice.so needs libhiredis at run time:\n{ldd.stdout}")
print(f"exports {len(exported)} names, none of hiredis; no heap calls; no libhiredis dependency")
print("ok")
