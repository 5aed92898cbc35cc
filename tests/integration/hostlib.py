# SPDX-License-Identifier: BSD-2-Clause
"""Helpers for the test_hosts_* tests (issue 21): a program nobody here
wrote is run bare and under rules that never limit, and what a client
observes must be the same.

The three ways every host runs:
  bare   no sluice at all;
  req    a request rule that never limits (req_rate=1000000/s), so sluice
         reads heads on the connection (and holds or hands over bytes in
         parts) although it never denies;
  bytes  byte, connection-rate and concurrency rules with limits no test
         reaches (10 GB/s, 1,000,000/s, 1,000,000 at once), so every read
         and write passes through the byte accounting.
"""
import socket

from lib import *

MODES = ("bare", "req", "bytes")

REQ = "req_rate=1000000/s req_burst=1000000"
BYTES = "recv_rate=10GB/s send_rate=10GB/s conns=1000000 rate=1000000/s burst=1000000"


def rules(mode, port):
    """The inbound rule of `mode` on local port `port` ([] when bare)."""
    return {"bare": [], "req": [f"port={port} {REQ}"],
            "bytes": [f"port={port} {BYTES}"]}[mode]


def out_rules(mode, port, to="127.0.0.1"):
    """The outbound rule of `mode` to to:port ([] when bare)."""
    return {"bare": [], "req": [f"to={to} port={port} {REQ}"],
            "bytes": [f"to={to} port={port} {BYTES}"]}[mode]


def wrap(mode, argv, ins=(), outs=()):
    """argv as is when bare, else under `sluice run` with the rules."""
    if mode == "bare":
        return list(argv)
    return sluice_argv(argv, ins=ins, outs=outs)


def exchange(port, parts, shut=False, timeout=3.0, pause=0.0, until=None,
             host="127.0.0.1", chunk=1 << 16):
    """A raw client: writes `parts` (bytes each, `pause` seconds apart, with
    TCP_NODELAY so each is its own segment), optionally half-closes
    (shutdown(SHUT_WR)), then reads until the server closes, `until(data)`
    is true, or `timeout` passes. Returns what it read (a stall shows as
    less than bare, after the timeout)."""
    data = b""
    deadline = time.monotonic() + timeout
    with socket.create_connection((host, port), timeout=timeout) as s:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        def send():
            try:
                for i, p in enumerate(parts):
                    if i and pause:
                        time.sleep(pause)
                    s.sendall(p)
                if shut:
                    s.shutdown(socket.SHUT_WR)
            except OSError:
                pass  # the server closed: what it answered is the result

        # a thread: a large pipelined stream fills the buffers both ways
        w = threading.Thread(target=send, daemon=True)
        w.start()
        while until is None or not until(data):
            left = deadline - time.monotonic()
            if left <= 0:
                break
            s.settimeout(left)
            try:
                c = s.recv(chunk)
            except (socket.timeout, ConnectionResetError):
                break
            if not c:
                break
            data += c
        w.join(timeout)
    return data


def bytewise(b):
    """b as a list of one-byte writes."""
    return [b[i:i + 1] for i in range(len(b))]


def denials(proc):
    """sluice's lines in a program's stderr that say something was limited
    (there must be none under a rule that never limits)."""
    return [l for l in sluice_lines(proc.stderr())
            if re.search(r"limit|denied|reject|delay", l, re.I)
            and not re.search(r"note:|warning: .*(Go|static)", l)]


def compare(results, what=""):
    """results: {mode: {case: observable}}. Returns one line per case whose
    observable differs from bare's."""
    bad = []
    bare = results["bare"]
    for mode, got in results.items():
        if mode == "bare":
            continue
        for case, v in got.items():
            if v != bare.get(case):
                b = bare.get(case)
                bad.append(f"{what}{case}: under {mode} {short(v)}, bare {short(b)}")
    return bad


def short(v, n=300):
    s = repr(v)
    return s if len(s) <= n else s[:n] + f"... ({len(s)} chars)"


def activity(proc):
    """What sluice's table in proc counted: {"connections": allowed,
    "requests": allowed} summed over rules (`sluice stats --pid`), so a
    test can tell that the rule really applied to the host."""
    r = run([SLUICE, "stats", "--pid", str(proc.p.pid)], timeout=10)
    check(r.returncode == 0, f"sluice stats --pid {proc.p.pid}: {r.stdout}{r.stderr}")
    out = {"connections": 0, "requests": 0}
    sec = "connections"
    for line in r.stdout.splitlines():
        if line.startswith("requests"):
            sec = "requests"
        f = line.split()
        if len(f) >= 2 and f[1].isdigit() and not line.startswith("table"):
            out[sec] += int(f[1])
    return out


def applied(mode, proc, what, http=True):
    """Asserts that under `mode` the rule counted something in proc (the
    rule really applied: requests for req on an HTTP host, connections
    otherwise), and returns the counts for the test's output."""
    if mode == "bare":
        return None
    a = activity(proc)
    key = "requests" if mode == "req" and http else "connections"
    check(a[key] > 0, f"{what} under {mode}: sluice counted no {key} ({a})")
    return a
