# SPDX-License-Identifier: BSD-2-Clause
"""A refusal on an HTTP/2 connection never fails calls the server
executed (issue 34: "grpcio's server never runs a call its client was
told failed").

grpcio starts 12 calls at once on one channel (grpclib.py) under
`--out 'to=127.0.0.1 port=P req_rate=5/s req_burst=1 action=reply
max_delay=1s'`, over h2c and over TLS (memory BIOs), RUNS runs each:
calls 0..5 go at their turns (0.2 s apart), the later ones are beyond
max_delay and refused. A refusal fails the write that carries the
refused stream's HEADERS, and grpc then drops the whole connection:
every stream in flight on it ends UNAVAILABLE. Before the fix that
included the one whose HEADERS and DATA went just before the refused one
and which the server was executing (measured, three times 10 runs: 3, 3
and 4 runs in which the server executed call 6 and the client was told
it failed; a race: when the answer to call 6 is read before the refusal,
the client is told it succeeded). Now the denial waits for the streams
sent before it to end, their answers read (core/http/request.h
sl_req_refusal_wait: at the socket write over memory BIOs, shim/reqout.c
cipher_turn; in the write's decision over h2c, core/http/reqwrite.c),
within the rule's max_delay. Asserted here: in every run, the calls the
server executed are among those the client was told succeeded; the logic
itself is test_reqwrite's an_h2_denial_waits_for_the_streams_before_it.
"""
from grpclib import *

RUNS = 3


def main():
    why = grpc_missing()
    if why:
        print(f"SKIP: {why}")
        return
    bad = []
    with TempDir() as tmp, GrpcServers(tmp) as srv:
        for tls in (False, True):
            via = "TLS" if tls else "h2c"
            rule = (f"to=127.0.0.1 port={srv.port(tls)} req_rate=5/s req_burst=1 action=reply "
                    "max_delay=1s")
            for k in range(RUNS):
                tag = f"{via}{k}"
                ok, failed, _, _ = grpc_calls(srv, tls, 12, tag, "all", rule)
                done = srv.executed(tag)
                told_failed = sorted(set(done) & set(failed))
                print(f"{via} run {k}: {len(ok)} OK, {len(failed)} failed, executed {len(done)}; "
                      f"executed but told failed: {told_failed}")
                check(len(ok) >= 6, f"{tag}: the calls within max_delay went: {sorted(ok)}")
                bad += [f"{n} executed, told {failed[n][0]}" for n in told_failed]
    check(not bad, f"the server executed calls its client was told failed: {bad}")
    print("ok")


main()
