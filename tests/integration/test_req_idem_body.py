# SPDX-License-Identifier: BSD-2-Clause
"""Idempotency-Key bound to the body (issue 18 item 5, what was left): a
retry is free only when it is the same request, the same method, target
and body; a replay with another body under the same key is charged. It
used to ride free (the body was not part of the mark).

Rule: req_rate=1/m req_burst=2 per=header:X-API-Key action=reply, on nginx
(`return 200`, plain and TLS) and python's ThreadingHTTPServer
(lib.KEEPALIVE_SERVER, which reads the Content-Length body). Each request
on a connection of its own, one after the other, under one API key per
server, all with Idempotency-Key: k:
  1. POST /orders body A      charged (1 token left)      200
  2. POST /orders body A      a retry: free               200
  3. POST /orders body B      another body: charged (0)   200
  4. POST /orders body C      another body: denied        429
  5. POST /orders body A      a retry again: free         200
     (nginx: sent chunked in two chunks: the digest is of the body, not
     of its framing)
Before (the body not in the mark): 200 200 200 200 429 (B and C free
retries, A's second retry charged and denied). The server's own count
must match (4 handled). No timing tolerance: a token takes 60 s to come
back and the five requests take well under a second.
"""
import socket
import ssl

from lib import *

RULE = "req_rate=1/m req_burst=2 per=header:X-API-Key action=reply"

CTX = ssl._create_unverified_context()
A, B, C = '{"order": 17, "qty": 1}', '{"order": 17, "qty": 9}', '{"order": 18, "qty": 1}'


def post(port, key, body, tls=False, chunks=None):
    head = f"POST /orders HTTP/1.1\r\nHost: x\r\nX-API-Key: {key}\r\nIdempotency-Key: k\r\n"
    if chunks:
        data = head + "Transfer-Encoding: chunked\r\n\r\n"
        data += "".join(f"{len(c):x}\r\n{c}\r\n" for c in chunks) + "0\r\n\r\n"
    else:
        data = head + f"Content-Length: {len(body)}\r\n\r\n{body}"
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    if tls:
        s = CTX.wrap_socket(s, server_hostname="localhost")
    try:
        s.sendall(data.encode())  # head and body in one write: the body comes whole with its head
        got = b""
        while b"\r\n" not in got:
            b = s.recv(4096)
            if not b:
                break
            got += b
        return int(got.split()[1]) if got.startswith(b"HTTP/1.1 ") else 0
    except (ConnectionResetError, ssl.SSLError, OSError):
        return 0
    finally:
        s.close()


with TempDir() as tmp:
    crt, key = make_cert(tmp, cn="localhost")
    p_ng, p_ngs, p_py = free_port(), free_port(), free_port()
    log = tmp.join("access.log")
    _, ng_argv = nginx_config(tmp, f"""
    log_format who '$http_x_api_key $status';
    access_log {log} who;
    server {{
        listen 127.0.0.1:{p_ng};
        listen 127.0.0.1:{p_ngs} ssl;
        ssl_certificate {crt};
        ssl_certificate_key {key};
        location / {{ return 200 "ok\\n"; }}
    }}""")
    ins = [f"port={p} {RULE}" for p in (p_ng, p_ngs, p_py)]
    ng = Proc(sluice_argv(ng_argv, ins=ins[:2]))
    py = Proc(sluice_argv(keepalive_argv(p_py, log=True), ins=ins[2:]))
    try:
        for p in (p_ng, p_ngs, p_py):
            wait_listen(p)
        want = [200, 200, 200, 429, 200]
        rows, bad = [], []
        for name, port, tls in (("nginx", p_ng, False), ("nginx TLS", p_ngs, True),
                                ("python", p_py, False)):
            k = "key-" + name.replace(" ", "-")
            got = [post(port, k, A, tls), post(port, k, A, tls), post(port, k, B, tls),
                   post(port, k, C, tls)]
            if name.startswith("nginx"):
                got.append(post(port, k, "", tls, chunks=[A[:7], A[7:]]))
            else:
                got.append(post(port, k, A, tls))
            if name.startswith("nginx"):
                time.sleep(0.1)  # the log line is written as the request ends: already done
                with open(log) as f:
                    handled = sum(1 for l in f if l.split()[0] == k)
            else:
                handled = len(served(py, "/orders", key=k))
            rows.append((name, got, handled))
            if got != want or handled != 4:
                bad.append(f"{name}: statuses {got} (want {want}), {handled} handled (want 4)")
        print("| server | statuses of A, A, B, C, A | handled |")
        print("|---|---|---:|")
        for r in rows:
            print(f"| {r[0]} | {' '.join(map(str, r[1]))} | {r[2]} |")
        check(not bad, "\n".join(bad))
    finally:
        ng.stop()
        py.stop()
print("ok")
