# SPDX-License-Identifier: BSD-2-Clause
"""Exact bandwidth for one or several connections of a key, whatever the
burst (issue 21, item 5: with the old turn-taking, a lone connection that
had the last grant waited one quantum longer than its bytes needed; with a
burst too small to hold that extra quantum the refill overflowed, and nginx
(sendfile) under send_rate=3MB/s send_burst=64KB served at 0.53 of the
rate, python's http.server at 2MB/s at 0.89).

Each case starts a fresh server under `--in 'port=P send_rate=R
send_burst=B'` (so the key's bucket starts full) and N loopback clients (one
key: 127.0.0.1) that send a request each at once; one select loop reads
them all to the end and notes the time and size of every read. Servers:
nginx (one worker, epoll, non-blocking sendfile) and python's http.server
(a thread per connection, blocking writes).

Asserted, for every case:
  - every response is whole (its Content-Length, status 200);
  - from the first byte to the last, the clients got R * t + B: (all bytes
    - B) / t is R within +-2 %, bytes being everything on the wire (headers
    too);
  - the steady part alone (from the read that brings the count past B plus
    a tenth of the rest, to the last read) moved R within +-2 %: the burst
    plays no part there, so a grant larger than the burst at the start
    cannot hide a slow rate after it, nor the reverse;
  - with several connections and a burst under a quarter of each file, the
    first to finish does so at 0.8 or more of the last one's time (they
    take turns; as test_fair_share_nginx).

Why 2 % holds: the bucket starts full, so the burst leaves at once and every
further byte waits for the rate. Measured at the client, neither the
programs' start-up nor the request's round trip is in it; one thread reads
every socket as soon as select reports it (no client thread waits for the
GIL while its bytes sit in the kernel), and nginx runs without tcp_nopush
(TCP_CORK would hold sendfile's bytes in the kernel until a whole 64 KiB
loopback segment is there). What is left is the lateness of the last
wake-up and of the select loop (a few ms on a loaded machine): each case
lasts ~2 s, so 2 % is 40 ms. A wake-up later than B/R loses what the bucket
could not hold; see CI_CASES for why the CI's 16 KB cases run at 1 MB/s.
Seen here: 0.999-1.000 of the rate in every case. A connection that waits
longer than its bytes need (the defect) overflows a small burst and shows
as a rate well below R (0.53 and 0.89 above).

CI runs a representative subset, ~2 s each (under 30 s in all);
SLUICE_BW_FULL=1 runs the whole matrix (1, 2 and 8 connections; bursts
16 KB, 64 KB, 256 KB and 1 MB; both servers), about 1 minute;
SLUICE_BW_ONLY="nginx 1 16KB 3000000; python 8 1MB 2000000" picks
cases (server, connections, burst, rate) and
SLUICE_BW_SECONDS=6 makes each last longer.
"""
from lib import *

SECONDS = float(os.environ.get("SLUICE_BW_SECONDS", "2.0"))   # how long each case lasts
TOL = 0.02

SERVERS = {"nginx": 3_000_000, "python": 2_000_000}   # the rates
BURSTS = {"16KB": 16_000, "64KB": 64_000, "256KB": 256_000, "1MB": 1_000_000}

# (server, connections, burst, rate). The 16 KB cases run at 1 MB/s in CI:
# a bucket holds burst/rate of time, and a wake-up later than that loses
# what the bucket could not hold (a token bucket's rule, not a defect):
# 16 KB is 5.3 ms at 3 MB/s, which a machine shared with other builds
# sometimes exceeds; 16 ms at 1 MB/s it does not. A quantum (rate/50)
# above the burst is then cut to the burst, as the case was.
CI_CASES = [
    ("nginx", 1, "64KB", 3_000_000),    # the case: 0.53 of the rate before the fix
    ("python", 1, "64KB", 2_000_000),   # the case: 0.89 before the fix
    ("nginx", 1, "16KB", 1_000_000),
    ("python", 2, "256KB", 2_000_000),
    ("nginx", 2, "16KB", 1_000_000),
    ("nginx", 8, "1MB", 3_000_000),
    ("python", 8, "16KB", 1_000_000),
]
FULL = [(s, n, b, SERVERS[s]) for s in SERVERS for n in (1, 2, 8) for b in BURSTS]
CASES = FULL if os.environ.get("SLUICE_BW_FULL") else CI_CASES
if os.environ.get("SLUICE_BW_ONLY"):   # e.g. "nginx 1 16KB 3000000; python 8 1MB 2000000"
    CASES = [(k, int(n), b, int(r)) for k, n, b, r in
             (c.split() for c in os.environ["SLUICE_BW_ONLY"].split(";") if c.strip())]


def fetch_all(port, path, conns):
    """`conns` GETs on new connections at once, read to the end by this one
    thread (a select loop: no thread waits for the GIL while its bytes sit
    in the kernel, which would skew when they count). Returns every read as
    (time, bytes), and per connection (status, body length, Content-Length,
    time of its last read)."""
    import selectors
    sel = selectors.DefaultSelector()
    data, last = {}, {}
    for _ in range(conns):
        s = socket.create_connection(("127.0.0.1", port), timeout=30)
        data[s] = bytearray()
    for s in data:
        s.sendall(f"GET {path} HTTP/1.0\r\nHost: x\r\n\r\n".encode())
        s.setblocking(False)
        sel.register(s, selectors.EVENT_READ)
    reads, left, deadline = [], conns, time.monotonic() + 60
    while left and time.monotonic() < deadline:
        for key, _ in sel.select(timeout=1):
            s = key.fileobj
            chunk = s.recv(1 << 20)
            if chunk:
                last[s] = time.monotonic()
                reads.append((last[s], len(chunk)))
                data[s] += chunk
            else:
                sel.unregister(s)
                left -= 1
    sel.close()
    out = []
    for s, d in data.items():
        s.close()
        head, _, body = bytes(d).partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        length = None
        for l in lines[1:]:
            k, _, v = l.partition(":")
            if k.strip().lower() == "content-length":
                length = int(v)
        status = int(lines[0].split()[1]) if lines[0].startswith("HTTP/") else None
        out.append((status, len(body), length, last.get(s, 0)))
    return reads, out


def server_argv(kind, tmp, port):
    if kind == "nginx":
        # tcp_nopush off: with it (TCP_CORK) the kernel holds sendfile's
        # bytes until a whole loopback segment (64 KiB) is there, so they
        # reach the client up to 64 KiB per connection later than nginx
        # sent them, which would blur the measure by more than 2 %
        www = tmp.join("www")
        os.mkdir(www)
        os.chmod(www, 0o755)
        return nginx_config(tmp, events="use epoll;", http=f"""
    access_log off;
    sendfile on;
    tcp_nopush off;
    server {{
        listen 127.0.0.1:{port};
        root {www};
    }}""")[1]
    os.mkdir(tmp.join("www"))
    return [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1",
            "--directory", tmp.join("www")]


results, fair = [], []
for kind, conns, btext, rate in CASES:
    burst = BURSTS[btext]
    size = int((burst + rate * SECONDS) / conns)
    with TempDir() as tmp:
        port = free_port()
        argv = server_argv(kind, tmp, port)
        make_file(tmp.join("www", "f"), size)
        rule = f"port={port} send_rate={rate // 1000}KB/s send_burst={btext}"
        with Proc(sluice_argv(argv, ins=[rule]), cwd=tmp.path) as srv:
            wait_listen(port)
            reads, got = fetch_all(port, "/f", conns)
            err = srv.stderr()
    name = f"{kind} {conns} conn{'s' if conns > 1 else ''} burst {btext} at {rate / 1e6:g}MB/s"
    check(all(g[0] == 200 and g[1] == size == g[2] for g in got),
          f"{name}: incomplete responses {got}\n{err}")
    wire = sum(n for _, n in reads)
    # the steady part: from the read that brings the count past the burst
    # and a tenth of the rest, to the last read
    mark = burst + (wire - burst) // 10
    seen = 0
    for t, n in reads:
        seen += n
        if seen >= mark:
            t_a, b_a = t, seen
            break
    span = reads[-1][0] - t_a
    measured = (wire - b_a) / span
    whole = reads[-1][0] - reads[0][0]
    print(f"{name}: {wire} bytes, {whole:.3f}s first to last byte: "
          f"(bytes - burst) / time {(wire - burst) / whole / rate:.4f} of the rate; "
          f"{wire - b_a} bytes in the last {span:.3f}s: {measured / rate:.4f} of the rate")
    results.append((name + " (first to last byte)", (wire - burst) / whole / rate))
    results.append((name + " (steady part)", measured / rate))
    if conns > 1 and 4 * burst <= size:
        # they take turns: each connection's last byte comes at about the
        # same time (the same 0.8 as test_fair_share_nginx; a starved one
        # would finish at about 1/N of the others' time). Not when the
        # burst is a large part of a file: the first request served takes
        # what the bucket holds (at most two quanta a call, but nginx calls
        # again at once) before the others' requests are even read.
        ends = [g[3] - reads[0][0] for g in got]
        fair.append((name, min(ends) / max(ends)))

bad = [(n, r) for n, r in results if abs(r - 1) > TOL]
check(not bad, "not within 2 % of the rate: " + "; ".join(f"{n}: {r:.4f}" for n, r in bad))
check(all(r >= 0.8 for _, r in fair),
      "unfair: " + "; ".join(f"{n}: first done at {r:.2f} of the last" for n, r in fair if r < 0.8))
print("fairness (first connection done / last): " + ", ".join(f"{n}: {r:.2f}" for n, r in fair))
print("ok")
