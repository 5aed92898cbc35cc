# SPDX-License-Identifier: BSD-2-Clause
"""HTTP/2 answers paired with their requests by stream (issue 35, item 1):
count_status and req_conns read the statuses and the ends of the
responses nginx writes over HTTP/2, h2c and TLS (OpenSSL, ALPN h2).

1. count_status: `req_rate=3/h per=header:X-User count_status=401`.
   Ten good logins of user `good` all reach nginx (their 200s give back
   what their requests took: before the pairing every HTTP/2 request
   counted by the rule of doubt, and the fourth good login was refused);
   then five wrong logins of `bad`: three 401s, and the rest never reach
   nginx (its access log); a good login of `good` still passes after it.
   Each login on its own connection (curl, prior knowledge or ALPN), and
   ten good logins in turn on one connection (h2load, streams 1..19) pass
   too.
   (Ten at once would not: a request takes its cost when it comes and its
   200 gives it back, so at most three logins of a user are in flight
   together, as with pipelined HTTP/1 in test_answers_hostile.)
2. req_conns: `req_conns=2 per=header:X-User action=delay max_delay=10s`
   (a connection reads one key header: both rules name the same).
   nginx proxies /slow to a python server that counts the requests of a
   key it holds at once (answerslib.INFLIGHT_SERVER, 0.5 s each). Five
   requests of one key as five streams of one HTTP/2 connection at once
   (h2load -m 5): all five get their 200, and the python server never holds
   more than 2 at once (before the pairing, places were given back as the
   request passed: 5 at once).

Nothing is timed: statuses, nginx's access log and the server's counts.
"""
import re

from lib import *
from answerslib import INFLIGHT_SERVER

LOGIN = "req_rate=3/h per=header:X-User count_status=401 action=reply"
CONNS = "req_conns=2 per=header:X-User action=delay max_delay=10s"


def site(tmp, port, back, tls):
    crt, key = make_cert(tmp)
    log = tmp.join(f"access-{port}.log")
    listen = f"listen 127.0.0.1:{port} ssl http2;" if tls else f"listen 127.0.0.1:{port} http2;"
    certs = f"ssl_certificate {crt}; ssl_certificate_key {key};" if tls else ""
    _, argv = nginx_config(tmp, f"""
    log_format brief '$status $uri $http_x_user $server_protocol';
    access_log {log} brief;
    server {{
        {listen}
        {certs}
        location = /login {{
            if ($http_x_password != "right") {{ return 401; }}
            return 200 "welcome\\n";
        }}
        location = /slow {{
            proxy_pass http://127.0.0.1:{back};
            proxy_set_header X-Key $http_x_user;
        }}
    }}
""", events="use epoll;")
    return argv, log


def streams(url, headers, n, at_once=1):
    """n requests of url as streams of one connection, at_once of them
    at a time (h2load: curl 7.88 neither reuses nor multiplexes a
    prior-knowledge connection, even bare); h2load's count of 2xx answers."""
    args = ["h2load", "-n", str(n), "-c", "1", "-m", str(at_once)]
    for h in headers:
        args += ["-H", h]
    out = run(args + [url], timeout=30).stdout
    m = re.search(r"status codes: (\d+) 2xx", out)
    return int(m.group(1)) if m else -1


def curl_h2(url, tls, headers):
    """One request of url on its own connection: its status and HTTP version."""
    args = ["curl", "-s", "-k", "--http2" if tls else "--http2-prior-knowledge",
            "-w", "%{http_code} %{http_version}", "-o", "/dev/null"]
    for h in headers:
        args += ["-H", h]
    out = run(args + [url], timeout=30).stdout.split()
    return (out + ["none", "none"])[:2]


def logged(log, status, user):
    time.sleep(0.3)  # nginx logs after the response
    with open(log) as f:
        return sum(1 for l in f if l.split()[:3] == [status, "/login", user])


def main():
    with TempDir() as tmp:
        back = free_port()
        with Proc(["/usr/bin/python3", "-c", INFLIGHT_SERVER, str(back), "0.5"]) as srv:
            wait_listen(back)
            for tls in (False, True):
                via = "TLS" if tls else "h2c"
                port = free_port()
                argv, log = site(tmp, port, back, tls)
                url = f"{'https' if tls else 'http'}://127.0.0.1:{port}"
                ins = [f"port={port} route=/login {LOGIN}", f"port={port} route=/slow {CONNS}"]
                with Proc(sluice_argv(argv, ins=ins)) as ng:
                    wait_listen(port)
                    # 1. count_status
                    good = [curl_h2(url + "/login", tls, ["X-User: good", "X-Password: right"])
                            for _ in range(10)]
                    codes = [g[0] for g in good]
                    versions = {g[1] for g in good}
                    print(f"{via}: 10 good logins, each its own connection: {codes} over {versions}")
                    check(versions == {"2"}, f"{via}: curl spoke HTTP/2: {versions}")
                    check(codes == ["200"] * 10,
                          f"{via}: every good login passes (200s are not counted): {codes}")
                    multi = streams(url + "/login", ["X-User: good", "X-Password: right"], 10)
                    print(f"{via}: 10 good logins, streams of one connection in turn: {multi} 2xx")
                    check(multi == 10, f"{via}: streams of one connection: {multi} of 10 passed")
                    bad = [curl_h2(url + "/login", tls, ["X-User: bad", "X-Password: wrong"])[0]
                           for _ in range(5)]
                    reached = logged(log, "401", "bad")
                    print(f"{via}: 5 wrong logins: curl {bad}; nginx answered {reached} 401s")
                    check(bad[:3] == ["401"] * 3, f"{via}: the budget's three 401s: {bad}")
                    check(reached == 3, f"{via}: {reached} wrong logins reached nginx (budget 3)")
                    again, _ = curl_h2(url + "/login", tls, ["X-User: good", "X-Password: right"])
                    check(again == "200", f"{via}: another user untouched: {again}")
                    check(logged(log, "200", "good") == 21, f"{via}: nginx saw 21 good logins")

                    # 2. req_conns
                    key = f"k-{via}"
                    ok = streams(url + "/slow", [f"X-User: {key}"], 5, at_once=5)
                    seen = [int(l.split()[2]) for l in srv.stderr().splitlines()
                            if l.startswith("IN ") and l.split()[1] == key]
                    print(f"{via}: 5 streams of one key at once under req_conns=2: {ok} 2xx; "
                          f"the server held {max(seen, default=0)} at most ({seen})")
                    check(ok == 5, f"{via}: every stream gets its 200: {ok} of 5")
                    check(len(seen) == 5 and max(seen) <= 2,
                          f"{via}: at most 2 of the key at the server at once: {seen}")
                    check(ng.p.poll() is None, f"{via}: nginx is still running")


main()
