# SPDX-License-Identifier: BSD-2-Clause
"""A grpcio server and client (Debian's python3-grpcio, for Debian's
/usr/bin/python3) for the outbound gRPC tests: test_grpc_out.py and
test_grpc_out_inflight.py.

The server (not under the shim) answers the unary method /t.S/Call, with
raw bytes (no generated code), over h2c or TLS, and writes
"EXEC NAME MONOTONIC_TIME" to stderr as it starts executing each call.
The client makes calls named TAG-0..TAG-(N-1), one after another
("seq") or all at once on one channel ("all"), and prints one line per
call: "OK NAME SECONDS" or "ERR NAME CODE SECONDS" (seconds from the
call's start, or from the batch's start for "all").
"""
from lib import *

PY = "/usr/bin/python3"

SERVER = r"""
import grpc, sys, time
from concurrent import futures
port = int(sys.argv[1])
def call(req, ctx):
    sys.stderr.write("EXEC %s %.6f\n" % (req.decode(), time.monotonic()))
    sys.stderr.flush()
    return b"ok " + req
h = grpc.method_handlers_generic_handler("t.S", {"Call": grpc.unary_unary_rpc_method_handler(call)})
s = grpc.server(futures.ThreadPoolExecutor(4))
s.add_generic_rpc_handlers((h,))
if len(sys.argv) > 2:
    pair = (open(sys.argv[2], "rb").read(), open(sys.argv[3], "rb").read())
    s.add_secure_port("127.0.0.1:%d" % port, grpc.ssl_server_credentials([pair]))
else:
    s.add_insecure_port("127.0.0.1:%d" % port)
s.start()
sys.stderr.write("LISTENING\n")
sys.stderr.flush()
s.wait_for_termination()
"""

CLIENT = r"""
import grpc, sys, time
port, n, tag, how = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
if len(sys.argv) > 5:
    ch = grpc.secure_channel("127.0.0.1:%d" % port, grpc.ssl_channel_credentials(open(sys.argv[5], "rb").read()))
else:
    ch = grpc.insecure_channel("127.0.0.1:%d" % port)
call = ch.unary_unary("/t.S/Call")
def say(i, t, err=None):
    name = "%s-%d" % (tag, i)
    if err is None:
        print("OK %s %.3f" % (name, time.monotonic() - t), flush=True)
    else:
        print("ERR %s %s %.3f" % (name, err.code().name, time.monotonic() - t), flush=True)
if how == "seq":
    for i in range(n):
        t = time.monotonic()
        try:
            call(("%s-%d" % (tag, i)).encode(), timeout=15)
            say(i, t)
        except grpc.RpcError as e:
            say(i, t, e)
else:
    grpc.channel_ready_future(ch).result(timeout=10)
    t = time.monotonic()
    fs = [call.future(("%s-%d" % (tag, i)).encode(), timeout=15) for i in range(n)]
    for i, f in enumerate(fs):
        try:
            f.result()
            say(i, t)
        except grpc.RpcError as e:
            say(i, t, e)
"""


def grpc_missing():
    """Why the gRPC tests cannot run here, or None."""
    if run([PY, "-c", "import grpc"]).returncode != 0:
        return "no python3-grpcio"
    return None


def grpc_cert(tmp):
    """A certificate for 127.0.0.1 with the subjectAltName grpc checks."""
    key, crt = tmp.join("grpc-key.pem"), tmp.join("grpc-cert.pem")
    r = run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
             "-nodes", "-keyout", key, "-out", crt, "-days", "1", "-subj", "/CN=127.0.0.1",
             "-addext", "subjectAltName=IP:127.0.0.1"])
    check(r.returncode == 0, f"openssl req: {r.stderr}")
    return key, crt


class GrpcServers:
    """An h2c server on `plain` and a TLS one on `tls` (ports), in this
    test's process tree, not under the shim."""

    def __init__(self, tmp):
        self.key, self.crt = grpc_cert(tmp)
        self.plain, self.tls = free_port(), free_port()
        self.procs = [Proc([PY, "-c", SERVER, str(self.plain)]),
                      Proc([PY, "-c", SERVER, str(self.tls), self.key, self.crt])]
        # grpc listens on a dual-stack socket (::ffff:127.0.0.1, in
        # /proc/net/tcp6): it says when it does
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not all("LISTENING" in p.stderr() for p in self.procs):
            time.sleep(0.05)
        for p in self.procs:
            check("LISTENING" in p.stderr(), f"a grpc server did not start:\n{p.stderr()}")

    def port(self, tls):
        return self.tls if tls else self.plain

    def executed(self, tag):
        """{call name: monotonic time} the servers started executing."""
        out = {}
        for p in self.procs:
            for l in p.stderr().splitlines():
                w = l.split()
                if len(w) == 3 and w[0] == "EXEC" and w[1].startswith(tag + "-"):
                    out[w[1]] = float(w[2])
        return out

    def __enter__(self):
        return self

    def __exit__(self, *a):
        for p in self.procs:
            p.stop()


def grpc_calls(servers, tls, n, tag, how, rule=None, timeout=60):
    """Runs the client (under `sluice run --out rule` when given). Returns
    (ok {name: seconds}, failed {name: (code, seconds)}, run, seconds)."""
    argv = [PY, "-c", CLIENT, str(servers.port(tls)), str(n), tag, how]
    if tls:
        argv.append(servers.crt)
    if rule:
        argv = sluice_argv(argv, outs=[rule])
    t0 = time.monotonic()
    r = run(argv, timeout=timeout)
    took = time.monotonic() - t0
    ok, failed = {}, {}
    for l in r.stdout.splitlines():
        w = l.split()
        if w and w[0] == "OK":
            ok[w[1]] = float(w[2])
        elif w and w[0] == "ERR":
            failed[w[1]] = (w[2], float(w[3]))
    check(len(ok) + len(failed) == n, f"{tag}: {len(ok) + len(failed)} of {n} calls ended:\n"
          f"{r.stdout}\n{r.stderr[-2000:]}")
    return ok, failed, r, took
