# SPDX-License-Identifier: BSD-2-Clause
"""Finding running programs without a `shared` name, and `sluice top`
(issue 13, items 2 and 4).

1. python http.server under `-c a.conf` (inbound rate=5/s burst=1 reject,
   no `shared`), another under inline rules: `sluice ps` lists both, with
   their pids, commands and configurations; `stats -c a.conf` and
   `stats --pid` show the first one's counters, equal to what its clients
   saw (allowed = successful requests, limited = refused connections).
2. `sluice top -c a.conf --once` after a flood from 127.0.0.5 (many
   connections) and 127.0.0.6 (a few): 127.0.0.5 is listed first, its
   count is the connections it saw refused (all of them fit the ring of
   2048), 127.0.0.6 second with its own.
3. `sluice reload -c a.conf` with rate=100/s (no `shared` needed): the pid
   is unchanged and the next connections are admitted (20 in a row, where
   5/s burst 1 admits 1 and a refill); `sluice reload --pid P --in ...`
   changes the inline program's rule (1/s -> 100/s) the same way.
4. A request rule keyed per API key (reply): `sluice top` shows the key
   as its short hash, the same one the program's log lines carry, and
   never the key itself.
5. When the programs exit, `sluice ps` lists them no more (an unnamed
   table goes with its last process); a named table left by a program
   that ended is listed as left, and `sluice ps --clean` removes it from
   /dev/shm.
"""
from lib import *

SECRET = "k-3f9a-very-secret-value"


def get(port, src, headers=""):
    """One request from source address src; True: 200, False: refused/429."""
    return http_get(port, source=src, headers=headers, timeout=3)[0] == 200


def sluice(*args):
    return run([SLUICE, *args])


def main():
    with TempDir() as tmp:
        p1, p2 = free_port(), free_port()
        conf = tmp.write("a.conf", f'inbound "web" {{\n port = {p1}\n rate = "5/s"\n burst = 1\n'
                                   f' action = reject\n}}\n')
        a = http_server(p1, config=conf)
        b = http_server(p2, rules=[f"port={p2} rate=1/s burst=1 action=reject"])
        try:
            wait_listen(p1)
            wait_listen(p2)
            # 1. ps, stats
            r = sluice("ps")
            check(r.returncode == 0, f"ps: {r.stderr}")
            rows = {l.split()[0]: l for l in r.stdout.splitlines()[1:] if l.split()}
            check(str(a.p.pid) in rows and conf in rows[str(a.p.pid)],
                  f"ps lists the -c program with its file:\n{r.stdout}")
            check(str(b.p.pid) in rows and "inline rules" in rows[str(b.p.pid)],
                  f"ps lists the inline program:\n{r.stdout}")
            check("python3" in rows[str(a.p.pid)], f"ps shows the command: {rows[str(a.p.pid)]}")

            # 2. a flood from .5, a few from .6
            flooder = [get(p1, "127.0.0.5") for _ in range(120)]
            few = [get(p1, "127.0.0.6") for _ in range(12)]
            allowed = flooder.count(True) + few.count(True)
            refused5, refused6 = flooder.count(False), few.count(False)
            for how in (["-c", conf], ["--pid", str(a.p.pid)]):
                r = sluice("stats", *how)
                line = [l for l in r.stdout.splitlines() if l.startswith("web ")]
                check(r.returncode == 0 and line, f"stats {how}: {r.stdout} {r.stderr}")
                got = line[0].split()
                check(int(got[1]) == allowed and int(got[2]) == refused5 + refused6,
                      f"stats {how}: allowed/limited {got[1:3]}, the clients saw "
                      f"{allowed}/{refused5 + refused6}")
            r = sluice("top", "-c", conf, "--once", "--window", "60")
            check(r.returncode == 0, f"top: {r.stderr}")
            rows = [l.split() for l in r.stdout.splitlines()[2:] if l.strip()]
            check(len(rows) >= 2 and rows[0][-1] == "127.0.0.5" and rows[1][-1] == "127.0.0.6",
                  f"top lists the flooding peer first:\n{r.stdout}")
            check(int(rows[0][0]) == refused5 and int(rows[1][0]) == refused6,
                  f"top's counts {rows[0][0]}, {rows[1][0]} = the refusals seen "
                  f"{refused5}, {refused6}:\n{r.stdout}")

            # 3. reload without shared, and inline reload by pid
            tmp.write("a.conf", f'inbound "web" {{\n port = {p1}\n rate = "100/s"\n burst = 20\n'
                                f' action = reject\n}}\n')
            r = sluice("reload", "-c", conf)
            check(r.returncode == 0 and "generation 1" in r.stdout, f"reload -c: {r.stdout}{r.stderr}")
            time.sleep(0.2)  # the next decision takes it; 0.2 s also refills 20 at 100/s
            ok = sum(get(p1, "127.0.0.7") for _ in range(20))
            check(ok == 20, f"after reload -c: {ok} of 20 admitted (5/s burst 1 would give 1-2)")
            check(a.p.poll() is None, "same process")
            r = sluice("reload", "--pid", str(b.p.pid), "--in",
                       f"port={p2} rate=100/s burst=20 action=reject")
            check(r.returncode == 0, f"reload --pid --in: {r.stdout}{r.stderr}")
            time.sleep(0.2)
            ok = sum(get(p2, "127.0.0.7") for _ in range(20))
            check(ok == 20, f"after reload --pid: {ok} of 20 admitted (1/s would give 1-2)")
            r = sluice("reload", "--pid", str(b.p.pid), "--in", f"port={p2} rate=1/s name=other")
            check(r.returncode == 1 and "keep their names" in r.stderr,
                  f"a renamed inline rule is refused: {r.stderr}")
        finally:
            a.stop()
            b.stop()

        # 4. request keys: a short hash, never the key
        p3 = free_port()
        c = http_server(p3, rules=[f"port={p3} req_rate=2/s req_burst=1 per=header:X-API-Key "
                                   f"action=reply"],
                        extra_env={"SLUICE_LOG_LEVEL": "info"})
        try:
            wait_listen(p3)
            for _ in range(10):
                get(p3, "127.0.0.5", f"X-API-Key: {SECRET}\r\n")
            r = sluice("top", "--pid", str(c.p.pid), "--once")
            check(r.returncode == 0 and SECRET not in r.stdout, f"top never shows the key:\n{r.stdout}")
            rows = [l.split() for l in r.stdout.splitlines()[2:] if l.strip()]
            check(rows and rows[0][-2] == "key" and len(rows[0][-1]) == 6,
                  f"a request key is shown as a short hash:\n{r.stdout}")
            check(int(rows[0][0]) >= 8, f"8 or 9 of 10 were answered 429: {rows[0]}")
            pid_c = c.p.pid
        finally:
            c.stop()

        # 5. exited programs
        r = sluice("ps")
        for pid in (a.p.pid, b.p.pid, pid_c):
            check(not any(l.split()[:1] == [str(pid)] for l in r.stdout.splitlines()),
                  f"pid {pid} is gone from ps:\n{r.stdout}")
        name = f"pstest{os.getpid()}"
        p4 = free_port()
        named = tmp.write("named.conf", f'shared = "{name}"\ninbound "x" {{\n port = {p4}\n'
                                        f' rate = "1/s"\n}}\n')
        try:
            d = http_server(p4, config=named)
            try:
                wait_listen(p4)
                r = sluice("ps")
                row = [l for l in r.stdout.splitlines() if f" {name} " in l]
                check(row and row[0].split()[0] == str(d.p.pid),
                      f"ps lists a running named table with its pid (its creator maps it under "
                      f"a temporary name):\n{r.stdout}")
            finally:
                d.stop()
            check(os.path.exists(f"/dev/shm/sluice.{name}"), "a named table outlives its program")
            r = sluice("ps")
            row = [l for l in r.stdout.splitlines() if f" {name} " in l]
            check(row and "left by a program that ended" in row[0], f"ps reports it left:\n{r.stdout}")
            r = sluice("ps", "--clean")
            check(r.returncode == 0 and not os.path.exists(f"/dev/shm/sluice.{name}"),
                  f"ps --clean removed it: {r.stdout}{r.stderr}")
        finally:
            shm_cleanup(name)
    print("ok")


if __name__ == "__main__":
    main()
