# SPDX-License-Identifier: BSD-2-Clause
"""Outbound limits learned from the vendor's own answers (issue 35, item 2):
`learn = yes` reads the rate-limit fields of every response on the rule's
connections and holds the key's later calls until the time they name.

The "vendor" is a ThreadingHTTPServer in this test process (not under the
shim) on 127.0.0.1, answering from a script (the first request 429 with
Retry-After, ...; then 200s) and stamping each request's arrival with
time.monotonic(), the CLOCK_MONOTONIC sluice holds by. The clients are
python's http.client under `sluice run --out 'to=127.0.0.1 port=P
req_rate=100/s req_burst=100 learn=yes ...'`: the rule's own rate never
holds anything here, only what is learned does.

Timing: a hold starts when the client reads the vendor's answer, which is
after the server sent it, so a held call reaches the server no sooner
than the hold after the answer was sent: asserted with 0.1 s taken off
(timer rounding only; a slow machine makes the gap longer, never shorter).
The upper bounds are loose (a held call still goes, within max_delay).

1. Retry-After: 2 on a 429 (action = delay): two processes of one program
   (`sh -c 'A & B; wait'`): A's call gets the 429, A's next call and B's
   (made once A has read it) both reach the server >= 1.9 s after it;
2. a 200 with x-ratelimit-remaining-requests: 0 and
   x-ratelimit-reset-requests: 1.5s (OpenAI): the next call >= 1.4 s later;
3. an absurd Retry-After: 561635 (6.5 days) with learn_max=2s: capped,
   the next call 1.9 s .. 8 s later, and the log says it was capped;
4. action = reply: the call right after the vendor's 429 is answered 429 by
   sluice (never sent: the vendor sees 1 request), a call 2.2 s later goes;
5. the control: the same as 1 without learn: nothing is held (< 1.5 s).
"""
import json

from lib import *
from vendorlib import Vendor, scripted


# argv: port, calls, keep-alive (k) or a new connection per call (n),
# a file to create once the first answer is read ("-": none), a file to
# wait for before the first call ("-": none), a name for the paths
CLIENT = r"""
import http.client, json, os, sys, time
port, calls, mode, mark, wait, name = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5], sys.argv[6]
if wait != "-":
    deadline = time.monotonic() + 15
    while not os.path.exists(wait) and time.monotonic() < deadline:
        time.sleep(0.005)
gap = float(os.environ.get("GAP", "0"))
codes, c = [], None
for i in range(calls):
    if c is None or mode == "n":
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
    if i and gap:
        time.sleep(gap)
    c.request("GET", "/%s/%d" % (name, i))
    r = c.getresponse()
    r.read()
    codes.append(r.status)
    if r.getheader("Connection", "").lower() == "close":
        c.close()
        c = None
    if i == 0 and mark != "-":
        open(mark, "w").close()
print(json.dumps({"name": name, "codes": codes}))
"""


def rule(port, extra):
    return f"to=127.0.0.1 port={port} req_rate=100/s req_burst=100 {extra}"


def after_first(vendor):
    """Arrivals of the calls after the first, relative to the first (the
    vendor's answer was sent right after it arrived, within the server's
    own few ms)."""
    seen = sorted(vendor.seen)
    t0 = seen[0][0]
    return [round(t - t0, 3) for t, _, _ in seen[1:]], seen


def two_processes(extra, tmp, tag):
    v = Vendor(scripted([(429, {"Retry-After": "2"})]))
    try:
        client = tmp.write(f"client_{tag}.py", CLIENT)
        mark = tmp.join(f"first_{tag}")
        sh = (f"{sys.executable} {client} {v.port} 2 k {mark} - A & "
              f"{sys.executable} {client} {v.port} 1 n - {mark} B; wait")
        p = run(sluice_argv(["sh", "-c", sh], outs=[rule(v.port, extra)]), timeout=60)
        check(p.returncode == 0, f"{tag}: exit {p.returncode}\n{p.stderr}")
        codes = sorted(json.loads(l)["name"] + str(json.loads(l)["codes"])
                       for l in p.stdout.splitlines() if l.startswith("{"))
        check(codes == ["A[429, 200]", "B[200]"], f"{tag}: codes {codes}\n{p.stderr}")
        rel, seen = after_first(v)
        check(seen[0][2] == 429 and len(seen) == 3, f"{tag}: vendor saw {seen}")
        return rel, p.stderr
    finally:
        v.close()


def one_process(script, extra, tmp, tag, calls=2, env=None):
    v = Vendor(scripted(script))
    try:
        client = tmp.write(f"client_{tag}.py", CLIENT)
        p = run(sluice_argv([sys.executable, client, str(v.port), str(calls), "k", "-", "-", tag],
                            outs=[rule(v.port, extra)]), timeout=60, env=env)
        check(p.returncode == 0, f"{tag}: exit {p.returncode}\n{p.stderr}")
        codes = last_json(p.stdout)["codes"]
        rel, seen = after_first(v)
        return codes, rel, seen, p.stderr
    finally:
        v.close()


def main():
    with TempDir() as tmp:
        # 1. Retry-After on a 429: both processes wait
        rel, err = two_processes("learn=yes action=delay max_delay=10s", tmp, "ra")
        print("retry-after, two processes: later calls at", rel)
        check(all(1.9 <= t < 8 for t in rel), f"retry-after: calls at {rel} s, not held 2 s\n{err}")
        check("learned from retry-after in a 429 response" in err, f"no learn line:\n{err}")
        check(err.count("learned from") == 1, f"logged once per change:\n{err}")

        # 2. OpenAI: 0 requests remaining, reset in 1.5s (on a 200)
        codes, rel, seen, err = one_process(
            [(200, {"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "1.5s",
                    "x-ratelimit-remaining-tokens": "-1"})],
            "learn=yes action=delay max_delay=10s", tmp, "oa")
        print("x-ratelimit-reset-requests 1.5s: codes", codes, "later call at", rel)
        check(codes == [200, 200], f"openai: codes {codes}")
        check(len(rel) == 1 and 1.4 <= rel[0] < 8, f"openai: next call at {rel} s\n{err}")
        check("learned from x-ratelimit-reset-requests" in err, f"no learn line:\n{err}")

        # 3. an absurd Retry-After, capped at learn_max
        codes, rel, seen, err = one_process([(429, {"Retry-After": "561635"})],
                                            "learn=yes learn_max=2s action=delay max_delay=10s",
                                            tmp, "cap")
        print("Retry-After 561635, learn_max 2s: codes", codes, "later call at", rel)
        check(codes == [429, 200], f"cap: codes {codes}")
        check(len(rel) == 1 and 1.9 <= rel[0] < 8, f"cap: next call at {rel} s\n{err}")
        check("capped at learn_max: it asked 561635 s" in err, f"no capped line:\n{err}")

        # 4. action = reply: sluice answers 429 itself until the time comes
        codes, rel, seen, err = one_process([(429, {"Retry-After": "2"})],
                                            "learn=yes action=reply", tmp, "reply", calls=2)
        check(codes == [429, 429] and len(seen) == 1,
              f"reply: codes {codes}, vendor saw {seen}\n{err}")
        codes, rel, seen, err = one_process([(429, {"Retry-After": "2"})],
                                            "learn=yes action=reply", tmp, "reply2", calls=2,
                                            env={"GAP": "2.2"})
        print("action=reply: after a 2.2 s pause codes", codes, "vendor saw", len(seen))
        check(codes == [429, 200] and len(seen) == 2, f"reply: codes {codes} after the pause")

        # 5. the control: without learn nothing is held
        rel, err = two_processes("action=delay max_delay=10s", tmp, "ctl")
        print("control (no learn): later calls at", rel)
        check(all(t < 1.5 for t in rel), f"control: calls at {rel} s were held\n{err}")
        check("learned" not in err, f"control learned:\n{err}")
    print("ok")


if __name__ == "__main__":
    main()
