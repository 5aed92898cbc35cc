#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Builds every tests/fuzz/fuzz_*.c with libFuzzer + ASan + UBSan and runs
# each for a bounded time (first argument, seconds; default 20). Prints
# "fuzz: ok NAME" per target that found nothing; exits non-zero otherwise.
# fuzz_http1_ref compares the HTTP/1 scanner with http-parser as a server
# runs it, diff_llhttp.sh with node's llhttp (issue 18 item 10).
# fuzz_chunked holds the framing of a chunked body to models of nginx's and
# python's readings and of their common ground (issue 31 item 1).
# fuzz_h1fast holds the scanner's one-pass fast path (core/http/h1fast.c) to
# http-parser's result on every split of each input into two reads.
# fuzz_h1resp holds the response counter's one-pass reader of common heads
# (core/http/h1resp_fast.c) to http-parser alone, event for event.
# fuzz_lane holds the request gate's lane (core/http/request.c) to the scan
# alone, twin connections on twin tables.
#
# The library's sources are compiled once, with the fuzzer's coverage but
# not its main (fuzzer-no-link), and each target is linked against them;
# the targets then run FUZZ_JOBS at a time (default: the CPUs). Nothing
# here times anything, so running them side by side changes no result,
# only how many inputs each tries in its seconds.
set -u
cd "$(dirname "$0")/../.."
secs=${1:-20}
jobs=${FUZZ_JOBS:-$(nproc)}
out=build/fuzz
mkdir -p "$out/obj"
san="-fsanitize=address,undefined -fno-sanitize-recover=undefined"
cflags="-g -O1 -std=gnu11 -D_GNU_SOURCE $san -Ibuild/gen"
# hiredis as the library links it (allocating from sluice's arena, with its
# per-allocation cap: core/fleet/redis_alloc.c); core/fleet/redis.c
# needs the script header the Makefile generates.
libs="$(pkg-config --libs libconfuse libsodium) -lhttp_parser -lnghttp2 build/gen/libhiredis-sl.a -ljansson -ldl -lpthread"
make -s build/gen/redis_lua.h build/gen/libhiredis-sl.a || exit 1
export cflags out
pkgc=$(pkg-config --cflags libconfuse libsodium)
export pkgc
# object names keep the directory (core/http/x.c -> core_http_x.o): two
# files of one name in two folders stay two objects
if ! printf '%s\n' core/*.c core/*/*.c conf/*.c | xargs -P "$jobs" -I{} sh -c \
        'o="$out/obj/$(echo {} | tr / _ | sed "s/\.c$/.o/")"; clang $cflags $pkgc -fsanitize=fuzzer-no-link -c {} -o "$o"'; then
    echo "fuzz: build failed (library objects)"; exit 1
fi
objs=$(printf '%s\n' core/*.c core/*/*.c conf/*.c | tr / _ | sed "s|^|$out/obj/|; s/\.c$/.o/")
status=0
names=()
for src in tests/fuzz/fuzz_*.c; do
    [ -e "$src" ] || continue
    name=$(basename "$src" .c)
    if ! clang $cflags $pkgc -fsanitize=fuzzer "$src" $objs $libs -o "$out/$name"; then
        echo "fuzz: build failed $name"; status=1; continue
    fi
    names+=("$name")
done
one() {  # one NAME SECONDS: runs a target; its log is $out/NAME.log
    local name=$1 secs=$2 seeds="tests/fuzz/seeds/${1#fuzz_}"
    mkdir -p "$out/$name.corpus"
    [ -d "$seeds" ] || seeds=
    ASAN_OPTIONS=detect_leaks=1 "$out/$name" -max_total_time="$secs" -timeout=10 \
        -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$out/$name-" \
        "$out/$name.corpus" $seeds >"$out/$name.log" 2>&1
    echo $? >"$out/$name.rc"
}
export -f one
rm -f "$out"/*.rc
printf '%s\n' "${names[@]}" | xargs -P "$jobs" -I{} bash -c "one {} $secs"
for name in "${names[@]}"; do
    if [ "$(cat "$out/$name.rc" 2>/dev/null)" = 0 ]; then
        echo "fuzz: ok $name ($(grep -Eo 'stat::number_of_executed_units: [0-9]+' "$out/$name.log" | awk '{print $2}') runs)"
    else
        echo "fuzz: FAILED $name"; tail -40 "$out/$name.log"; status=1
    fi
done
# The second reference, node's llhttp, runs outside libFuzzer (tests/fuzz/diff_llhttp.sh).
if tests/fuzz/diff_llhttp.sh; then echo "fuzz: ok diff_llhttp"; else echo "fuzz: FAILED diff_llhttp"; status=1; fi
exit $status
