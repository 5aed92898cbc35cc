# SPDX-License-Identifier: BSD-2-Clause
"""Quota use per plan (issue 19.5): /stats.json, the Prometheus metrics
and `sluice stats` count, per rule and plan, the requests admitted against
the plan's quota, those it refused, and the keys that reached 80, 90 and
100 % of it; never a key.

KEEPALIVE_SERVER (python) runs under `sluice run -c app.conf` with one
inbound rule per = header:X-API-Key, req_rate 1000/s (never the limit
here), its own quota 1000/d, action = reply, and a plans file:
gold quota=10/d (key G), free quota=5/d (keys F1 and F2). Each request is
on a new connection; the client counts the 200s.
  - G sends 12: 10 admitted, 2 refused; one key reached 80, 90, 100 %.
  - F1 sends 4 (4 of 5: 80 % only); F2 sends 7 (5 admitted, 2 refused):
    free admitted 9, refused 2, keys at 80 % 2, at 90 and 100 % 1.
  - a key without a plan sends 3: counted under no plan.
The JSON (`plans` of the rule's requests row), `sluice metrics` (every
sluice_plan_quota_* series) and `sluice stats` (its plans section) must
show exactly these figures, and none of them a key value; `promtool
check metrics` accepts the exposition.
Tolerance: none. The quota window is moved by quota_offset so that its
renewal is about 12 hours away from now: no window can end during the
test, whatever the time of day it runs.
"""
import json
import time
import urllib.request

from lib import *

KEYS = {"G": "sk-gold-4f1c2b7a9d", "F1": "sk-free-1e8a33c0aa", "F2": "sk-free-2b9d04e1bb",
        "N": "sk-none-77aa5510cc"}
SENT = {"G": 12, "F1": 4, "F2": 7, "N": 3}
WANT = {  # plan: admitted, refused, used, keys at 80/90/100 %, quota
    "gold": dict(admitted=10, refused=2, used=10, keys=[1, 1, 1], reached=[1, 1, 1], quota=10),
    "free": dict(admitted=9, refused=2, used=9, keys=[2, 1, 1], reached=[2, 1, 1], quota=5),
}

utc_hour = time.gmtime().tm_hour
offset = 12 - utc_hour  # the window's renewal (local midnight) about 12 h away
name = f"it-plans-{os.getpid()}"
port, mport = free_port(), free_port()
with TempDir() as tmp:
    plans = tmp.write("plans.txt", f"""
plan gold quota=10/d
plan free quota=5/d
key gold {KEYS['G']}
key free {KEYS['F1']}
key free {KEYS['F2']}
""", mode=0o600)
    app = tmp.write("app.conf", f"""
shared = "{name}"
inbound "api" {{
    port = {port}
    req_rate = "1000/s"
    req_burst = 1000
    quota = "1000/d"
    quota_offset = "{offset:+d}"
    per = "header:X-API-Key"
    plans = "{plans}"
    action = reply
}}
""")
    shm_cleanup(name)
    try:
        with Proc(sluice_argv(keepalive_argv(port), config=app)) as prog:
            wait_listen(port)
            ok = {}
            for who in ("G", "F1", "F2", "N"):
                st = [http_get(port, headers=f"X-API-Key: {KEYS[who]}\r\n")[0]
                      for _ in range(SENT[who])]
                ok[who] = st.count(200)
                check(st.count(200) + st.count(429) == len(st), f"{who}: statuses {st}")
            print("served:", ok)
            check(ok == {"G": 10, "F1": 4, "F2": 5, "N": 3}, f"the quotas applied: {ok}")

            # sluice stats
            r = run([SLUICE, "stats", "--shared", name])
            check(r.returncode == 0, f"sluice stats: {r.stderr}")
            print(r.stdout)
            stats_text = r.stdout
            _, _, sect = r.stdout.partition("\nplans (")
            rows = {}
            for line in sect.splitlines()[2:]:
                w = line.split()
                if len(w) == 9 and w[0] == "api":
                    rows[w[1]] = w[2:]
            check(set(rows) == set(WANT), f"stats: one row per plan: {rows}")
            for p, want in WANT.items():
                got = rows[p]
                check(got == [f"{want['quota']}/day", str(want["admitted"]), str(want["refused"]),
                              str(want["used"])] + [str(k) for k in want["keys"]],
                      f"stats, plan {p}: {got}, expected {want}")

            # sluice metrics (the exposition, once)
            r = run([SLUICE, "metrics", "--shared", name])
            check(r.returncode == 0, f"sluice metrics: {r.stderr}")
            series = {}
            for line in r.stdout.splitlines():
                m = re.match(r'(sluice_plan_quota_\w+)\{([^}]*)\} (\d+)$', line)
                if m:
                    labels = dict(re.findall(r'(\w+)="([^"]*)"', m.group(2)))
                    check(labels["rule"] == "api", f"rule label: {line}")
                    series[(m.group(1), labels["plan"], labels.get("percent"))] = int(m.group(3))
            print("metrics:", series)
            for p, want in WANT.items():
                for metric, v in (("admitted_total", want["admitted"]),
                                  ("refused_total", want["refused"]),
                                  ("limit", want["quota"]), ("used", want["used"])):
                    got = series.get((f"sluice_plan_quota_{metric}", p, None))
                    check(got == v, f"metrics {metric} {p}: {got}, expected {v}")
                for i, pct in enumerate(("80", "90", "100")):
                    for metric, v in (("reached_total", want["reached"][i]), ("keys", want["keys"][i])):
                        got = series.get((f"sluice_plan_quota_{metric}", p, pct))
                        check(got == v, f"metrics {metric} {p} {pct} %: {got}, expected {v}")
            check(len(series) == 2 * 10, f"only the two plans' series: {sorted(series)}")
            if shutil.which("promtool"):  # Debian's prometheus (CI installs it)
                lint = run(["promtool", "check", "metrics"], input=r.stdout)
                check(lint.returncode == 0, f"promtool check metrics: {lint.stdout}{lint.stderr}")
            metrics_text = r.stdout

            # /stats.json of the live page's server
            with Proc([SLUICE, "metrics", "--shared", name, "--listen", f"127.0.0.1:{mport}"]):
                wait_listen(mport)
                with urllib.request.urlopen(f"http://127.0.0.1:{mport}/stats.json", timeout=5) as f:
                    body = f.read().decode()
            d = json.loads(body)
            rows = [x for x in d["rules"] if x["rule"] == "api" and x["kind"] == "requests"]
            check(len(rows) == 1, f"one requests row for api: {d['rules']}")
            jp = {x["plan"]: x for x in rows[0]["plans"]}
            print("json plans:", jp)
            check(set(jp) == set(WANT), f"json: the two plans: {list(jp)}")
            for p, want in WANT.items():
                x = jp[p]
                got = dict(admitted=x["admitted"], refused=x["refused"], used=x["used"],
                           keys=[x["keys"][k] for k in ("80", "90", "100")],
                           reached=[x["reached"][k] for k in ("80", "90", "100")], quota=x["quota"])
                check(got == want, f"json plan {p}: {got}, expected {want}")
                check(x["window"] == "day" and 3600 < x["window_ends_in_s"] <= 13 * 3600,
                      f"json plan {p}: window {x['window']}, ends in {x['window_ends_in_s']} s")

            for v in KEYS.values():
                for what, text in (("stats", stats_text), ("metrics", metrics_text), ("json", body)):
                    check(v not in text, f"a key value in {what}")
    finally:
        shm_cleanup(name)
print("ok")
