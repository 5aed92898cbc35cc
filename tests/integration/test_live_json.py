# SPDX-License-Identifier: BSD-2-Clause
"""/stats.json and / of `sluice metrics --listen` (issue 19.5) for what the
browser test does not run: gossip peers and the Redis sender, and the page
being self-contained.

1. / is text/html with no src= or href= attribute and no URL but the SVG
   namespace: nothing is fetched but stats.json (relative). Unknown paths
   still answer 404.
2. Gossip: nodes 1 and 2 of examples/cluster-node{1,2,3}.conf run, node 3
   never starts; node 1's /stats.json says gossip enabled, peer
   127.0.0.3:7946 up with data younger than peer_timeout (0.5 s), peer
   127.0.0.4:7946 down and never heard (age -1).
3. Redis: one http.server under the redis fleet config, found by --pid;
   after one connection, within 5 s, /stats.json says the sender runs, its
   last whole round is under 0.2 s old (20 ms interval, room for a loaded
   machine), syncs counted.
"""
import json
import urllib.error
import urllib.request

from lib import *
import cluster_fleet
import redis_fleet


def get(mport, path):
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{mport}{path}", timeout=5) as f:
            return f.status, f.headers.get("Content-Type"), f.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.headers.get("Content-Type"), ""


def poll(what, fn, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = fn()
        if got:
            return got
        time.sleep(0.05)
    raise AssertionError(f"{what} within {timeout} s")


with TempDir() as tmp, cluster_fleet.Fleet(tmp) as fleet:
    fleet.start(0)
    fleet.start(1)
    fleet.wait_alive([0, 1])
    mport = free_port()
    with Proc([SLUICE, "metrics", "-c", fleet.confs[0], "--listen", f"127.0.0.1:{mport}"]):
        wait_listen(mport)
        status, ctype, page = get(mport, "/")
        check(status == 200 and ctype.startswith("text/html"), f"/: {status} {ctype}")
        check(not re.search(r"\b(src|href)\s*=", page), "no external asset")
        urls = set(re.findall(r"https?://[^\s'\"<>]+", page))
        check(urls <= {"http://www.w3.org/2000/svg"}, f"no URL but the SVG namespace: {urls}")
        check("fetch('stats.json'" in page, "the page reads stats.json")
        check(get(mport, "/other")[0] == 404, "404 elsewhere")
        p3 = f"{cluster_fleet.HOSTS[1]}:{cluster_fleet.GOSSIP_PORT}"
        p4 = f"{cluster_fleet.HOSTS[2]}:{cluster_fleet.GOSSIP_PORT}"
        status, ctype, body = get(mport, "/stats.json")
        check(status == 200 and ctype == "application/json", f"/stats.json: {status} {ctype}")
        g = json.loads(body)["gossip"]
        print("gossip:", g)
        peers = {p["peer"]: p for p in g["peers"]}
        check(g["enabled"] and set(peers) == {p3, p4}, f"both peers listed: {g}")
        check(peers[p3]["up"] and 0 <= peers[p3]["age_s"] < cluster_fleet.PEER_TIMEOUT,
              f"node 2 up, fresh: {peers[p3]}")
        check(not peers[p4]["up"] and peers[p4]["age_s"] == -1, f"node 3 never heard: {peers[p4]}")

with TempDir() as tmp:
    redis = redis_fleet.Redis(tmp)
    progs = redis_fleet.Programs(tmp, redis.port, n=1)
    try:
        pid = progs.procs[0].p.pid
        mport = free_port()
        with Proc([SLUICE, "metrics", "--pid", str(pid), "--listen", f"127.0.0.1:{mport}"]):
            wait_listen(mport)
            redis_fleet.connect_once(redis_fleet.HOSTS[0], progs.port)

            def synced():
                r = json.loads(get(mport, "/stats.json")[2])["redis"]
                return r if r.get("running") and 0 <= r["last_sync_age_s"] < 0.2 else None
            r = poll("Redis answered", synced, 5)
            print("redis:", r)
            check(r["enabled"] and r["syncs"] > 0 and r["sender_pid"] > 0, f"sender state: {r}")
    finally:
        progs.stop()
        redis.stop()
print("ok")
