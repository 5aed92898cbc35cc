# SPDX-License-Identifier: BSD-2-Clause
"""Outbound request limits on HTTP/2 with prior knowledge (h2c, issue 10):
clients talk to a local nginx (`listen ... http2`, not under sluice); each
HEADERS frame that opens a stream is a request.

curl 7.88 (Debian 12) cannot reuse an h2c connection for a second URL
against nginx ("Error in the HTTP2 framing layer") without sluice too, so
curl runs one URL per process under one shared table. A held (EAGAIN)
HEADERS write made it fail with "Failed sending data to the peer" (curl's
HTTP/2 EAGAIN handling, reworked in curl 8.2): sluice keeps such a write
and reports it written, as through TLS. Delay on one connection is shown
with a small blocking h2c client.

1. delay `req_rate=5/s req_burst=1`, a blocking python client writing 6
   HEADERS frames (streams 1..11) on one connection: the held frames wait
   in its writes, in order; all 6 answered (nginx logs 6 x 200 HTTP/2) in
   (6-1)/5 = 1.0 s. Tolerance -0.05 s / +0.4 s.
2. reject `req_rate=1/m req_burst=2`: 3 curls, the third fails (its
   HEADERS write is refused) and nginx's log shows only the 2 sent.
3. delay with curl: a held HEADERS write is kept and reported written, as
   through TLS, and sent at its turn: 4 curls at 5/s burst 1 all get 200
   over HTTP/2 in at least 0.6 s (before: the second exited 55).
"""
from lib import *

# A blocking h2c client: preface, SETTINGS, then n GETs on streams 1, 3, ...
# each HEADERS frame in its own write (literal header fields, no Huffman),
# then reads frames until every stream has ended.
H2CLIENT = r"""
import json, socket, struct, sys, time
port, n = int(sys.argv[1]), int(sys.argv[2])
def frame(t, f, sid, p): return struct.pack(">I", len(p))[1:] + bytes([t, f]) + struct.pack(">I", sid) + p
def lit(k, v): return b"\x00" + bytes([len(k)]) + k + bytes([len(v)]) + v
s = socket.create_connection(("127.0.0.1", port), timeout=10)
t0 = time.monotonic()
s.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + frame(4, 0, 0, b""))
for i in range(n):
    blk = lit(b":method", b"GET") + lit(b":scheme", b"http") + lit(b":path", b"/%d" % i) + lit(b":authority", b"v")
    s.sendall(frame(1, 5, 2 * i + 1, blk))
f = s.makefile("rb"); ended = set()
while len(ended) < n:
    h = f.read(9)
    if len(h) < 9: break
    ln = int.from_bytes(h[:3], "big"); t, fl = h[3], h[4]; sid = int.from_bytes(h[5:9], "big") & 0x7fffffff
    f.read(ln)
    if t == 4 and not fl & 1: s.sendall(frame(4, 1, 0, b""))
    if t in (0, 1) and fl & 1: ended.add(sid)
print(json.dumps({"ended": len(ended), "took": time.monotonic() - t0}))
"""


def site(tmp, port, log):
    www = tmp.join("www")
    os.makedirs(www, exist_ok=True)
    for i in range(10):
        with open(os.path.join(www, str(i)), "w") as f:
            f.write("ok\n")
    os.chmod(www, 0o755)
    return f"""
    log_format brief '$status $uri $server_protocol';
    access_log {log} brief;
    server {{
        listen 127.0.0.1:{port} http2;
        root {www};
    }}
"""


with TempDir() as tmp:
    port = free_port()
    log = tmp.join("access.log")
    _, argv = nginx_config(tmp, site(tmp, port, log))
    with Proc(argv):
        wait_port(port)
        name = f"reqouth2{os.getpid()}"

        def curls(rule, n):
            conf = tmp.write(f"sluice-{n}.conf", f'shared = "{name}-{n}"\noutbound "v" {{ to = "127.0.0.1:{port}" {rule} }}\n')
            script = " ; ".join(f"curl -sS --http2-prior-knowledge -o /dev/null -w '%{{http_code}} %{{http_version}}\\n' "
                                f"http://127.0.0.1:{port}/{i}" for i in range(n))
            try:
                t0 = time.monotonic()
                r = run(sluice_argv(["sh", "-c", script], config=conf), timeout=30)
                return r, time.monotonic() - t0
            finally:
                shm_cleanup(f"{name}-{n}")

        with open(log) as f:
            before = len(f.readlines())
        r = run(sluice_argv([sys.executable, "-c", H2CLIENT, str(port), "6"],
                            outs=[f"to=127.0.0.1 port={port} req_rate=5/s req_burst=1 action=delay max_delay=10s"]), timeout=30)
        res = last_json(r.stdout)
        check(res["ended"] == 6, f"h2c delay: all 6 streams answered: {res} {r.stderr}")
        check(0.95 <= res["took"] <= 1.0 + 0.4, f"h2c delay: 6 streams on one connection at 5/s burst 1 take 1.0 s: {res['took']:.3f}")
        time.sleep(0.2)  # nginx writes its log line after the response: bounded, once
        with open(log) as f:
            lines = f.readlines()[before:]
        check(len(lines) == 6 and all(l.split()[0] == "200" and "HTTP/2" in l for l in lines), f"h2c delay: nginx served 6 over HTTP/2: {lines}")
        with open(log) as f:
            before = len(f.readlines())
        r, _ = curls('req_rate = "1/m" req_burst = 2 action = reject', 3)
        time.sleep(0.2)  # nginx writes its log line after the response: bounded, once
        with open(log) as f:
            sent = len(f.readlines()) - before
        check(r.stdout.split("\n")[:3] == ["200 2", "200 2", "000 0"], f"h2c reject: the third refused: {r.stdout!r} {r.stderr}")
        check(sent == 2, f"h2c reject: nginx saw only the two sent requests: {sent}")
        # curl under delay: its held HEADERS write is kept and reported
        # written (curl 7.88 fails an HTTP/2 write that returns EAGAIN with
        # exit 55), sent at its turn; the socket is announced readable then
        # so curl reads. 4 curls at 5/s burst 1 in one shell: each exits 0
        # with 200 over HTTP/2, and the four take at least (4-1)/5 = 0.6 s
        # (0.05 s less: the first request's own time is inside the span).
        r, took = curls('req_rate = "5/s" req_burst = 1 action = delay max_delay = "10s"', 4)
        check(r.stdout.split("\n")[:4] == ["200 2"] * 4, f"h2c delay, curl: all 4 served over HTTP/2: {r.stdout!r} {r.stderr}")
        check(r.returncode == 0, f"h2c delay, curl: every curl exits 0: {r.returncode} {r.stderr}")
        check(took >= 0.6 - 0.05, f"h2c delay, curl: paced at 5/s: {took:.3f} s for 4")
print("ok")
