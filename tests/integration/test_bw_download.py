# SPDX-License-Identifier: BSD-2-Clause
"""Inbound send_rate on a real server: python3 http.server under
`sluice run --in 'port=P send_rate=R'` serves a file to curl at R.

Asserted, for R = 1MB/s, 4MB/s and 2MiB/s (the binary unit, 2097152 B/s),
each on a fresh server (so the peer's bucket starts full), the file sized
for about 6 s:
  - curl receives the whole file (size_download, HTTP 200);
  - the transfer takes (bytes - burst) / R within +-2 %, bytes being the
    body plus the response headers curl counted (size_header), burst the
    default send_burst, a tenth of a second's worth (R / 10);
and at 4MB/s, two curls from the same peer at once share the peer's one
bucket: the later of the two finishes at (both files - burst) / R, +-2 %;
and examples/bandwidth.conf, copied with port 8080 swapped for a free one,
serves a 4 MB file at its 2 MB/s with its send_burst of 256KiB, +-2 %.

Why +-2 % holds: the burst is known and subtracted, so what remains is
pure rate. The timing is curl's own time_total (from before connect to the
last byte), so Python's start-up and the test's own scheduling are not in
it. The server's sends are blocking: each waits for its refill, and a late
wake-up costs nothing because the bucket keeps filling meanwhile (GCRA);
only the very last wait's lateness (a few ms on a loaded 2-core machine)
and the request's round trip (< 1 ms on loopback) add to the time. 2 % of
6 s is 120 ms, ten times that. Loopback socket buffers do not hide bytes:
curl reads as fast as the server writes, so what the server has sent is
what curl has received within a millisecond."""
from lib import *

SIZE_S = 6.0                                  # seconds each transfer should last
CASES = [("1MB/s", 1_000_000), ("4MB/s", 4_000_000), ("2MiB/s", 2 * 1024 * 1024)]
TOL = 0.02

with TempDir() as tmp:
    for text, rate in CASES:
        burst = rate // 10
        size = int(rate * SIZE_S)
        name = f"f-{rate}"
        make_file(tmp.join(name), size)
        port = free_port()
        argv = sluice_argv([sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1",
                            "--directory", tmp.path], ins=[f"port={port} send_rate={text}"])
        with Proc(argv, cwd=tmp.path) as srv:
            wait_listen(port)
            res = curl(f"http://127.0.0.1:{port}/{name}", timeout=60)
            err = srv.stderr()
        check(res["returncode"] == 0 and res["http_code"] == 200,
              f"{text}: curl failed: {res['returncode']} {res['http_code']} {res['stderr']}\n{err}")
        check(res["size_download"] == size, f"{text}: got {res['size_download']} of {size} bytes")
        sent = res["size_download"] + res["size_header"]
        expected = (sent - burst) / rate
        t = res["time_total"]
        print(f"{text}: {sent} bytes in {t:.3f}s, expected {expected:.3f}s "
              f"({(t / expected - 1) * 100:+.2f} %), effective rate {(sent - burst) / t / 1e6:.3f} MB/s")
        check(within(t, expected, TOL), f"{text}: took {t:.3f}s, expected {expected:.3f}s +-2 %")

    # two downloads from one peer at once share its bucket
    text, rate = "4MB/s", 4_000_000
    burst = rate // 10
    size = int(rate * SIZE_S / 2)
    make_file(tmp.join("half"), size)
    port = free_port()
    argv = sluice_argv([sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1",
                        "--directory", tmp.path], ins=[f"port={port} send_rate={text}"])
    with Proc(argv, cwd=tmp.path) as srv:
        wait_listen(port)
        results = [None, None]

        def get(i):
            results[i] = curl(f"http://127.0.0.1:{port}/half", timeout=60)

        t0 = time.monotonic()
        ts = [threading.Thread(target=get, args=(i,)) for i in (0, 1)]
        for t in ts:
            t.start()
        for t in ts:
            t.join(60)
        wall = time.monotonic() - t0
        err = srv.stderr()
    check(all(r and r["returncode"] == 0 and r["size_download"] == size for r in results),
          f"parallel downloads failed: {results}\n{err}")
    sent = sum(r["size_download"] + r["size_header"] for r in results)
    expected = (sent - burst) / rate
    last = max(r["time_total"] for r in results)
    print(f"two at once from one peer at {text}: {sent} bytes, times "
          + ", ".join(f"{r['time_total']:.3f}" for r in results)
          + f" s, expected the later at {expected:.3f}s ({(last / expected - 1) * 100:+.2f} %); "
          f"wall {wall:.3f}s (a per-connection limit would take ~{expected / 2:.1f}s)")
    # both curls start within a few ms of each other: that skew is within the tolerance
    check(within(last, expected, TOL), f"the later finished at {last:.3f}s, expected {expected:.3f}s +-2 %")

    # examples/bandwidth.conf, run for real (send_rate 2MB/s, send_burst 256KiB)
    src = open(os.path.join(ROOT, "examples", "bandwidth.conf")).read()
    port = free_port()
    text = re.sub(r"(?m)^(\s*port\s*=\s*)8080\s*$", rf"\g<1>{port}", src)
    check(str(port) in text and 'send_rate = "2MB/s"' in text and 'send_burst = "256KiB"' in text,
          "examples/bandwidth.conf no longer has the port/send_rate/send_burst lines this test uses")
    conf = tmp.write("bandwidth.conf", text)
    rate, burst, size = 2_000_000, 256 * 1024, 4_000_000
    make_file(tmp.join("example"), size)
    argv = sluice_argv([sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1",
                        "--directory", tmp.path], config=conf)
    with Proc(argv, cwd=tmp.path) as srv:
        wait_listen(port)
        res = curl(f"http://127.0.0.1:{port}/example", timeout=60)
        err = srv.stderr()
    check(res["returncode"] == 0 and res["size_download"] == size, f"example: {res}\n{err}")
    sent = res["size_download"] + res["size_header"]
    expected = (sent - burst) / rate
    t = res["time_total"]
    print(f"examples/bandwidth.conf: {sent} bytes in {t:.3f}s, expected {expected:.3f}s "
          f"({(t / expected - 1) * 100:+.2f} %)")
    check(within(t, expected, TOL), f"example: took {t:.3f}s, expected {expected:.3f}s +-2 %")
print("ok")
