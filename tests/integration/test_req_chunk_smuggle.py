# SPDX-License-Identifier: BSD-2-Clause
"""Request smuggling into nginx through a chunk extension ended by a bare LF
(issue 31, defect 1).

A chunked POST whose chunk-size line is "N;\\n": nginx ends the line at the
bare LF and reads the N bytes after it as the chunk (a pad ending in CRLF),
then the last chunk, then requests; http-parser (sluice's framing before
the fix) skips extension bytes up to a CR, so it read the pad as extension
and the N bytes after it, the last chunk and the requests, as chunk data,
and sluice, which does not scan bodies, never counted them. Separators
named in hex ("ACE /sep HTTP/1.1": a request to nginx, a chunk-size line of
0xACE bytes to http-parser) chain the trick on: one keep-alive connection
carries BLOCKS x PER_BLOCK more hidden GETs.

One nginx (1 worker, keep-alive, an access log of every request it ran)
serves three ports:
1. bare: the payload, sent on one connection, gets every hidden request
   run (the smuggling is real: nginx accepts it);
2. under `req_rate=1/m req_burst=2 per=header:X-API-Key action=reply`:
   nginx runs at most the burst (the POST and one GET), the client gets a
   429, odd_heads counts the body, and a log line shows its bytes;
3. under the same rule with on_odd = deny: nginx runs the POST alone (the
   connection is refused from the bare LF on) and the client gets a 429.
Everything is on loopback; every wait is bounded.
"""
import socket

from lib import *

KEY = "k"
BLOCKS = 3


def get(extra=""):
    return f"GET /h HTTP/1.1\r\nHost: x\r\nX-API-Key: {KEY}\r\n{extra}\r\n".encode()


def fill(size, head):
    """`head` (the rest of a separator's head) then GETs, the last padded so
    that the whole is exactly `size` bytes: what http-parser takes as one
    chunk of data. Returns (bytes, GETs in it)."""
    out, n = head, 0
    last = len(get("X-Pad: \r\n"))
    while len(out) + len(get()) + last + 1 <= size:
        out += get()
        n += 1
    pad = size - len(out) - last
    out += get("X-Pad: " + "p" * pad + "\r\n")
    assert len(out) == size
    return out, n + 1


def payload():
    """The POST, its smuggling body, BLOCKS separators: (bytes, hidden GETs)."""
    head = (f"POST /p HTTP/1.1\r\nHost: x\r\nX-API-Key: {KEY}\r\n"
            "Transfer-Encoding: chunked\r\n\r\n").encode()
    hidden0 = b"".join(get() for _ in range(20))
    tail = b"\r\n0\r\n\r\n" + hidden0  # http-parser's first chunk; nginx: the body's end, requests
    n = len(tail)
    data = head + b"%x;\n" % n + b"a" * (n - 2) + b"\r\n" + tail
    hidden = 20
    for _ in range(BLOCKS):
        # nginx: "\r\n" (skipped before a request line), a request ACE;
        # http-parser: the CRLF after the last chunk, a chunk of 0xACE bytes
        block, k = fill(0xACE, f"Host: x\r\nX-API-Key: {KEY}\r\n\r\n".encode())
        data += b"\r\nACE /sep HTTP/1.1\r\n" + block
        hidden += k
    # http-parser: the body's end; nginx: a bad request line, 400 and close
    return data + b"\r\n0\r\n\r\n", hidden


def ran(log, port):
    """The requests nginx ran on `port` (200 and 405 answers; 400 is the
    payload's end, a request nginx refused)."""
    time.sleep(0.2)  # nginx writes its log line after the response
    with open(log) as f:
        return [l for l in f if l.split()[0] == str(port) and l.split()[1] in ("200", "405")]


with TempDir() as tmp:
    p_bare, p_count, p_deny = (free_port() for _ in range(3))
    ng_argv, log = nginx_logged_site(tmp, f"""
        listen 127.0.0.1:{p_bare};
        listen 127.0.0.1:{p_count};
        listen 127.0.0.1:{p_deny};
        keepalive_requests 100000;""", '$server_port $status "$request"', files=("h", "p", "sep"))
    shared = f"it-chunk-{os.getpid()}"
    rule = ('req_rate = "1/m"\n    req_burst = 2\n    per = "header:X-API-Key"\n'
            '    action = reply')
    conf = tmp.write("sluice.conf", f"""
shared = "{shared}"
inbound "count" {{
    port = {p_count}
    {rule}
}}
inbound "deny" {{
    port = {p_deny}
    {rule}
    on_odd = deny
}}
""")
    data, hidden = payload()
    ng = Proc(sluice_argv(ng_argv, config=conf))
    try:
        for p in (p_bare, p_count, p_deny):
            wait_listen(p)

        out = talk(p_bare, data, timeout=5.0)
        bare = ran(log, p_bare)
        gets = sum(1 for l in bare if '"GET /h ' in l)
        print(f"bare nginx: {len(bare)} requests ran ({gets} of {hidden} hidden GETs), "
              f"{len(data)} bytes on one connection")
        check(gets == hidden, f"bare nginx ran {gets} of the {hidden} hidden GETs: the payload "
              f"no longer smuggles, the test proves nothing:\n{''.join(bare[-5:])}")

        out = talk(p_count, data, timeout=5.0)
        got = ran(log, p_count)
        print(f"under sluice (1/m, burst 2): {len(got)} requests ran, answers "
              f"{out.count(b'HTTP/1.1 200')} x 200, {out.count(b'HTTP/1.1 405')} x 405, "
              f"{out.count(b'HTTP/1.1 429')} x 429")
        check(len(got) <= 2, f"nginx ran {len(got)} requests, the bound is 2:\n{''.join(got[:10])}")
        check(b"HTTP/1.1 429" in out, f"no 429: {out[-300:]!r}")

        out = talk(p_deny, data, timeout=5.0)
        got = ran(log, p_deny)
        print(f"on_odd=deny: {len(got)} requests ran, {out.count(b'HTTP/1.1 429')} x 429")
        check(len(got) == 1 and '"POST /p ' in got[0], f"on_odd=deny: {got}")
        check(b"HTTP/1.1 429" in out, f"on_odd=deny, no 429: {out[-300:]!r}")

        r = run([SLUICE, "stats", "-c", conf])
        check(r.returncode == 0, f"sluice stats: {r.stderr}")
        hdr, odd = None, {}
        for l in r.stdout.splitlines():
            w = l.split()
            if w and w[0] == "rule":
                hdr = w
            elif hdr and w and w[0] in ("count", "deny") and "odd_heads" in hdr:
                odd[w[0]] = int(w[hdr.index("odd_heads")])
        print(f"odd_heads: {odd}")
        check(odd.get("count") == 1 and odd.get("deny") == 1, f"odd_heads {odd}:\n{r.stdout}")
        err = ng.stderr()
        if os.path.exists(tmp.join("error.log")):
            err += open(tmp.join("error.log"), errors="replace").read()
        lines = [l for l in err.splitlines() if "odd request body" in l]
        print(lines[0] if lines else "no log line")
        check(lines and '\\n"' in lines[0], f"no odd-body log line with its bytes:\n{err[-2000:]}")
    finally:
        ng.stop()
        shm_cleanup(shared)
print("ok")
