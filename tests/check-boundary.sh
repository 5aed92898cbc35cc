#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# check-boundary.sh BUILD DIR... - fails when an object of the given source
# directories (core, conf) refers to a name the library exports
# (shim/exports.map). Inside libsluice.so such a reference binds to sluice's
# own hook, not to libc: core and conf must reach the kernel through
# core/sys.h instead. Only direct references count: libconfuse's use of
# stdio, say, never passes through our hooks' names from our objects.
# Prints one line per offending object and name, then "boundary DIR: ok"
# or "boundary DIR: N references". Then fails when modules of shim/ or core/
# include each other in a circle (tests/check-cycles.py).
set -u
cd "$(dirname "$0")/.."
build=${1:?usage: check-boundary.sh BUILD DIR...}; shift
exported=$(sed -n '/global:/,/local:/p' shim/exports.map | sed 's#/\*.*\*/##; s/global://; s/local:.*//' |
    tr ' ;\t' '\n\n\n' | grep -E '^[A-Za-z_][A-Za-z0-9_]*$' | sort -u)
[ -n "$exported" ] || { echo "boundary: no names read from shim/exports.map"; exit 2; }
rc=0
for dir in "$@"; do
    shopt -s globstar nullglob
    objs=("$build"/obj/"$dir"/**/*.o)
    [ -e "${objs[0]}" ] || { echo "boundary $dir: no objects in $build/obj/$dir (build first)"; rc=1; continue; }
    n=0
    for o in "${objs[@]}"; do
        for name in $(nm -u "$o" | awk '{print $2}' | sed 's/@.*//' | sort -u | comm -12 - <(echo "$exported")); do
            echo "boundary $dir: ${o#"$build"/obj/} calls $name (an interposed name)"
            n=$((n + 1))
        done
    done
    if [ "$n" -eq 0 ]; then echo "boundary $dir: ok"; else echo "boundary $dir: $n references"; rc=1; fi
done
# and no include circle among the modules of the shim and core
python3 tests/check-cycles.py shim core conf cli || rc=1
exit $rc
