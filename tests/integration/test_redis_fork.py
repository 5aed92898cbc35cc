# SPDX-License-Identifier: BSD-2-Clause
"""The Redis sender and fork: a python3 program under a `scope = redis`
rule accepts one connection (its first decision starts the sender, which
connects to Redis), then forks.
  - the child has one thread (the sender did not come along) and does not
    hold the sender's Redis socket (the atfork handler closed it);
  - the parent then exits: the child, still accepting, finds the heartbeat
    stale and starts a sender of its own (logged once), which connects to
    Redis; the child's decisions go on meanwhile (nothing blocks)."""
from redis_fleet import *

PROG = r'''
import os, socket, sys, time
rport, port = int(sys.argv[1]), int(sys.argv[2])
ls = socket.socket(); ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
ls.bind(("127.0.0.1", port)); ls.listen(64)


def say(*words):
    """one line in one write: sluice's own log lines share stderr"""
    os.write(2, (" ".join(map(str, words)) + "\n").encode())


def redis_sockets():
    """fds of this process that are TCP connections to Redis."""
    inodes = set()
    with open("/proc/net/tcp") as f:
        for line in f.readlines()[1:]:
            w = line.split()
            if int(w[2].split(":")[1], 16) == rport and w[3] == "01":
                inodes.add(w[9])
    n = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            link = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if link.startswith("socket:[") and link[8:-1] in inodes:
            n += 1
    return n

c, _ = ls.accept(); c.close()          # the first decision: the sender starts
deadline = time.time() + 5
while redis_sockets() == 0 and time.time() < deadline:
    time.sleep(0.02)
say("parent threads", len(os.listdir("/proc/self/task")), "redis sockets", redis_sockets())
pid = os.fork()
if pid:
    time.sleep(0.3)
    os._exit(0)                          # the sender's process dies
say("child threads", len(os.listdir("/proc/self/task")), "redis sockets", redis_sockets())
t0 = time.time(); n = 0; slowest = 0.0
while time.time() - t0 < 3:
    t = time.time()
    c, _ = ls.accept(); c.close(); n += 1
    slowest = max(slowest, time.time() - t)
say("child accepted", n, "threads", len(os.listdir("/proc/self/task")),
    "redis sockets", redis_sockets())
'''

with TempDir() as tmp:
    redis = Redis(tmp)
    port = free_port()
    conf = tmp.write("fork.conf", f"""
redis {{
    address  = "127.0.0.1:{redis.port}"
    interval = 20ms
}}
inbound "web" {{ port = {port}  rate = "100000/s"  scope = redis }}
""")
    prog = tmp.write("prog.py", PROG)
    p = Proc([SLUICE, "run", "-c", conf, "--", sys.executable, prog, str(redis.port), str(port)])
    try:
        wait_listen(port)
        stop = time.monotonic() + 10
        while time.monotonic() < stop and "child accepted" not in p.stderr():
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    pass
            except OSError:
                pass
            time.sleep(0.01)
        err = p.stderr()
    finally:
        p.stop()
        redis.stop()
    print(err.strip())
    lines = {l.split()[0] + " " + l.split()[1]: l.split() for l in err.splitlines()
             if l.startswith(("parent", "child"))}
    check(lines.get("parent threads", [0, 0, "0"])[2] == "2", "the parent should have its sender")
    check(lines["parent threads"][5] == "1", "the parent's sender should be connected to Redis")
    check(lines["child threads"][2] == "1", "a forked child must not have the sender thread")
    check(lines["child threads"][5] == "0", "a forked child must not hold the sender's socket")
    acc = lines["child accepted"]
    check(int(acc[2]) > 20, f"the child should go on accepting: {acc}")
    check(acc[4] == "2" and acc[7] == "1", f"the child should have started its own sender: {acc}")
    check(err.count("now syncs with") == 1, "the take-over should be logged once")
print("ok")
