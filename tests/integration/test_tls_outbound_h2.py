# SPDX-License-Identifier: BSD-2-Clause
"""HTTP/2 over TLS (ALPN h2), the usual way a paid API is called (issue 10):
requests are counted in what curl hands to OpenSSL (SSL_write), after the
preface, one per HEADERS frame opening a stream.

nginx `listen ... ssl http2` on loopback with a certificate the test makes;
curl --http2 with 12 URLs in one run (one connection, streams multiplexed)
under `--out 'to=127.0.0.1 port=P req_rate=10/s req_burst=2 action=delay'`:
all 12 answered 200 over HTTP/2 and curl exits 0 (curl 7.88 exited 92
while a held HTTP/2 write failed with want-write), one TLS connection in nginx's log, and the
run takes (12 - 2) / 10 = 1.0 s (-0.05 s for clock reads, +0.6 s: curl's
start, the handshake, and wake-ups on a loaded machine). Without the rule
the same run takes well under 0.5 s (so the pacing is sluice's).
`reject` (req_rate=1/m req_burst=2): the write of the third request fails,
so nginx serves 2 and curl reports an error (a denied HTTP/2 request cannot
get a 429 of its own: README, HTTP/2)."""
from lib import *

DUE = (12 - 2) / 10

# The ASan runtime alone hangs curl at its start (test_tls_outbound.py):
# curl runs under the normal build only.
if "asan" in os.environ.get("SLUICE_BUILD", ""):
    print("SKIP: curl hangs under a preloaded ASan runtime, with or without sluice")
    sys.exit(0)

with TempDir() as tmp:
    v = NginxVendor(tmp)
    crt, port, log, argv = v.crt, v.port, v.log, v.argv
    lines = v.served

    def curl_run(tag, rule=None):
        urls = sum([["-o", "/dev/null", f"https://127.0.0.1:{port}/{tag}{i}"] for i in range(12)],
                   [])
        argv = ["curl", "-sk", "--http2", "-w", "%{http_code} %{http_version}\\n"] + urls
        t0 = time.monotonic()
        r = run(sluice_argv(argv, outs=[rule]) if rule else argv, timeout=60)
        return r, time.monotonic() - t0

    with Proc(argv):
        wait_listen(port)
        r, took = curl_run("free")
        check(r.stdout.split()[::2] == ["200"] * 12, f"without sluice: {r.stdout}")
        check(took < 0.5, f"without a rule curl takes {took:.2f} s")

        rule = f"to=127.0.0.1 port={port} req_rate=10/s req_burst=2 action=delay max_delay=10s"
        r, took = curl_run("paced", rule)
        codes = r.stdout.split()
        check(codes[::2] == ["200"] * 12 and set(codes[1::2]) == {"2"},
              f"12 x 200 over HTTP/2: {r.stdout} {r.stderr}")
        # curl 7.88 exited 92 ("stream not closed cleanly") when an HTTP/2
        # write had to wait with want-write; a held HTTP/2 write is now
        # taken and written at its turn (shim/tls.c), so it exits 0
        check(r.returncode == 0, f"curl exit {r.returncode}: {r.stderr}")
        time.sleep(0.2)
        got = lines("paced")
        check(len(got) == 12 and {g[1] for g in got} == {"HTTP/2.0"} and len({g[2] for g in got}) == 1,
              f"nginx served 12 over one HTTP/2 connection: {got}")
        check(DUE - 0.05 <= took <= DUE + 0.6, f"12 requests at 10/s burst 2 took {took:.3f} s")

        r, _ = curl_run("rj", f"to=127.0.0.1 port={port} req_rate=1/m req_burst=2 action=reject")
        time.sleep(0.2)
        check(len(lines("rj")) == 2, f"reject: nginx served {len(lines('rj'))}: {r.stdout}")
        check(r.returncode != 0, f"curl reports the refused request: {r.returncode} {r.stdout}")
print("ok")
