# SPDX-License-Identifier: BSD-2-Clause
"""Token budgets over HTTP/2 (issue 35, items 1 and 3): the answers'
`json:` costs are read from their streams' DATA (core/http/h2resp.h,
request.c's cost reader, one answer at a time).

nginx (`ssl http2`, and an h2c listener) answers GET /v1 with
{"usage": {"total_tokens": 400}} (`return 200`, application/json); curl
calls it over HTTP/2 (GET: nginx's `return` answers a POST before its body
is read and resets the stream, which curl 7.88 reports as error 92 when its
upload was not done, a race of the two programs, bare or not) (ALPN h2; prior knowledge for h2c), one process per
call, under `sluice run -c CONF` with `shared = NAME`, so the four calls
spend one budget in one table: `cost_from = json:usage.total_tokens
cost_rate = 1000/m cost_burst = 1000 action = reject`, per header X-User.
Calls 1-3 pass (the third leaves alice 200 in debt), the fourth is refused
by sluice (curl fails, nginx never sees it: its access log has 3); `sluice
stats`: calls 3, tokens 1200, none unread. Before, HTTP/2 answers were not
read for costs: each call was charged the rule's cost (1) by doubt, all
four reached nginx, tokens 4, unread 4.

Nothing is timed: statuses, nginx's log and sluice's counts.
"""
from lib import *

BODY = '{"usage": {"total_tokens": 400}}'


def stats_row(conf):
    st = run([SLUICE, "stats", "-c", conf])
    check(st.returncode == 0, f"sluice stats: {st.stdout}{st.stderr}")
    lines = st.stdout.splitlines()
    for i, l in enumerate(lines):
        if l.startswith("tokens ("):
            head = lines[i + 1].split()
            row = next((x.split() for x in lines[i + 2:] if x.split()[:1] == ["llm"]), None)
            check(row, f"no llm row:\n{st.stdout}")
            return dict(zip(head[1:], map(int, row[1:len(head)])))
    check(False, f"no tokens section:\n{st.stdout}")


def main():
    names = []
    try:
        with TempDir() as tmp:
            crt, key = make_cert(tmp)
            tls_port, h2c_port = free_port(), free_port()
            log = tmp.join("access.log")
            _, argv = nginx_config(tmp, f"""
    log_format brief '$status $uri $http_x_user $server_protocol';
    access_log {log} brief;
    server {{
        listen 127.0.0.1:{tls_port} ssl http2;
        listen 127.0.0.1:{h2c_port} http2;
        ssl_certificate {crt};
        ssl_certificate_key {key};
        location = /v1 {{
            default_type application/json;
            return 200 '{BODY}';
        }}
    }}
""", events="use epoll;")
            with Proc(argv) as ng:
                wait_listen(tls_port)
                wait_listen(h2c_port)
                for via, port, url, how in (
                        ("TLS", tls_port, f"https://127.0.0.1:{tls_port}/v1", "--http2"),
                        ("h2c", h2c_port, f"http://127.0.0.1:{h2c_port}/v1",
                         "--http2-prior-knowledge")):
                    user = f"alice-{via}"
                    name = f"it-h2cost-{via}-{os.getpid()}"
                    names.append(name)
                    conf = tmp.write(f"{name}.conf", f"""
shared = "{name}"
outbound "llm" {{
    to         = "127.0.0.1"
    port       = {port}
    per        = "header:X-User"
    cost_from  = "json:usage.total_tokens"
    cost_rate  = "1000/m"
    cost_burst = 1000
    action     = "reject"
}}
""")
                    script = " ".join(
                        [f"curl -sk {how} -o /dev/null -w '%{{http_code}}:%{{http_version}} ' "
                         f"-H 'X-User: {user}' {url};"] * 4)
                    r = run(sluice_argv(["sh", "-c", script], config=conf), timeout=60)
                    codes = r.stdout.split()
                    time.sleep(0.3)  # nginx logs after the response
                    with open(log) as f:
                        reached = sum(1 for l in f if l.split()[2:3] == [user])
                    row = stats_row(conf)
                    print(f"{via}: curl {codes}; nginx saw {reached}; tokens row {row}")
                    check(codes[:3] == ["200:2"] * 3, f"{via}: three calls over HTTP/2: {codes}")
                    check(len(codes) == 4 and codes[3].startswith("000"),
                          f"{via}: the fourth is refused by sluice: {codes}\n{r.stderr}")
                    check(reached == 3, f"{via}: nginx saw {reached} calls, not 3")
                    check(row.get("calls") == 3 and row.get("tokens") == 1200 and
                          row.get("unread") == 0, f"{via}: the answers' costs: {row}")
                check(ng.p.poll() is None, "nginx is still running")
    finally:
        for n in names:
            shm_cleanup(n)


main()
