# SPDX-License-Identifier: BSD-2-Clause
"""outbound.py - what counting a client's requests costs, and how exactly
the client is paced (issue 10). nginx (one worker, `listen ... ssl http2`,
keep-alive, a certificate made here) on loopback; the client is curl, which
drives OpenSSL through SSL_write, so every request is read by sluice.

Cost: curl fetching 20,000 URLs over one keep-alive TLS connection
(HTTP/1.1, `-K` with 20,000 `url =` lines), with no shim, and under
`--out 'to=127.0.0.1 port=P req_rate=1000000000/s req_burst=1000000000'`
(every request scanned and decided, none held), alternating, ROUNDS rounds
after a warm-up; ratio = median requests/s under the rule / median without,
and curl's CPU per request (user + system of the child).

Pacing: `action = delay` with req_burst=1 at 1/s (6 requests), 50/m (6)
and 100/s (300), over HTTP/1.1 and HTTP/2 (curl --http1.1 / --http2, all
URLs in one run, one connection); the rate achieved is (N - 1) / (the last
request's arrival - the first's) from nginx's access log ($msec), and
accuracy = achieved / configured. (curl 7.88 exits 92 after an HTTP/2
write that had to wait, every response received: its exit is not used.)

Prints markdown; with a file argument, writes the target row there.
Knobs: OUT_ROUNDS (5), OUT_REQUESTS (20000)."""
import os
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests",
                                "integration"))
from lib import *  # noqa: E402

ROUNDS = int(os.environ.get("OUT_ROUNDS", "5"))
N = int(os.environ.get("OUT_REQUESTS", "20000"))
targets = sys.argv[1] if len(sys.argv) > 1 else None


def curl_cost(port, urls_file, rule):
    argv = ["curl", "-sk", "--http1.1", "-K", urls_file]
    if rule:
        argv = sluice_argv(argv, outs=[rule])
    before = os.times()
    t0 = time.monotonic()
    r = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    took = time.monotonic() - t0
    after = os.times()
    cpu = (after.children_user - before.children_user) + (after.children_system -
                                                          before.children_system)
    if r.returncode != 0:
        raise SystemExit(f"curl failed ({r.returncode}): {r.stderr[-300:]}")
    return N / took, cpu / N * 1e6


def arrivals(log, tag):
    return [float(l.split()[0]) for l in open(log).read().splitlines() if f"/{tag}" in l]


def pace(port, log, proto, rate, period_s, n):
    tag = f"p{proto}-{rate}-{n}-"
    urls = sum([["-o", "/dev/null", f"https://127.0.0.1:{port}/{tag}{i}"] for i in range(n)], [])
    rule = (f"to=127.0.0.1 port={port} req_rate={rate} req_burst=1 action=delay "
            f"max_delay=10m")
    r = run(sluice_argv(["curl", "-sk", f"--http{proto}"] + urls, outs=[rule]), timeout=120)
    # curl 7.88 exits 92 ("stream not closed cleanly") after an HTTP/2 write
    # that waited (want-write), though every response arrived: the arrivals
    # in nginx's log are what is measured
    if r.returncode not in (0, 92):
        return None
    time.sleep(0.3)
    ts = arrivals(log, tag)
    if len(ts) != n or ts[-1] <= ts[0]:
        return None
    achieved = (n - 1) / (ts[-1] - ts[0])
    configured = int(rate.split("/")[0]) / period_s
    return achieved / configured


with TempDir() as tmp:
    crt, key = make_cert(tmp)
    port = free_port()
    log = tmp.join("access.log")
    os.makedirs(tmp.join("www"), exist_ok=True)
    _, argv = nginx_config(tmp, events="use epoll;", http=f"""
    log_format t '$msec $status $uri';
    access_log {log} t;
    keepalive_timeout 60;
    keepalive_requests 1000000;
    server {{
        listen 127.0.0.1:{port} ssl http2;
        ssl_certificate {crt};
        ssl_certificate_key {key};
        location /c {{ access_log off; return 200 "ok\\n"; }}
        location / {{ return 200 "ok\\n"; }}
    }}
""")
    urls = tmp.join("urls.txt")
    with open(urls, "w") as f:
        for i in range(N):
            f.write(f'url = "https://127.0.0.1:{port}/c{i}"\noutput = "/dev/null"\n')
    never = f"to=127.0.0.1 port={port} req_rate=1000000000/s req_burst=1000000000"
    with Proc(argv):
        wait_listen(port)
        curl_cost(port, urls, None)  # warm-up
        plain, under, cpu_p, cpu_u = [], [], [], []
        for _ in range(ROUNDS):
            rps, cpu = curl_cost(port, urls, None)
            plain.append(rps)
            cpu_p.append(cpu)
            rps, cpu = curl_cost(port, urls, never)
            under.append(rps)
            cpu_u.append(cpu)
        ratio = statistics.median(under) / statistics.median(plain)
        print(f"| client | requests/s (median of {ROUNDS}) | curl CPU per request |")
        print("|---|---:|---:|")
        print(f"| curl, {N} keep-alive requests over TLS, no shim | "
              f"{statistics.median(plain):.0f} | {statistics.median(cpu_p):.1f} us |")
        print(f"| the same under a request rule that never limits | "
              f"{statistics.median(under):.0f} | {statistics.median(cpu_u):.1f} us |")
        print(f"| ratio | {ratio:.3f} | |")
        print()
        if targets:
            with open(targets, "w") as f:
                f.write(f"| keep-alive TLS client under an outbound request rule >= 0.97 x no shim "
                        f"| {ratio:.3f} | {'met' if ratio >= 0.97 else '**not met**'} |\n")
        print("| pacing (req_burst=1, action=delay) | HTTP/1.1 accuracy | HTTP/2 accuracy |")
        print("|---|---:|---:|")
        for rate, period, n in (("1/s", 1, 6), ("50/m", 60, 6), ("100/s", 1, 300)):
            h1 = pace(port, log, "1.1", rate, period, n)
            h2 = pace(port, log, "2", rate, period, n)
            fmt = lambda v: f"{v:.3f}" if v else "failed"
            print(f"| {rate}, {n} requests | {fmt(h1)} | {fmt(h2)} |", flush=True)
    print(f"\n_Accuracy = (N - 1) / (last arrival - first arrival) in nginx's log, over the "
          f"configured rate; 1.000 is exact. curl 7.88 with OpenSSL 3; one nginx worker._")
