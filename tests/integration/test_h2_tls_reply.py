# SPDX-License-Identifier: BSD-2-Clause
"""HTTP/2 over TLS that sluice cannot decrypt, under outbound `reply`:
every call completes, paced, none stalls (issue 34: "undici with
`allowH2`: each refused call stalls 30 s"; "Java HttpClient h2 over TLS:
every call fails, the served one included; two 10 s timeouts").

The clients (h2clientlib.py): undici 6 from npm with `allowH2` (TLS inside
node's binary) and Java 17's HttpClient with HTTP/2 (JSSE). sluice counts
their requests from the TLS records they write, one per write burst after
an answer ("approximate": h2 is offered), and under `reply` a request over
the limit waits its turn within max_delay (no 429 can be put into a stream
sluice cannot encrypt). The vendor is nginx `ssl http2` (lib.NginxVendor).
Each client makes N = 12 calls one after another:

  bare     all 200 over HTTP/2; the calls after the first take a few
           milliseconds each (printed), under the floor below.
  reply    `--out 'to=127.0.0.1 port=P req_rate=5/s req_burst=1
           action=reply'` (max_delay: the default 10 s): all 12 answered
           200 and nginx served 12 over HTTP/2; paced: calls 1..11 took
           at least (N-2)/5 s - 0.3 s together (call i+1's request leaves
           at least 0.2 s after call i's, and those 10 gaps lie inside
           calls 1..11; 0.2 s less as a burst holding two requests counts
           once, 0.1 s for timer rounding); none stalled: each call after
           the first ended within 2 intervals (a control-frame burst, e.g.
           a WINDOW_UPDATE, may count as a request of its own) + 2 s, the
           first (the handshake, the JVM's class loading) within 4 s; the
           log said the pacing and, once, why no answer can be given.
What a refusal (beyond max_delay) does to these clients is
test_h2_tls_refused.py's.
"""
from h2clientlib import *

N, RATE = 12, 5
FLOOR = (N - 2) / RATE - 1 / RATE - 0.1  # the docstring says why
LATE = 2.0


def main():
    if "asan" in os.environ.get("SLUICE_BUILD", ""):
        print("SKIP: node and java under a preloaded ASan runtime")
        return
    rule = f"to=127.0.0.1 port={{port}} req_rate={RATE}/s req_burst=1 action=reply"
    for name, mode, r, got, done, served in h2_runs(rule, N, ("bare", "reply"), N):
        after = sum(t for _, t in got[1:])
        print(f"{name} {mode}: {[c for c, _ in got]}, nginx served {len(served)}; calls "
              f"1..{N - 1} took {after:.3f} s (floor {FLOOR:.2f} s), slowest "
              f"{max(t for _, t in got):.3f} s")
        check(done and [c for c, _ in got] == [200] * N,
              f"{name} {mode}: every call 200: {r.stdout}\n{r.stderr[-2000:]}")
        check(sorted(served) == list(range(N)), f"{name} {mode}: nginx served {served}")
        if mode == "bare":
            check(after < FLOOR, f"{name} bare: calls 1..{N - 1} take {after:.2f} s alone: the "
                  "paced check would prove nothing")
            continue
        check(after >= FLOOR, f"{name}: not paced: {after:.3f} s\n{r.stderr[-2000:]}")
        check(got[0][1] <= 2 * LATE, f"{name}: the first call took {got[0][1]:.2f} s")
        slow = [(i, t) for i, (_, t) in enumerate(got) if i and t > 2 / RATE + LATE]
        check(not slow, f"{name}: calls stalled beyond their pacing: {slow}")
        lines = sluice_lines(r.stderr)
        check(any("paced a request" in l for l in lines), f"{name}: pacing not logged")
        said = [l for l in lines if "cannot answer on" in l]
        check(len(said) == 1 and "cannot decrypt" in said[0], f"{name}: said: {said}")
    print("ok")


main()
