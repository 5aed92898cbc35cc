# SPDX-License-Identifier: BSD-2-Clause
"""nginx (Debian nginx-light, master + 2 workers) under
`sluice run --in 'port=P rate=20/s burst=10'`: the limit is one limit for
the whole program, not one per worker.

The table is created in the master's constructor (MAP_SHARED) before it
forks; nginx clears its workers' environment, so this also checks that
nothing is re-read there. `listen ... reuseport` gives each worker its own
accept queue (the kernel spreads connections by hash), so both workers
accept: with a single shared queue one worker can take everything and the
test would prove nothing about sharing.

Asserted:
  - two client threads flooding for 3 s get burst + rate*span admitted
    (+-3: as test_inbound_reject's +-2, plus one more for the second
    client's request in flight at the end); twice the limit would be ~140;
  - the access log (format "$pid $status") shows 200s from two distinct
    pids, both children of the master;
  - sluice's log has `limited peer 127.0.0.1` lines (in nginx's error_log:
    nginx points fd 2 at it)."""
from lib import *

RATE, BURST, T = 20, 10, 3.0

port = free_port()
with TempDir() as tmp:
    conf, nginx = nginx_config(tmp, workers=2, http=f"""
    log_format bypid '$pid $status';
    access_log {tmp.join('access.log')} bypid;
    server {{
        listen 127.0.0.1:{port} reuseport;
        location / {{ return 200 "ok\\n"; }}
    }}""")
    argv = sluice_argv(nginx, ins=[f"port={port} rate={RATE}/s burst={BURST}"])
    with Proc(argv, cwd=tmp.path) as srv:
        wait_listen(port)
        # the workers are up when the master has two children
        deadline = time.monotonic() + 10
        workers = []
        while len(workers) < 2 and time.monotonic() < deadline:
            r = run(["pgrep", "-P", str(srv.p.pid)])
            workers = sorted(int(x) for x in r.stdout.split())
            time.sleep(0.05)
        check(len(workers) == 2, f"nginx workers: {workers}\n{srv.stderr()}")
        ok, bad, span, results = flood(port, T, threads=2)
        time.sleep(0.2)
        err = srv.stderr()
        alive = srv.p.poll() is None
    with open(tmp.join("access.log")) as f:
        log = [l.split() for l in f if l.strip()]
    with open(tmp.join("error.log")) as f:
        nginx_err = f.read()
    served = {}
    for pid, status in log:
        if status == "200":
            served[int(pid)] = served.get(int(pid), 0) + 1
    expected = BURST + RATE * span
    print(f"admitted {ok}, reset {bad}, span {span:.3f}s, expected {expected:.1f} "
          f"(per-worker limits would give ~{2 * expected:.0f}); 200s by pid {served}, workers {workers}")
    check(alive, "nginx died:\n" + err + nginx_err)
    check(bad > 0, "the clients were never limited")
    check(ok + bad > 3 * (BURST + RATE * T), "clients too slow to test the limit")
    check(abs(ok - expected) <= 3, f"admitted {ok}, expected {expected:.1f} +-3")
    check(sum(served.values()) == ok, f"access log has {sum(served.values())} 200s, client saw {ok}")
    check(len(served) == 2 and set(served) == set(workers),
          f"not both workers served: {served}, workers {workers}")
    # nginx points its own stderr (fd 2) at error_log, so the workers' lines land there
    check(re.search(r'sluice\[\d+\]: info: rule "in-1": limited peer 127\.0\.0\.1', err + nginx_err),
          "no `limited peer` line:\n" + err[-1000:] + nginx_err[-1000:])
print("ok")
