"""Requests shared through Redis: two python3 http.servers (HTTP/1.1,
keep-alive) on 127.0.0.2 and .3, separately started, each under an inbound
rule `req_rate = 60/s scope = redis action = reply` (per peer). One client
address keeps one keep-alive connection to each and sends requests as fast
as the answers come (a 429 closes the connection; the client opens a new
one). The pair answers 200 to 60 requests a second within 5 % (the
documented steady bound for two programs is 2.1 %), where each alone
would answer 60."""
import threading

from redis_fleet import *


def client(host, port, stop, log, lock):
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
                    s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
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


with TempDir() as tmp:
    redis = Redis(tmp)
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
    procs = [Proc([SLUICE, "run", "-c", conf, "--", sys.executable, "-m", "http.server", "-p",
                   "HTTP/1.1", str(port), "--bind", h], cwd=SERVE_DIR) for h in HOSTS[:2]]
    stop, lock, log = threading.Event(), threading.Lock(), []
    threads = []
    try:
        for h in HOSTS[:2]:
            wait_listen(port, h)
        threads = [threading.Thread(target=client, args=(h, port, stop, log, lock), daemon=True)
                   for h in HOSTS[:2] for _ in range(2)]
        for t in threads:
            t.start()
        t0 = time.monotonic()
        time.sleep(6.0)
        stop.set()
        for t in threads:
            t.join(10)
        with lock:
            span = [(t, st) for t, st in log if t0 + 2 <= t < t0 + 6]
        ok = sum(1 for _, st in span if st == 200) / 4.0
        denied = sum(1 for _, st in span if st == 429)
        print(f"pair: {ok:.1f} requests/s answered 200, {denied} answered 429 over 4 s, "
              f"limit {LIMIT}/s, bound {100 * redis_bound(2):.1f} %")
        check(denied > 4 * LIMIT, "client too slow to test the limit")
        check(abs(ok - LIMIT) <= 0.05 * LIMIT, f"pair answered {ok:.1f}/s, limit {LIMIT} +-5 %")
        keys = redis.cli("KEYS", "sluice:*").split()
        check(keys and all(k.startswith(f"sluice:{{api:req:{CLIENT}}}:") for k in keys),
              f"unexpected key layout: {keys}")
    finally:
        stop.set()
        for p in procs:
            p.stop()
        redis.stop()
print("ok")
