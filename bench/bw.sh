#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# bw.sh - byte-rate limiting, sluice beside trickle in the same run:
# accuracy (measured / configured) and CPU seconds per GB transferred.
# Prints a markdown table to stdout; progress and notes go to stderr.
# About 70 s. Asserts nothing.
#
# download: python3 http.server limited on the server side (sluice inbound
#   send_rate; trickle -s -u on the server), curl fetching the file.
# upload:   curl -T limited on the client side (sluice outbound send_rate;
#   trickle -s -u on curl) to a plain python sink reading Content-Length.
# Each transfer lasts about SECONDS (4) at the configured rate; rates
# RATES (1000000 8000000 bytes/s). An unlimited row per direction is the
# cost of the programs themselves.
#
# trickle's unit is KB/s with K = 1024 (trickle multiplies by 1024): 1 MB/s
# is -u 977 (1000448 B/s), 8 MB/s is -u 7813 (8000512 B/s); accuracy is
# computed against the rate each tool was actually given.
# Measured rate = bytes / curl's time_total, burst included (sluice's
# default burst is 0.1 s of the rate: +2.5 % on a 4 s transfer; the
# "excl. burst" column takes it out for sluice).
# CPU: user + system from getrusage of the waited-for process (microsecond
# resolution); the server's is its whole life minus the median of three
# start-and-stop runs of the same server under the same tool, so python's
# start-up is not counted. Client CPU is curl's whole run.
#
# Knobs: BUILD (build), SECONDS_PER_RUN (4), RATES ("1000000 8000000").
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD:-$root/build}
case $build in /*) ;; *) build=$root/$build ;; esac

if ! command -v trickle >/dev/null; then
    echo "bench/bw.sh: trickle is missing: installing it (apt-get install trickle)" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -qq --no-install-recommends trickle >/dev/null 2>&1 ||
        { apt-get update -qq && apt-get install -y -qq --no-install-recommends trickle >/dev/null; } ||
        echo "bench/bw.sh: could not install trickle; its rows are left out" >&2
fi

SLUICE="$build/sluice" SECS="${SECONDS_PER_RUN:-4}" RATES="${RATES:-1000000 8000000}" \
exec python3 - <<'EOF'
import json, os, resource, shutil, signal, socket, statistics, subprocess, sys, tempfile, time

SLUICE = os.environ["SLUICE"]
SECS = float(os.environ["SECS"])
RATES = [int(r) for r in os.environ["RATES"].split()]
TRICKLE = shutil.which("trickle")
SINK = r"""
import socket, sys, threading
ls = socket.socket(); ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
ls.bind(('127.0.0.1', int(sys.argv[1]))); ls.listen(16)
def handle(c):
    f = c.makefile('rb'); n = 0
    while True:
        l = f.readline()
        if l in (b'\r\n', b'\n', b''): break
        if l.lower().startswith(b'content-length:'): n = int(l.split(b':')[1])
    got = 0
    while got < n:
        b = f.read(min(65536, n - got))
        if not b: break
        got += len(b)
    c.sendall(b'HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n'); c.close()
while True:
    c, _ = ls.accept(); threading.Thread(target=handle, args=(c,), daemon=True).start()
"""


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_listen(port, timeout=10):
    want = f":{port:04X} "
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        with open("/proc/net/tcp") as f:
            if any(want in l and l.split()[3] == "0A" for l in f):
                return
        time.sleep(0.02)
    raise RuntimeError(f"nothing listening on {port}")


def child_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def wrap(tool, rate, side):
    """argv prefix limiting a program to `rate` bytes/s; side: in (server
    sends) or out (client sends), port filled in later."""
    if tool == "sluice":
        opt = "--in" if side == "in" else "--out"
        rule = ("port={port} " if side == "in" else "to=127.0.0.1 port={port} ") + f"send_rate={rate}B/s"
        return [SLUICE, "run", opt, rule, "--"]
    if tool == "trickle":
        return [TRICKLE, "-s", "-u", str(round(rate / 1024))]
    return []


def given(tool, rate):
    return round(rate / 1024) * 1024 if tool == "trickle" else rate


class Server:
    """A server process; stop() returns its CPU seconds (getrusage)."""

    def __init__(self, argv, port, cwd):
        self.c0 = child_cpu()
        self.p = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                  start_new_session=True)
        wait_listen(port)

    def stop(self):
        os.killpg(self.p.pid, signal.SIGTERM)
        try:
            self.p.wait(5)
        except subprocess.TimeoutExpired:
            os.killpg(self.p.pid, signal.SIGKILL)
            self.p.wait(5)
        return child_cpu() - self.c0


def fmt(port, argv):
    return [a.replace("{port}", str(port)) for a in argv]


def server_argv(direction, port, prefix, d):
    if direction == "download":
        return fmt(port, prefix) + [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1",
                                    "--directory", d]
    return [sys.executable, "-c", SINK, str(port)]


def idle_cpu(direction, tool, d):
    """Median CPU of starting and stopping the server under `tool`."""
    xs = []
    for _ in range(3):
        port = free_port()
        prefix = wrap(tool, 1_000_000, "in") if direction == "download" else []
        s = Server(server_argv(direction, port, prefix, d), port, d)
        time.sleep(0.2)
        xs.append(s.stop())
    return statistics.median(xs)


def transfer(direction, tool, rate, size, d, idle):
    port = free_port()
    path = os.path.join(d, f"f{size}")
    if not os.path.exists(path):
        blk = os.urandom(1 << 20)
        with open(path, "wb") as f:
            for i in range(0, size, len(blk)):
                f.write(blk[:min(len(blk), size - i)])
    limited_server = direction == "download" and tool != "none"
    s = Server(server_argv(direction, port, wrap(tool, rate, "in") if limited_server else [], d), port, d)
    try:
        client = ["curl", "-sS", "-o", "/dev/null", "-w", "%{json}"]
        if direction == "download":
            argv = client + [f"http://127.0.0.1:{port}/f{size}"]
        else:
            argv = fmt(port, wrap(tool, rate, "out")) + client + ["-T", path, "-H", "Expect:",
                                                                   f"http://127.0.0.1:{port}/up"]
        c0 = child_cpu()
        r = subprocess.run(argv, capture_output=True, text=True, timeout=120)
        ccpu = child_cpu() - c0
    finally:
        scpu = s.stop() - idle
    res = json.loads(r.stdout.strip().splitlines()[-1])
    moved = res["size_download"] if direction == "download" else res["size_upload"]
    if moved != size:
        raise RuntimeError(f"{direction} {tool}: moved {moved} of {size}: {r.stderr}")
    return res["time_total"], max(scpu, 0.0), ccpu


tools = ["sluice"] + (["trickle"] if TRICKLE else [])
rows = []
with tempfile.TemporaryDirectory(prefix="sluice-bench-bw-") as d:
    os.chmod(d, 0o755)
    for direction in ("download", "upload"):
        idles = {t: idle_cpu(direction, t, d) for t in ["none"] + tools}
        big = int(max(RATES) * SECS)
        t, sc, cc = transfer(direction, "none", 0, big, d, idles["none"])
        rows.append((direction, "unlimited", "none", big, t, None, None, sc, cc))
        log(f"bw: {direction} unlimited {big} B in {t:.3f}s")
        for rate in RATES:
            size = int(rate * SECS)
            for tool in tools:
                t, sc, cc = transfer(direction, tool, rate, size, d, idles[tool])
                g = given(tool, rate)
                rows.append((direction, rate, tool, size, t, g, (size - (g / 10 if tool == "sluice" else 0)) / t,
                             sc, cc))
                log(f"bw: {direction} {rate} B/s {tool}: {size} B in {t:.3f}s")

print("| direction | configured | tool | bytes | seconds | measured MB/s | accuracy | accuracy excl. burst "
      "| server CPU s/GB | client CPU s/GB |")
print("|---|---|---|---|---|---|---|---|---|---|")
for direction, rate, tool, size, t, g, excl, sc, cc in rows:
    mbs = size / t / 1e6
    conf = "unlimited" if rate == "unlimited" else f"{rate / 1e6:g} MB/s"
    acc = "" if g is None else f"{size / t / g:.3f}"
    ex = "" if g is None or tool != "sluice" else f"{excl / g:.3f}"
    print(f"| {direction} | {conf} | {tool} | {size} | {t:.3f} | {mbs:.3f} | {acc} | {ex} "
          f"| {sc / size * 1e9:.2f} | {cc / size * 1e9:.2f} |")
print()
trickle_dl = [r for r in rows if r[0] == "download" and r[2] == "trickle"]
if any(size / t / g > 2 for _, _, _, size, t, g, *_ in trickle_dl):
    print("_trickle did not limit the downloads: it tracks only sockets made by socket() and accept(), "
          "and python3 http.server accepts with accept4 (trickle-overload.so has no accept4, nor epoll)._")
    print()
print(f"_Each limited transfer lasts about {SECS:g} s at its rate; accuracy = bytes / curl's time_total / the "
      "rate the tool was given (trickle: -u in KiB/s, so 977 and 7813 KiB/s). Server CPU is its getrusage "
      "minus a start-and-stop run of the same server; client CPU is curl's. python3 http.server and a "
      "python sink are the servers, so CPU/GB is dominated by python; compare the rows of one "
      "direction with each other and with the unlimited row._")
EOF
