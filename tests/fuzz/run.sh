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
# fuzz_lane holds the request gate's lane (core/http/request.c) to the scan
# alone, twin connections on twin tables.
set -u
cd "$(dirname "$0")/../.."
secs=${1:-20}
out=build/fuzz
mkdir -p "$out"
flags="-g -O1 -std=gnu11 -D_GNU_SOURCE -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined"
# hiredis as the library links it (allocating from sluice's arena, with its
# per-allocation cap: core/fleet/redis_alloc.c); core/fleet/redis.c
# needs the script header the Makefile generates.
pkg="$(pkg-config --cflags --libs libconfuse libsodium) -lhttp_parser -lnghttp2 build/gen/libhiredis-sl.a -ldl -lpthread"
make -s build/gen/redis_lua.h build/gen/libhiredis-sl.a || exit 1
flags="$flags -Ibuild/gen"
status=0
for src in tests/fuzz/fuzz_*.c; do
    [ -e "$src" ] || continue
    name=$(basename "$src" .c)
    if ! clang $flags "$src" core/*.c core/*/*.c conf/*.c $pkg -o "$out/$name"; then
        echo "fuzz: build failed $name"; status=1; continue
    fi
    corpus="$out/$name.corpus"; mkdir -p "$corpus"
    seeds="tests/fuzz/seeds/${name#fuzz_}"
    [ -d "$seeds" ] || seeds=
    if ASAN_OPTIONS=detect_leaks=1 "$out/$name" -max_total_time="$secs" -timeout=10 \
            -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$out/$name-" "$corpus" $seeds >"$out/$name.log" 2>&1; then
        echo "fuzz: ok $name ($(grep -Eo 'stat::number_of_executed_units: [0-9]+' "$out/$name.log" | awk '{print $2}') runs)"
    else
        echo "fuzz: FAILED $name"; tail -40 "$out/$name.log"; status=1
    fi
done
# The second reference, node's llhttp, runs outside libFuzzer (tests/fuzz/diff_llhttp.sh).
if tests/fuzz/diff_llhttp.sh; then echo "fuzz: ok diff_llhttp"; else echo "fuzz: FAILED diff_llhttp"; status=1; fi
exit $status
