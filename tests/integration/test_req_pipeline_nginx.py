# SPDX-License-Identifier: BSD-2-Clause
"""No lost readiness (issue 21 item 2): under an inbound request rule that
never limits, nginx answers pipelined and long request heads exactly as it
does bare.

nginx reads with edge-triggered epoll and stops at a short read: when
sluice hands it part of what arrived (the bytes before an incomplete head)
and keeps the rest, or leaves the rest in the kernel after the edge fired,
nginx must hear about it again or the connection stalls. Two nginx
configurations, each run bare and under `req_rate=1000000/s` (never
limiting):
  - the smallest header buffers (connection_pool_size 128,
    client_header_buffer_size 128, large_client_header_buffers 5 256):
    a request with three 200-byte headers pipelined with one carrying a
    203-byte header; then the property: a stream of four requests, one
    with a long head (a 200-byte header: more than the 128-byte buffer),
    written in two parts with a pause, for every split point, gets the
    same status lines as bare;
  - nginx's defaults (1 KB header buffer): two pipelined 1 KB heads, one
    16.6 KB head, and 10,000 pipelined requests.
Each client sends everything, then reads responses until it has as many
as bare nginx gave (or the connection ends, or 3 s pass: a stall shows as
fewer responses). The status lines must be the same as bare's.
"""
import socket

from lib import *


def responses(port, parts, want=None, timeout=3.0, pause=0.005):
    """Writes `parts` (a pause between them), then reads HTTP responses
    until `want` of them came, the connection ended or `timeout` passed.
    Returns the list of status codes."""
    codes = []
    buf = b""
    deadline = time.monotonic() + timeout
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        def send():
            try:
                for i, p in enumerate(parts):
                    if i:
                        time.sleep(pause)  # the parts arrive (and are read) apart
                    s.sendall(p)
            except OSError:
                pass  # nginx closed (an error answer): what it answered is the result

        # a thread: 10,000 responses fill the socket buffers long before
        # 10,000 requests are written
        writer = threading.Thread(target=send, daemon=True)
        writer.start()
        while want is None or len(codes) < want:
            # parse every complete response in buf
            while True:
                end = buf.find(b"\r\n\r\n")
                if end < 0:
                    break
                head = buf[:end].decode("latin-1")
                m = re.search(r"(?im)^content-length:\s*(\d+)", head)
                blen = int(m.group(1)) if m else 0
                if len(buf) < end + 4 + blen:
                    break
                codes.append(int(head.split()[1]))
                buf = buf[end + 4 + blen:]
            if want is not None and len(codes) >= want:
                break
            left = deadline - time.monotonic()
            if left <= 0:
                break
            s.settimeout(left)
            try:
                chunk = s.recv(1 << 16)
            except (socket.timeout, ConnectionResetError):
                break
            if not chunk:
                break
            buf += chunk
        writer.join(timeout)
    return codes


def summary(codes):
    """[200, 200, 400] as "200 x2, 400 x1" (10,000 codes stay readable)."""
    out = []
    for c in codes:
        if out and out[-1][0] == c:
            out[-1][1] += 1
        else:
            out.append([c, 1])
    return ", ".join(f"{c} x{n}" for c, n in out) or "nothing"


def site(tmp, port, small):
    www = tmp.join("www")
    os.makedirs(www, exist_ok=True)
    os.chmod(www, 0o755)
    with open(os.path.join(www, "a"), "w") as f:
        f.write("ok\n")
    bufs = """connection_pool_size 128;
    client_header_buffer_size 128;
    large_client_header_buffers 5 256;""" if small else ""
    return f"""
    access_log off;
    keepalive_timeout 30;
    keepalive_requests 100000;
    {bufs}
    server {{
        listen 127.0.0.1:{port};
        root {www};
    }}
"""


def req(extra=""):
    return f"GET /a HTTP/1.1\r\nHost: x\r\n{extra}\r\n".encode()


# The last request of every case asks nginx to close after it: the client
# reads to the end of the connection, bare or not, and only a stall waits
# for the timeout.
LAST = "Connection: close\r\n"


def hdr(name, n):
    """A header line of n bytes in all (CRLF included)."""
    return f"{name}: " + "v" * (n - len(name) - 4) + "\r\n"


SMALL_CASES = {
    "three 200-byte headers, then a 203-byte one":
        [req(hdr("X-A", 200) + hdr("X-B", 200) + hdr("X-C", 200)) + req(hdr("X-D", 203) + LAST)],
}
DEFAULT_CASES = {
    "two pipelined 1 KB heads": [req(hdr("X-A", 1000)) + req(hdr("X-A", 1000) + LAST)],
    "one 16.6 KB head": [req(hdr("X-A", 4000) * 4 + hdr("X-B", 600) + LAST)],
    "10,000 pipelined requests": [req() * 9999 + req(LAST)],
}
# the property: four requests, one with a head longer than the small
# buffer, split in two at every byte
STREAM = req() + req(hdr("X-A", 60)) + req(hdr("X-B", 200)) + req(LAST)


def run_cases(tmp, small, under):
    port = free_port()
    _, argv = nginx_config(tmp, site(tmp, port, small), events="use epoll;")
    rule = f"port={port} req_rate=1000000/s req_burst=1000000"
    if under:
        argv = sluice_argv(argv, ins=[rule])
    out = {}
    with Proc(argv) as ng:
        wait_listen(port)
        for name, parts in (SMALL_CASES if small else DEFAULT_CASES).items():
            want = under.get(name) if under else None
            t = 15.0 if "10,000" in name else 3.0
            out[name] = responses(port, parts, want=want and len(want), timeout=t,
                                  pause=0.02)
        if small:
            for cut in range(1, len(STREAM)):
                key = f"split at {cut}"
                want = under.get(key) if under else None
                out[key] = responses(port, [STREAM[:cut], STREAM[cut:]],
                                     want=want and len(want), timeout=1.0 if under else 2.0)
                if under and out[key] != want:
                    break  # one stall is enough to fail; the rest would each wait
        check(ng.p.poll() is None, "nginx is still running")
    return out


bad = []
for small in (True, False):
    with TempDir() as tmp:
        bare = run_cases(tmp, small, None)
    with TempDir() as tmp:
        ours = run_cases(tmp, small, bare)
    bad += [f"{name}: under a never-limiting rule {summary(codes)}, bare {summary(bare[name])}"
            for name, codes in ours.items() if codes != bare[name]]
    print(f"{'small' if small else 'default'} buffers: {len(ours)} cases, as bare",
          {k: summary(v) for k, v in ours.items() if not k.startswith("split")})
check(not bad, "\n".join(bad))
print("ok")
