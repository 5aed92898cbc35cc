# SPDX-License-Identifier: BSD-2-Clause
"""`sluice stats` (issue 9 item 9): request rules get their own `requests`
section (allowed, limited, delayed, would_limit), under the rule's own name,
and the numbers equal what a test client saw.

One python ThreadingHTTPServer (HTTP/1.1) listens on two ports under a
config with a named table:
- port A: "conn" (rate=5/10s burst=5 action=reply: connections) and "api"
  (req_rate=1/10s req_burst=2 per=header:X-API-Key action=reply). 8
  connections with one request each: "conn" admits 5 and answers 3 with
  429, "api" sees the 5 admitted requests and admits 2: 2 x 200, 6 x 429.
- port B: "slow" (req_rate=4/s req_burst=1 action=delay): 4 requests in
  turn on one keep-alive connection, all 200; the first passes at once, the
  3 others wait their turn (each arrives right after the previous answer,
  well inside the 250 ms interval, even on a loaded machine). A delayed
  request passes too: allowed counts all 4, delayed the 3 that waited.
- port B also has "watch" (req_rate=1/10s req_burst=1 dry_run=yes): of the
  4 requests 1 is allowed and 3 would be limited, none refused.
A rule with a request rate also counts, in the connections section, the
connections it saw (each one passes: it has no connection rate).
Exact counts, no tolerance: each request is decided once per rule.
"""
from lib import *

def status(data):
    return int(data.split()[1]) if data else None


def sections(text):
    """{section: {rule: {counter: n}}}; section 'connections' or 'requests'."""
    out, sec, hdr = {}, "connections", None
    for line in text.splitlines()[1:]:
        f = line.split()
        if not f:
            continue
        if f[0] == "requests":
            sec = "requests"
        elif f[0] == "rule":
            hdr = f[1:]
        else:
            out.setdefault(sec, {})[f[0]] = dict(zip(hdr, map(float, f[1:])))
    return out


name = f"it-stats-{os.getpid()}"
pa, pb = free_port(), free_port()
with TempDir() as tmp:
    conf = tmp.write("s.conf", f"""
shared = "{name}"
inbound "conn" {{ port = {pa}  rate = "5/10s"  burst = 5  action = reply }}
inbound "api" {{ port = {pa}  req_rate = "1/10s"  req_burst = 2  per = "header:X-API-Key"
                 action = reply }}
inbound "slow" {{ port = {pb}  req_rate = "4/s"  req_burst = 1  action = delay }}
inbound "watch" {{ port = {pb}  req_rate = "1/10s"  req_burst = 1  dry_run = yes }}
""")
    try:
        with Proc(sluice_argv(keepalive_argv(pa, pb), config=conf)):
            wait_listen(pa)
            wait_listen(pb)
            codes = [http_get(pa, headers="X-API-Key: k\r\n")[0] for _ in range(8)]
            check(codes.count(200) == 2 and codes.count(429) == 6, f"port A: the client saw {codes}")

            codes = []
            with socket.create_connection(("127.0.0.1", pb), timeout=5) as s:
                f = s.makefile("rb")
                for i in range(4):
                    s.sendall(b"GET / HTTP/1.1\r\nHost: t\r\n\r\n")
                    line = f.readline()
                    while f.readline() not in (b"\r\n", b""):
                        pass
                    f.read(3)
                    codes.append(status(line))
            check(codes == [200] * 4, f"port B: the client saw {codes}")

            r = run([SLUICE, "stats", "-c", conf])
            check(r.returncode == 0, f"sluice stats: {r.stderr}")
            print(r.stdout)
            got = sections(r.stdout)
            want = {("connections", "conn"): {"allowed": 5, "limited": 3},
                    ("requests", "api"): {"allowed": 2, "limited": 3, "delayed": 0},
                    ("requests", "slow"): {"allowed": 4, "delayed": 3, "limited": 0},
                    ("requests", "watch"): {"would_limit": 3, "limited": 0}}
            for (sec, rule), counts in want.items():
                row = got.get(sec, {}).get(rule)
                check(row is not None, f"no row for {rule} in section {sec}:\n{r.stdout}")
                for k, n in counts.items():
                    check(row[k] == n, f"{sec} {rule} {k} = {row[k]}, the client saw {n}\n{r.stdout}")
            check(not any(k.endswith(":req") for s in got.values() for k in s),
                  f"request rules shown under their table name:\n{r.stdout}")
    finally:
        shm_cleanup(name)
print("ok")
