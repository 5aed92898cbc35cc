# SPDX-License-Identifier: BSD-2-Clause
"""Outbound send_rate on a real client: curl uploading a file under
`sluice run --out 'to=127.0.0.1 port=P send_rate=R' -- curl -T FILE`
to a plain server in this process (not under the shim) that reads the
body (Content-Length bytes) and answers with how many it got.

curl uses a non-blocking socket and waits with poll, so this needs the
readiness layer: while the budget is empty curl's send gets EAGAIN, and
poll must not report the socket writable until the refill (else curl
spins) and must report it then (else it stalls).

Asserted, for R = 1MB/s and 4MB/s, the file sized for about 6 s:
  - the server receives every byte, curl gets the 200;
  - the upload takes (bytes - burst) / R within +-2 %, bytes being the
    body plus the request headers curl sent (size_request), burst the
    default send_burst (R / 10);
  - curl's CPU time (user + system, from getrusage of the waited-for
    child) stays under 10 % of the wall time: a level-triggered spin on a
    writable-but-throttled socket costs ~100 %.

Why +-2 %: as in test_bw_download, the burst is known and subtracted, the
timing is curl's own time_total, and a refill that wakes curl late loses
nothing because the bucket keeps filling meanwhile; what is left is the
last wait's lateness and the server's reply (a few ms of 6 s). 'Expect:'
is sent empty, or curl would wait up to 1 s for a 100 Continue."""
import resource
import socketserver
from lib import *

SECONDS = 6.0
CASES = [("1MB/s", 1_000_000), ("4MB/s", 4_000_000)]
TOL = 0.02


class Sink(socketserver.StreamRequestHandler):
    """Reads one request with a Content-Length body; replies 200 + count."""

    def handle(self):
        length = 0
        while True:
            line = self.rfile.readline(65537)
            if line in (b"\r\n", b"\n", b""):
                break
            k, _, v = line.decode("latin-1").partition(":")
            if k.strip().lower() == "content-length":
                length = int(v)
        got = 0
        while got < length:
            chunk = self.rfile.read(min(65536, length - got))
            if not chunk:
                break
            got += len(chunk)
        self.server.received.append(got)
        body = f"{got}\n".encode()
        self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s"
                         % (len(body), body))


class SinkServer(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


def cpu_children():
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


srv = SinkServer(("127.0.0.1", 0), Sink)
srv.received = []
port = srv.server_address[1]
th = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
th.start()
try:
    with TempDir() as tmp:
        for text, rate in CASES:
            burst = rate // 10
            size = int(rate * SECONDS)
            path = make_file(tmp.join(f"up-{rate}"), size)
            srv.received.clear()
            cpu0, t0 = cpu_children(), time.monotonic()
            res = curl(f"http://127.0.0.1:{port}/up", args=["-T", path, "-H", "Expect:"],
                       wrap=sluice_argv([], outs=[f"to=127.0.0.1 port={port} send_rate={text}"]),
                       timeout=60)
            wall, cpu = time.monotonic() - t0, cpu_children() - cpu0
            check(res["returncode"] == 0 and res["http_code"] == 200,
                  f"{text}: curl failed: {res['returncode']} {res['http_code']} {res['stderr']}")
            check(srv.received == [size], f"{text}: server received {srv.received}, expected [{size}]")
            sent = res["size_upload"] + res["size_request"]
            expected = (sent - burst) / rate
            t = res["time_total"]
            print(f"{text}: {sent} bytes up in {t:.3f}s, expected {expected:.3f}s "
                  f"({(t / expected - 1) * 100:+.2f} %); curl CPU {cpu:.2f}s of {wall:.2f}s wall "
                  f"({cpu / wall * 100:.1f} %)")
            check(within(t, expected, TOL), f"{text}: took {t:.3f}s, expected {expected:.3f}s +-2 %")
            check(cpu < 0.10 * wall, f"{text}: curl used {cpu:.2f}s CPU in {wall:.2f}s: spinning?")
finally:
    srv.shutdown()
    srv.server_close()
print("ok")
