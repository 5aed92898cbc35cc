# SPDX-License-Identifier: BSD-2-Clause
"""Hosts we did not write (issue 21): programs that move one byte at a
time, bare and under rules that never limit (hostlib.MODES), give every
client the same bytes.

  - socat with 1-byte blocks (`-b 1`: one read(1), one write(1) per byte)
    relaying to a bare nginx: socat is under the inbound rule on its port
    and the outbound rule to nginx. Pipelined requests, a half-close after
    the last one (socat passes the shutdown on), a 16 KB download;
  - a server that reads with recv(1) only (the pattern sluice's head
    reader must not turn into "wait for the rest of the head"): on one
    port, HTTP heads (answered once each head is complete, pipelined or
    one byte per segment) and a line protocol (every byte echoed back as
    it arrives, so a byte sluice kept aside shows as a stall).
"""
from hostlib import *

SOCAT = shutil.which("socat") or "/usr/bin/socat"
check(os.path.exists(SOCAT), "socat is not installed (apt-get install socat)")

RECV1 = r"""
import hashlib, socket, sys, threading
srv = socket.socket()
srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("127.0.0.1", int(sys.argv[1])))
srv.listen(64)
def serve(c):
    buf = b""
    while True:
        b = c.recv(1)
        if not b:
            break
        if not buf and b == b"!":
            c.sendall(b"!")           # the line protocol: each byte echoed at once
            while True:
                b = c.recv(1)
                if not b:
                    break
                c.sendall(b.upper())
            break
        buf += b
        if buf.endswith(b"\r\n\r\n"):
            body = hashlib.sha256(buf).hexdigest().encode()
            c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
            buf = b""
    c.close()
while True:
    c, _ = srv.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
"""


def req(path, extra=""):
    return f"GET {path} HTTP/1.1\r\nHost: x\r\n{extra}\r\n".encode()


def n_responses(n):
    return lambda d: d.count(b"HTTP/1.1 ") >= n


def status_and_bodies(data):
    """A stream of responses without the headers that change between runs
    (Date; Last-Modified and ETag: each run writes its files anew)."""
    return re.sub(rb"(?im)^(date|last-modified|etag): [^\r]*\r\n", b"", data)


def socat_cases(mode, tmp):
    back = free_port()
    www = tmp.join("www")
    os.makedirs(www, exist_ok=True)
    os.chmod(www, 0o755)
    for name, size in (("a", 3), ("big", 16 * 1024)):
        with open(os.path.join(www, name), "wb") as f:
            f.write((b"0123456789abcdef" * (size // 16 + 1))[:size])
    _, ngx = nginx_config(tmp, f"""
    access_log off;
    server {{ listen 127.0.0.1:{back}; root {www}; }}""")
    front = free_port()
    argv = wrap(mode, [SOCAT, "-b", "1", f"TCP-LISTEN:{front},bind=127.0.0.1,reuseaddr,fork",
                       f"TCP:127.0.0.1:{back}"],
                ins=rules(mode, front), outs=out_rules(mode, back))
    out = {}
    with Proc(ngx), Proc(argv) as so:
        wait_listen(back)
        wait_listen(front)
        stream = req("/a") * 5 + req("/big") + req("/a", "Connection: close\r\n")
        out["socat -b 1: pipelined"] = status_and_bodies(
            exchange(front, [stream], timeout=10))
        out["socat -b 1: half-close"] = status_and_bodies(
            exchange(front, [req("/a") + req("/a")], shut=True, timeout=5))
        out["socat -b 1: one byte per segment"] = status_and_bodies(
            exchange(front, bytewise(req("/a") + req("/a", "Connection: close\r\n")), timeout=5))
        check(so.p.poll() is None, f"socat under {mode} is still running")
        out["sluice said"] = denials(so)
        print(mode, "sluice counted in socat", applied(mode, so, "socat"))
    return out


def recv1_cases(mode):
    port = free_port()
    argv = wrap(mode, [sys.executable, "-c", RECV1, str(port)], ins=rules(mode, port))
    out = {}
    with Proc(argv) as p:
        wait_listen(port)
        heads = req("/1") + req("/2", "X-Long: " + "y" * 3000 + "\r\n") + req("/3")
        out["recv(1): pipelined heads"] = exchange(port, [heads], until=n_responses(3))
        out["recv(1): one byte per segment"] = exchange(port, bytewise(heads), until=n_responses(3),
                                                       timeout=10)
        out["recv(1): split heads"] = [exchange(port, [heads[:c], heads[c:]], pause=0.01,
                                                until=n_responses(3))
                                       for c in range(1, 60, 2)]
        # the line protocol: a reply per byte, each awaited before the next
        # byte is sent (a byte held back by sluice stalls it)
        got = []
        with socket.create_connection(("127.0.0.1", port), timeout=2) as s:
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            for b in b"!GET / HTTP/1.1\r\nhost":
                s.sendall(bytes([b]))
                try:
                    got.append(s.recv(16))
                except socket.timeout:
                    got.append(b"<stall>")
                    break
        out["recv(1): echo byte by byte"] = b"".join(got)
        out["half-close"] = exchange(port, [req("/h")], shut=True)
        check(p.p.poll() is None, f"recv(1) server under {mode} is still running")
        out["sluice said"] = denials(p)
        print(mode, "sluice counted in the recv(1) server", applied(mode, p, "recv(1) server"))
    return out


results = {}
for mode in MODES:
    with TempDir() as tmp:
        results[mode] = socat_cases(mode, tmp)
    results[mode].update(recv1_cases(mode))
    print(mode, {k: (len(v) if isinstance(v, (bytes, list)) else v) for k, v in results[mode].items()})

b = results["bare"]
check(b["socat -b 1: pipelined"].count(b"HTTP/1.1 200") == 7, "bare socat relayed 7 responses")
check(b["recv(1): echo byte by byte"] == b"!GET / HTTP/1.1\r\nHOST", "bare echo")
bad = compare(results)
check(not bad, "\n".join(bad))
print("ok")
