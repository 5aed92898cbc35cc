# SPDX-License-Identifier: BSD-2-Clause
"""Hosts we did not write (issue 21): redis-server and its own clients,
bare and under rules that never limit (hostlib.MODES; the server under the
inbound rule, redis-benchmark and redis-cli under the same outbound one),
do exactly the same work.

  - redis-benchmark with 16 commands pipelined per write (-P 16, 4 clients)
    for SET, GET, INCR, LPUSH, LPOP: the server's own count of each
    command (INFO commandstats) must be what bare redis counted;
  - redis-cli --pipe (mass insertion: writes while it reads, then an ECHO
    marker to find the end) with 20,000 SETs: its "errors: 0, replies:"
    line and DBSIZE;
  - a raw stream of RESP and inline commands split in two at every byte
    (a read that ends inside a command): the same replies as bare;
  - a command followed by a half-close: the reply still comes.
"""
from hostlib import *

SERVER = shutil.which("redis-server") or "/usr/bin/redis-server"
BENCH = shutil.which("redis-benchmark") or "/usr/bin/redis-benchmark"
CLI = shutil.which("redis-cli") or "/usr/bin/redis-cli"
check(os.path.exists(SERVER) and os.path.exists(BENCH), "redis-server/redis-tools are not installed")


def resp(*args):
    return b"*%d\r\n" % len(args) + b"".join(b"$%d\r\n%s\r\n" % (len(a), a) for a in args)


STREAM = (resp(b"SET", b"k1", b"v1") + b"PING\r\n" + resp(b"GET", b"k1")
          + resp(b"INCR", b"n") + b"GET k1\r\n" + resp(b"PING", b"last"))
REPLIES = 6


def replies(n):
    """until(): n replies read (each reply here is one line or a bulk)."""
    def f(d):
        lines = d.split(b"\r\n")
        count, i = 0, 0
        while i < len(lines) - 1:
            if lines[i].startswith(b"$") and lines[i] != b"$-1":
                i += 2
            else:
                i += 1
            count += 1
        return count >= n
    return f


def cli(mode, port, *args, input=None):
    r = run(wrap(mode, [CLI, "-p", str(port), *args], outs=out_rules(mode, port)),
            input=input, timeout=30)
    check(r.returncode == 0, f"redis-cli {args} under {mode}: {r.stderr}")
    return r.stdout


def cases(mode, port):
    out = {}
    r = run(wrap(mode, [BENCH, "-p", str(port), "-P", "16", "-c", "4", "-n", "20000", "-r", "1000",
                        "-t", "set,get,incr,lpush,lpop", "-q"], outs=out_rules(mode, port)),
            timeout=60)
    check(r.returncode == 0, f"redis-benchmark under {mode}: {r.stderr}")
    stats = cli(mode, port, "info", "commandstats")
    out["commands counted by redis"] = sorted(
        f"{m.group(1)}={m.group(2)}" for m in re.finditer(r"cmdstat_(\w+):calls=(\d+)", stats)
        if m.group(1) not in ("info", "config"))
    mass = "".join(f"SET mass:{i} {i}\r\n" for i in range(20000))
    piped = cli(mode, port, "--pipe", input=mass)
    out["redis-cli --pipe"] = re.findall(r"errors: \d+, replies: \d+", piped)
    out["dbsize"] = cli(mode, port, "dbsize").strip()
    out["split"] = []
    for cut in range(1, len(STREAM)):
        # the counter is reset first so every split sees the same INCR reply
        exchange(port, [resp(b"DEL", b"n")], until=replies(1))
        out["split"].append(exchange(port, [STREAM[:cut], STREAM[cut:]], pause=0.01,
                                     until=replies(REPLIES), timeout=2))
    out["half-close"] = exchange(port, [resp(b"GET", b"k1")], shut=True)
    return out


results, bad = {}, []
for mode in MODES:
    port = free_port()
    argv = wrap(mode, [SERVER, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                       "--appendonly", "no", "--daemonize", "no"], ins=rules(mode, port))
    with Proc(argv) as srv:
        wait_listen(port)
        results[mode] = cases(mode, port)
        check(srv.p.poll() is None, f"redis-server under {mode} is still running")
        bad += [f"{mode}: {l}" for l in denials(srv)]
        print(mode, "sluice counted", applied(mode, srv, "redis-server", http=False))
    r = results[mode]
    print(mode, r["commands counted by redis"], r["redis-cli --pipe"], "dbsize", r["dbsize"],
          "half-close", r["half-close"], "split answers", len(r["split"]))

check("set=20000" in results["bare"]["commands counted by redis"],
      f"bare redis counted the benchmark's SETs: {results['bare']['commands counted by redis']}")
check(all(s.count(b"\r\n") >= REPLIES for s in results["bare"]["split"]), "bare answered every split")
bad += compare(results)
check(not bad, "\n".join(bad))
print("ok")
