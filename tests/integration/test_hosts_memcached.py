# SPDX-License-Identifier: BSD-2-Clause
"""Hosts we did not write (issue 21): memcached, whose text protocol is not
HTTP, bare and under rules that never limit (hostlib.MODES), answers every
client exactly as bare.

A request rule reads HTTP heads; memcached's `set k 0 0 5` is none, so
sluice must hand the bytes over as they come and never hold them. Cases,
each on a fresh connection to one memcached (4 threads, -U 0):
  - 300 commands (set and get of 100 keys, a delete, a miss) pipelined in
    one write;
  - the same stream written one byte per segment;
  - a 600 KB value set and read back, pipelined with small commands;
  - a get followed by a half-close (shutdown(SHUT_WR)): the answer must
    still come before memcached closes;
  - `memcached` binary protocol (a magic 0x80 byte first), a noop and a
    version pipelined.
The observable is every byte memcached sent back (keys and values are
the test's own, so bare is deterministic: `stats`, `gets` and CAS values
are left out).
"""
import hashlib
import struct

from hostlib import *

MEMCACHED = shutil.which("memcached") or "/usr/bin/memcached"
check(os.path.exists(MEMCACHED), "memcached is not installed (apt-get install memcached)")


def stream(tag):
    out = []
    for i in range(100):
        v = f"value-{tag}-{i}".encode()
        out.append(b"set %s%d 0 0 %d\r\n%s\r\n" % (tag.encode(), i, len(v), v))
    for i in range(100):
        out.append(b"get %s%d\r\n" % (tag.encode(), i))
    out.append(b"delete %s7\r\nget %s7 %s8\r\nget nothere\r\n" % ((tag.encode(),) * 3))
    return b"".join(out)


def done_after(n):
    """until(): data ends with the answer to the last command (END of the
    final get: counts the END lines)."""
    return lambda d: d.count(b"END\r\n") >= n


BIG = os.urandom(600 * 1000)


def binary(op, key=b""):
    # request header: magic, opcode, key length, extras, type, vbucket,
    # body length, opaque, cas
    return struct.pack("!BBHBBHIIQ", 0x80, op, len(key), 0, 0, 0, len(key), 0xabcd, 0) + key


def cases(port):
    out = {}
    s = stream("p")
    out["pipelined"] = exchange(port, [s], until=done_after(102))
    s = stream("b")
    out["one byte per segment"] = exchange(port, bytewise(s), until=done_after(102), timeout=10)
    big = b"set big 0 0 %d\r\n%s\r\nget big\r\nget p1\r\n" % (len(BIG), BIG)
    got = exchange(port, [big], until=done_after(2), timeout=10)
    out["600 KB value"] = hashlib.sha256(got).hexdigest() + f" {len(got)} bytes"
    out["half-close"] = exchange(port, [b"get p3 p4\r\n"], shut=True)
    # binary protocol: noop (0x0a), version (0x0b)... the version string is
    # memcached's, the same bare and not
    out["binary"] = exchange(port, [binary(0x0a) + binary(0x0b) + binary(0x0a)],
                             until=lambda d: d.count(b"\x81\x0a") >= 2)
    return out


results, bad = {}, []
for mode in MODES:
    port = free_port()
    argv = wrap(mode, [MEMCACHED, "-l", "127.0.0.1", "-p", str(port), "-U", "0", "-t", "4",
                       "-u", "nobody", "-m", "64"], ins=rules(mode, port))
    with Proc(argv) as mc:
        wait_listen(port)
        results[mode] = cases(port)
        check(mc.p.poll() is None, f"memcached under {mode} is still running")
        bad += [f"{mode}: {l}" for l in denials(mc)]
        print(mode, "sluice counted", applied(mode, mc, "memcached", http=False))
    print(mode, {k: (len(v) if isinstance(v, bytes) else v) for k, v in results[mode].items()})

check(len(results["bare"]["pipelined"]) > 2000, "bare memcached answered the pipeline")
bad += compare(results)
check(not bad, "\n".join(bad))
print("ok")
