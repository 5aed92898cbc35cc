# SPDX-License-Identifier: BSD-2-Clause
"""What `learn` learned, shown while it holds (issue 35, item 2: "in
`sluice stats`, metrics and the live page: what was learned, from which
field, until when"): per rule, the keys a vendor's answer holds or
spreads, by the short hash the log gives them, the field that said it,
until when (wall time, seconds left) and a spread's gap.

The vendor (vendorlib: a ThreadingHTTPServer in this test process, not
under the shim, stamping arrivals with time.monotonic(), the
CLOCK_MONOTONIC sluice holds by) answers the client's one call; the
client (python's http.client, one keep-alive call with an
`Authorization: Bearer sk-...` key, under `sluice run --out 'to=127.0.0.1
port=P req_rate=100/s req_burst=100 per=header:Authorization learn=yes
action=delay max_delay=10s'`) stamps time.monotonic() right after reading
the answer, writes it with its pid to a file and waits for the test to let
it exit; the test reads the program's table meanwhile, from other
processes (`sluice stats`, `sluice metrics`, `sluice metrics --listen`).

Tolerances: the hold starts while the client reads the answer, so it ends
between (arrival at the vendor + 3 s) and (the client's stamp + 3 s);
"seconds left" is read some time between the test's clock reading before
the command and after it returns. So left must lie in
[arrival + 3 - after, stamp + 3 - before], widened by the printed
rounding only (0.05 s for "%.1f", 0.0005 s for "%.3f"): exact bounds,
whatever the machine's speed. The wall time shown is compared with the
same window on the wall clock (time.time() beside the monotonic reading,
0.02 s for the two readings and the millisecond shown).

1. Hold: a 429 with Retry-After: 3. `sluice stats` prints under the rule
   `learned: key #XXXXXX held until <UTC> (N s left), from retry-after`,
   the key being the one the log line names; `sluice metrics` has
   sluice_learned_hold_seconds{rule="out-1",field="retry-after"} within
   the same bounds and sluice_learned_keys 1; /stats.json has the entry
   (kind hold, in force); the live page, drawn by headless Chromium
   (skipped without selenium), shows the row. The key's value is never in
   any of them. Then, once the client's stamp + 3 s has passed (the hold
   has surely ended), stats say "ended", the gauge is 0 and keys 0.
2. Spread: a 200 with x-ratelimit-remaining-requests: 4 and
   x-ratelimit-reset-requests: 2s: `spread 0.500 s apart (4 left)` from
   x-ratelimit-remaining-requests, in force for the window (<= 2 s left).
3. The control: the same 429 without learn: nothing is shown.
"""
import calendar
import json
import re
import threading
import urllib.request

from lib import *
from vendorlib import Vendor, scripted

SECRET = "sk-learn-stats-SECRET-7f3a"

# argv: port; writes "pid stamp" to $MARK once its call is answered, then
# waits for $MARK.exit (the test reads its table meanwhile)
CLIENT = r"""
import http.client, json, os, sys, time
port = int(sys.argv[1])
c = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
c.request("GET", "/call/0", headers={"Authorization": "Bearer %s"})
r = c.getresponse()
r.read()
stamp = time.monotonic()
print(json.dumps({"codes": [r.status]}), flush=True)
mark = os.environ["MARK"]
with open(mark + ".tmp", "w") as f:
    f.write("%%d %%.6f" %% (os.getpid(), stamp))
os.rename(mark + ".tmp", mark)
deadline = time.monotonic() + 40
while not os.path.exists(mark + ".exit") and time.monotonic() < deadline:
    time.sleep(0.02)
""" % SECRET

LINE = re.compile(r"^  learned: key #([0-9a-f]{6}) (held|spread ([0-9.]+) s apart \((\d+) left\)) "
                  r"until (\S+) \((?:([0-9.]+) s left|ended ([0-9.]+) s ago)\), from (\S+)$", re.M)


def rule(port, extra):
    return (f"to=127.0.0.1 port={port} req_rate=100/s req_burst=100 per=header:Authorization "
            f"{extra}")


def timed(argv):
    """Runs argv; returns (stdout, monotonic before, after, wall before)."""
    wall, before = time.time(), time.monotonic()
    r = run(argv)
    after = time.monotonic()
    check(r.returncode == 0, f"{argv}: {r.stderr}")
    check(SECRET not in r.stdout and "learn-stats" not in r.stdout, f"the key's value shown:\n{r.stdout}")
    return r.stdout, before, after, wall


def stats_learned(pid):
    out, before, after, wall = timed([SLUICE, "stats", "--pid", str(pid)])
    _, _, req = out.partition("requests (")
    return [m.groups() for m in LINE.finditer(req)], out, before, after, wall


def utc(text):
    """2026-11-27T10:42:07.512Z -> UNIX seconds."""
    day, frac = text.rstrip("Z").split(".")
    return calendar.timegm(time.strptime(day, "%Y-%m-%dT%H:%M:%S")) + int(frac) / 1000


def gauges(pid):
    out, before, after, wall = timed([SLUICE, "metrics", "--pid", str(pid)])
    got = {}
    for m in re.finditer(r'^(sluice_learned_hold_seconds|sluice_learned_keys)\{rule="out-1",'
                         r'field="([^"]+)"\} ([0-9.]+)$', out, re.M):
        got[(m.group(1), m.group(2))] = float(m.group(3))
    return got, out, before, after


def live_page_row(mport, tmp):
    """The live page's learned row of rule out-1 as headless Chromium draws it:
    its cells' text; None without selenium."""
    return page_poll(f"http://127.0.0.1:{mport}/", tmp, """
        const row = document.querySelector('#learned tr[data-learned^="out-1|"]');
        return row ? Array.from(row.cells).map(c => c.textContent.trim()) : null;""")


def live(pid, tmp):
    """The rule's learned entries in /stats.json (and the monotonic window
    it was read in), and the live page's row."""
    mport = free_port()
    with Proc([SLUICE, "metrics", "--pid", str(pid), "--listen", f"127.0.0.1:{mport}"]):
        wait_listen(mport)
        before = time.monotonic()
        with urllib.request.urlopen(f"http://127.0.0.1:{mport}/stats.json", timeout=5) as f:
            body = f.read().decode()
        after = time.monotonic()
        check(SECRET not in body, "the key's value in stats.json")
        d = json.loads(body)
        row = live_page_row(mport, tmp)
    r = next(r for r in d["rules"] if r["rule"] == "out-1" and r["kind"] == "requests")
    return r["learned_holds"], before, after, row


def session(tmp, tag, script, extra, look):
    """Runs the client under sluice against a vendor answering `script`;
    look(pid, stamp, arrival) runs once its call is answered. Returns
    (codes, stderr, what look returned)."""
    v = Vendor(scripted(script))
    try:
        client = tmp.write(f"client_{tag}.py", CLIENT)
        mark = tmp.join(f"mark_{tag}")
        out = []
        th = threading.Thread(target=lambda: out.append(run(
            sluice_argv([sys.executable, client, str(v.port)], outs=[rule(v.port, extra)]),
            env={"MARK": mark}, timeout=60)))
        th.start()
        seen = None
        try:
            deadline = time.monotonic() + 40
            while not os.path.exists(mark) and time.monotonic() < deadline and th.is_alive():
                time.sleep(0.02)
            check(os.path.exists(mark), f"{tag}: the client never read its answer: {out}")
            pid, stamp = open(mark).read().split()
            seen = look(int(pid), float(stamp), v.seen[0][0])
        finally:
            open(mark + ".exit", "w").close()
            th.join(70)
        p = out[0]
        check(p.returncode == 0, f"{tag}: exit {p.returncode}\n{p.stderr}")
        return last_json(p.stdout)["codes"], p.stderr, seen
    finally:
        v.close()


def within(what, got, low, high, slack):
    check(low - slack <= got <= high + slack,
          f"{what}: {got} not within [{low:.3f}, {high:.3f}] +- {slack}")


def main():
    with TempDir() as tmp:
        # 1. a hold: Retry-After: 3 on a 429
        def look_hold(pid, stamp, arrival):
            first, text, before, after, wall = stats_learned(pid)
            met, mtext, mbefore, mafter = gauges(pid)
            holds, jbefore, jafter, row = live(pid, tmp)
            # the hold has surely ended at stamp + 3 s: wait that long (a known bound)
            time.sleep(max(stamp + 3.05 - time.monotonic(), 0))
            ended, etext, _, _, _ = stats_learned(pid)
            emet, _, _, _ = gauges(pid)
            return (first, text, before, after, wall, met, mtext, mbefore, mafter, holds, jbefore,
                    jafter, row, ended, etext, emet, stamp, arrival)

        codes, err, got = session(tmp, "hold", [(429, {"Retry-After": "3"})],
                                  "learn=yes action=delay max_delay=10s", look_hold)
        (first, text, before, after, wall, met, mtext, mbefore, mafter, holds, jbefore, jafter, row,
         ended, etext, emet, stamp, arrival) = got
        print("hold: sluice stats:", [l for l in text.splitlines() if "learned:" in l])
        check(codes == [429], f"hold: codes {codes}\n{err}")
        logged = re.search(r"learned from retry-after in a 429 response: key #([0-9a-f]{6}) held", err)
        check(logged, f"hold: no learn line:\n{err}")
        check(len(first) == 1, f"hold: want one learned line under the rule:\n{text}")
        key, what, _, _, until, left, ago, field = first[0]
        check(key == logged.group(1), f"hold: key #{key} in stats, #{logged.group(1)} in the log")
        check(what == "held" and field == "retry-after" and left is not None,
              f"hold: {first[0]}\n{text}")
        low, high = arrival + 3 - after, stamp + 3 - before
        within("stats: s left", float(left), low, high, 0.05)
        within("stats: until (wall, s from the reading)", utc(until) - wall, arrival + 3 - before,
               stamp + 3 - before, 0.02)
        print("hold: metrics:", met)
        check(met.get(("sluice_learned_keys", "retry-after")) == 1, f"hold: metrics:\n{mtext}")
        within("metrics: sluice_learned_hold_seconds", met[("sluice_learned_hold_seconds",
               "retry-after")], arrival + 3 - mafter, stamp + 3 - mbefore, 0.0005)
        print("hold: stats.json:", holds, "live page row:", row)
        check(len(holds) == 1 and holds[0]["key"] == key and holds[0]["field"] == "retry-after"
              and holds[0]["kind"] == "hold" and holds[0]["in_force"], f"stats.json: {holds}")
        within("stats.json: left_s", holds[0]["left_s"], arrival + 3 - jafter, stamp + 3 - jbefore,
               0.0005)
        if row is None:
            print("hold: live page not drawn (no selenium)")
        else:
            check(row[0] == "out-1" and row[1] == "#" + key and row[2] == "retry-after"
                  and row[3] == "held", f"live page row: {row}")
        print("hold: after it ended:", [l for l in etext.splitlines() if "learned:" in l], emet)
        check(len(ended) == 1 and ended[0][0] == key and ended[0][6] is not None,
              f"hold: want it shown ended:\n{etext}")
        check(emet.get(("sluice_learned_hold_seconds", "retry-after")) == 0
              and emet.get(("sluice_learned_keys", "retry-after")) == 0, f"hold: ended: {emet}")

        # 2. a spread: 4 left for 2 s (OpenAI's fields)
        def look_spread(pid, stamp, arrival):
            return stats_learned(pid), stamp, arrival

        codes, err, ((lines, text, before, after, _), stamp, arrival) = session(
            tmp, "spread", [(200, {"x-ratelimit-remaining-requests": "4",
                                   "x-ratelimit-reset-requests": "2s"})],
            "learn=yes action=delay max_delay=10s", look_spread)
        print("spread: sluice stats:", [l for l in text.splitlines() if "learned:" in l])
        check(codes == [200], f"spread: codes {codes}\n{err}")
        check(len(lines) == 1, f"spread: want one learned line:\n{text}\n{err}")
        key, what, gap, n, until, left, ago, field = lines[0]
        check(gap == "0.500" and n == "4" and field == "x-ratelimit-remaining-requests"
              and left is not None, f"spread: {lines[0]}")
        within("spread: s left", float(left), arrival + 2 - after, stamp + 2 - before, 0.05)

        # 3. the control: the same 429 without learn shows nothing
        def look_none(pid, stamp, arrival):
            return stats_learned(pid)

        codes, err, (lines, text, _, _, _) = session(tmp, "control", [(429, {"Retry-After": "3"})],
                                                     "action=delay max_delay=10s", look_none)
        check(codes == [429] and lines == [] and "learned:" not in text,
              f"control: {codes}\n{text}")
        print("control (no learn): no learned line")
    print("ok")


if __name__ == "__main__":
    main()
