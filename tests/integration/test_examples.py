# SPDX-License-Identifier: BSD-2-Clause
"""examples/*.conf are runnable documentation, so a broken example breaks
the build:
  - every one passes `sluice check -c`, and what check prints (the
    normalised config) is itself accepted and prints the same again;
  - every one opens with two comment lines on what it achieves, and every
    option is preceded by a comment (its prose and default);
  - inbound-http.conf, copied with the port swapped for a free one, runs
    python3 http.server: 25 requests in quick succession get exactly the
    burst of 20 through (+ at most the 10/s refill during the run, +1),
    the rest a 429; `sluice stats` on its shared table counts the 429s as
    `limited`; with its commented-out exempt line enabled (127.0.0.0/8),
    all 25 get 200;
  - outbound-api.conf, copied with the host swapped for 127.0.0.1:P and
    50/m for 5/s, spaces 6 sequential connects 200 ms apart: 1.0 s in all
    (measured from before the first connect to after the last; -5 ms/+100 ms:
    see test_outbound_delay for why), none fails."""
from lib import *

EXAMPLES = os.path.join(ROOT, "examples")
files = sorted(f for f in os.listdir(EXAMPLES) if f.endswith(".conf"))
check(len(files) >= 2, f"examples: {files}")

with TempDir() as tmp:
    for f in files:
        path = os.path.join(EXAMPLES, f)
        text = open(path).read()
        if "/etc/sluice/cluster.key" in text:  # cluster examples: a key of the test's own
            key = tmp.join("cluster.key")
            if not os.path.exists(key):
                check(run([SLUICE, "keygen", key]).returncode == 0, "sluice keygen failed")
            path = tmp.write(f, text.replace("/etc/sluice/cluster.key", key))
        r = run([SLUICE, "check", "-c", path])
        check(r.returncode == 0, f"{f}: sluice check failed: {r.stderr}")
        norm = tmp.write(f + ".norm", r.stdout)
        r2 = run([SLUICE, "check", "-c", norm])
        check(r2.returncode == 0, f"{f}: normalised output is not accepted: {r2.stderr}\n{r.stdout}")
        check(r2.stdout == r.stdout, f"{f}: normalising twice changed the output")
        lines = open(path).read().splitlines()
        check(lines[0].startswith("#") and lines[1].startswith("#"),
              f"{f}: does not open with two comment lines")
        for i, l in enumerate(lines):
            if re.match(r"\s*[a-z_0-9]+\s*=", l):
                check(i > 0 and lines[i - 1].strip().startswith("#"),
                      f"{f}:{i + 1}: option without a comment above it: {l.strip()}")
        print(f"{f}: ok ({len(r.stdout.splitlines())} normalised lines)")

    # inbound-http.conf, run for real
    src = open(os.path.join(EXAMPLES, "inbound-http.conf")).read()
    for exempt in (False, True):
        port = free_port()
        name = f"it-example-{os.getpid()}-{int(exempt)}"
        text = re.sub(r"(?m)^(\s*port\s*=\s*)8080\s*$", rf"\g<1>{port}", src)
        text = text.replace('shared = "example-inbound-http"', f'shared = "{name}"')
        check(str(port) in text and name in text, "inbound-http.conf no longer has port 8080 / shared")
        if exempt:
            text = re.sub(r"(?m)^\s*exempt\s*=.*$", "", text)
            text = re.sub(r"(?m)^(\s*)#\s*(exempt\s*=.*)$", r"\1\2", text)
        conf = tmp.write(f"inbound-{int(exempt)}.conf", text)
        try:
            with Proc(sluice_argv([sys.executable, "-m", "http.server", str(port), "--bind",
                                   "127.0.0.1"], config=conf), cwd=SERVE_DIR) as srv:
                wait_listen(port)
                t0 = time.monotonic()
                sts = [http_get(port)[0] for _ in range(25)]
                el = time.monotonic() - t0
                st = run([SLUICE, "stats", "-c", conf])
            n200 = sts.count(200)
            print(f"inbound-http{' (exempt 127.0.0.0/8)' if exempt else ''}: {n200} x 200, "
                  f"{sts.count(429)} x 429 in {el:.2f}s")
            if exempt:
                check(sts == [200] * 25, f"exempted peer was limited: {sts}")
                continue
            check(sts[:20] == [200] * 20, f"burst of 20 not admitted: {sts}")
            check(n200 <= 20 + 10 * el + 1, f"{n200} admitted in {el:.2f}s")
            check(set(sts) == {200, 429} and sts.count(429) == 25 - n200, f"statuses {sts}")
            check(st.returncode == 0, f"stats: {st.stderr}")
            row = next(l.split() for l in st.stdout.splitlines() if l.startswith("web "))
            hdr = st.stdout.splitlines()[1].split()
            c = dict(zip(hdr[1:], map(int, row[1:])))
            print("  stats:", c)
            check(c["limited"] == 25 - n200 and c["allowed"] == n200, f"stats {c}")
        finally:
            shm_cleanup(name)

    # outbound-api.conf, run for real against a local server
    src = open(os.path.join(EXAMPLES, "outbound-api.conf")).read()
    with TcpServer() as server:
        text = src.replace("api.vendor.example:443", f"127.0.0.1:{server.port}")
        text = text.replace('rate = "50/m"', 'rate = "5/s"')
        check(f"127.0.0.1:{server.port}" in text and '"5/s"' in text,
              "outbound-api.conf no longer has the host/rate lines this test swaps")
        conf = tmp.write("outbound.conf", text)
        code = ("import json, socket, sys, time\nt = [time.monotonic()]\n"
                "for _ in range(6):\n"
                "    s = socket.socket(); s.connect(('127.0.0.1', int(sys.argv[1]))); s.close()\n"
                "    t.append(time.monotonic())\n"
                "print(json.dumps(t))")
        r = run(sluice_argv([sys.executable, "-c", code, str(server.port)], config=conf))
        check(r.returncode == 0, f"client failed: {r.stderr}")
        ts = last_json(r.stdout)
        el = ts[-1] - ts[0]
        print(f"outbound-api: 6 connects, {el:.3f}s from the first's start to the last's end "
              "(expected 1.0s)")
        check(0.995 <= el <= 1.1, f"elapsed {el:.3f}s, expected 1.0 s -5/+100 ms")
        time.sleep(0.2)
        check(server.accepted == 6, f"server accepted {server.accepted}")
print("ok")
