# SPDX-License-Identifier: BSD-2-Clause
"""grpcio's client, over TLS and over h2c, under outbound request rules
(issue 34: "grpcio over TLS: the client is told 10 calls failed
(UNAVAILABLE) while the server executed 9-11 of the 12"; "grpcio over
h2c: not paced, nothing said").

Debian's python3-grpcio (its C core: non-blocking sockets, epoll, and over
TLS OpenSSL on memory BIOs, which sluice reads through SSL_write and holds
at the socket) calls a grpcio server in this test's tree, not under the
shim, that logs the time it starts executing each call (grpclib.py).
Each case runs over h2c and over TLS, `sluice run --out 'to=127.0.0.1
port=P ...'`:

  bare      12 calls one after another: all OK, all executed, over a span
            (first to last execution) far under the floor below: grpc
            alone does not meet the paced check.
  delay     req_rate=5/s req_burst=1, 12 calls one after another: all OK,
            all executed, the server's span at least (12-1)/5 - 0.2 s and
            at most that + 5 s (the limiter gives each call its turn 0.2 s
            after the previous one's: the span is shorter only by the
            first call's delivery, far below one interval; a slow machine
            lengthens it, never shortens it); sluice logged the pacing.
  reply     the same rule with action=reply (max_delay: the default
            10 s): the same, and the log says once why no answer can be
            given (HTTP/2, a memory BIO) and that calls wait instead.
  refused   req_rate=1/m req_burst=2 action=reply, 6 calls one after
            another: 2 OK, 4 failed at once (each under 2 s: their turn is
            a minute away, beyond max_delay, so no wait), and the calls
            the server executed are exactly those the client was told
            succeeded: none it was told failed.
  together  12 calls started at once on one channel under req_rate=5/s
            req_burst=1 action=reply: all 12 OK and executed, the server's
            span at least the floor, and none took more than 2 s beyond
            its pacing (call i is due (i)/5 s after the first; the whole
            batch within DUE + 2 s).
The calls a refusal cuts short while others are in flight (the server had
executed one the client was told failed, before a refusal waited for the
streams before it) are test_grpc_out_inflight.py's.
"""
from grpclib import *

N, RATE = 12, 5
DUE = (N - 1) / RATE
FLOOR = DUE - 1 / RATE  # the docstring says why
LATE = 2.0  # the most a call may end after its pacing allows


def span(times):
    return max(times) - min(times) if times else 0.0


def main():
    why = grpc_missing()
    if why:
        print(f"SKIP: {why}")
        return
    with TempDir() as tmp, GrpcServers(tmp) as srv:
        for tls in (False, True):
            via = "TLS" if tls else "h2c"
            port = srv.port(tls)
            rule = f"to=127.0.0.1 port={port} req_rate={RATE}/s req_burst=1"

            tag = f"bare{via}"
            ok, failed, _, took = grpc_calls(srv, tls, N, tag, "seq")
            done = srv.executed(tag)
            print(f"{via} bare: {len(ok)} OK, executed {len(done)} over {span(done.values()):.3f} s")
            check(len(ok) == N and len(done) == N, f"{tag}: {ok} {failed} {done}")
            check(span(done.values()) < FLOOR, f"{tag}: grpc alone spreads its calls over "
                  f"{span(done.values()):.2f} s: the paced check would prove nothing")

            for action in ("delay", "reply"):
                tag = f"{action}{via}"
                ok, failed, r, took = grpc_calls(srv, tls, N, tag, "seq", f"{rule} action={action}")
                done = srv.executed(tag)
                s = span(done.values())
                print(f"{via} {action}: {len(ok)} OK, {len(failed)} failed, executed {len(done)} "
                      f"over {s:.3f} s (floor {FLOOR:.1f} s), run {took:.2f} s")
                check(len(ok) == N and len(done) == N, f"{tag}: every call done: failed {failed}, "
                      f"executed {len(done)}\n{r.stderr[-2000:]}")
                check(FLOOR <= s <= DUE + 5, f"{tag}: paced over {s:.2f} s, not {FLOOR:.1f}-"
                      f"{DUE + 5:.1f} s\n{r.stderr[-2000:]}")
                lines = sluice_lines(r.stderr)
                check(any("paced a request" in l for l in lines), f"{tag}: pacing not logged")
                if action == "reply":
                    said = [l for l in lines if "cannot answer on" in l]
                    cause = "a memory BIO" if tls else "HTTP/2"
                    check(len(said) == 1 and cause in said[0], f"{tag}: said once why: {said}")

            tag = f"refused{via}"
            ok, failed, r, took = grpc_calls(srv, tls, 6, tag, "seq",
                                             f"to=127.0.0.1 port={port} req_rate=1/m req_burst=2 "
                                             "action=reply")
            done = srv.executed(tag)
            print(f"{via} refused: OK {sorted(ok)}, failed {sorted(failed.items())}, executed "
                  f"{sorted(done)}")
            check(len(ok) == 2 and len(failed) == 4, f"{tag}: 2 OK, 4 failed: {ok} {failed}")
            check(set(done) == set(ok), f"{tag}: the server executed {sorted(done)}, the client "
                  f"was told {sorted(ok)} succeeded")
            check(any("limited request" in l for l in sluice_lines(r.stderr)),
                  f"{tag}: the refusals were not logged\n{r.stderr[-2000:]}")
            slowest = max(t for _, t in failed.values())
            check(slowest < 2, f"{tag}: a refused call took {slowest:.2f} s (at once: under 2 s)")

            tag = f"together{via}"
            ok, failed, r, took = grpc_calls(srv, tls, N, tag, "all", f"{rule} action=reply")
            done = srv.executed(tag)
            s = span(done.values())
            last = max(ok.values()) if ok else 0.0
            print(f"{via} together: {len(ok)} OK, executed {len(done)} over {s:.3f} s, the last "
                  f"call ended {last:.3f} s after the batch began")
            check(len(ok) == N and len(done) == N, f"{tag}: every call done: failed {failed}\n"
                  f"{r.stderr[-2000:]}")
            check(s >= FLOOR, f"{tag}: paced over {s:.2f} s, not at least {FLOOR:.1f} s")
            check(last <= DUE + LATE, f"{tag}: the last call ended {last:.2f} s after the start, "
                  f"more than {LATE} s beyond its pacing ({DUE:.1f} s)")
    print("ok")


main()
