#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# diff_llhttp.sh - differential check of sluice's HTTP/1 scanner against
# node's llhttp (issue 18 item 10): streams from the http1 seeds and the
# fuzz corpora, plus bounded random mutations of them (COUNT, default
# 3000; a fixed seed, so a failure repeats), are counted by both; fails
# when sluice reports fewer heads than llhttp completes, or passes a stream
# through in which llhttp found a head. Needs node (skipped without it).
set -u
cd "$(dirname "$0")/../.."
command -v node >/dev/null || { echo "diff_llhttp: skipped (no node)"; exit 0; }
out=build/fuzz
mkdir -p "$out"
cc -O1 -std=gnu11 -D_GNU_SOURCE tests/fuzz/h1count.c core/http/http1.c core/http/h1fast.c core/http/h1fast_avx2.c core/http/h1fast_sse2.c core/http/h1fast_plain.c core/mem.c core/log.c -lhttp_parser -o "$out/h1count" || exit 1
python3 - "${COUNT:-3000}" "$out/streams.bin" <<'PY' || exit 1
import glob, os, random, struct, sys
count, path = int(sys.argv[1]), sys.argv[2]
rnd = random.Random(18)
base = []
for d in ("tests/fuzz/seeds/http1", "tests/fuzz/seeds/http1_ref", "build/fuzz/fuzz_http1_ref.corpus"):
    for f in sorted(glob.glob(d + "/*"))[:2000]:
        b = open(f, "rb").read()
        base.append(b[1:] if d.endswith("http1_ref") or "ref.corpus" in d else b)
base = [b for b in base if b] or [b"GET / HTTP/1.1\r\n\r\n"]
pieces = [b"GET / HTTP/1.1\r\n", b"FOO / HTTP/1.1\r\n", b"Host: x\r\n", b"\r\n", b"Content-Length: 3\r\n",
          b"Transfer-Encoding: chunked\r\n", b"Connection: Upgrade\r\nUpgrade: x\r\n", b": x\r\n", b"\x01",
          b"\x7f", b" ", b"\n", b"0\r\n\r\n", b"Content-Length : 5\r\n", b"HTTP/1.1", b"GET /a HTTP/1.1\r\n\r\n",
          b"2c;\n", b";x\n", b"0\n\n", b"5\r\nhello\r\n", b"\r\nACE /s HTTP/1.1\r\n"]  # chunk framing (issue 31.1)
with open(path, "wb") as f:
    for i in range(count):
        b = bytearray(rnd.choice(base))
        for _ in range(rnd.randint(1, 4)):
            op = rnd.randint(0, 3)
            at = rnd.randint(0, len(b))
            if op == 0 and b:
                del b[min(at, len(b) - 1)]
            elif op == 1:
                b[at:at] = rnd.choice(pieces)
            elif op == 2 and b:
                b[min(at, len(b) - 1)] = rnd.randint(0, 255)
            else:
                b += rnd.choice(pieces)
        f.write(struct.pack(">I", len(b)) + bytes(b))
PY
node tests/fuzz/diff_llhttp.js "$out/streams.bin" >"$out/llhttp.txt" || exit 1
"$out/h1count" <"$out/streams.bin" >"$out/sluice.txt" || exit 1
python3 - "$out/streams.bin" "$out/llhttp.txt" "$out/sluice.txt" <<'PY'
import struct, sys
data = open(sys.argv[1], "rb").read()
ref = open(sys.argv[2]).read().split("\n")
got = open(sys.argv[3]).read().split("\n")
bad, n, off, compared = 0, 0, 0, 0
while off + 4 <= len(data):
    ln = struct.unpack(">I", data[off:off + 4])[0]
    s = data[off + 4:off + 4 + ln]
    off += 4 + ln
    r, g = int(ref[n]), got[n]
    n += 1
    if g == "h2":
        continue
    compared += 1
    passed = g.startswith("pass ")
    c = int(g.split()[-1])
    if c < r or (passed and r > 0):
        bad += 1
        if bad <= 5:
            print(f"diff_llhttp: llhttp {r} heads, sluice {g}: {s[:300]!r}")
print(f"diff_llhttp: {compared} streams compared, {bad} where sluice counts fewer than llhttp")
sys.exit(1 if bad else 0)
PY
