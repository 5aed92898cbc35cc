# SPDX-License-Identifier: BSD-2-Clause
"""Helpers for the redis integration tests: a redis-server from Debian on
a free loopback port (--save '' --appendonly no), and python3 http.server
programs under the shim on 127.0.0.2, .3 ... with a `scope = redis` rule of
LIMIT connections a second per client address, syncing every INTERVAL. One
client address (127.0.0.9) floods them. Everything is bounded in time and
killed on exit."""
import os
import subprocess
import sys
import threading
import time

from lib import *

try:
    from prometheus_client.parser import text_string_to_metric_families
except ImportError:  # a python3 other than Debian's: its package is pure python
    sys.path.append("/usr/lib/python3/dist-packages")
    from prometheus_client.parser import text_string_to_metric_families

HOSTS = ["127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5", "127.0.0.6"]
CLIENT = "127.0.0.9"
LIMIT = 60
WINDOW = 1.0
INTERVAL = 0.020
TIMEOUT = 0.200
SCRIPT = os.path.join(ROOT, "core", "fleet", "redis.lua")


def redis_bound(n, interval=INTERVAL, window=WINDOW, rtt=0.002):
    """docs/redis.md: programs see the rest of the fleet's counts at most
    s = 2 * interval + rtt late (one interval until the other program
    writes, one until this one reads); the steady overshoot of n programs
    sharing the load is eps = (n-1) s / (n W - (n-1) s)."""
    s = 2 * interval + rtt
    return (n - 1) * s / (n * window - (n - 1) * s)


class Redis:
    """redis-server on a free port; stop() kills it (SIGKILL when asked).
    extra: more arguments (a replica's --replicaof, cluster options)."""

    def __init__(self, tmp, port=None, extra=()):
        self.tmp = tmp
        self.port = port or free_port()
        self.extra = list(extra)
        self.proc = None
        self.start()

    def start(self):
        argv = ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
                "--appendonly", "no", "--protected-mode", "no", "--dir", self.tmp.path,
                "--loglevel", "warning", "--enable-debug-command", "local"] + self.extra
        self.proc = Proc(argv)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self.cli("PING").strip() == "PONG":
                return
            time.sleep(0.05)
        raise AssertionError(f"redis-server on port {self.port} did not start")

    def cli(self, *args, timeout=5):
        r = subprocess.run(["redis-cli", "-p", str(self.port)] + list(args), capture_output=True,
                           text=True, timeout=timeout)
        return r.stdout

    def kill(self, sig=signal.SIGKILL):
        if self.proc and self.proc.p.poll() is None:
            os.killpg(self.proc.p.pid, sig)
            self.proc.p.wait(5)
        self.proc = None

    def stop(self):
        if self.proc:
            self.proc.stop()
            self.proc = None


class Programs:
    """n http.servers under the shim, each its own program (no shared table)."""

    def __init__(self, tmp, redis_port, n=2, on_error="local", port=None, extra="", limit=LIMIT,
                 where=None):
        """where: the redis section's line saying where Redis is (default
        the address of redis_port): sentinels and master, or cluster."""
        self.port = port or free_port()
        where = where or f'address = "127.0.0.1:{redis_port}"'
        self.conf = tmp.write("redis-fleet.conf", f"""
redis {{
    {where}
    interval         = {int(INTERVAL * 1000)}ms
    timeout          = {int(TIMEOUT * 1000)}ms
    on_backend_error = {on_error}
    {extra}
}}
inbound "web" {{
    port   = {self.port}
    rate   = "{limit}/s"
    scope  = redis
    action = reject
}}
""")
        self.procs = []
        for i in range(n):
            argv = [SLUICE, "run", "-c", self.conf, "--", sys.executable, "-m", "http.server",
                    str(self.port), "--bind", HOSTS[i]]
            self.procs.append(Proc(argv, cwd=SERVE_DIR))
        for i in range(n):
            wait_listen(self.port, HOSTS[i])

    def stderr(self, i):
        return self.procs[i].stderr()

    def stop(self):
        for p in self.procs:
            p.stop()


class Sentinels:
    """A primary, one replica and three redis-sentinels on loopback
    watching it as "mymaster" (quorum 2), with a short down-after (1 s) and
    failover-timeout (3 s) so that a failover takes a few seconds. ready()
    waits until the sentinels know each other and the replica."""

    MASTER = "mymaster"

    def __init__(self, tmp):
        self.tmp = tmp
        self.primary = Redis(tmp)
        self.replica = Redis(tmp, extra=["--replicaof", "127.0.0.1", str(self.primary.port)])
        self.ports, self.procs = [], []
        for i in range(3):
            port = free_port()
            conf = tmp.write(f"sentinel-{i}.conf", f"""port {port}
bind 127.0.0.1
protected-mode no
dir {tmp.path}
sentinel monitor {self.MASTER} 127.0.0.1 {self.primary.port} 2
sentinel down-after-milliseconds {self.MASTER} 1000
sentinel failover-timeout {self.MASTER} 3000
sentinel parallel-syncs {self.MASTER} 1
""")
            self.ports.append(port)
            self.procs.append(Proc(["redis-sentinel", conf, "--loglevel", "warning"]))
        for port in self.ports:
            wait_port(port)

    def where(self):
        return (f'sentinels = "{",".join(f"127.0.0.1:{p}" for p in self.ports)}"\n'
                f'    master = "{self.MASTER}"')

    def cli(self, i, *args):
        r = subprocess.run(["redis-cli", "-p", str(self.ports[i])] + list(args),
                           capture_output=True, text=True, timeout=5)
        return r.stdout

    def master_port(self, i=0):
        out = self.cli(i, "SENTINEL", "get-master-addr-by-name", self.MASTER).split()
        return int(out[1]) if len(out) == 2 else None

    def ready(self, timeout=30.0):
        """Every sentinel sees two others and the replica (hello messages
        go every 2 s), and the replica is in sync."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            ok = all("OK" in self.cli(i, "SENTINEL", "ckquorum", self.MASTER) and
                     "num-other-sentinels\n2" in self.cli(i, "SENTINEL", "master", self.MASTER) and
                     f"\n{self.replica.port}\n" in self.cli(i, "SENTINEL", "replicas", self.MASTER)
                     for i in range(3))
            if ok and "master_link_status:up" in self.replica.cli("INFO", "replication"):
                return
            time.sleep(0.2)
        raise AssertionError("the sentinels did not settle\n" + self.cli(0, "SENTINEL", "master", self.MASTER))

    def stop(self):
        for p in self.procs:
            p.stop()
        self.primary.stop()
        self.replica.stop()


def crc16(data):
    """Redis Cluster's CRC16 (XMODEM), to know which node a key lives on."""
    crc = 0
    for b in data:
        crc ^= b << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021 if crc & 0x8000 else crc << 1) & 0xffff
    return crc


def key_slot(key):
    """The slot of a key, hash tags as Redis Cluster reads them."""
    o = key.find("{")
    if o >= 0:
        c = key.find("}", o + 1)
        if c > o + 1:
            key = key[o + 1:c]
    return crc16(key.encode()) % 16384


def cluster_port():
    """A free port whose cluster bus port (+10000) is free too."""
    for _ in range(100):
        p = free_port()
        if p < 55000:
            try:
                with socket.socket() as s:
                    s.bind(("127.0.0.1", p + 10000))
                return p
            except OSError:
                pass
    raise AssertionError("no port for a cluster node")


class Cluster:
    """A Redis Cluster on loopback: `primaries` primaries (and `replicas`
    replicas each), cluster-node-timeout 1 s, made with redis-cli --cluster
    create; ready when every node says cluster_state:ok."""

    def __init__(self, tmp, primaries=3, replicas=0):
        self.tmp = tmp
        self.nodes = []
        for i in range(primaries * (1 + replicas)):
            port = cluster_port()
            self.nodes.append(Redis(tmp, port=port, extra=[
                "--cluster-enabled", "yes", "--cluster-config-file", f"nodes-{port}.conf",
                "--cluster-node-timeout", "1000", "--cluster-require-full-coverage", "no",
                "--logfile", os.path.join(tmp.path, f"redis-{port}.log"), "--loglevel", "notice",
                "--repl-diskless-sync-delay", "0"]))
        r = subprocess.run(["redis-cli", "--cluster", "create"] +
                           [f"127.0.0.1:{n.port}" for n in self.nodes] +
                           ["--cluster-replicas", str(replicas), "--cluster-yes"],
                           capture_output=True, text=True, timeout=60)
        check(r.returncode == 0, f"cluster create: {r.stdout}{r.stderr}")
        self.wait_ok()

    def wait_ok(self, timeout=30.0):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            live = [n for n in self.nodes if n.proc]
            if (all("cluster_state:ok" in n.cli("CLUSTER", "INFO") for n in live) and
                    all("role:master" in i or "master_link_status:up" in i
                        for i in (n.cli("INFO", "replication") for n in live))):
                return  # and every replica in sync: it could take over
            time.sleep(0.1)
        raise AssertionError("the cluster is not ok")

    def where(self):
        return f'cluster = "{",".join(f"127.0.0.1:{n.port}" for n in self.nodes[:3])}"'

    def primaries(self):
        """{port: (node id, [(first, last) slot ranges])} as the cluster says now."""
        alive = next(n for n in self.nodes if n.proc)
        out = {}
        for line in alive.cli("CLUSTER", "NODES").splitlines():
            f = line.split()
            if "master" in f[2] and "fail" not in f[2]:
                ranges = []
                for r in f[8:]:
                    if r.startswith("["):
                        continue
                    a, _, b = r.partition("-")
                    ranges.append((int(a), int(b or a)))
                out[int(f[1].split(":")[1].split("@")[0])] = (f[0], ranges)
        return out

    def node_of(self, slot):
        for port, (_, ranges) in self.primaries().items():
            if any(a <= slot <= b for a, b in ranges):
                return port
        return None

    def spread(self, keys, slot_of=lambda k: key_slot(key(k, 0))):
        """{primary port: [keys it serves]} from one CLUSTER NODES (a
        thousand keys are one question, not a thousand)."""
        prim, out = self.primaries(), {}
        for k in keys:
            s = slot_of(k)
            port = next((p for p, (_, rs) in prim.items() if any(a <= s <= b for a, b in rs)), None)
            out.setdefault(port, []).append(k)
        return out

    def node(self, port):
        return next(n for n in self.nodes if n.port == port)

    def reshard(self, src, dst, count):
        """redis-cli --cluster reshard of `count` slots from the primary on
        port src to the one on dst (the first slots of src's ranges);
        (monotonic start, end)."""
        prim = self.primaries()
        tr = time.monotonic()
        r = subprocess.run(["redis-cli", "--cluster", "reshard", f"127.0.0.1:{src}",
                            "--cluster-from", prim[src][0], "--cluster-to", prim[dst][0],
                            "--cluster-slots", str(count), "--cluster-yes"],
                           capture_output=True, text=True, timeout=60)
        te = time.monotonic()
        check(r.returncode == 0, f"reshard: {r.stdout[-2000:]}{r.stderr}")
        return tr, te

    def stop(self):
        for n in self.nodes:
            n.stop()


def connect_once(host, port, client=CLIENT):
    """One connection from CLIENT: (admitted, seconds it took)."""
    t = time.monotonic()
    try:
        with socket.socket() as s:
            s.settimeout(5)
            s.bind((client, 0))
            s.connect((host, port))
            s.sendall(b"GET / HTTP/1.0\r\n\r\n")
            ok = s.recv(64).split(b"\r\n")[0].endswith((b" 200 OK", b" 200"))
    except OSError:
        ok = False
    return ok, time.monotonic() - t


class Flood:
    """Clients connecting as fast as they can to `hosts` round robin.
    Records (start, admitted, duration) of every attempt."""

    def __init__(self, hosts, port, threads=6, clients=(CLIENT,)):
        self.hosts, self.port, self.clients = list(hosts), port, list(clients)
        self.log = []
        self.lock = threading.Lock()
        self.stop_flag = False
        self.ts = [threading.Thread(target=self._client, args=(k,), daemon=True)
                   for k in range(threads)]
        for t in self.ts:
            t.start()

    def _client(self, k):
        while not self.stop_flag:
            self._attempt(k)
            k += 1

    def _attempt(self, k):
        t = time.monotonic()
        client = self.clients[(k // len(self.hosts)) % len(self.clients)]
        ok, took = connect_once(self.hosts[k % len(self.hosts)], self.port, client)
        with self.lock:
            self.log.append((t, ok, took, client))

    def rate(self, t0, t1):
        with self.lock:
            return sum(1 for t, ok, *_ in self.log if ok and t0 <= t < t1) / (t1 - t0)

    def admitted_by(self, t0, t1):
        """{client address: admitted a second} from t0 to t1."""
        with self.lock:
            out = {c: 0 for c in self.clients}
            for t, ok, _, c in self.log:
                if ok and t0 <= t < t1:
                    out[c] += 1
            return {c: n / (t1 - t0) for c, n in out.items()}

    def attempts(self, t0, t1):
        with self.lock:
            return sum(1 for t, *_ in self.log if t0 <= t < t1)

    def slowest(self, t0, t1):
        with self.lock:
            return max((d for t, _, d, *_ in self.log if t0 <= t < t1), default=0.0)

    def stop(self):
        self.stop_flag = True
        for t in self.ts:
            t.join(10)


class Paced(Flood):
    """Clients connecting at `rate` a second in all, evenly spaced, to
    `hosts` round robin (steady load): each of `threads` keeps its own
    schedule of rate/threads a second, never catching up in a burst."""

    def __init__(self, hosts, port, rate, threads=2):
        self.period = threads / rate
        super().__init__(hosts, port, threads)

    def _client(self, k):
        at = time.monotonic() + k * self.period / len(self.ts)
        while not self.stop_flag:
            now = time.monotonic()
            if now < at:
                time.sleep(at - now)
            at = max(at + self.period, time.monotonic() - self.period)
            self._attempt(k)
            k += 1


def metrics(pid):
    """`sluice metrics --pid PID` as {(name, kind label): value}."""
    r = run([SLUICE, "metrics", "--pid", str(pid)])
    check(r.returncode == 0, f"metrics: {r.stderr}")
    out = {}
    for fam in text_string_to_metric_families(r.stdout):
        for s in fam.samples:
            out[(s.name, s.labels.get("kind"))] = s.value
    return out


def node_calls(pid):
    """sluice_redis_node_calls_total of `sluice metrics --pid PID`: {node: calls}."""
    r = run([SLUICE, "metrics", "--pid", str(pid)])
    check(r.returncode == 0, f"metrics: {r.stderr}")
    return {s.labels["node"]: s.value for fam in text_string_to_metric_families(r.stdout)
            for s in fam.samples if s.name == "sluice_redis_node_calls_total"}


# The cluster tests' per-client keys (rule "web", documented layout) and the
# redis lines of two programs' logs.
def key(client, w):
    return f"sluice:{{web:{client}}}:{w}"


def count_lines(progs, text):
    """How often each of the first two programs logged `text`."""
    return [progs.stderr(i).count(text) for i in range(2)]


def wait_for(progs, cond, timeout, what):
    """Polls cond every 20 ms; fails with the programs' redis lines."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return
        time.sleep(0.02)
    raise AssertionError(f"{what} within {timeout} s\n{redis_lines(progs)}")


CLUSTER_L = 10
CLUSTER_CLIENTS = [f"127.0.1.{i}" for i in range(1, 13)]


class ClusterFlood:
    """The cluster tests' set-up: a Cluster (`replicas` each), which primary
    each of twelve client addresses' keys is on (all three hold some), two
    programs sharing CLUSTER_L connections a second per address through it
    (`extra`: more redis lines), and a flood of the twelve. stop() ends
    them all, whatever was started."""

    def __init__(self, tmp, replicas=0, extra=""):
        self.cl = Cluster(tmp, primaries=3, replicas=replicas)
        self.progs = self.flood = None
        try:
            self.by_node = self.cl.spread(CLUSTER_CLIENTS)
            print("keys per primary:", {p: len(v) for p, v in self.by_node.items()})
            check(len(self.by_node) == 3 and None not in self.by_node,
                  f"the keys should spread over the three primaries: {self.by_node}")
            self.progs = Programs(tmp, 0, where=self.cl.where(), limit=f"{CLUSTER_L}", extra=extra)
            self.flood = Flood(HOSTS[:2], self.progs.port, threads=4, clients=CLUSTER_CLIENTS)
            self.t0 = time.monotonic()
        except BaseException:
            self.stop()
            raise

    def stop(self):
        if self.flood:
            self.flood.stop()
        if self.progs:
            self.progs.stop()
        self.cl.stop()


def redis_lines(progs):
    """The redis lines of the first two programs' logs (Programs, or Procs)."""
    ps = progs.procs if isinstance(progs, Programs) else progs
    return "\n".join(l for p in ps[:2] for l in p.stderr().splitlines() if "redis:" in l)
