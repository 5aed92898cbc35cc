"""redis_fleet.py - fleet accuracy of scope = redis beside scope = cluster
(gossip) with real programs: n = 2 and 3 python3 http.servers on
127.0.0.2-4, each its own program, a rule of 60 connections a second per
client address shared by the fleet, syncing every 20 ms (Redis: one
redis-server on loopback; gossip: UDP on 127.0.0.2-4:7946), flooded by one
client address for 7 s (the last 5 s measured). Also the Redis commands
each program sends a second. Prints a markdown table; asserts nothing."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests",
                                "integration"))
from redis_fleet import *  # noqa: E402

SECONDS = float(os.environ.get("FLEET_SECONDS", "7"))


def evalsha_stat(redis, what="calls"):
    for line in redis.cli("INFO", "commandstats").splitlines():
        if line.startswith("cmdstat_evalsha:"):
            return float(line.split(what + "=")[1].split(",")[0])
    return 0


def measure(hosts, port):
    flood = Flood(hosts, port)
    t0 = time.monotonic()
    time.sleep(SECONDS)
    flood.stop()
    return flood.rate(t0 + 2.0, t0 + SECONDS), flood.attempts(t0 + 2.0, t0 + SECONDS)


def redis_case(tmp, n):
    redis = Redis(tmp)
    progs = Programs(tmp, redis.port, n=n)
    try:
        c0, t0 = evalsha_stat(redis), time.monotonic()
        rate, attempts = measure(HOSTS[:n], progs.port)
        ops = (evalsha_stat(redis) - c0) / (time.monotonic() - t0) / n
        return rate, attempts, (ops, evalsha_stat(redis, "usec_per_call"))
    finally:
        progs.stop()
        redis.stop()


def gossip_case(tmp, n):
    key = tmp.join("cluster.key")
    if not os.path.exists(key):
        run([SLUICE, "keygen", key])
    port = free_port()
    procs = []
    try:
        for i in range(n):
            peers = ", ".join(f'"{HOSTS[j]}:7946"' for j in range(n) if j != i)
            conf = tmp.write(f"gossip{n}-{i}.conf", f"""
gossip {{
    listen   = "{HOSTS[i]}:7946"
    peers    = {{{peers}}}
    interval = {int(INTERVAL * 1000)}ms
    key_file = "{key}"
}}
inbound "web" {{ port = {port}  rate = "{LIMIT}/s"  scope = cluster  action = reject }}
""")
            procs.append(Proc([SLUICE, "run", "-c", conf, "--", sys.executable, "-m",
                               "http.server", str(port), "--bind", HOSTS[i]], cwd=SERVE_DIR))
        for i in range(n):
            wait_listen(port, HOSTS[i])
        time.sleep(0.5)  # the nodes hear each other
        rate, attempts = measure(HOSTS[:n], port)
        return rate, attempts
    finally:
        for p in procs:
            p.stop()
        for i in range(n):
            try:
                os.unlink(f"/dev/shm/sluice-cluster.{HOSTS[i]}_7946")
            except FileNotFoundError:
                pass


with TempDir() as tmp:
    rows = []
    for n in (2, 3):
        g_rate, g_att = gossip_case(tmp, n)
        r_rate, r_att, ops = redis_case(tmp, n)
        rows.append((n, g_rate, g_att, r_rate, r_att, ops))
    print(f"| programs | gossip: admitted/s (limit {LIMIT}) | gossip ratio | redis: admitted/s | "
          f"redis ratio | redis bound (docs/redis.md) | Redis calls/s per program | "
          f"Redis CPU per call |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for n, g, ga, r, ra, (ops, us) in rows:
        print(f"| {n} | {g:.1f} | {g / LIMIT:.3f} | {r:.1f} | {r / LIMIT:.3f} | "
              f"<= {1 + redis_bound(n):.3f} | {ops:.0f} | {us:.1f} us |")
    print(f"\n_One client address flooding (6 threads, {rows[0][2]}-{rows[-1][4]} attempts per run), "
          f"interval {int(INTERVAL * 1000)} ms for both backends, {SECONDS - 2:.0f} s measured after "
          f"2 s; a program sends one EVALSHA per live key per interval (one key here)._")
