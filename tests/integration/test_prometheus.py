# SPDX-License-Identifier: BSD-2-Clause
"""A real Prometheus (issue 19.4): Debian's prometheus and promtool.

1. `promtool check rules` loads examples/monitoring/sluice-alerts.yml and
   `promtool test rules` runs its unit tests on synthetic series
   (sluice-alerts.test.yml: the quota and gossip alerts fire when they
   should and not before, and Redis's).
2. End to end: a keep-alive server runs under a named table with a request
   rule `quota = "20/d"` per API key (req_rate high enough never to bite);
   `sluice metrics --listen` serves the table; Prometheus (its own temp
   data dir, a free loopback port, scrape and rule evaluation every 1 s,
   the example alert rules) scrapes it. After one request of another key
   (the rule's request counters exist from its first request), once
   Prometheus has a sample of the denial counter at 0, one key makes 30 requests: 20 pass, 10 are
   denied over the quota. Read back through Prometheus's HTTP API (polled,
   at most 30 s): sluice_requests_total{outcome="limited"} is 10 (exact: the
   counter no longer moves), and the alerts SluiceKeyQuota80, 90 and
   SluiceKeyQuotaSpent fire for rule "api" (increase() over two samples).
"""
import json
import urllib.parse
import urllib.request

from lib import *

MON = os.path.join(ROOT, "examples", "monitoring")
ALERTS = os.path.join(MON, "sluice-alerts.yml")

for argv in (["promtool", "check", "rules", "sluice-alerts.yml"],
             ["promtool", "test", "rules", "sluice-alerts.test.yml"]):
    r = run(argv, cwd=MON, timeout=60)
    print(" ".join(argv) + ":\n" + r.stdout.strip())
    check(r.returncode == 0 and "SUCCESS" in r.stdout, f"{argv}: {r.stdout} {r.stderr}")


def api(pport, path, **params):
    url = f"http://127.0.0.1:{pport}/api/v1/{path}"
    if params:
        url += "?" + urllib.parse.urlencode(params)
    with urllib.request.urlopen(url, timeout=5) as f:
        return json.load(f)


def query(pport, q):
    """The value of an instant query's first sample, or None."""
    res = api(pport, "query", query=q)["data"]["result"]
    return float(res[0]["value"][1]) if res else None


def poll(what, fn, timeout=30.0):
    """fn() until it returns something true (bounded); returns it."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            got = fn()
        except OSError:
            got = None
        if got:
            return got
        time.sleep(0.2)
    raise AssertionError(f"Prometheus never showed {what} in {timeout} s")


name = f"it-prom-{os.getpid()}"
port, mport, pport = free_port(), free_port(), free_port()
with TempDir() as tmp:
    conf = tmp.write("api.conf", f"""
shared = "{name}"
inbound "api" {{ port = {port}  req_rate = "1000/s"  quota = "20/d"  per = "header:X-API-Key"
                 action = reply }}
""")
    prom = tmp.write("prometheus.yml", f"""
global: {{scrape_interval: 1s, evaluation_interval: 1s}}
rule_files: ["{ALERTS}"]
scrape_configs:
  - job_name: sluice
    static_configs: [{{targets: ["127.0.0.1:{mport}"]}}]
""")
    os.mkdir(tmp.join("data"))
    try:
        with Proc(sluice_argv(keepalive_argv(port), config=conf)), \
             Proc([SLUICE, "metrics", "-c", conf, "--listen", f"127.0.0.1:{mport}"]), \
             Proc(["prometheus", f"--config.file={prom}", f"--storage.tsdb.path={tmp.join('data')}",
                   f"--web.listen-address=127.0.0.1:{pport}"]) as p:
            wait_listen(port)
            wait_listen(mport)
            wait_listen(pport, timeout=30)
            limited = 'sluice_requests_total{job="sluice",rule="api",outcome="limited"}'
            # the rule's request counters exist from its first request
            check(http_get(port, headers="X-API-Key: key-B\r\n")[0] == 200, "a first request")
            poll("a first scrape with the counter at 0", lambda: query(pport, limited) == 0.0)
            print("before the flood:", api(pport, "query", query=limited)["data"]["result"])
            # a denial is answered and the connection closed: one connection each
            codes = [http_get(port, headers="X-API-Key: key-A\r\n")[0] for _ in range(30)]
            check(codes.count(200) == 20 and codes.count(429) == 10, f"20 pass, 10 over quota: {codes}")
            poll("the denial counter at 10", lambda: query(pport, limited) == 10.0)
            print("after the flood:", api(pport, "query", query=limited)["data"]["result"])
            want = {"SluiceKeyQuota80", "SluiceKeyQuota90", "SluiceKeyQuotaSpent"}

            def firing():
                alerts = api(pport, "alerts")["data"]["alerts"]
                got = {a["labels"]["alertname"] for a in alerts
                       if a["state"] == "firing" and a["labels"].get("rule") == "api"}
                return alerts if want <= got else None
            alerts = poll("the quota alerts firing", firing)
            print("alerts:", json.dumps(alerts, indent=1))
            spent = [a for a in alerts if a["labels"]["alertname"] == "SluiceKeyQuotaSpent"][0]
            check(spent["annotations"]["summary"].startswith("1 key(s) of rule api spent"),
                  f"one key spent its quota: {spent}")
            check(p.p.poll() is None, f"prometheus still runs: {p.stderr()[-2000:]}")
    finally:
        shm_cleanup(name)
print("ok")
