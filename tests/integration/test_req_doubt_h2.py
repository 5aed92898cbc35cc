# SPDX-License-Identifier: BSD-2-Clause
"""The rule of doubt over HTTP/2 (issue 18 item 2): nghttp2's HPACK inflater
refuses header blocks that nginx accepts (a dynamic table size update after
the first header: `3f e1 1f` or `20`; 66 KB of size updates in CONTINUATION
frames), and sluice used to stop counting the connection there: 51 of 51
streams handled under a 2/s rule. Then the refused block and every later
HEADERS frame were counted, but without keys (the peer's bucket). Now the
size updates go through a pre-pass (core/http/hpack_pre.c) that applies them
where nginx does, and every key is read: the per-key limit is exact.

nginx 1.22 (`listen ... http2`, prior knowledge h2c, and `ssl http2` with
ALPN h2) under req_rate=2/s req_burst=2 per=header:X-API-Key action=reply
(HTTP/2 denials reset the connection). One connection per poison: the
poison stream under key P, then 50 streams alternating keys A and B, all
written at once; the frames are made here by hand (literal HPACK, no
Huffman). nginx's access log counts the streams it handled (status 200)
per key: P 1, A 2 and B 2 (the burst each), the reset coming at the
third A. With the keys lost (before), P, A and B shared the peer's bucket:
2 handled in all. No timing tolerance: 51 streams arrive in one write,
decided within ms of each other, far from the 500 ms a token takes. Also a
clean connection: the same 2 + 2, so the limit is the rule's, not an
artefact of the poison.

Issue 31 item 2: one byte of Huffman padding too many (0xff after a
string that ends on a byte boundary: 8 bits of padding, RFC 7541 5.2 says
at most 7) is read by nginx and was refused by nghttp2's inflater, and
sluice then read no path, host or key for the rest of the connection: a
route=/export rule at 1/m burst 1 let 30 of 30 such requests through, h2c
and TLS, and a host= rule 30 of 30. Now such padding is dropped before the
inflater (core/http/hpack_pre.c), as nginx reads past it: 1 of 30 handled
(the burst), the rest answered with a reset. Also: a plain /export on a
later stream after an over-padded /other (the rest of the connection was
blind before). One request a connection for the first cases, all at once;
nginx's access log counts the /export (or api.example) requests handled.
"""
import socket
import ssl
import struct

from lib import *

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"


def frame(ftype, flags, stream, payload):
    return struct.pack(">I", len(payload))[1:] + bytes([ftype, flags]) + struct.pack(">I", stream) + payload


def lit(name, value):
    """A literal header field without indexing, new name (RFC 7541 6.2.2)."""
    n, v = name.encode(), value.encode()
    return b"\x00" + bytes([len(n)]) + n + bytes([len(v)]) + v


def request_block(key, tls):
    # :method GET, :path /, :scheme http(s), :authority x, x-api-key
    return b"\x82\x84" + (b"\x87" if tls else b"\x86") + b"\x01\x01x" + lit("x-api-key", key)


END_STREAM, END_HEADERS = 0x1, 0x4


def conn_bytes(poison, keys, tls):
    out = PREFACE + frame(4, 0, 0, b"")  # SETTINGS
    out += poison
    for i in range(50):
        out += frame(1, END_STREAM | END_HEADERS, 3 + 2 * i, request_block(keys[i % 2], tls))
    return out


def poisons(tls, key):
    s = b"\x86" if not tls else b"\x87"
    rest = b"\x84" + s + b"\x01\x01x"  # :path /, :scheme, :authority x
    first = frame(1, END_STREAM, 1, b"\x82" + lit("x-api-key", key))
    big = []
    for i in range(5):  # 5 x 13,200 bytes of "size update to 0": 66 KB, then the fields
        big.append(frame(9, END_HEADERS if i == 4 else 0, 1, b"\x20" * 13200 + (rest if i == 4 else b"")))
    return [
        ("size update 3f e1 1f after the first header",
         frame(1, END_STREAM | END_HEADERS, 1, b"\x82\x3f\xe1\x1f" + rest + lit("x-api-key", key))),
        ("size update 20 after the first header",
         frame(1, END_STREAM | END_HEADERS, 1, b"\x82\x20" + rest + b"\x3f\xe1\x1f" + lit("x-api-key", key))),
        ("66 KB of size updates in CONTINUATION", first + b"".join(big)),
    ]


# HPACK Huffman codes (RFC 7541 Appendix B), written out: "/export" is 40
# bits, no padding; "/other" 41 bits + 7 of padding; "api.example" 86 + 2.
HUFF_EXPORT = bytes.fromhex("60be6b3d89")
HUFF_OTHER = bytes.fromhex("60e99cb67f")
HUFF_API = bytes.fromhex("1d665cbe474d7417")


def huff(code, extra=1):
    """A Huffman string literal with `extra` bytes of padding too many."""
    s = code + b"\xff" * extra
    return bytes([0x80 | len(s)]) + s


def padded_blocks(case, tls):
    """The header blocks of one connection for an issue 31 case."""
    s = b"\x87" if tls else b"\x86"
    if case == "path":  # :path /export + 0xff, literal with indexing (name 4)
        return [b"\x82" + s + b"\x44" + huff(HUFF_EXPORT) + b"\x01\x01x"]
    if case == "host":  # :authority api.example + 0xff (name 1)
        return [b"\x82" + s + b"\x84\x41" + huff(HUFF_API)]
    # "later": an over-padded /other, then a plain /export on stream 3
    return [b"\x82" + s + b"\x44" + huff(HUFF_OTHER) + b"\x01\x01x",
            b"\x82" + s + b"\x04\x07/export\x01\x01x"]


def exchange(port, blocks, source, tls, timeout=3.0):
    """Sends one connection's requests (streams 1, 3, ...) at once and reads
    until each stream has ended or been reset, or the connection ends."""
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout, source_address=(source, 0))
    if tls:
        s = CTX.wrap_socket(s, server_hostname="localhost")
    data = PREFACE + frame(4, 0, 0, b"")
    for i, b in enumerate(blocks):
        data += frame(1, END_STREAM | END_HEADERS, 1 + 2 * i, b)
    open_ = set(1 + 2 * i for i in range(len(blocks)))
    buf = b""
    deadline = time.monotonic() + timeout
    try:
        s.sendall(data)
        while open_ and time.monotonic() < deadline:
            d = s.recv(65536)
            if not d:
                break
            buf += d
            while len(buf) >= 9 and len(buf) >= 9 + int.from_bytes(buf[:3], "big"):
                n, ty, fl = int.from_bytes(buf[:3], "big"), buf[3], buf[4]
                sid = int.from_bytes(buf[5:9], "big") & 0x7FFFFFFF
                buf = buf[9 + n:]
                if ty == 7:
                    open_.clear()
                elif ty == 3 or (ty in (0, 1) and fl & END_STREAM):
                    open_.discard(sid)
    except (ConnectionResetError, BrokenPipeError, ssl.SSLError, OSError):
        pass
    finally:
        s.close()


CTX = ssl._create_unverified_context()
CTX.set_alpn_protocols(["h2"])

# issue 31 cases: rule name, what it matches, its clients' 127.0.N.0/24;
# then what is sent, over which listener, how many connections
PADDED_RULES = [("export-h2c", 'route = { "/export" }', 5), ("export-tls", 'route = { "/export" }', 6),
                ("export-later", 'route = { "/export" }', 7), ("host", 'host = { "api.example" }', 8)]
PADDED_CASES = [("route=/export, :path /export + one 0xff", "path", False, 5, 30),
                ("route=/export, :path /export + one 0xff", "path", True, 6, 30),
                ("route=/export, plain /export after an over-padded /other", "later", False, 7, 30),
                ("host=api.example, :authority + one 0xff", "host", False, 8, 30)]


with TempDir() as tmp:
    crt, key = make_cert(tmp, cn="localhost")
    p_c, p_t = free_port(), free_port()
    p_r, p_rt = free_port(), free_port()  # issue 31 rules
    ng_argv, log = nginx_logged_site(tmp, f"""
        listen 127.0.0.1:{p_c} http2;
        listen 127.0.0.1:{p_t} ssl http2;
        listen 127.0.0.1:{p_r} http2;
        listen 127.0.0.1:{p_rt} ssl http2;
        ssl_certificate {crt};
        ssl_certificate_key {key};
        http2_max_requests 1000;""", '$remote_addr $status $http_x_api_key $uri $host',
                                     files=("index.html", "export", "other"))
    conf = tmp.write("sluice.conf", f"""
inbound "api" {{
    port = {{ {p_c}, {p_t} }}
    req_rate = "2/s"
    req_burst = 2
    per = "header:X-API-Key"
    action = reply
}}
""" + "".join(f"""
inbound "{name}" {{
    port = {{ {p_r}, {p_rt} }}
    {match}
    req_rate = "1/m"
    req_burst = 1
    per = rule
    from = {{ "127.0.{net}.0/24" }}
    action = reply
}}
""" for name, match, net in PADDED_RULES))
    ng = Proc(sluice_argv(ng_argv, config=conf))

    def handled(source):
        """{key: streams handled (200)} of one connection, by its source."""
        time.sleep(0.1)  # nginx writes the log line as the stream ends: already done
        got = {}
        with open(log) as f:
            for l in f:
                w = l.split()
                if w[0] == source and w[1] == "200":
                    got[w[2]] = got.get(w[2], 0) + 1
        return got

    try:
        wait_listen(p_c)
        wait_listen(p_t)
        rows, bad, ip = [], [], 20
        for tls, port, label in ((False, p_c, "h2c"), (True, p_t, "TLS h2")):
            cases = [("no poison", None)] + [(n, p) for n, p in poisons(tls, "P")]
            for name, poison in cases:
                ip += 1
                src = f"127.0.3.{ip}"
                a, b, pk = f"a{ip}", f"b{ip}", f"p{ip}"
                if poison is not None:
                    poison = dict(poisons(tls, pk))[name]
                talk(port, conn_bytes(poison or b"", (a, b), tls), src, CTX if tls else None, alpn="h2")
                got = handled(src)
                want = {a: 2, b: 2}
                if poison is not None:
                    want[pk] = 1
                rows.append((name, label, got.get(pk, 0), got.get(a, 0), got.get(b, 0)))
                if got != want:
                    bad.append(f"{name} / {label}: handled {got}, want {want}")
        print("| poison | server | P (1 sent) | A (25 sent) | B (25 sent) |")
        print("|---|---|---:|---:|---:|")
        for r in rows:
            print(f"| {r[0]} | nginx {r[1]} | {r[2]} | {r[3]} | {r[4]} |")
        check(not bad, "the per-key limit is not exact:\n" + "\n".join(bad))

        def handled_at(net, field, value):
            """Requests handled (200) from 127.0.net.0/24 whose uri or host is value."""
            time.sleep(0.1)
            with open(log) as f:
                return sum(1 for l in f if l.split()[0].startswith(f"127.0.{net}.")
                           and l.split()[1] == "200" and l.split()[field] == value)

        print("| over-padded Huffman (issue 31) | server | sent | handled (bound 1) |")
        print("|---|---|---:|---:|")
        for what, case, tls, net, conns in PADDED_CASES:
            for i in range(conns):
                exchange(p_rt if tls else p_r, padded_blocks(case, tls), f"127.0.{net}.{2 + i}", tls)
            got = handled_at(net, 4 if case == "host" else 3, "api.example" if case == "host" else "/export")
            print(f"| {what} | nginx {'TLS h2' if tls else 'h2c'} | {conns} | {got} |")
            if got != 1:
                bad.append(f"{what} ({'TLS' if tls else 'h2c'}): {got} of {conns} handled, bound 1")
        check(not bad, "a rule passed requests it could not read:\n" + "\n".join(bad))
    finally:
        ng.stop()
print("ok")
