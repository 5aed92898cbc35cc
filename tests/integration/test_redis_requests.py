# SPDX-License-Identifier: BSD-2-Clause
"""Requests shared through Redis: two python3 http.servers (HTTP/1.1,
keep-alive) on 127.0.0.2 and .3, separately started, each under an inbound
rule `req_rate = 60/s scope = redis action = reply` (per peer). One client
address keeps one keep-alive connection to each and sends requests as fast
as the answers come (a 429 closes the connection; the client opens a new
one). The pair answers 200 to 60 requests a second within 5 % (the
documented steady bound for two programs is 2.1 %), where each alone
would answer 60. Then the same per API key (`per = header:X-API-Key`, a
key_file in the redis section): the pair again answers 60/s within 5 %,
and the key in Redis is `{api:req:#HEX}` with HEX the BLAKE2b-128 of the
header's value under the key file's key (what a service computes to share
the budget), the value itself nowhere in Redis."""
import hashlib
import threading

from redis_fleet import *


def client(host, port, stop, log, lock, header=b""):
    """Keep-alive GETs from CLIENT; records (time, status)."""
    while not stop.is_set():
        try:
            with socket.socket() as s:
                s.settimeout(5)
                s.bind((CLIENT, 0))
                s.connect((host, port))
                f = s.makefile("rb")
                while not stop.is_set():
                    t = time.monotonic()
                    s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n" + header + b"\r\n")
                    status = int(f.readline().split()[1])
                    length = 0
                    while True:
                        line = f.readline()
                        if line in (b"\r\n", b""):
                            break
                        if line.lower().startswith(b"content-length:"):
                            length = int(line.split(b":")[1])
                    f.read(length)
                    with lock:
                        log.append((t, status))
                    if status != 200:
                        break
        except (OSError, ValueError, IndexError):
            pass


def flood_pair(port, header=b""):
    stop, lock, log = threading.Event(), threading.Lock(), []
    threads = [threading.Thread(target=client, args=(h, port, stop, log, lock, header), daemon=True)
               for h in HOSTS[:2] for _ in range(2)]
    for t in threads:
        t.start()
    t0 = time.monotonic()
    time.sleep(6.0)
    stop.set()
    for t in threads:
        t.join(10)
    span = [(t, st) for t, st in log if t0 + 2 <= t < t0 + 6]
    return (sum(1 for _, st in span if st == 200) / 4.0, sum(1 for _, st in span if st == 429))


def start_pair(tmp, conf, port):
    procs = [Proc([SLUICE, "run", "-c", conf, "--", sys.executable, "-m", "http.server", "-p",
                   "HTTP/1.1", str(port), "--bind", h], cwd=SERVE_DIR) for h in HOSTS[:2]]
    for h in HOSTS[:2]:
        wait_listen(port, h)
    return procs


with TempDir() as tmp:
    redis = Redis(tmp)
    procs = []
    try:
        # 1. per peer
        port = free_port()
        conf = tmp.write("req.conf", f"""
redis {{
    address  = "127.0.0.1:{redis.port}"
    interval = {int(INTERVAL * 1000)}ms
}}
inbound "api" {{
    port     = {port}
    req_rate = "{LIMIT}/s"
    scope    = redis
    action   = reply
}}
""")
        procs = start_pair(tmp, conf, port)
        ok, denied = flood_pair(port)
        print(f"per peer: {ok:.1f} requests/s answered 200, {denied} answered 429 over 4 s, "
              f"limit {LIMIT}/s, bound {100 * redis_bound(2):.1f} %")
        check(denied > 4 * LIMIT, "client too slow to test the limit")
        check(abs(ok - LIMIT) <= 0.05 * LIMIT, f"pair answered {ok:.1f}/s, limit {LIMIT} +-5 %")
        keys = redis.cli("KEYS", "sluice:*").split()
        check(keys and all(k.startswith(f"sluice:{{api:req:{CLIENT}}}:") for k in keys),
              f"unexpected key layout: {keys}")
        for p in procs:
            p.stop()

        # 2. per API key, named in Redis by a keyed hash
        key_path = tmp.join("fleet.key")
        check(run([SLUICE, "keygen", key_path]).returncode == 0, "keygen failed")
        fleet_key = bytes.fromhex(open(key_path).read().strip())
        port = free_port()
        conf = tmp.write("req-key.conf", f"""
redis {{
    address  = "127.0.0.1:{redis.port}"
    interval = {int(INTERVAL * 1000)}ms
    key_file = "{key_path}"
}}
inbound "api" {{
    port     = {port}
    req_rate = "{LIMIT}/s"
    per      = "header:X-API-Key"
    scope    = redis
    action   = reply
}}
""")
        redis.cli("FLUSHALL")
        procs = start_pair(tmp, conf, port)
        value = b"sk_live_redis_test_1"
        ok, denied = flood_pair(port, b"X-API-Key: " + value + b"\r\n")
        print(f"per API key: {ok:.1f} requests/s answered 200, {denied} answered 429")
        check(denied > 4 * LIMIT, "client too slow to test the limit")
        check(abs(ok - LIMIT) <= 0.05 * LIMIT, f"pair answered {ok:.1f}/s, limit {LIMIT} +-5 %")
        name = hashlib.blake2b(value, digest_size=16, key=fleet_key).hexdigest()
        keys = redis.cli("KEYS", "sluice:*").split()
        check(keys and all(k.startswith(f"sluice:{{api:req:#{name}}}:") for k in keys),
              f"unexpected key layout: {keys} (expected the value's keyed hash {name})")
        dump = redis.cli("KEYS", "*") + "".join(redis.cli("HGETALL", k) for k in keys)
        check(value.decode() not in dump, "the key's value reached Redis")
    finally:
        for p in procs:
            p.stop()
        redis.stop()
print("ok")
