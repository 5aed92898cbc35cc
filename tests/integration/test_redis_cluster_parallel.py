# SPDX-License-Identifier: BSD-2-Clause
"""A cluster round asks every primary at once: three stand-in cluster
nodes on loopback (a few lines of RESP below: CLUSTER SLOTS naming the
three, SCRIPT LOAD, EVALSHA answering the counts it was sent, PING), each
answering every batch of commands D = 60 ms after it came, as three slow
or distant primaries would. One http.server under the shim (`cluster =`
the three) counts three client addresses, one key on each node. The mean
round (`sluice metrics`: round_us / syncs) must stay under 2 D: a sender
that asks the primaries one after the other takes 3 D a round (seen:
199 ms before sl_rlink_exchange_all), one that asks them together
takes D plus the machine's scheduling. Real redis-servers cannot be made
slow this way on loopback (no netem on these machines), hence the
stand-ins; test_redis_cluster*.py run the real ones."""
import socketserver

from redis_fleet import *

D = 0.060
RANGES = [(0, 5460), (5461, 10922), (10923, 16383)]
SHA = "0" * 40


def bulk(s):
    b = s.encode() if isinstance(s, str) else s
    return b"$%d\r\n%s\r\n" % (len(b), b)


def parse(buf):
    """Complete RESP arrays of bulk strings at the start of buf: ([argv], rest)."""
    cmds = []
    while buf.startswith(b"*"):
        end = buf.find(b"\r\n")
        if end < 0:
            break
        n, at, argv = int(buf[1:end]), end + 2, []
        for _ in range(n):
            e = buf.find(b"\r\n", at)
            if e < 0:
                return cmds, buf
            ln = int(buf[at + 1:e])
            if len(buf) < e + 2 + ln + 2:
                return cmds, buf
            argv.append(buf[e + 2:e + 2 + ln])
            at = e + 2 + ln + 2
        cmds.append(argv)
        buf = buf[at:]
    return cmds, buf


def answer(argv, ports):
    c = argv[0].upper()
    if c == b"CLUSTER":
        out = b"*3\r\n"
        for (a, b), p in zip(RANGES, ports):
            out += b"*3\r\n:%d\r\n:%d\r\n*3\r\n%s:%d\r\n%s" % (a, b, bulk("127.0.0.1"), p,
                                                               bulk(f"{p:040d}"))
        return out
    if c == b"SCRIPT":
        return bulk(SHA)
    if c == b"EVALSHA":  # keys k1 k2, then NODE set CURR PREV: nobody else counts
        curr, prev = int(argv[7]), int(argv[8])
        return b"*5\r\n:1\r\n:%d\r\n:%d\r\n:%d\r\n:%d\r\n" % (curr, prev, curr, prev)
    if c == b"PING":
        return b"+PONG\r\n"
    return b"-ERR unknown command\r\n"


class Node(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


def handler(ports):
    class H(socketserver.BaseRequestHandler):
        def handle(self):
            buf = b""
            try:
                while True:
                    data = self.request.recv(65536)
                    if not data:
                        return
                    cmds, buf = parse(buf + data)
                    if cmds:
                        time.sleep(D)  # a slow primary: the batch's answers D later
                        self.request.sendall(b"".join(answer(a, ports) for a in cmds))
            except OSError:
                pass  # the program went away
    return H


with TempDir() as tmp:
    ports = [free_port() for _ in RANGES]
    nodes = [Node(("127.0.0.1", p), handler(ports)) for p in ports]
    for n in nodes:
        threading.Thread(target=n.serve_forever, daemon=True).start()
    # one client address per node's slots
    clients = []
    for lo, hi in RANGES:
        clients.append(next(c for c in (f"127.0.3.{i}" for i in range(1, 250))
                            if c not in clients and lo <= key_slot(key(c, 0)) <= hi))
    progs = None
    try:
        where = f'cluster = "{",".join(f"127.0.0.1:{p}" for p in ports)}"'
        progs = Programs(tmp, 0, n=1, where=where, limit=100)
        end = time.monotonic() + 3.0
        while time.monotonic() < end:  # the three keys stay live (counted in the last 2 s)
            for c in clients:
                connect_once(HOSTS[0], progs.port, c)
            time.sleep(0.3)
        m = metrics(progs.procs[0].p.pid)
        syncs = m.get(("sluice_redis_events_total", "syncs"), 0)
        calls = m.get(("sluice_redis_events_total", "calls"), 0)
        mean = m.get(("sluice_redis_events_total", "round_us"), 0) / max(syncs, 1) / 1e6
        nodes_calls = node_calls(progs.procs[0].p.pid)
        print(f"{syncs:.0f} complete rounds, {calls:.0f} script calls, nodes {nodes_calls}; "
              f"mean round {1000 * mean:.0f} ms with each of the three primaries answering "
              f"{1000 * D:.0f} ms late (one after the other: {3000 * D:.0f} ms)")
        check(syncs >= 5 and len(nodes_calls) == 3 and all(v > 0 for v in nodes_calls.values()),
              f"rounds should reach the three nodes: {syncs} rounds, {nodes_calls}")
        check(mean < 2 * D, f"a round took {1000 * mean:.0f} ms: the primaries asked in turn")
    finally:
        if progs:
            progs.stop()
        for n in nodes:
            n.shutdown()
            n.server_close()
print("ok")
