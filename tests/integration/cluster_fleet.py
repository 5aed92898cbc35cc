# SPDX-License-Identifier: BSD-2-Clause
"""Helpers for the cluster integration tests: three python3 http.server
nodes under the shim, on 127.0.0.2, .3 and .4 port 8080, gossiping on port
7946, started from examples/cluster-node{1,2,3}.conf with the key file
replaced by a fresh one. One client address (127.0.0.9) floods them.
Everything is bounded in time and killed on exit."""
import hashlib
import hmac
import json
import os
import re
import socket
import struct
import subprocess
import sys
import threading
import time

from lib import *

HOSTS = ["127.0.0.2", "127.0.0.3", "127.0.0.4"]
HTTP_PORT = 8080
GOSSIP_PORT = 7946
CLIENT = "127.0.0.9"
LIMIT = 100          # examples: rate = "100/s"
WINDOW = 1.0
INTERVAL = 0.020     # examples: interval = 20ms
PEER_TIMEOUT = 0.5   # examples: peer_timeout = 500ms
EXAMPLES = os.path.join(ROOT, "examples")


def overshoot_bound(n, interval, window=WINDOW, delay=0.005, lost_in_a_row=0):
    """docs/cluster.md: the steady-state relative overshoot of a fleet of n
    nodes whose views are at most s = (1 + k) * interval + delay old (k
    datagrams lost in a row): eps = (n-1) s / (n W - (n-1) s)."""
    s = (1 + lost_in_a_row) * interval + delay
    return (n - 1) * s / (n * window - (n - 1) * s)


def early_share(limit, n):
    """core/fleet/cluster.c: a key's unsent count that triggers an early send."""
    return max(1, limit // (16 * n))


def flood_bound(limit, n=3, lost_in_a_row=0, woken=2):
    """docs/cluster.md: the relative overshoot in any window, any arrival
    pattern, with early sends: each other node's unheard admissions are at
    most (k + 1) early shares plus what it admits while its sender wakes
    and the datagram travels (`woken`: 2 connections, a few ms of a
    flooded python server)."""
    return (n - 1) * ((lost_in_a_row + 1) * early_share(limit, n) + woken) / limit


def fnv(text):
    h = 0xcbf29ce484222325
    for b in text.encode():
        h = ((h ^ b) * 0x100000001b3) & 0xffffffffffffffff
    return h or 1


def datagram(key, node, boot, seq, ts_ms, records=(), flags=0, version=1):
    """A gossip datagram, format v1 (docs/gossip-wire.txt)."""
    body = b"SLUG" + bytes([version, 1, flags, 0]) + struct.pack(
        "<QQQQHH", node, boot, seq, ts_ms, len(records), 0)
    for h, rule, window, prev, curr in records:
        body += struct.pack("<QIIII", h, rule, window, prev, curr)
    return body + hmac.new(key, body, hashlib.sha512).digest()[:32]


class Fleet:
    def __init__(self, tmp, nodes=3, extra_env=None, rate=None, interval=None):
        self.tmp = tmp
        self.key_path = tmp.join("cluster.key")
        r = run([SLUICE, "keygen", self.key_path])
        check(r.returncode == 0, "keygen failed: " + r.stderr)
        check(os.stat(self.key_path).st_mode & 0o777 == 0o600, "key file is not mode 600")
        self.key = bytes.fromhex(open(self.key_path).read().strip())
        self.confs = []
        self.procs = [None] * nodes
        self.extra_env = extra_env or {}
        for i in range(nodes):
            text = open(os.path.join(EXAMPLES, f"cluster-node{i + 1}.conf")).read()
            check("/etc/sluice/cluster.key" in text, "example lost its key_file line")
            if rate is not None:  # e.g. "60/s"
                check('rate = "100/s"' in text, "example lost its rate line")
                text = text.replace('rate = "100/s"', f'rate = "{rate}"')
            if interval is not None:  # "" for the default
                check("interval = 20ms" in text, "example lost its interval line")
                text = text.replace("interval = 20ms", f"interval = {interval}" if interval else "")
            self.confs.append(tmp.write(f"node{i + 1}.conf",
                                        text.replace("/etc/sluice/cluster.key", self.key_path)))
        self.cleanup_shm()

    def cleanup_shm(self):
        for i in range(len(self.confs)):
            for name in (f"sluice-cluster.{HOSTS[i]}_{GOSSIP_PORT}", f"sluice.example-cluster-node{i + 1}"):
                try:
                    os.unlink("/dev/shm/" + name)
                except FileNotFoundError:
                    pass

    def start(self, i):
        argv = [SLUICE, "run", "-c", self.confs[i], "--", sys.executable, "-m", "http.server",
                str(HTTP_PORT), "--bind", HOSTS[i]]
        self.procs[i] = Proc(argv, env=self.extra_env, cwd=SERVE_DIR)
        wait_listen(HTTP_PORT, HOSTS[i])

    def stop(self, i):
        if self.procs[i]:
            self.procs[i].stop()
            self.procs[i] = None

    def stats(self, i):
        r = run([SLUICE, "cluster-stats", "-c", self.confs[i]], timeout=10)
        check(r.returncode == 0, f"cluster-stats node {i + 1}: {r.stderr}")
        out = {"peers": {}}
        for line in r.stdout.splitlines()[1:]:
            w = line.split()
            if len(w) == 2 and w[1].isdigit():
                out[w[0]] = int(w[1])
            elif len(w) == 4 and re.match(r"[\d.]+:\d+", w[0]):
                out["peers"][w[0]] = {"alive": w[1] == "yes", "age_ms": w[2], "packets": int(w[3])}
        return out

    def wait_alive(self, nodes, timeout=10):
        """Waits until every node in `nodes` hears every other one."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            ok = True
            for i in nodes:
                peers = self.stats(i)["peers"]
                for j in nodes:
                    if j != i and not peers.get(f"{HOSTS[j]}:{GOSSIP_PORT}", {}).get("alive"):
                        ok = False
            if ok:
                return
            time.sleep(0.1)
        raise AssertionError(f"nodes {nodes} did not hear each other in {timeout}s")

    def __enter__(self):
        return self

    def __exit__(self, *a):
        for i in range(len(self.procs)):
            self.stop(i)
        self.cleanup_shm()


def connect_once(host):
    """One connection from CLIENT: True when the server answered 200."""
    try:
        with socket.socket() as s:
            s.settimeout(3)
            s.bind((CLIENT, 0))
            s.connect((host, HTTP_PORT))
            s.sendall(b"GET / HTTP/1.0\r\n\r\n")
            return s.recv(64).startswith(b"HTTP/1.0 200")
    except OSError:
        return False


class Flood:
    """Clients connecting as fast as they can to the hosts in `targets`
    (round robin; the list may be changed while running). Records the
    start time of every admitted connection (its answer's time with
    at_answer: under a flood a connection waits in the accept queue, and
    the node decides when it accepts it, just before answering)."""

    def __init__(self, targets, threads=6, at_answer=False):
        self.at_answer = at_answer
        self.targets = list(targets)
        self.admitted = []
        self.attempts = 0
        self.lock = threading.Lock()
        self.stop_flag = False
        self.ts = [threading.Thread(target=self._client, args=(k,), daemon=True)
                   for k in range(threads)]
        for t in self.ts:
            t.start()

    def _client(self, k):
        while not self.stop_flag:
            targets = self.targets
            host = targets[k % len(targets)]
            k += 1
            t = time.monotonic()
            ok = connect_once(host)
            if self.at_answer:
                t = time.monotonic()
            with self.lock:
                self.attempts += 1
                if ok:
                    self.admitted.append(t)

    def count(self, t0, t1):
        with self.lock:
            return sum(1 for t in self.admitted if t0 <= t < t1)

    def stop(self):
        self.stop_flag = True
        for t in self.ts:
            t.join(10)


def rate_between(flood, t0, t1):
    return flood.count(t0, t1) / (t1 - t0)
