# SPDX-License-Identifier: BSD-2-Clause
"""nginx (master + 2 workers, reuseport so both accept) under a
`scope = redis` rule of 60 connections a second, beside a python3
http.server under the same rule on 127.0.0.3: the workers share one state
(made in the master before it forks) and exactly one sender, in one worker
(the other has no sender thread); nginx and python together admit 60/s
within 5 % (the bound for two programs is 2.1 %); the sender is one Redis
client per program (two in all)."""
from redis_fleet import *

with TempDir() as tmp:
    redis = Redis(tmp)
    port = free_port("127.0.0.2")
    conf = tmp.write("redis.conf", f"""
redis {{
    address  = "127.0.0.1:{redis.port}"
    interval = {int(INTERVAL * 1000)}ms
}}
inbound "web" {{
    port   = {port}
    rate   = "{LIMIT}/s"
    scope  = redis
    action = reject
}}
""")
    nconf, nginx = nginx_config(tmp, workers=2, http=f"""
    access_log off;
    server {{
        listen 127.0.0.2:{port} reuseport;
        location / {{ return 200 "ok\\n"; }}
    }}""")
    srv = Proc([SLUICE, "run", "-c", conf, "--"] + nginx, cwd=tmp.path)
    py = Proc([SLUICE, "run", "-c", conf, "--", sys.executable, "-m", "http.server", str(port),
               "--bind", "127.0.0.3"], cwd=SERVE_DIR)
    flood = None
    try:
        wait_listen(port, "127.0.0.2")
        wait_listen(port, "127.0.0.3")
        deadline = time.monotonic() + 10
        workers = []
        while len(workers) < 2 and time.monotonic() < deadline:
            workers = run(["pgrep", "-P", str(srv.p.pid)]).stdout.split()
            time.sleep(0.05)
        check(len(workers) == 2, f"nginx workers: {workers}")

        flood = Flood(["127.0.0.2", "127.0.0.3"], port)
        t0 = time.monotonic()
        time.sleep(6.0)
        rate = flood.rate(t0 + 2.0, t0 + 6.0)
        threads = {w: len(os.listdir(f"/proc/{w}/task")) for w in workers}
        clients = redis.cli("CLIENT", "LIST").strip().splitlines()
        print(f"nginx + python: {rate:.1f}/s, limit {LIMIT}/s; nginx worker threads {threads}; "
              f"{len(clients)} Redis clients (one is redis-cli)")
        check(flood.attempts(t0 + 2, t0 + 6) > 8 * LIMIT, "client too slow to test the limit")
        check(abs(rate - LIMIT) <= 0.05 * LIMIT, f"admitted {rate:.1f}/s, limit {LIMIT} +-5 %")
        check(sorted(threads.values()) == [1, 2], f"one worker should have the sender: {threads}")
        check(len(clients) == 3, f"one Redis connection per program expected: {clients}")
    finally:
        if flood:
            flood.stop()
        srv.stop()
        py.stop()
        redis.stop()
print("ok")
