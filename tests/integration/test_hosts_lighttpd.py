# SPDX-License-Identifier: BSD-2-Clause
"""Hosts we did not write (issue 21): lighttpd, bare and under rules that
never limit (hostlib.MODES), gives every client the same bytes.

lighttpd reads with its own chunk queue and edge cases nginx handles
differently. Cases, each on a new connection, the bytes read compared with
the headers that change between runs removed:
  - 20 pipelined requests;
  - the same written one byte per segment;
  - `Expect: 100-continue`: the client sends the head, waits for
    lighttpd's answer (for a static file lighttpd answers at once, without
    a `100 Continue`), and only then the body;
  - a half-close after two requests;
  - lingering close: a malformed request followed by 200 KB the server
    never asks for; lighttpd answers 400 and drains before closing, so the
    client reads the whole answer (not a reset);
  - a 1 MB download;
  - three pipelined requests split in two at every other byte.
"""
import hashlib

from hostlib import *

LIGHTTPD = shutil.which("lighttpd") or "/usr/sbin/lighttpd"
check(os.path.exists(LIGHTTPD), "lighttpd is not installed (apt-get install lighttpd)")


def req(path, extra="", method="GET"):
    return f"{method} {path} HTTP/1.1\r\nHost: x\r\n{extra}\r\n".encode()


CLOSE = "Connection: close\r\n"


def clean(data):
    return re.sub(rb"(?im)^(date|last-modified|etag): [^\r]*\r\n", b"", data)


def continue_case(port):
    """Head, wait for 100 Continue, body; returns everything read."""
    body = b"x" * 5000
    data = b""
    with socket.create_connection(("127.0.0.1", port), timeout=3) as s:
        s.sendall(req("/a", f"Content-Length: {len(body)}\r\nExpect: 100-continue\r\n" + CLOSE,
                      "POST"))
        try:
            while b"\r\n\r\n" not in data:
                c = s.recv(4096)
                if not c:
                    break
                data += c
            s.sendall(body)
            while True:
                c = s.recv(65536)
                if not c:
                    break
                data += c
        except (socket.timeout, OSError) as e:
            data += f"<{type(e).__name__}>".encode()
    return clean(data)


def cases(mode, tmp):
    port = free_port()
    www = tmp.join("www")
    os.makedirs(www, exist_ok=True)
    with open(os.path.join(www, "a"), "w") as f:
        f.write("ok\n")
    with open(os.path.join(www, "big"), "wb") as f:
        f.write(bytes(range(256)) * 4096)
    conf = tmp.write("lighttpd.conf", f"""
server.document-root = "{www}"
server.bind = "127.0.0.1"
server.port = {port}
server.errorlog = "{tmp.join('error.log')}"
server.max-keep-alive-requests = 1000
server.modules = ( "mod_staticfile" )
""")
    out = {}
    with Proc(wrap(mode, [LIGHTTPD, "-D", "-f", conf], ins=rules(mode, port))) as lt:
        wait_listen(port)
        stream = req("/a") * 19 + req("/a", CLOSE)
        out["20 pipelined"] = clean(exchange(port, [stream]))
        out["one byte per segment"] = clean(exchange(port, bytewise(stream), timeout=10))
        out["100-continue"] = continue_case(port)
        out["half-close"] = clean(exchange(port, [req("/a") + req("/a")], shut=True))
        out["lingering close"] = clean(exchange(port, [b"GET /a HTTP/1.1\r\nHost x\r\n\r\n",
                                                       b"j" * 200000], timeout=5))
        big = exchange(port, [req("/big", CLOSE)], timeout=10)
        out["1 MB download"] = f"{len(big)} bytes {hashlib.sha256(clean(big)).hexdigest()[:16]}"
        s3 = req("/a") + req("/a", "X-Pad: " + "p" * 100 + "\r\n") + req("/a", CLOSE)
        out["split"] = [clean(exchange(port, [s3[:c], s3[c:]], pause=0.01))
                        for c in range(1, len(s3), 2)]
        check(lt.p.poll() is None, f"lighttpd under {mode} is still running")
        out["sluice said"] = denials(lt)
        print(mode, "sluice counted", applied(mode, lt, "lighttpd"))
    return out


results = {}
for mode in MODES:
    with TempDir() as tmp:
        results[mode] = cases(mode, tmp)
    print(mode, {k: (v.split(b"\r\n")[0] if isinstance(v, bytes) else
                     (len(v) if isinstance(v, list) else v)) for k, v in results[mode].items()})

b = results["bare"]
check(b["20 pipelined"].count(b"HTTP/1.1 200") == 20, "bare lighttpd answered 20")
check(b["100-continue"].startswith(b"HTTP/1.1 200"), f"bare lighttpd answered the head: {b['100-continue'][:200]}")
check(b["lingering close"].startswith(b"HTTP/1.1 400"), f"bare lighttpd answered 400: {b['lingering close'][:100]}")
bad = compare(results)
check(not bad, "\n".join(bad))
print("ok")
