# SPDX-License-Identifier: BSD-2-Clause
"""Datagrams an attacker (or a broken peer) sends to a node's gossip port:
forged (wrong key), replayed, truncated, oversized, malformed, from an
unknown node, stale, not ours at all. Each is dropped and counted by
reason; the node keeps serving and keeps hearing its real peer."""
from cluster_fleet import *

with TempDir() as tmp, Fleet(tmp) as fleet:
    fleet.start(0)
    fleet.start(1)
    fleet.wait_alive([0, 1])
    target = (HOSTS[0], GOSSIP_PORT)
    peer = fnv(f"{HOSTS[1]}:{GOSSIP_PORT}")
    rule = fnv("fleet") & 0xffffffff
    now_ms = int(time.time() * 1000)
    rec = [(12345, rule, int(time.time()) & 0xffffffff, 0, 1)]
    good = datagram(fleet.key, peer, boot=777, seq=1, ts_ms=now_ms, records=rec)
    sends = {
        "forged": [datagram(b"\x01" * 32, peer, 777, 2, now_ms, rec)],
        "replayed": [good, good],
        "truncated": [good[:30], good[:-40]],
        "oversized": [b"SLUG" + b"\x01" * 1500],
        "malformed": [good + b"xx", datagram(fleet.key, peer, 777, 3, now_ms, [(5, rule, 1, 1 << 22, 0)])],
        "unknown_peer": [datagram(fleet.key, fnv("10.9.9.9:7946"), 1, 1, now_ms)],
        "stale": [datagram(fleet.key, peer, 778, 1, now_ms - 3600 * 1000)],
        "bad_magic": [b"GET / HTTP/1.0\r\n\r\n" * 5],
        "bad_version": [datagram(fleet.key, peer, 777, 4, now_ms, version=9)],
    }
    before = fleet.stats(0)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.9", 0))
        for dgs in sends.values():
            for d in dgs:
                s.sendto(d, target)
        # and a burst of random garbage
        for i in range(500):
            s.sendto(os.urandom(1 + i % 1300), target)
            if i % 25 == 24:
                time.sleep(0.01)  # stay under the socket's receive buffer
    time.sleep(0.5)
    after = fleet.stats(0)
    for why, dgs in sends.items():
        want = 1 if why == "replayed" else len(dgs)
        got = after["drop_" + why] - before["drop_" + why]
        print(f"drop_{why}: {got}")
        check(got >= want, f"drop_{why}: {got}, want at least {want}")
    total = sum(after[k] - before[k] for k in after if k.startswith("drop_"))
    check(total >= 500, f"only {total} drops counted")
    check(fleet.procs[0].p.poll() is None, "node 1 died")
    check(connect_once(HOSTS[0]), "node 1 no longer serves")
    fleet.wait_alive([0, 1], timeout=5)
print("ok")
