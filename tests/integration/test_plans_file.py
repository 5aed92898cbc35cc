# SPDX-License-Identifier: BSD-2-Clause
"""A plans file that cannot be loaded never switches the limits off, and a
large one loads (issue 18.8).

The server is KEEPALIVE_SERVER (python ThreadingHTTPServer) logging each
request it serves, under `sluice run -c app.conf` with one inbound rule
`req_rate = "1/m"  per = "header:X-API-Key"  plans = FILE  action = reply`
(req_burst 1) and the default on_error = open. Each case sends 20 requests,
each on a new connection, with one key, and counts the requests the server
logged (so a pass is "the program saw it", not "the client got a 200").

  (a) a plans file of 3,000 keys (about 190 KiB; the review saw anything
      over 64 KiB refused, and the program then ran unlimited: 20/20)
      loads: a key on plan "gold" (req_burst=5 at the rule's rate) gets
      5 of 20, a key without a plan 1 of 20, and no sluice error is logged;
  (b) a missing plans file: the rule's own limits hold (1 of 20 for a key,
      where the review saw 20/20), and stderr holds exactly one sluice error
      line, naming app.conf's line, option 'plans', the file, and "keeps its
      own limits";
  (c) a plans file giving one key two plans: the same, the line naming
      "line N gives one key value two plans" and never the key's value;
  (d) `sluice check -c app.conf` with the missing file exits 1 and says
      why (the program would run without its plans).
Tolerance: none. At 1/m the bucket refills one request a minute and each
case takes well under a second (20 loopback requests), so no refill can
land inside a case; each case starts a fresh server (a fresh table).
"""
from lib import *

N = 20
for k in ("SLUICE_ON_ERROR", "SLUICE_REPORTED"):  # the defaults, and a first report
    os.environ.pop(k, None)


def conf(tmp, plans):
    port = free_port()
    path = tmp.write("app.conf", f"""
inbound "api" {{
    port = {port}
    req_rate = "1/m"
    per = "header:X-API-Key"
    plans = "{plans}"
    action = reply
}}
""")
    return port, path


def errors(stderr):
    """sluice's error lines (the info lines of limited requests aside)."""
    return [l for l in sluice_lines(stderr) if ": error: " in l]


def served_for(port, config, key):
    with Proc(sluice_argv(keepalive_argv(port, log=True), config=config)) as p:
        wait_listen(port)
        statuses = [http_get(port, headers=f"X-API-Key: {key}\r\n")[0] for _ in range(N)]
        n = len(served(p))
        err = p.stderr()
    return n, statuses, err


with TempDir() as tmp:
    # (a) a large plans file loads
    lines = ["plan gold req_burst=5", "plan free req_rate=1/m"]
    lines += [f"key {'gold' if i % 2 else 'free'} sk_live_{i:06d}_{'x' * 40}" for i in range(3000)]
    big = tmp.write("plans.txt", "\n".join(lines) + "\n", mode=0o600)
    size = os.path.getsize(big)
    check(size > 64 * 1024, f"(a) the plans file is only {size} bytes")
    port, app = conf(tmp, big)
    gold = f"sk_live_{2999:06d}_{'x' * 40}"
    n, st, err = served_for(port, app, gold)
    print(f"(a) {size} bytes of plans: gold key served {n}/{N}; statuses {st}")
    check(n == 5, f"(a) gold key: {n} served, expected 5 (req_burst=5)\n{err}")
    check(not errors(err), f"(a) sluice complained:\n{err}")
    port, app = conf(tmp, big)
    n, st, err = served_for(port, app, "no-plan-key")
    print(f"(a) key without a plan served {n}/{N}")
    check(n == 1, f"(a) key without a plan: {n} served, expected 1\n{err}")

    # (b) a missing plans file keeps the rule's limits
    missing = os.path.join(tmp.path, "no-such-plans.txt")
    port, app = conf(tmp, missing)
    n, st, err = served_for(port, app, "k1")
    lines = errors(err)
    print(f"(b) missing plans file: served {n}/{N}; {lines}")
    check(n == 1, f"(b) {n} of {N} served under a 1/m rule, expected 1\n{err}")
    check(len(lines) == 1, f"(b) expected one sluice error line:\n{err}")
    check("app.conf:" in lines[0] and "option 'plans'" in lines[0] and missing in lines[0]
          and "keeps its own limits" in lines[0], f"(b) {lines[0]}")

    # (c) one key value given two plans
    twice = tmp.write("twice.txt", "plan gold req_burst=5\nplan free\nkey gold sk_dup\n"
                      "key free sk_dup\n", mode=0o600)
    port, app = conf(tmp, twice)
    n, st, err = served_for(port, app, "sk_dup")
    lines = errors(err)
    print(f"(c) a value given two plans: served {n}/{N}; {lines}")
    check(n == 1, f"(c) {n} served, expected 1\n{err}")
    check(len(lines) == 1 and "line 4 gives one key value two plans" in lines[0]
          and "sk_dup" not in lines[0], f"(c) {lines}")

    # (d) sluice check refuses it
    port, app = conf(tmp, missing)
    r = run([SLUICE, "check", "-c", app], env={"SLUICE_ON_ERROR": None})
    print("(d)", r.returncode, r.stderr.strip())
    check(r.returncode == 1 and "option 'plans'" in r.stderr, f"(d) {r.returncode} {r.stderr}")
print("ok")
