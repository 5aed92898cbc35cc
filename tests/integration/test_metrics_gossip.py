# SPDX-License-Identifier: BSD-2-Clause
"""`sluice metrics` of a gossip node (issue 13: gauges for gossip peers and
their ages). Nodes 1 and 2 of examples/cluster-node{1,2,3}.conf run; node
3 never starts. Node 1's metrics, found by -c and by --pid, parse with
python3-prometheus-client and say: peer 127.0.0.3:7946 up (1) with data
younger than its peer_timeout (0.5 s), peer 127.0.0.4:7946 down (0) and
never heard (-1), datagrams sent and received counting. Node 2 stopped:
within peer_timeout + a second (the test's poll), .3 is down (0)."""
import sys

try:
    from prometheus_client.parser import text_string_to_metric_families
except ImportError:
    sys.path.append("/usr/lib/python3/dist-packages")
    from prometheus_client.parser import text_string_to_metric_families

from cluster_fleet import *


def samples(args):
    r = run([SLUICE, "metrics", *args])
    check(r.returncode == 0, f"metrics {args}: {r.stderr}")
    out = {}
    for fam in text_string_to_metric_families(r.stdout):
        for s in fam.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def peer(m, name, peer_addr):
    return m.get((name, (("peer", peer_addr),)))


with TempDir() as tmp, Fleet(tmp) as fleet:
    fleet.start(0)
    fleet.start(1)
    fleet.wait_alive([0, 1])
    p3, p4 = f"{HOSTS[1]}:{GOSSIP_PORT}", f"{HOSTS[2]}:{GOSSIP_PORT}"
    for args in (["-c", fleet.confs[0]], ["--pid", str(fleet.procs[0].p.pid)]):
        m = samples(args)
        check(peer(m, "sluice_gossip_peer_up", p3) == 1, f"{args}: node 2 up: {m}")
        age = peer(m, "sluice_gossip_peer_age_seconds", p3)
        check(age is not None and 0 <= age < PEER_TIMEOUT, f"{args}: node 2's data age {age}")
        check(peer(m, "sluice_gossip_peer_up", p4) == 0, f"{args}: node 3 down")
        check(peer(m, "sluice_gossip_peer_age_seconds", p4) == -1, f"{args}: node 3 never heard")
        sent = [v for (n, l), v in m.items() if n == "sluice_gossip_events_total" and
                ("kind", "tx_packets") in l]
        check(sent and sent[0] > 0, f"{args}: datagrams sent counted: {sent}")
    fleet.stop(1)
    deadline = time.monotonic() + PEER_TIMEOUT + 1.0
    while time.monotonic() < deadline and peer(samples(["-c", fleet.confs[0]]),
                                                "sluice_gossip_peer_up", p3) != 0:
        time.sleep(0.05)
    check(peer(samples(["-c", fleet.confs[0]]), "sluice_gossip_peer_up", p3) == 0,
          "node 2 stopped: down within peer_timeout + 1 s")
print("ok")
