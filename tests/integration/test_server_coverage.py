# SPDX-License-Identifier: BSD-2-Clause
"""The servers table (issue 34, item 6), measured: docs/servers.md's rows
between <!-- servers:begin --> and <!-- servers:end --> are what this
test finds, and it fails when they differ (SLUICE_COVERAGE_WRITE=1
rewrites them: scripts/gen-coverage.py).

Each server of servers.ALL, plain and over its own TLS, runs under
`sluice run --in 'port=P req_rate=1/m req_burst=2 per=header:X-API-Key
action=reply'`. A client (this process, not under the shim) sends key A
6 GETs one after another on a keep-alive connection (a new connection
after a close or a reset, as HTTP clients do), then key B 2 GETs, from
the same address. The refill (1 a minute) adds nothing within the run:
due are 2 for A and 2 for B. A row says:
  - per key: "yes" when A was served 2 (or 3: one refill at most) and B 2;
    "per address" when A was, and B none; "not limited" when A was served
    6; otherwise the counts;
  - a denied request: "429" (read, with the RateLimit fields), "reset"
    (the connection reset or closed without an answer), or what it got;
    with "at once" when every denial's answer came within LATENCY_MAX of
    its request, else "late" (15-20 s keep-alive waits were seen before
    issue 34 item 2);
  - what the server itself logged serving (awaited up to 2 s while it
    runs, and read again once it has ended, for lighttpd, which buffers its
    log): it must be what the client saw served (asserted, not a column).
The bound on latency is 1 s, not the 50 ms target: a loaded 2-CPU
machine cannot miss 1 s by scheduling alone, and it is 15 times under the
shortest keep-alive wait the defect made, so the column does not depend
on the machine's speed.
"""
import re

import servers
from denylib import Conn
from lib import *

WRITE = os.environ.get("SLUICE_COVERAGE_WRITE") == "1"
DOC = os.path.join(ROOT, "docs", "servers.md")
LATENCY_MAX = 1.0


class Client:
    """One key's GETs, one at a time on a keep-alive connection
    (denylib.Conn), a new one after a close or a reset."""

    def __init__(self, port, tls):
        self.port, self.tls, self.c = port, tls, None

    def drop(self):
        if self.c:
            try:
                self.c.close()
            except OSError:
                pass
        self.c = None

    def get(self, key):
        """(status or a word, headers, seconds from sending to the answer)."""
        t0 = time.monotonic()
        try:
            if not self.c:
                self.c = Conn(self.port, self.tls)
            self.c.s.sendall(f"GET /index.html HTTP/1.1\r\nHost: localhost\r\nX-API-Key: {key}"
                             "\r\n\r\n".encode())
            status, h = self.c.answer()
        except OSError:
            status, h = None, "reset"
        took = time.monotonic() - t0
        if status is None:
            self.drop()
            word = "closed" if h == "closed" else "no answer" if h.startswith("no answer") else "reset"
            return word, {}, took
        if h.get("connection", "").lower() == "close":
            self.drop()
        return status, h, took


def measure(name, recipe, tls):
    """The row's cells for one server and transport, or a reason."""
    with TempDir() as tmp:
        port = free_port()
        try:
            st = recipe(tmp, port, tls)
        except servers.Missing as e:
            return None, str(e)
        rule = f"port={port} req_rate=1/m req_burst=2 per=header:X-API-Key action=reply"
        with Proc(sluice_argv(st.argv, ins=[rule]), env=st.env, cwd=st.cwd) as p:
            try:
                try:
                    wait_listen(port, timeout=60)
                except AssertionError as e:
                    return None, f"did not start: {e}\n{p.stderr()[-1500:]}"
                a, b = Client(port, tls), Client(port, tls)
                got_a = [a.get("key-a") for _ in range(6)]
                got_b = [b.get("key-b") for _ in range(2)]
                a.drop()
                b.drop()
                want = sum(1 for s, _, _ in got_a + got_b if s == 200)
                deadline = time.monotonic() + 2  # servers log after answering
                while len(st.served()) < want and time.monotonic() < deadline:
                    time.sleep(0.05)
                stderr = p.stderr()
            finally:
                st.stop()
        logged = st.served()  # the server has ended: what it logged is written (lighttpd buffers)
    served_a = sum(1 for s, _, _ in got_a if s == 200)
    served_b = sum(1 for s, _, _ in got_b if s == 200)
    if served_a in (2, 3) and served_b == 2:
        per = "yes"
    elif served_a in (2, 3) and served_b == 0:
        per = "per address"
    elif served_a == 6:
        per = "not limited"
    else:
        per = f"A {served_a}/6, B {served_b}/2"
    denied = [(s, h, t) for s, h, t in got_a + got_b if s != 200]
    kinds = []
    for s, h, _ in denied:
        k = "429" if s == 429 and "ratelimit" in h else str(s)
        if k not in kinds:
            kinds.append(k)
    late = any(t > LATENCY_MAX for _, _, t in denied)
    denial = (" or ".join(kinds) + (" late" if late else " at once")) if denied else "none"
    problems = []
    if st._served or st.log:
        want = served_a + served_b
        if len(logged) != want and not WRITE:
            problems.append(f"{name} {'TLS' if tls else 'plain'}: the server logged {len(logged)} "
                            f"requests, the client saw {want} served\n{stderr[-1500:]}")
    detail = (f"A {[s for s, _, _ in got_a]}, B {[s for s, _, _ in got_b]}, "
              f"slowest denial {max((t for _, _, t in denied), default=0):.3f} s")
    return (per, denial, detail, problems), None


def between(path):
    text = open(path).read()
    m = re.search(r"<!-- servers:begin -->\n(.*?)<!-- servers:end -->", text, re.S)
    check(m, f"{path}: no servers:begin/end markers")
    return text, m


def rows_of(inner):
    out = {}
    for l in inner.splitlines():
        cells = [c.strip() for c in l.strip().strip("|").split("|")]
        if len(cells) >= 4 and cells[0] not in ("server", "---"):
            out[(cells[0], cells[1])] = (cells[2], cells[3])
    return out


def main():
    t0 = time.monotonic()
    lines = ["| server | transport | per key | a denied request gets |", "|---|---|---|---|"]
    measured, problems, report = {}, [], []
    for name, recipe in servers.ALL:
        for tls in (False, True):
            transport = "its own TLS" if tls else "plain"
            cells, missing = measure(name, recipe, tls)
            if missing:
                report.append(f"{name} {transport}: not measured: {missing}")
                print(report[-1], flush=True)
                if "did not start" in missing:
                    problems.append(report[-1])
                continue
            per, denial, detail, probs = cells
            problems += probs
            measured[(name, transport)] = (per, denial)
            lines.append(f"| {name} | {transport} | {per} | {denial} |")
            report.append(f"{name} {transport}: {per}; {denial} ({detail})")
            print(report[-1], flush=True)
    inner = "\n" + "\n".join(lines) + "\n\n"
    if WRITE:
        text, m = between(DOC)
        open(DOC, "w").write(text[:m.start(1)] + inner + text[m.end(1):])
        print(f"wrote {DOC}")
    else:
        have = rows_of(between(DOC)[1].group(1))
        for key, cells in measured.items():
            if have.get(key) != cells:
                problems.append(f"docs/servers.md differs from what was measured for {key}:\n"
                                f"  file:     {have.get(key)}\n  measured: {cells}\n"
                                "(regenerate: scripts/gen-coverage.py)")
    print(f"took {time.monotonic() - t0:.1f} s")
    check(not problems, "\n\n".join(problems))
    print("ok")


main()
