# SPDX-License-Identifier: BSD-2-Clause
"""HTTP/2 over TLS that sluice cannot decrypt, a call refused under
outbound `reply` beyond max_delay (issue 34: "undici with `allowH2`: each
refused call stalls 30 s"; "Java HttpClient h2 over TLS: every call
fails, the served one included"; "never tell a client a call failed that
was sent").

The clients of test_h2_tls_reply.py (h2clientlib.py: undici 7 with
allowH2, Java 17's HttpClient) make 4 calls one after another to nginx
`ssl http2` under `--out 'to=127.0.0.1 port=P req_rate=1/m req_burst=2
action=reply'`: a turn a minute away is beyond max_delay (10 s), so a
refused call is refused at once (shim/bursts.c). Asserted: every call
ends (the client prints DONE), each within 2 s; nginx served at least one
call and the client read 200 for it; no call nginx served is one the
client was told failed. Java's calls time out after 10 s here, so that a
stall fails the test without waiting Java's 60.

Measured before the fixes (until 2026-11-28 a known defect, skipped):
  - undici 6: calls 0 and 1 200; call 2 ERR UND_ERR_SOCKET; call 3 never
    settled (node exits with its promise pending: "3 of 4 calls ended").
    Call 3 goes on a new connection, whose first burst was refused after
    the handshake: undici 6 keeps the dead connection as its client's
    when a socket closes without a GOAWAY and never dispatches the call;
    undici 7 drops it and connects again, yet its call 3 was still lost
    when the new connection's first burst was refused after the
    handshake (1 run of 3; 4 of 4 under strace). Now
    the first burst of a connection that offers h2 is decided at its
    ClientHello (bursts.c hello_turn): a refusal fails the ClientHello,
    which undici 7 and Java take as a connection not made (ECONNRESET,
    SSLHandshakeException or IOException, in a few ms).
  - java: nginx served call 0 and the client was told IOException (4
    runs of 4), as the refused burst was a WINDOW_UPDATE of Java's own
    (each burst after an answer counts under the rule of doubt) while
    call 0's answer was arriving; now a refused burst on an h2 connection
    first waits until nothing came in for 50 ms (bursts.c refusal_wait).
    A refused burst that was a new connection's first made Java wait its
    whole 60 s timeout (1 run of 3); refused at the ClientHello, 0 of 9.
"""
from h2clientlib import *

N = 4
AT_ONCE = 2.0


def main():
    if "asan" in os.environ.get("SLUICE_BUILD", ""):
        print("SKIP: node and java under a preloaded ASan runtime")
        return
    problems, ran = [], False
    rule = "to=127.0.0.1 port={port} req_rate=1/m req_burst=2 action=reply"
    for name, _, r, got, done, served in h2_runs(rule, N, ("reply",), 1, java_timeout=10):
        ran = True
        told_failed = {i for i, (c, _) in enumerate(got) if c != 200}
        print(f"{name}: {got}, done {done}; nginx served calls {sorted(served)}")
        if not done or len(got) != N:
            problems.append(f"{name}: {len(got)} of {N} calls ended, DONE {done}")
        slow = [(i, t) for i, (_, t) in enumerate(got) if t > AT_ONCE]
        if slow:
            problems.append(f"{name}: calls took over {AT_ONCE} s: {slow}")
        if not served or not any(c == 200 for c, _ in got):
            problems.append(f"{name}: no call served and answered 200")
        if set(served) & told_failed:
            problems.append(f"{name}: nginx served calls {sorted(set(served) & told_failed)} the "
                            "client was told failed")
    if not ran:
        return
    check(not problems, "\n".join(problems))
    print("ok")


main()
