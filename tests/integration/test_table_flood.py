# SPDX-License-Identifier: BSD-2-Clause
"""A flood of one-off keys does not take an honest key's budget (issue
18.6).

nginx (1 worker) answers `return 200` under `sluice run` with
`table_slots = 1024` (1,028 slots) and one rule: req_rate = 20/m,
req_burst = 20, quota = 1000/d, per = header:X-API-Key, action = reply.
Each key takes two table words: its bucket and its daily quota word,
which is live until midnight. The review's attack, scaled to the table:
  1. a "spent" key makes 21 requests: 20 pass, the 21st gets 429;
  2. 10,000 one-off keys (20,000 words for 1,028 slots), one request each,
     on keep-alive connections;
  3. an honest new key makes 25 requests: its 20 pass (before the
     change the table was full, and the key fell to the rule's shared
     overflow bucket, which the flood had drained);
  4. the spent key gets no more than its bucket refilled meanwhile
     (20/m: one request per 3 s of the flood's duration, plus one):
     the flood bought it no amnesty.
Tolerance on 3: one request. The honest key's 25 requests take far less
than the 3 s a token takes to refill, but they may straddle one refill,
so 20 or 21 is its budget; 4 counts refills from the flood's start.
Before the change the flood's own keys also fell to the overflow bucket:
859 of 10,000 passed, and the honest key got 0 of 25 (seen).
"""
import http.client

from lib import *

FLOOD = 10000


def requests(port, keys, conn=None):
    """GET / once per key in `keys` on keep-alive connections (a new one
    after a close). Returns the status codes."""
    codes = []
    for k in keys:
        if conn is None:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        conn.request("GET", "/", headers={"X-API-Key": k})
        r = conn.getresponse()
        r.read()
        codes.append(r.status)
        if r.getheader("Connection", "").lower() == "close":
            conn.close()
            conn = None
    if conn:
        conn.close()
    return codes


with TempDir() as tmp:
    port = free_port()
    _, argv = nginx_config(tmp, events="use epoll;", http=f"""
    access_log off;
    keepalive_timeout 30;
    keepalive_requests 100000;
    server {{
        listen 127.0.0.1:{port};
        location / {{ return 200 "ok\\n"; }}
    }}
""")
    conf = tmp.write("sluice.conf", f"""
table_slots = 1024
inbound "api" {{ port = {port}  req_rate = "20/m"  req_burst = 20  quota = "1000/d"
                 per = "header:X-API-Key"  action = reply }}
""")
    with Proc(sluice_argv(argv, config=conf)) as ng:
        wait_listen(port)
        codes = requests(port, ["spent"] * 21)
        check(codes == [200] * 20 + [429], f"1. the spent key: {codes}")

        t0 = time.monotonic()
        codes = requests(port, [f"one-off-{i}" for i in range(FLOOD)])
        took = time.monotonic() - t0
        print(f"2. {FLOOD} one-off keys in {took:.2f} s: {codes.count(200)} passed")

        codes = requests(port, ["honest"] * 25)
        passed = codes.count(200)
        print(f"3. the honest new key: {passed} of 25 passed")
        check(20 <= passed <= 21, f"3. the honest new key got {passed} of its 20: {codes}")

        t1 = time.monotonic() - t0
        codes = requests(port, ["spent"] * 10)
        due = 1 + int(t1 / 3)
        print(f"4. the spent key after {t1:.2f} s: {codes.count(200)} passed (refilled: {due})")
        check(codes.count(200) <= due, f"4. the spent key got {codes.count(200)}, refilled {due}")
print("ok")
