# SPDX-License-Identifier: BSD-2-Clause
"""redis_fleet.py - fleet accuracy of scope = redis beside scope = cluster
(gossip) with real programs, 2, 3 and 5 of them on 127.0.0.2-6, each its
own program, syncing every 20 ms (Redis: one redis-server on loopback;
gossip: UDP on 127.0.0.2-6:7946). Prints markdown tables; asserts nothing.

100 a second: python3 http.servers under a rule of 100 connections a
second per client address shared by the fleet; one client address floods
them (6 threads connecting as fast as they can, round robin) or loads them
steadily (120 connections a second in all, evenly spaced: 1.2 x the limit).
Admitted/limit over the last SECONDS - 2 s of each run (the first two
seconds hold the first window's room: a fresh window admits its whole N).

10,000 a second: nginx (one worker each, keep-alive) under a request rule
of 10,000 requests a second for the whole fleet (`req_rate`, per = rule,
scope = redis, action = reply), flooded by one wrk per program (-c8) for
2 s (left out), then again for SECONDS - 2: admitted = 2xx answers of the
second run / (10,000 x its length). Gossip shares
connection rates only, and 10,000 connections a second is beyond these
servers on 2 CPUs: no gossip row at this rate.

Also the Redis commands each program sends a second and Redis's CPU per
call. Knobs: FLEET_SECONDS (5); FLEET_BACKEND=sentinel or cluster measures
the same Redis rows (no gossip) through Sentinel (a primary, a replica,
three sentinels) or a Redis Cluster of three primaries (the one key of
these runs on one of them), one backend for all runs, each run with its
own key prefix; FLEET_ONLY=100 or 10k: one rate; FLEET_PROGRAMS ("2 3 5") and FLEET_LOAD (flood or steady)
pick their rows, to repeat one. Every Redis row also gives the interval
and round the decisions saw (sluice metrics: gap_us2 / gap_us, round_us /
syncs; docs/redis.md), the bound computed with them, the decisions made
under on_backend_error in the measured span (a sender late by more than
timeout + 2 intervals: outside the bound), and the load average."""
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests",
                                "integration"))
from redis_fleet import *  # noqa: E402

SECONDS = float(os.environ.get("FLEET_SECONDS", "5"))
L100 = 100
L10K = 10000


def evalsha_stat(redis, what="calls"):
    for line in redis.cli("INFO", "commandstats").splitlines():
        if line.startswith("cmdstat_evalsha:"):
            return float(line.split(what + "=")[1].split(",")[0])
    return 0


TIMING = ("syncs", "gap_us", "gap_us2", "round_us", "fallback")


def timing(pids):
    """The senders' round timing counters (sluice metrics), per program."""
    return [[metrics(p).get(("sluice_redis_events_total", k), 0) for k in TIMING] for p in pids]


def seen_interval(before, after):
    """(I, r) in seconds as the decisions saw them between two timing()
    samples: I = sum of squared gaps / sum of gaps between complete rounds
    (the interval a decision at a random instant sees: a long gap weighs
    as long as it lasts), r = the mean round; averaged over the programs."""
    iv, rv, fb = [], [], 0
    for a, b in zip(before, after):
        syncs, gap, gap2, rnd, fall = (y - x for x, y in zip(a, b))
        fb += fall
        if gap > 0 and syncs > 0:
            iv.append(gap2 / gap / 1e6)
            rv.append(rnd / syncs / 1e6)
    nan = float("nan")
    return (sum(iv) / len(iv), sum(rv) / len(rv), fb) if iv else (nan, nan, fb)


def measured_bound(n, iv):
    """docs/redis.md's steady bound with s = 2 I + 2 r of the measured I, r."""
    i, r, _ = iv
    s = 2 * i + 2 * r
    return 1 + (n - 1) * s / (n * 1.0 - (n - 1) * s)


def measure(hosts, port, steady, pids=()):
    """Admitted/s over the run's last SECONDS - 2 s: the first two leave the
    first window's room (a fresh window admits its whole N) out; with the
    programs' pids, the interval and round time their decisions saw then."""
    load = Paced(hosts, port, rate=1.2 * L100) if steady else Flood(hosts, port)
    t0 = time.monotonic()
    time.sleep(2.0)
    t1 = timing(pids)
    time.sleep(max(0.0, t0 + SECONDS - time.monotonic()))
    t2 = timing(pids)
    load.stop()
    return (load.rate(t0 + 2.0, t0 + SECONDS), load.attempts(t0 + 2.0, t0 + SECONDS) / (SECONDS - 2),
            seen_interval(t1, t2))


BACKEND = os.environ.get("FLEET_BACKEND", "single")
# FLEET_PROGRAMS="5" and FLEET_LOAD=flood|steady: only those rows (of the
# Sentinel and Cluster tables), to repeat one
PROGRAMS = [int(x) for x in os.environ.get("FLEET_PROGRAMS", "2 3 5").split()]
LOADS = {"flood": [False], "steady": [True]}.get(os.environ.get("FLEET_LOAD"), [False, True])
HA = None  # the Sentinels or Cluster of FLEET_BACKEND, made once
RUN = [0]  # runs so far: each gets its own key prefix on a shared backend


def ha_where():
    """The redis section's line for FLEET_BACKEND, with a fresh prefix, and
    the redis-server whose EVALSHA stats count (the primary, or the
    cluster primary holding the key)."""
    RUN[0] += 1
    prefix = f'prefix = "run{RUN[0]}:"'
    if BACKEND == "sentinel":
        return HA.where() + "\n    " + prefix, HA.primary
    port = HA.node_of(key_slot(f"run{RUN[0]}:{{web:{CLIENT}}}:0"))
    return HA.where() + "\n    " + prefix, next(x for x in HA.nodes if x.port == port)


def redis_case(tmp, n, steady):
    """(admitted/s, offered/s, Redis calls/s per program, Redis us per call,
    (I, r) the decisions saw)."""
    if HA:
        where, redis = ha_where()
        progs = Programs(tmp, 0, n=n, limit=L100, where=where)
    else:
        redis = Redis(tmp)
        progs = Programs(tmp, redis.port, n=n, limit=L100)
    try:
        c0, t0 = evalsha_stat(redis), time.monotonic()
        rate, offered, iv = measure(HOSTS[:n], progs.port, steady, [p.p.pid for p in progs.procs])
        ops = (evalsha_stat(redis) - c0) / (time.monotonic() - t0) / n
        return rate, offered, ops, evalsha_stat(redis, "usec_per_call"), iv
    finally:
        progs.stop()
        if not HA:
            redis.stop()


def gossip_case(tmp, n, steady):
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
inbound "web" {{ port = {port}  rate = "{L100}/s"  scope = cluster  action = reject }}
""")
            procs.append(Proc([SLUICE, "run", "-c", conf, "--", sys.executable, "-m",
                               "http.server", str(port), "--bind", HOSTS[i]], cwd=SERVE_DIR))
        for i in range(n):
            wait_listen(port, HOSTS[i])
        time.sleep(0.5)  # the nodes hear each other
        return measure(HOSTS[:n], port, steady)[0]
    finally:
        for p in procs:
            p.stop()
        for i in range(n):
            try:
                os.unlink(f"/dev/shm/sluice-cluster.{HOSTS[i]}_7946")
            except FileNotFoundError:
                pass


NGINX = """worker_processes 1;
error_log {d}/error.log warn;
pid {d}/nginx.pid;
events {{ worker_connections 1024; }}
http {{
    access_log off;
    keepalive_requests 1000000;
    client_body_temp_path {d}/body; proxy_temp_path {d}/proxy; fastcgi_temp_path {d}/fcgi;
    uwsgi_temp_path {d}/uwsgi; scgi_temp_path {d}/scgi;
    server {{ listen {host}:{port}; root {d}/www; location / {{ }} }}
}}
"""


def requests_case(tmp, n):
    """n nginx programs under one fleet-wide req_rate of L10K/s."""
    if HA:  # per = rule: the key is "api:req:*"
        RUN[0] += 1
        prefix = f"run{RUN[0]}:"
        where = HA.where() + f'\n    prefix = "{prefix}"'
        if BACKEND == "sentinel":
            redis = HA.primary
        else:
            port_ = HA.node_of(key_slot(f"{prefix}{{api:req:*}}:0"))
            redis = next(x for x in HA.nodes if x.port == port_)
    else:
        redis = Redis(tmp)
        where = f'address  = "127.0.0.1:{redis.port}"'
    port = free_port()
    conf = tmp.write(f"req{n}.conf", f"""
redis {{
    {where}
    interval = {int(INTERVAL * 1000)}ms
}}
inbound "api" {{ port = {port}  req_rate = "{L10K}/s"  per = rule  scope = redis  action = reply }}
""")
    procs, wrks = [], []
    os.chmod(tmp.path, 0o755)  # nginx's worker (nobody) reads www below it
    try:
        for i in range(n):
            d = tmp.join(f"nginx{n}-{i}")
            os.makedirs(os.path.join(d, "www"), exist_ok=True)
            os.chmod(d, 0o755)
            os.chmod(os.path.join(d, "www"), 0o755)
            with open(os.path.join(d, "www", "f.txt"), "w") as f:
                f.write("sluice bench\n")
            with open(os.path.join(d, "nginx.conf"), "w") as f:
                f.write(NGINX.format(d=d, host=HOSTS[i], port=port))
            procs.append(Proc([SLUICE, "run", "-c", conf, "--", "nginx", "-p", d, "-c",
                               os.path.join(d, "nginx.conf"), "-g", "daemon off;"]))
        for i in range(n):
            wait_listen(port, HOSTS[i])
        def flood(secs):
            ws = [subprocess.Popen(["wrk", "-t1", "-c8", f"-d{secs}s",
                                    f"http://{HOSTS[i]}:{port}/f.txt"], stdout=subprocess.PIPE,
                                   text=True) for i in range(n)]
            wrks.extend(ws)
            return [w.communicate(timeout=secs + 30)[0] for w in ws]

        flood(2)  # the first windows' room, left out
        pids = [p.p.pid for p in procs]
        c0, t0, m0 = evalsha_stat(redis), time.monotonic(), timing(pids)
        outs = flood(int(SECONDS) - 2)
        took = time.monotonic() - t0
        iv = seen_interval(m0, timing(pids))
        total = bad = 0
        for o in outs:
            m = re.search(r"(\d+) requests in", o)
            total += int(m.group(1)) if m else 0
            m = re.search(r"Non-2xx or 3xx responses: (\d+)", o)
            bad += int(m.group(1)) if m else 0
        ops = (evalsha_stat(redis) - c0) / took / n
        return (total - bad) / took, total / took, ops, iv
    finally:
        for w in wrks:
            if w.poll() is None:
                w.kill()
        for p in procs:
            p.stop()
        if not HA:
            redis.stop()


def load_average():
    with open("/proc/loadavg") as f:
        return f.read().split()[0]


def seen(iv):
    """interval / round seen, and the decisions made under on_backend_error
    (local_share: outside the bound) in the measured span."""
    return f"{1000 * iv[0]:.1f} / {1000 * iv[1]:.1f} ms" + (f", {iv[2]:.0f} fallback" if iv[2] else "")


def fleet_100_ha(tmp):
    print(f"| programs | load | offered/s | {BACKEND}: admitted/s (limit {L100}) | ratio | "
          f"bound (docs/redis.md, I = {int(INTERVAL * 1000)} ms) | interval / round seen | "
          f"bound with them | Redis calls/s per program | Redis CPU per call | load average |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for n in PROGRAMS:
        for steady in LOADS:
            r, offered, ops, us, iv = redis_case(tmp, n, steady)
            print(f"| {n} | {'steady 1.2 x' if steady else 'flood'} | {offered:.0f} | {r:.1f} | "
                  f"{r / L100:.3f} | <= {1 + redis_bound(n):.3f} | {seen(iv)} | "
                  f"<= {measured_bound(n, iv):.3f} | {ops:.0f} | {us:.1f} us | "
                  f"{load_average()} |", flush=True)


def fleet_100(tmp):
    print(f"| programs | load | offered/s | gossip: admitted/s (limit {L100}) | gossip ratio | "
          f"redis: admitted/s | redis ratio | redis bound (docs/redis.md) | "
          f"Redis calls/s per program | Redis CPU per call |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for n in (2, 3, 5):
        for steady in (False, True):
            g = gossip_case(tmp, n, steady)
            r, offered, ops, us, _ = redis_case(tmp, n, steady)
            print(f"| {n} | {'steady 1.2 x' if steady else 'flood'} | {offered:.0f} | {g:.1f} | "
                  f"{g / L100:.3f} | "
                  f"{r:.1f} | {r / L100:.3f} | <= {1 + redis_bound(n):.3f} | {ops:.0f} | "
                  f"{us:.1f} us |", flush=True)



def fleet_10k(tmp):
    if shutil.which("nginx") and shutil.which("wrk"):
        print(f"| programs (nginx) | offered req/s | redis: admitted/s (limit {L10K}) | "
              f"redis ratio | redis bound | interval / round seen | bound with them | "
              f"Redis calls/s per program | load average |")
        print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
        for n in (2, 3, 5):
            adm, offered, ops, iv = requests_case(tmp, n)
            print(f"| {n} | {offered:.0f} | {adm:.0f} | {adm / L10K:.3f} | "
                  f"<= {1 + redis_bound(n):.3f} | {seen(iv)} | <= {measured_bound(n, iv):.3f} | "
                  f"{ops:.0f} | {load_average()} |", flush=True)
    else:
        print("_10,000/s not measured: nginx or wrk is not installed._")


with TempDir() as tmp:
    if BACKEND == "sentinel":
        HA = Sentinels(tmp)
        HA.ready()
    elif BACKEND == "cluster":
        HA = Cluster(tmp)
    try:
        if os.environ.get("FLEET_ONLY") != "10k":
            fleet_100_ha(tmp) if HA else fleet_100(tmp)
            print()
        if os.environ.get("FLEET_ONLY") != "100":
            fleet_10k(tmp)
    finally:
        if HA:
            HA.stop()
    print(f"\n_Interval {int(INTERVAL * 1000)} ms for both backends; each run {SECONDS:.0f} s "
          f"with the first 2 s left out; a program sends one EVALSHA per live key per "
          f"interval (one key here), and early rounds when a key runs ahead._")
