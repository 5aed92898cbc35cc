# SPDX-License-Identifier: BSD-2-Clause
"""HTTP/2 over TLS that sluice cannot decrypt, a burst refused under
outbound `reply` beyond max_delay: no call the vendor served is one its
client was told failed (issue 34: "never tell a client a call failed that
was sent"; "Java HttpClient h2 over TLS: every call fails, the served one
included").

Java 17's HttpClient (HTTP/2, JSSE; h2clientlib.py) makes N = 4 calls one
after another to nginx `ssl http2` under `--out 'to=127.0.0.1 port=P
req_rate=1/m req_burst=2 action=reply'`. sluice counts requests as write
bursts after an answer, and Java writes frames of its own in bursts after
reading the server's (SETTINGS ACK, WINDOW_UPDATE): under the rule of
doubt each is a request, so the burst refused (its turn a minute away,
beyond max_delay) is one of them while call 0's answer is arriving.
Before the fix, sluice ended the connection at once and call 0, served
by nginx, was told IOException (4 runs of 4). Now a refused burst on an
h2 connection waits until nothing came in for 50 ms (shim/bursts.c
refusal_wait) before it ends the connection.

Asserted: every call ends (the client prints DONE; calls time out after
10 s here, not Java's 60: a refused new connection sometimes makes Java
wait its whole timeout, test_h2_tls_refused.py's known defect); nginx
served call 0 and the client was told 200 for it; no call nginx served
was told failed.
"""
from h2clientlib import *

N = 4


def main():
    if "asan" in os.environ.get("SLUICE_BUILD", ""):
        print("SKIP: java under a preloaded ASan runtime")
        return
    problems, ran = [], False
    rule = "to=127.0.0.1 port={port} req_rate=1/m req_burst=2 action=reply"
    for name, _, r, got, done, served in h2_runs(rule, N, ("reply",), 1, only="java",
                                                 java_timeout=10):
        ran = True
        told_failed = {i for i, (c, _) in enumerate(got) if c != 200}
        print(f"{name}: {got}, done {done}; nginx served calls {sorted(served)}")
        if not done or len(got) != N:
            problems.append(f"{name}: {len(got)} of {N} calls ended, DONE {done}")
        if 0 not in served or not got or got[0][0] != 200:
            problems.append(f"{name}: call 0 was not served and answered 200")
        if set(served) & told_failed:
            problems.append(f"{name}: nginx served calls {sorted(set(served) & told_failed)} the "
                            "client was told failed")
    if not ran:
        return
    check(not problems, "\n".join(problems))
    print("ok")


main()
