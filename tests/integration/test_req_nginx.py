# SPDX-License-Identifier: BSD-2-Clause
"""Inbound request limits on nginx (issue 9): an event-loop server with
keep-alive, non-blocking sockets and edge-triggered epoll, counted per API
key, per route, with cost and plans.

One nginx (1 worker, keep-alive, an access log of what it served) runs
under a config file with four request rules on its port, each on its own
route so their counts are independent:
1. /flood: req_rate=50/s req_burst=10 per=header:X-API-Key action=reply.
   wrk -c4 floods it with one key for 2 s. Admitted (wrk's 2xx) must be
   10 + 50 x T, T being wrk's run time: -10% / +5% (requests in flight when
   wrk stops are served by nginx but not counted by wrk, and wrk starts a
   few ms after it is timed). nginx's access log shows the admitted
   requests (at most 4 more: those in flight) and no 429: the denied ones
   never reached it. wrk saw non-2xx answers (the 429s).
2. /c/: req_rate=1/10s req_burst=3: curl with 8 URLs in one run (it reuses
   its connection, and opens a new one after each 429's Connection:
   close) gets exactly 200 x3 then 429 x5; nginx logged three /c/ requests.
3. /export: cost=10 of req_rate=100/m req_burst=20: 5 requests with one
   key: 2 pass (20 / 10), 3 are refused. /items with the same key (not on
   that route) all pass: cost drains only its own rule's bucket.
4. /p/: req_rate=1/10s req_burst=2 with a plans file giving key "gold-1"
   the plan gold (req_burst=5): 8 requests with gold-1 get 5 through, 8
   with an unknown key 2.
Then a second nginx under `req_rate=5/s req_burst=1 action=delay
max_delay=5s`: 6 requests on one keep-alive connection all get 200 and
take 5 x 0.2 s = 1.0 s (0.9-1.4 s: a refill is 0.2 s, and epoll's
millisecond timeouts and scheduling add a little); the worker's CPU over the held second stays
under 0.15 s (a spinning event loop would burn the whole second).
"""
import http.client
import subprocess

from lib import *

KEYS = {"gold": "gold-1"}


def keep_alive_run(port, paths, key, timeout=5.0):
    """GETs `paths` in order over keep-alive, reconnecting when the server
    closes after a 429. Returns the status codes."""
    codes = []
    conn = None
    for p in paths:
        if conn is None:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
        conn.request("GET", p, headers={"X-API-Key": key})
        r = conn.getresponse()
        r.read()
        codes.append(r.status)
        if r.getheader("Connection", "").lower() == "close":
            conn.close()
            conn = None
    if conn:
        conn.close()
    return codes


def site(tmp, port, log):
    www = tmp.join("www")
    for d in ("flood", "c", "export", "items", "p"):
        os.makedirs(os.path.join(www, d), exist_ok=True)
        for i in range(10):
            with open(os.path.join(www, d, str(i)), "w") as f:
                f.write("ok\n")
    for root, dirs, files in os.walk(www):
        os.chmod(root, 0o755)
    return f"""
    log_format brief '$status $uri';
    access_log {log} brief;
    keepalive_timeout 30;
    keepalive_requests 100000;
    server {{
        listen 127.0.0.1:{port};
        root {www};
    }}
"""


def served(log, prefix):
    with open(log) as f:
        lines = [l.split() for l in f if l.strip()]
    return [l for l in lines if l[1].startswith(prefix)]


with TempDir() as tmp:
    port = free_port()
    log = tmp.join("access.log")
    _, argv = nginx_config(tmp, site(tmp, port, log), events="use epoll;")
    plans = tmp.write("plans.txt", "plan gold req_burst=5\nkey gold gold-1\n", mode=0o600)
    conf = tmp.write("sluice.conf", f"""
inbound "flood" {{ port = {port}  route = {{"/flood"}}  req_rate = "50/s"  req_burst = 10
                   per = "header:X-API-Key"  action = reply }}
inbound "curl" {{ port = {port}  route = {{"/c"}}  req_rate = "1/10s"  req_burst = 3
                  per = "header:X-API-Key"  action = reply }}
inbound "export" {{ port = {port}  route = {{"/export"}}  req_rate = "100/m"  req_burst = 20
                    cost = 10  per = "header:X-API-Key"  action = reply }}
inbound "plans" {{ port = {port}  route = {{"/p"}}  req_rate = "1/10s"  req_burst = 2
                   plans = "{plans}"  per = "header:X-API-Key"  action = reply }}
""")
    with Proc(sluice_argv(argv, config=conf)) as ng:
        wait_listen(port)

        # 1. wrk flood
        t0 = time.monotonic()
        out = subprocess.run(["wrk", "-t1", "-c4", "-d2s", "-H", "X-API-Key: flood-key",
                              f"http://127.0.0.1:{port}/flood/1"],
                             capture_output=True, text=True, timeout=30).stdout
        took = time.monotonic() - t0
        total = int(re.search(r"(\d+) requests in", out).group(1))
        m = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
        bad = int(m.group(1)) if m else 0
        ok = total - bad
        due = 10 + 50 * took
        check(0.90 * due <= ok <= 1.05 * due, f"wrk: {ok} admitted, {due:.0f} due ({took:.2f} s)\n{out}")
        check(bad > ok, f"wrk: the flood was refused mostly: {bad} non-2xx, {ok} 2xx\n{out}")
        time.sleep(0.2)  # nginx writes its log line after the response
        got = served(log, "/flood")
        check(ok <= len(got) <= ok + 4, f"nginx served {len(got)} /flood requests, wrk counted {ok}")
        check(all(l[0] == "200" for l in got), f"nginx logged only 200s: {set(l[0] for l in got)}")

        # 2. curl with several URLs in one run
        urls = [f"http://127.0.0.1:{port}/c/{i}" for i in range(8)]
        r = run(["curl", "-s", "-H", "X-API-Key: curl-key", "-w", "%{http_code}\\n"]
                + sum([["-o", "/dev/null", u] for u in urls], []), timeout=30)
        codes = r.stdout.split()
        check(codes == ["200"] * 3 + ["429"] * 5, f"curl, 8 URLs: {codes} {r.stderr}")
        check(len(served(log, "/c/")) == 3, f"nginx served {len(served(log, '/c/'))} /c/ requests")

        # 3. routes and cost
        codes = keep_alive_run(port, ["/export/1"] * 5, "cost-key")
        check(codes == [200, 200, 429, 429, 429], f"/export at cost 10 of 20: {codes}")
        codes = keep_alive_run(port, ["/items/1"] * 10, "cost-key")
        check(codes == [200] * 10, f"/items is not on the export route: {codes}")

        # 4. plans
        codes = keep_alive_run(port, ["/p/1"] * 8, "gold-1")
        check(codes.count(200) == 5 and codes[:5] == [200] * 5, f"a gold key (burst 5): {codes}")
        codes = keep_alive_run(port, ["/p/1"] * 8, "someone-else")
        check(codes.count(200) == 2 and codes[:2] == [200] * 2, f"a key without a plan (burst 2): {codes}")
        check(ng.p.poll() is None, "nginx is still running")

    # 5. delay: held requests on an event loop neither spin nor stall
    tmp2 = TempDir()
    with tmp2:
        port = free_port()
        _, argv = nginx_config(tmp2, site(tmp2, port, tmp2.join("access.log")), events="use epoll;")
        rule = f"port={port} req_rate=5/s req_burst=1 action=delay max_delay=5s"
        with Proc(sluice_argv(argv, ins=[rule])) as ng:
            wait_listen(port)
            kids = wait_children(ng.p.pid, 1)
            worker = max(kids)
            time.sleep(0.3)  # the first request's own token refills
            cpu0 = cpu_seconds(worker)
            t0 = time.monotonic()
            codes = keep_alive_run(port, ["/items/1"] * 6, "k", timeout=10)
            took = time.monotonic() - t0
            cpu = cpu_seconds(worker) - cpu0
            check(codes == [200] * 6, f"delay: every held request is answered: {codes}")
            check(0.9 <= took <= 1.4, f"delay: 6 requests at 5/s burst 1 take 1.0 s: {took:.3f}")
            check(cpu < 0.15, f"delay: nginx's worker used {cpu:.2f} s of CPU over {took:.2f} s held")
print("ok")
