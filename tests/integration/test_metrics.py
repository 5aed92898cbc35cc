# SPDX-License-Identifier: BSD-2-Clause
"""`sluice metrics` (issue 13): a running program's counters in the
Prometheus text format, printed and served over HTTP.

A python http.server runs under a config file with a named table and two
inbound rules on its port, each counting its own kind: "conn" (rate=5/10s
burst=5 action=reply: connections) and "api" (req_rate=1/10s req_burst=2
per=header:X-API-Key action=reply: requests). The test makes 8
connections, each with one request carrying a key: the connection rule
admits 5 and refuses 3 (429), the request rule then sees the 5 admitted
requests and admits 2: the client sees 2 x 200 and 6 x 429.
Then:
- `sluice metrics -c FILE` parses with python3-prometheus-client's
  text_string_to_metric_families, and the counters equal what the client
  saw: connections allowed 5 / limited 3, requests allowed 2 / limited 3,
  with direction="in";
- a third rule with `quota = "10/d"` per key: key A makes its 10 calls,
  key B 8: sluice_quota_reached_total says 2 keys reached 80 %, 1 90 %
  and 1 100 % (what the alert rules in examples/monitoring watch);
- `sluice metrics --shared NAME --listen 127.0.0.1:P` answers curl with
  the same numbers (direction from the file the table says it runs) (Content-Type text/plain; version=0.0.4), 404 elsewhere;
  it is its own process (the server under sluice opens no such port).
- who may read it (issue 31): `--listen P`, a port alone, listens on
  127.0.0.1 only (read from /proc/net/tcp{,6}) and answers there; an
  address other than loopback is warned about on stderr (192.0.2.1, which
  no interface has: the warning comes, nothing is bound); with `--token
  FILE` (mode 600) a request without Authorization, with a wrong token or
  a prefix of the right one gets 401 (with WWW-Authenticate: Bearer), the
  right one 200 and the metrics; the token never reaches stderr; a token
  file every user can read is refused.
"""
import sys

try:
    from prometheus_client.parser import text_string_to_metric_families
except ImportError:  # a python3 other than Debian's: its package is pure python
    sys.path.append("/usr/lib/python3/dist-packages")
    from prometheus_client.parser import text_string_to_metric_families

from lib import *

def samples(text):
    out = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def value(got, name, **labels):
    return got.get((name, tuple(sorted(labels.items()))))


def listening_on(port):
    """The local addresses of the sockets in LISTEN on port, as text."""
    found = set()
    for path, family in (("/proc/net/tcp", socket.AF_INET), ("/proc/net/tcp6", socket.AF_INET6)):
        try:
            lines = open(path).readlines()[1:]
        except OSError:
            continue
        for line in lines:
            local, state = line.split()[1], line.split()[3]
            h, p = local.split(":")
            if state != "0A" or int(p, 16) != port:
                continue
            raw = bytes.fromhex(h)
            # the kernel prints each 32-bit word in host (little-endian) order
            raw = b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4))
            found.add(socket.inet_ntop(family, raw))
    return found


def status(url, *headers):
    args = ["curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}", url]
    for h in headers:
        args += ["-H", h]
    return run(args).stdout


name = f"it-metrics-{os.getpid()}"
port, qport = free_port(), free_port()
with TempDir() as tmp:
    conf = tmp.write("m.conf", f"""
shared = "{name}"
inbound "conn" {{ port = {port}  rate = "5/10s"  burst = 5  action = reply }}
inbound "api" {{ port = {port}  req_rate = "1/10s"  req_burst = 2  per = "header:X-API-Key"
                 action = reply }}
inbound "daily" {{ port = {qport}  req_rate = "1000/s"  quota = "10/d"  per = "header:X-API-Key"
                   action = reply }}
""")
    try:
        with Proc(sluice_argv(keepalive_argv(port, qport), config=conf)):
            wait_listen(port)
            wait_listen(qport)
            codes = [http_get(port, headers="X-API-Key: k\r\n")[0] for _ in range(8)]
            check(codes.count(200) == 2 and codes.count(429) == 6, f"the client saw {codes}")

            r = run([SLUICE, "metrics", "-c", conf])
            check(r.returncode == 0, f"sluice metrics: {r.stderr}")
            got = samples(r.stdout)
            want = {("sluice_connections_total", "conn", "allowed"): 5,
                    ("sluice_connections_total", "conn", "limited"): 3,
                    ("sluice_requests_total", "api", "allowed"): 2,
                    ("sluice_requests_total", "api", "limited"): 3}
            for (metric, rule, outcome), n in want.items():
                v = value(got, metric, rule=rule, direction="in", outcome=outcome)
                check(v == n, f"{metric}{{rule={rule},outcome={outcome}}} = {v}, the client saw {n}\n{r.stdout}")
            check(value(got, "sluice_table_slots") and value(got, "sluice_table_slots_used") >= 1,
                  f"table gauges: {r.stdout}")

            # quota alerts: key A uses all 10 of its daily calls, key B 8
            for key, n in (("A", 10), ("B", 8)):
                for _ in range(n):
                    check(http_get(qport, headers=f"X-API-Key: {key}\r\n")[0] == 200, "within quota")
            check(http_get(qport, headers="X-API-Key: A\r\n")[0] == 429, "A's quota is spent")
            got = samples(run([SLUICE, "metrics", "-c", conf]).stdout)
            for pct, n in (("80", 2), ("90", 1), ("100", 1)):
                v = value(got, "sluice_quota_reached_total", rule="daily", direction="in", percent=pct)
                check(v == n, f"keys at {pct} % of their quota: {v}, expected {n}")

            mport = free_port()
            with Proc([SLUICE, "metrics", "--shared", name, "--listen", f"127.0.0.1:{mport}"]) as m:
                wait_listen(mport)
                r = run(["curl", "-sS", "-i", f"http://127.0.0.1:{mport}/metrics"])
                head, _, body = r.stdout.partition("\n\n")  # text mode: CRLF read as LF
                check(head.startswith("HTTP/1.1 200"), f"curl /metrics: {head}")
                check("text/plain; version=0.0.4" in head, f"content type: {head}")
                got = samples(body)
                v = value(got, "sluice_connections_total", rule="conn", direction="in", outcome="limited")
                check(v == 3, f"served over HTTP: limited = {v}\n{body}")
                r = run(["curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}",
                         f"http://127.0.0.1:{mport}/other"])
                check(r.stdout == "404", f"elsewhere: {r.stdout}")

            # issue 31: a port alone is loopback only, and says nothing
            mport = free_port()
            with Proc([SLUICE, "metrics", "--shared", name, "--listen", str(mport)]) as m:
                wait_listen(mport)
                where = listening_on(mport)
                check(where == {"127.0.0.1"}, f"--listen {mport} listens on {where}, not 127.0.0.1 alone")
                check(status(f"http://127.0.0.1:{mport}/metrics") == "200", "loopback: no answer")
                check("warning" not in m.stderr(), f"a warning for loopback: {m.stderr()}")
            # an address other than loopback: a warning on stderr (192.0.2.1,
            # TEST-NET-1, is on no interface: the bind then fails, nothing listens)
            r = run([SLUICE, "metrics", "--shared", name, "--listen", f"192.0.2.1:{free_port()}"])
            check("warning" in r.stderr and "not a loopback address" in r.stderr,
                  f"no warning for 192.0.2.1: {r.returncode} {r.stderr}")

            # --token FILE: Authorization: Bearer <token>, else 401
            secret = f"tok-{os.getpid()}-Zq9"
            token = tmp.write("token", secret + "\n", mode=0o600)
            mport = free_port()
            url = f"http://127.0.0.1:{mport}/metrics"
            with Proc([SLUICE, "metrics", "--shared", name, "--listen", f"127.0.0.1:{mport}",
                       "--token", token]) as m:
                wait_listen(mport)
                for what, headers in (("no Authorization", ()),
                                      ("a wrong token", (f"Authorization: Bearer {secret}x",)),
                                      ("a prefix of the token", (f"Authorization: Bearer {secret[:-1]}",)),
                                      ("the token as Basic", (f"Authorization: Basic {secret}",))):
                    got = status(url, *headers)
                    check(got == "401", f"{what}: {got}, expected 401")
                    got = status(f"http://127.0.0.1:{mport}/stats.json", *headers)
                    check(got == "401", f"/stats.json, {what}: {got}, expected 401")
                r = run(["curl", "-sS", "-i", url])
                check("WWW-Authenticate: Bearer" in r.stdout, f"401 without a challenge: {r.stdout}")
                r = run(["curl", "-sS", "-i", "-H", f"Authorization: Bearer {secret}", url])
                head, _, body = r.stdout.partition("\n\n")
                check(head.startswith("HTTP/1.1 200"), f"the right token: {head}")
                v = value(samples(body), "sluice_connections_total", rule="conn", direction="in",
                          outcome="limited")
                check(v == 3, f"with the token: limited = {v}")
                check(secret not in m.stderr(), "the token reached stderr")
            os.chmod(token, 0o644)
            r = run([SLUICE, "metrics", "--shared", name, "--listen", f"127.0.0.1:{free_port()}",
                     "--token", token])
            check(r.returncode == 2 and "chmod 600" in r.stderr and secret not in r.stderr,
                  f"a token every user can read: {r.returncode} {r.stderr}")
    finally:
        shm_cleanup(name)
print("ok")

# The alert rules and the dashboard name only metrics the exporter writes
# (cli/metrics.c), so they cannot drift apart silently.
import re
src = open(os.path.join(ROOT, "cli", "metrics.c")).read()
for f in ("sluice-alerts.yml", "grafana-dashboard.json"):
    text = open(os.path.join(ROOT, "examples", "monitoring", f)).read()
    for m in set(re.findall(r"\bsluice_[a-z_]+", text)):
        base = re.sub(r"_(bucket|sum|count)$", "", m)
        check(base in src or base + "_total" in src or base.replace("_total", "") in src,
              f"{f} names {m}, which cli/metrics.c does not write")

