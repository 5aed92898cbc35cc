# SPDX-License-Identifier: BSD-2-Clause
"""Dry run: sluice decides and counts but enforces nothing.

1. python3 http.server under `sluice run -c CONF --dry-run`, CONF holding
   `shared = "<unique>"` and `inbound { port = P, rate = 5/s, burst = 5 }`.
   A client floods it for 3 s (hundreds to thousands of connections):
   - every connection gets 200;
   - stderr has `would limit` lines, but the log is itself rate-limited
     (10 lines at once, then 5 a second): at most 10 + 5*T + 2 lines, T
     the time from server start to the end of the flood (+2: a line in
     flight at either end), and at least 10 + 5*T_flood - 3 (the flood
     never lets the log bucket fill back up);
   - a later line carries "(N earlier messages suppressed)", and the
     suppressed counts plus the lines never exceed the would-limit events;
   - `sluice stats -c CONF` shows limited == 0, would_limit == the
     connections beyond burst + rate*span (+-3: the probe connection and
     the boundary requests), and allowed + would_limit == every connection.
2. `dry_run=yes` on one inline rule, without --dry-run: 20 quick requests
   all get 200, and `would limit` lines appear, no `limited` ones."""
from lib import *

RATE, BURST, T = 5, 5, 3.0
name = f"it-dry-{os.getpid()}"
port = free_port()
with TempDir() as tmp:
    conf = tmp.write("dry.conf", f"""
shared = "{name}"
inbound "web" {{
    port  = {port}
    rate  = "{RATE}/s"
    burst = {BURST}
}}
""")
    try:
        t_start = time.monotonic()
        with Proc(sluice_argv([sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1"],
                              config=conf, dry_run=True), cwd=SERVE_DIR) as srv:
            wait_listen(port)
            ok, bad, span, results = flood(port, T)
            t_total = time.monotonic() - t_start
            time.sleep(0.3)
            err = srv.stderr()
        total = ok + bad
        statuses = {}
        for _, r in results:
            statuses[r[0]] = statuses.get(r[0], 0) + 1
        wl = [l for l in err.splitlines() if "would limit" in l]
        limited = [l for l in err.splitlines() if re.search(r"\blimited peer", l)]
        supp = [int(m) for m in re.findall(r"\((\d+) earlier messages suppressed\)", err)]
        excess = total - (BURST + RATE * span)
        print(f"{total} connections in {span:.2f}s, statuses {statuses}; {len(wl)} would-limit lines "
              f"over {t_total:.2f}s (cap {10 + 5 * t_total + 2:.0f}); suppressed reported {sum(supp)} "
              f"in {len(supp)} lines; expected would-limit events ~{excess:.0f}")
        check(total > 10 * (BURST + RATE * T), f"client too slow ({total}) to test the log limit")
        check(statuses == {200: total}, f"not every connection got 200: {statuses}")
        check(not limited, "a `limited` line in dry run:\n" + "\n".join(limited[:3]))
        check(len(wl) <= 10 + 5 * t_total + 2, f"{len(wl)} would-limit lines in {t_total:.2f}s: log not limited")
        check(len(wl) >= 10 + 5 * T - 3, f"only {len(wl)} would-limit lines")
        check(supp and supp[-1] > 0, "no line reports suppressed messages")
        check(sum(supp) + len(wl) <= total, "more would-limit reports than connections")
        check(re.search(rf'sluice\[\d+\]: info: rule "web": would limit peer 127\.0\.0\.1', err),
              "would-limit line format:\n" + "\n".join(wl[:2]))

        st = run([SLUICE, "stats", "-c", conf])
        print(st.stdout)
        check(st.returncode == 0, f"stats failed: {st.returncode} {st.stderr}")
        header = st.stdout.splitlines()[1].split()
        row = next(l.split() for l in st.stdout.splitlines() if l.split() and l.split()[0] == "web")
        c = dict(zip(header[1:], map(int, row[1:])))
        check(c["limited"] == 0, f"limited {c['limited']} in dry run")
        check(c["would_limit"] > 0, "would_limit is 0")
        check(abs(c["would_limit"] - excess) <= 3,
              f"would_limit {c['would_limit']}, expected {excess:.1f} +-3")
        # every connection (the client's and none other: wait_listen does not connect)
        check(c["allowed"] + c["would_limit"] == total,
              f"allowed {c['allowed']} + would_limit {c['would_limit']} != {total} connections")
    finally:
        shm_cleanup(name)

# 2. dry_run on the rule itself
port = free_port()
with http_server(port, [f"port={port} rate=1/m burst=2 dry_run=yes"]) as srv:
    wait_listen(port)
    t0 = time.monotonic()
    sts = [http_get(port)[0] for _ in range(20)]
    el = time.monotonic() - t0
    time.sleep(0.3)
    err = srv.stderr()
    wl = [l for l in err.splitlines() if "would limit" in l]
    print(f"rule dry_run: statuses {set(sts)}, {len(wl)} would-limit lines")
    check(sts == [200] * 20, f"statuses {sts}")
    # 18 would-limit events: the log's burst of 10 at once, then 5 a second
    check(10 <= len(wl) <= 10 + 5 * el + 1, f"{len(wl)} would-limit lines in {el:.2f}s:\n{err}")
    check("limited peer" not in err.replace("would limit peer", ""), err)
print("ok")
