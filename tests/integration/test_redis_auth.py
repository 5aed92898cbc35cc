# SPDX-License-Identifier: BSD-2-Clause
"""Redis over a unix socket with an ACL user: a python3 http.server under a
`scope = redis` rule whose redis section names `unix:/path`, `user` and
`password` counts into Redis (its key appears, in the documented layout);
with a wrong password it says once that Redis refused (Redis's own words,
never the password), falls back to its local share, and the password
appears nowhere in its output or in `sluice check`'s."""
from redis_fleet import *

SECRET = "pw-9f3e1c77-never-shown"


def run_program(tmp, sock, password, port):
    conf = tmp.write(f"auth-{password[:2]}.conf", f"""
redis {{
    address  = "unix:{sock}"
    user     = "limiter"
    password = "{password}"
    interval = 20ms
}}
inbound "web" {{ port = {port}  rate = "20/s"  scope = redis  action = reject }}
""", mode=0o600)
    p = Proc([SLUICE, "run", "-c", conf, "--", sys.executable, "-m", "http.server", str(port),
              "--bind", "127.0.0.1"], cwd=SERVE_DIR)
    return conf, p


with TempDir() as tmp:
    sock = tmp.join("redis.sock")
    argv = ["redis-server", "--port", "0", "--unixsocket", sock, "--unixsocketperm", "700",
            "--save", "", "--appendonly", "no", "--dir", tmp.path,
            "--user", "limiter", "on", f">{SECRET}", "~sluice:*", "+@all"]
    redis = Proc(argv)
    procs = []
    try:
        deadline = time.monotonic() + 10
        while not os.path.exists(sock) and time.monotonic() < deadline:
            time.sleep(0.05)
        cli = lambda *a: subprocess.run(["redis-cli", "-s", sock, "--user", "limiter", "--pass",
                                         SECRET, "--no-auth-warning"] + list(a),
                                        capture_output=True, text=True, timeout=5).stdout
        check(cli("PING").strip() == "PONG", "redis with ACL did not start")

        # 1. the right password: counts reach Redis
        port = free_port()
        conf, p = run_program(tmp, sock, SECRET, port)
        procs.append(p)
        wait_listen(port)
        # The first connection's decision starts the sender. Decisions follow
        # on_backend_error (local, 50%: 10 of 20) until the second round on a
        # connection brings the fleet's counts (redis.c), 40 ms or more at a
        # 20 ms interval: 40 connections made before then got 10 (3 runs in
        # 8). The subject here is the password: the other 39 start once the
        # program counts with the fleet.
        results = [http_get(port)[0]]
        deadline = time.monotonic() + 5
        while not 0 <= metrics(p.p.pid)[("sluice_redis_last_sync_age_seconds", None)] < 0.5:
            check(time.monotonic() < deadline, f"never synced with Redis: {metrics(p.p.pid)}")
            time.sleep(0.02)
        results += [http_get(port)[0] for _ in range(39)]
        time.sleep(0.3)
        keys = cli("KEYS", "sluice:*").split()
        print(f"right password: {results.count(200)} of 40 passed; keys {keys}")
        check(results.count(200) >= 20 and results.count(200) <= 21, "the limit of 20 does not hold")
        check(keys and all(k.startswith("sluice:{web:127.0.0.1}:") for k in keys),
              f"no counts in Redis: {keys}")
        check(SECRET not in p.stderr(), "the password was logged")
        r = run([SLUICE, "check", "-c", conf])
        check(r.returncode == 0 and SECRET not in r.stdout + r.stderr, "sluice check shows the password")
        check("password is set (sha-256 " in r.stdout, "sluice check does not say a password is set")
        p.stop()

        # 2. a wrong password: refused, said once, local share (10 of 20)
        port = free_port()
        wrong = "wrong-" + SECRET
        conf, p = run_program(tmp, sock, wrong, port)
        procs.append(p)
        wait_listen(port)
        results = [http_get(port)[0] for _ in range(40)]
        time.sleep(0.5)
        err = p.stderr()
        lines = [l for l in err.splitlines() if "redis:" in l]
        print("wrong password:", results.count(200), "of 40 passed;", lines)
        check(len(lines) == 1 and "WRONGPASS" in lines[0] and "on_backend_error = local" in lines[0],
              f"expected one line saying Redis refused: {lines}")
        check(wrong not in err and SECRET not in err, "the password was logged")
        check(results.count(200) in (10, 11), f"local share of 20 should pass 10: {results.count(200)}")
    finally:
        for p in procs:
            p.stop()
        redis.stop()
print("ok")
