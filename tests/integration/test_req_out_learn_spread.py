# SPDX-License-Identifier: BSD-2-Clause
"""Outbound limits learned from the vendor's answers (issue 35, item 2),
what test_req_out_learn.py leaves: a spread, and what was learned shown
by `sluice stats`, `sluice metrics` and the live page's /stats.json.

The vendor (a ThreadingHTTPServer in this test process, not under the
shim, stamping arrivals with time.monotonic()) allows 10 calls per 5 s
window, counted from the first call, and says so on every answer as
OpenAI does: x-ratelimit-remaining-requests (10 less the calls so far)
and x-ratelimit-reset-requests (the time left in the window, a Go
duration). The client is python's http.client making 10 keep-alive calls
in a row under `sluice run --out 'to=127.0.0.1 port=P req_rate=100/s
req_burst=100 learn=yes action=delay max_delay=10s'`: the rule's own rate
would let all 10 go within milliseconds.

1. Spread: each answer saying N left for T holds the key's next call T/N
   after it, so the 10 calls reach the vendor over the window, not at
   once. Asserted: every gap between arrivals >= 0.4 s (T/N is about
   0.55 s for a 5 s window; 0.15 s off for timer rounding and because the
   first answer's T is already a little under 5 s), the last call >= 4.5 s
   after the first (the 9th answer says 1 left for what is left of the
   window: the 10th leaves at its end) and < 9 s (a loaded machine is
   slower, never faster; the bound only catches a runaway hold). The
   control without learn: all 10 within 1 s. The vendor never answers 429.
2. Stats, in the same run, once the calls are done (the client waits for
   the test before it exits): `sluice stats --pid` shows learn_spread 9
   (answers 1..9; the 10th says 0 left with the window over: nothing to
   hold), learned 0; `sluice metrics` shows
   sluice_learned_total{what="spread"} 9; /stats.json of `sluice metrics
   --listen` has "learn_spread": 9, and its live page, drawn by headless
   Chromium (skipped without selenium), says "... 9 spread ..." in the
   rule's learned cell.
   With plenty left (10000 for 60 s, more than the rule itself could send:
   100 at once, then 100 a second: 6100), nothing is spread: 10 calls within
   1 s, learn_spread 0.
3. Counted and capped: a 429 with Retry-After: 561635 under learn_max=2s
   (capped, a hold), then an answer with an unreadable Retry-After and a
   reset in the past: stats show learned 1, learn_capped 1, learn_ignored
   2.
"""
import json
import threading
import urllib.request

from lib import *
from vendorlib import Vendor


def window(limit, seconds):
    """An OpenAI-like vendor: `limit` calls per window from the first."""
    start = []

    def answer(i, t):
        if not start:
            start.append(t)
        left = max(limit - (i + 1), 0)
        reset = max(start[0] + seconds - t, 0)
        return 200, {"x-ratelimit-limit-requests": str(limit),
                     "x-ratelimit-remaining-requests": str(left),
                     "x-ratelimit-reset-requests": f"{reset:.3f}s"}
    return answer


# argv: port, calls; writes its pid to $MARK once its calls are done,
# then waits for $MARK.exit (the test reads its table meanwhile)
CLIENT = r"""
import http.client, json, os, sys, time
port, calls = int(sys.argv[1]), int(sys.argv[2])
codes, c = [], http.client.HTTPConnection("127.0.0.1", port, timeout=20)
for i in range(calls):
    c.request("GET", "/call/%d" % i)
    r = c.getresponse()
    r.read()
    codes.append(r.status)
print(json.dumps({"codes": codes}), flush=True)
mark = os.environ.get("MARK")
if mark:
    with open(mark + ".tmp", "w") as f:
        f.write(str(os.getpid()))
    os.rename(mark + ".tmp", mark)
    deadline = time.monotonic() + 30
    while not os.path.exists(mark + ".exit") and time.monotonic() < deadline:
        time.sleep(0.02)
"""


def rule(port, extra):
    return f"to=127.0.0.1 port={port} req_rate=100/s req_burst=100 {extra}"


def stats_row(pid):
    """The `out-1` row (the rule of --out) of the requests section of `sluice stats --pid`."""
    r = run([SLUICE, "stats", "--pid", str(pid)])
    check(r.returncode == 0, f"stats: {r.stderr}")
    _, _, req = r.stdout.partition("requests (")
    lines = req.splitlines()[1:]
    head = lines[0].split()
    for l in lines[1:]:
        w = l.split()
        if w and w[0] == "out-1":
            return dict(zip(head, w)), r.stdout
    raise AssertionError(f"no requests row for out-1:\n{r.stdout}")


def learned_metrics(pid):
    r = run([SLUICE, "metrics", "--pid", str(pid)])
    check(r.returncode == 0, f"metrics: {r.stderr}")
    got = {}
    for m in re.finditer(r'^sluice_learned_total\{rule="out-1",what="(\w+)"\} (\d+)$', r.stdout,
                         re.M):
        got[m.group(1)] = int(m.group(2))
    check(set(got) == {"hold", "spread", "capped", "ignored"}, f"metrics:\n{r.stdout}")
    return got


def live_page_cell(mport, tmp):
    """The live page's "learned" cell of the rule, as headless Chromium
    draws it; None without selenium."""
    return page_poll(f"http://127.0.0.1:{mport}/", tmp, """
        const row = document.querySelector('tr[data-rule="out-1"][data-kind="requests"]');
        const td = row && row.querySelector('td[data-counter="learned"]');
        return td ? td.textContent.trim() : null;""")


def live(pid, tmp):
    """The rule's entry in /stats.json of `sluice metrics --listen`, and the
    live page's cell."""
    mport = free_port()
    with Proc([SLUICE, "metrics", "--pid", str(pid), "--listen", f"127.0.0.1:{mport}"]):
        wait_listen(mport)
        with urllib.request.urlopen(f"http://127.0.0.1:{mport}/stats.json", timeout=5) as f:
            d = json.load(f)
        cell = live_page_cell(mport, tmp)
    return next(r for r in d["rules"] if r["rule"] == "out-1" and r["kind"] == "requests"), cell


def session(tmp, tag, answer, calls, extra, look):
    """Runs the client under sluice against a vendor answering `answer`;
    look(pid) runs once its calls are done. Returns (codes, arrivals
    relative to the first, stderr, what look returned)."""
    v = Vendor(lambda i, t, path: answer(i, t))
    try:
        client = tmp.write(f"client_{tag}.py", CLIENT)
        mark = tmp.join(f"mark_{tag}")
        out = []
        th = threading.Thread(target=lambda: out.append(run(
            sluice_argv([sys.executable, client, str(v.port), str(calls)], outs=[rule(v.port, extra)]),
            env={"MARK": mark}, timeout=60)))
        th.start()
        seen = None
        try:
            deadline = time.monotonic() + 40
            while not os.path.exists(mark) and time.monotonic() < deadline and th.is_alive():
                time.sleep(0.05)
            check(os.path.exists(mark), f"{tag}: the client never finished its calls: {out}")
            seen = look(int(open(mark).read()))
        finally:
            open(mark + ".exit", "w").close()
            th.join(70)
        p = out[0]
        check(p.returncode == 0, f"{tag}: exit {p.returncode}\n{p.stderr}")
        codes = last_json(p.stdout)["codes"]
        arr = sorted(t for t, _, _ in v.seen)
        return codes, [round(t - arr[0], 3) for t in arr], p.stderr, seen
    finally:
        v.close()


def main():
    with TempDir() as tmp:
        # 1 and 2: a spread, and what stats say of it
        def look(pid):
            return stats_row(pid), learned_metrics(pid), live(pid, tmp)

        codes, arr, err, (row, met, (js, cell)) = session(
            tmp, "spread", window(10, 5.0), 10, "learn=yes action=delay max_delay=10s", look)
        gaps = [round(b - a, 3) for a, b in zip(arr, arr[1:])]
        print("spread: 10 left for 5 s, arrivals at", arr)
        print("  gaps", gaps)
        check(codes == [200] * 10, f"spread: codes {codes}\n{err}")
        check(len(arr) == 10 and all(g >= 0.4 for g in gaps),
              f"spread: gaps {gaps}, want >= 0.4 s\n{err}")
        check(4.5 <= arr[-1] < 9, f"spread: last call at {arr[-1]} s, want 4.5 .. 9\n{err}")
        check("learned from x-ratelimit-remaining-requests in a 200 response: 9 left for" in err,
              f"no spread line:\n{err}")
        stats, text = row
        print("  sluice stats:", {k: stats[k] for k in stats if k.startswith("learn")})
        print("  metrics:", met, " stats.json:",
              {k: js[k] for k in ("learned", "learn_spread", "learn_capped", "learn_ignored")})
        print("  live page's learned cell:", cell)
        check(stats["learn_spread"] == "9" and stats["learned"] in ("0", "1"),
              f"stats: want learn_spread 9, learned 0 (1 if the last call beat the window's end):"
              f"\n{text}")
        check(met["spread"] == 9 and met["capped"] == 0 and met["ignored"] == 0, f"metrics {met}")
        check(js["learn_spread"] == 9, f"stats.json {js}")
        check(cell is None or "9 spread" in cell, f"the live page's learned cell: {cell!r}")

        # the control: no learn, no spread
        codes, arr, err, _ = session(tmp, "ctl", window(10, 5.0), 10,
                                     "action=delay max_delay=10s", lambda pid: None)
        print("control (no learn): arrivals at", arr)
        check(codes == [200] * 10 and arr[-1] < 1.0, f"control: arrivals {arr}\n{err}")

        # plenty left (10000 for 60 s): the rule alone (100 + 100/s: 6100) cannot
        # exhaust it, so nothing is spread and the rule's burst is kept
        codes, arr, err, (row, _) = session(
            tmp, "plenty", window(10000, 60.0), 10, "learn=yes action=delay max_delay=10s",
            lambda pid: (stats_row(pid), None))
        print("plenty left (10000 for 60 s), learn: arrivals at", arr)
        check(codes == [200] * 10 and arr[-1] < 1.0, f"plenty: arrivals {arr}\n{err}")
        check(row[0]["learn_spread"] == "0", f"plenty: spread counted:\n{row[1]}")

        # 3. capped and ignored, counted
        script = [(429, {"Retry-After": "561635"}),
                  (429, {"Retry-After": "soon", "x-ratelimit-remaining": "3",
                         "x-ratelimit-reset": "1700000000"})]

        def answer(i, t):
            return script[i] if i < len(script) else (200, {})

        codes, arr, err, (row, met) = session(
            tmp, "cap", answer, 3, "learn=yes learn_max=2s action=delay max_delay=10s",
            lambda pid: (stats_row(pid), learned_metrics(pid)))
        stats, text = row
        print("capped and ignored: codes", codes, "arrivals", arr)
        print("  sluice stats:", {k: stats[k] for k in stats if k.startswith("learn")})
        check(codes == [429, 429, 200], f"cap: codes {codes}\n{err}")
        check(1.9 <= arr[1] < 8, f"cap: second call at {arr[1]} s\n{err}")
        check((stats["learned"], stats["learn_capped"], stats["learn_ignored"]) == ("1", "1", "2"),
              f"stats: want learned 1, learn_capped 1, learn_ignored 2:\n{text}\n{err}")
        check(met["hold"] == 1 and met["capped"] == 1 and met["ignored"] == 2, f"metrics {met}")
    print("ok")


if __name__ == "__main__":
    main()
