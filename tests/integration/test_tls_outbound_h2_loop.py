# SPDX-License-Identifier: BSD-2-Clause
"""curl with its defaults (HTTP/2 over TLS, curl 7.88 from Debian 12), one
URL per process from a shell loop, the way a cron job calls a paid API
(issue 24, item 4).

nginx `listen ... ssl http2` on loopback; one `sh -c` loop runs 12 curls,
each printing its status, HTTP version and exit code, under
`--out 'to=127.0.0.1 port=P req_rate=5/s req_burst=1 action=delay'`:
  - all 12 exit 0 with 200 over HTTP/2 and nginx served 12 (before the fix,
    1 of 12: a held HTTP/2 write failed with want-write while curl answered
    the server's SETTINGS in its read path, which curl 7.88 turns into exit
    55, shim/tls.c);
  - the loop takes at least (12 - 1) / 5 = 2.2 s (-0.05 s for clock reads),
    and at most that plus the same loop's time without a rule plus 0.5 s
    (12 curl starts and handshakes measured on this machine, plus wake-ups:
    independent of the machine's speed);
  - the waits spin nothing: the loop's CPU time (children) stays under 1 s;
    a busy wait of 2.2 s would use about 2.2 s.
Same loop under `reject` and `reply` (which fails an HTTP/2 request like
reject): every curl either gets 200 or exits non-zero for a request sluice
logged as limited: the failures are exactly the denials.
"""
import re
import resource

from lib import *

N, RATE = 12, 5
DUE = (N - 1) / RATE

if "asan" in os.environ.get("SLUICE_BUILD", ""):
    print("SKIP: curl hangs under a preloaded ASan runtime, with or without sluice")
    sys.exit(0)

LOOP = r"""
i=0
while [ $i -lt %d ]; do
    curl -sk -o /dev/null -w '%%{http_code} %%{http_version} ' "https://127.0.0.1:%d/$1$i"
    echo "rc=$?"
    i=$((i + 1))
done
"""

with TempDir() as tmp:
    v = NginxVendor(tmp)
    crt, port, log, argv = v.crt, v.port, v.log, v.argv
    served, logged = v.served, v.logged

    def loop(tag, rule=None):
        argv = ["sh", "-c", LOOP % (N, port), "loop", tag]
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.monotonic()
        r = run(sluice_argv(argv, outs=[rule]) if rule else argv, timeout=60)
        took = time.monotonic() - t0
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
        runs = re.findall(r"(\d{3}) (\S+) rc=(\d+)", r.stdout)
        check(len(runs) == N, f"{tag}: {N} runs: {r.stdout} {r.stderr}")
        return runs, took, cpu, r

    with Proc(argv):
        wait_listen(port)
        runs, free, _, r = loop("free")
        check(all(x == ("200", "2", "0") for x in runs), f"without sluice: {runs}")

        rule = f"to=127.0.0.1 port={port} req_rate={RATE}/s req_burst=1 action=delay max_delay=10s"
        runs, took, cpu, r = loop("paced", rule)
        check(all(x == ("200", "2", "0") for x in runs),
              f"every run 200 over HTTP/2, exit 0: {runs} {r.stderr}")
        got = logged("paced", N)
        check(len(got) == N and {g[1] for g in got} == {"HTTP/2.0"}, f"nginx served {N}: {got}")
        check(DUE - 0.05 <= took <= DUE + free + 0.5,
              f"{N} runs at {RATE}/s burst 1 took {took:.2f} s (without a rule {free:.2f} s)")
        check(cpu < 1.0, f"the loop used {cpu:.2f} s of CPU: a wait spins")
        print(f"paced: {took:.2f} s (due {DUE:.2f}, without a rule {free:.2f}), cpu {cpu:.2f} s")

        for action in ("reject", "reply"):  # reply over HTTP/2 fails like reject (README)
            rule = f"to=127.0.0.1 port={port} req_rate={RATE}/s req_burst=1 action={action}"
            tag = "rj" if action == "reject" else "rp"
            runs, _, _, r = loop(tag, rule)
            ok = [x for x in runs if x == ("200", "2", "0")]
            failed = [x for x in runs if x[2] != "0"]
            limited = re.findall(rf"limited request GET /{tag}\d+", r.stderr)
            check(len(ok) + len(failed) == N and len(ok) >= 1, f"{action}: {runs}")
            check(len(failed) == len(limited),
                  f"{action}: failures are the denials: {runs} {r.stderr}")
            check(len(logged(tag, len(ok))) == len(ok),
                  f"{action}: nginx served {len(served(tag))}, {len(ok)} ok")
print("ok")
