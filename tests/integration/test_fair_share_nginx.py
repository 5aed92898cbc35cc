# SPDX-License-Identifier: BSD-2-Clause
"""Two connections of one key share its byte budget fairly, also when the
server sends with sendfile (issue 12, defect 11: nginx with `sendfile on`
gave one connection 1 MB/s and the other about 20 KB/s, because one
sendfile call asks for megabytes and took every byte the bucket held each
time it woke first).

nginx (one worker, epoll, sendfile on) under
`sluice run --in 'port=P send_rate=1MB/s'`; two curl clients from
127.0.0.1 (one key) download a 2 MB file each, started together.

Asserted:
  - both finish at about the same time: the earlier one's time is at least
    0.8 of the later one's. Shared fairly, each gets ~0.5 MB/s and both
    take ~(4 MB - burst) / 1 MB/s, ~3.9 s; starved, the first finishes in
    ~2 s (ratio ~0.5). The slack covers the clients' start skew (tens of
    ms), the turn granularity (a grant is at most a fiftieth of a second's
    worth, 20 KB, so the two alternate every ~20 ms) and a few late epoll
    wake-ups;
  - together they move the bytes at the configured rate: the later one's
    time is (bytes - burst) / 1 MB/s within +-6 % (test_evloop_nginx's 5 %
    for one non-blocking sendfile client, plus the start skew);
  - both downloads are complete (HTTP 200, every byte).
"""
from lib import *

RATE, TEXT = 1_000_000, "1MB/s"
BURST = RATE // 10
SIZE = 2_000_000

port = free_port()
with TempDir() as tmp:
    nginx = nginx_sendfile_site(tmp, port, {"a": SIZE, "b": SIZE})
    argv = sluice_argv(nginx, ins=[f"port={port} send_rate={TEXT}"])
    with Proc(argv, cwd=tmp.path) as srv:
        wait_listen(port)
        res = {}

        def get(name):
            res[name] = curl(f"http://127.0.0.1:{port}/{name}", timeout=60)

        ths = [threading.Thread(target=get, args=(n,)) for n in ("a", "b")]
        for t in ths:
            t.start()
        for t in ths:
            t.join(60)
        alive = srv.p.poll() is None
        err = srv.stderr()

check(alive, "nginx died:\n" + err)
for n in ("a", "b"):
    r = res.get(n)
    check(r and r["returncode"] == 0 and r["http_code"] == 200 and r["size_download"] == SIZE,
          f"download {n} failed: {r}")
ta, tb = res["a"]["time_total"], res["b"]["time_total"]
first, last = min(ta, tb), max(ta, tb)
sent = sum(res[n]["size_download"] + res[n]["size_header"] for n in ("a", "b"))
expected = (sent - BURST) / RATE
print(f"a {ta:.3f}s, b {tb:.3f}s: ratio {first / last:.2f}; "
      f"expected about {expected:.3f}s for both")
check(first >= 0.8 * last, f"unfair share: one took {first:.3f}s, the other {last:.3f}s")
check(within(last, expected, 0.06), f"together {last:.3f}s, expected {expected:.3f}s +-6 %")
print("ok")
