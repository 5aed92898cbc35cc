# SPDX-License-Identifier: BSD-2-Clause
"""A configuration that cannot be used is reported once, precisely, and
then either ignored (on_error = open, the default: the program runs
unlimited) or fatal (on_error = closed: the program never starts, exit 78).

  (a) tests/fixtures/it-bad-rate.conf (rate = "20/x" on line 6): the
      program runs ("ran" printed, exit 0); stderr holds exactly one sluice
      line: an error naming it-bad-rate.conf:6, option 'rate', the value
      '20/x', and "running unlimited";
  (b) a missing config file: the program runs, with one message naming the
      file (through `sluice run -c`, and through SLUICE_CONFIG alone); with
      SLUICE_ON_ERROR=closed it does not start (exit 78);
  (c) it-bad-rate-closed.conf (same, plus on_error = closed): no "ran",
      exit status 78, "refusing to start";
  (d) `sluice check -c it-bad-rate.conf`: exit 1 and the same message;
  (e) SLUICE_ON_ERROR=closed in the environment and a bad inline rule:
      no "ran", exit 78, "refusing to start".
  (f) `sluice check -c FIFO` returns at once (exit 1, "is not a regular
      file") instead of waiting for a writer for ever (issue 12, defect 12);
  (g) one message per problem: a program started through a chain of
      wrappers (`bash -c 'bash -c PROG'`, three processes that each load
      the library) prints the error once, through `sluice run` (which
      reports it before it starts the program) and through the environment
      alone (the first process reports, its children stay silent); with
      on_error = closed `sluice run` refuses before any of them starts
      (issue 12 defect 13, issue 13 item 5);
  (h) on_error = closed holds for a file with a NUL byte, a file over
      1 MiB, an unterminated string and an inline rule with an
      unterminated quote: exit 78, the program never runs (defect 6);
  (i) `sluice check` refuses a gossip node listed in its own peers (defect 8);
  (j) `sluice check` warns, once and still exit 0, about a burst on a
      sliding window rule, which ignores it (issue 13, item 5).
  (k) a burst GCRA cannot keep (req-burst-too-large.conf: req_rate 1/d,
      req_burst 54000, past 2^62 ns; it loaded, and refused every request):
      `check`, `run` (on_error = closed: exit 78, the program never runs)
      and `reload` refuse it on one line naming the file, line 6, option
      'req_burst' and the largest burst that fits (53375); inline, 1/m with
      77,000,000 the same; 53375 passes (issue 31, defect 9);
  (l) a ';' inside one --in or --out would have made a second rule (a
      limit on another port, or an outbound rule, nobody wrote as such):
      `check`, `run` and `reload` refuse the argument, naming it (exit 2,
      the program never runs); a quoted ';' is a value's (issue 31).
The program is `python3 -c 'print("ran")'`: it makes no network calls, so
"runs unlimited" is observed as "runs at all", and the shim must not add
anything to its output but the one line. No test here sleeps: every
program runs to completion under run()'s timeout."""
from lib import *

PROG = [sys.executable, "-c", 'print("ran")']
bad = os.path.join(FIXTURES, "it-bad-rate.conf")
bad_closed = os.path.join(FIXTURES, "it-bad-rate-closed.conf")


def one_error(stderr, what):
    lines = sluice_lines(stderr)
    check(len(lines) == 1, f"{what}: expected exactly one sluice line, got:\n{stderr}")
    check(len(stderr.strip().splitlines()) == 1, f"{what}: other output on stderr:\n{stderr}")
    return lines[0]


# (a) bad value, on_error = open (default)
r = run(sluice_argv(PROG, config=bad), env={"SLUICE_ON_ERROR": None})
print("(a)", r.returncode, r.stdout.strip(), "|", r.stderr.strip())
check(r.returncode == 0 and r.stdout == "ran\n", f"(a) program did not run: {r.returncode} {r.stdout!r}")
line = one_error(r.stderr, "(a)")
check(re.match(r"sluice\[\d+\]: error: ", line), f"(a) not an error line: {line}")
check("it-bad-rate.conf:6:" in line, f"(a) file:line not named: {line}")
check("'rate'" in line and "'20/x'" in line, f"(a) option or value not quoted: {line}")
check(line.endswith("running unlimited (on_error = open)"), f"(a) {line}")
core = re.sub(r"^sluice\[\d+\]: error: ", "", line).rsplit("; running unlimited", 1)[0]

# (b) missing file
with TempDir() as tmp:
    missing = tmp.join("no-such.conf")
    r = run(sluice_argv(PROG, config=missing), env={"SLUICE_ON_ERROR": None})
    print("(b) sluice run -c:", r.returncode, r.stdout.strip(), "|", r.stderr.strip())
    check(r.returncode == 0 and r.stdout == "ran\n",
          f"(b) `sluice run -c MISSING` did not run the program: exit {r.returncode}, {r.stderr.strip()}")
    check("no-such.conf" in r.stderr and len(sluice_lines(r.stderr)) == 1,
          f"(b) expected one message naming the file:\n{r.stderr}")
    # the same through the environment alone (how an already-running
    # deployment meets a deleted file): the shim's own path
    r = run(PROG, env={"LD_PRELOAD": LIB, "SLUICE_CONFIG": missing, "SLUICE_ON_ERROR": None})
    print("(b) SLUICE_CONFIG:", r.returncode, r.stdout.strip(), "|", r.stderr.strip())
    check(r.returncode == 0 and r.stdout == "ran\n", f"(b) env: program did not run: {r.stderr}")
    line_b = one_error(r.stderr, "(b) env")
    check("no-such.conf" in line_b and "running unlimited" in line_b, f"(b) env: {line_b}")
    # and a missing file with SLUICE_ON_ERROR=closed is fatal like a bad one
    r = run(PROG, env={"LD_PRELOAD": LIB, "SLUICE_CONFIG": missing, "SLUICE_ON_ERROR": "closed"})
    print("(b) closed:", r.returncode, repr(r.stdout), "|", r.stderr.strip())
    check(r.returncode == 78 and "ran" not in r.stdout, f"(b) closed: exit {r.returncode} {r.stdout!r}")
    check("refusing to start" in one_error(r.stderr, "(b) closed"), r.stderr)

# (c) same bad value, on_error = closed in the file
r = run(sluice_argv(PROG, config=bad_closed), env={"SLUICE_ON_ERROR": None})
print("(c)", r.returncode, repr(r.stdout), "|", r.stderr.strip())
check("ran" not in r.stdout, "(c) the program ran despite on_error = closed")
check(r.returncode == 78, f"(c) exit status {r.returncode}, expected 78")
line = one_error(r.stderr, "(c)")
check("it-bad-rate-closed.conf:7:" in line and "'20/x'" in line, f"(c) {line}")
check("refusing to start" in line, f"(c) {line}")

# (d) sluice check: exit 1, the same message
r = run([SLUICE, "check", "-c", bad])
print("(d)", r.returncode, repr(r.stdout), "|", r.stderr.strip())
check(r.returncode == 1, f"(d) check exit {r.returncode}")
check(len(r.stderr.strip().splitlines()) == 1 and core in r.stderr,
      f"(d) check's message differs from the shim's:\n  shim:  {core}\n  check: {r.stderr.strip()}")
check(r.stdout == "", f"(d) check printed a config for a bad file:\n{r.stdout}")

# (e) SLUICE_ON_ERROR=closed and a bad inline rule
r = run(sluice_argv(PROG, ins=["port=8080 rate=fast"]), env={"SLUICE_ON_ERROR": "closed"})
print("(e)", r.returncode, repr(r.stdout), "|", r.stderr.strip())
check("ran" not in r.stdout, "(e) the program ran despite SLUICE_ON_ERROR=closed")
check(r.returncode == 78, f"(e) exit status {r.returncode}, expected 78")
line = one_error(r.stderr, "(e)")
check("'rate'" in line and "'fast'" in line and "refusing to start" in line, f"(e) {line}")
# and without the variable the same rule runs unlimited
r = run(sluice_argv(PROG, ins=["port=8080 rate=fast"]), env={"SLUICE_ON_ERROR": None})
check(r.returncode == 0 and r.stdout == "ran\n", f"(e) open: {r.returncode} {r.stderr}")

# (f) a FIFO as the config file: refused at once, not read for ever
with TempDir() as tmp:
    fifo = tmp.join("sluice.conf")
    os.mkfifo(fifo)
    r = run([SLUICE, "check", "-c", fifo], timeout=10)
    print("(f)", r.returncode, "|", r.stderr.strip())
    check(r.returncode == 1 and "is not a regular file" in r.stderr, f"(f) {r.returncode} {r.stderr}")

# (g) one message per problem through a chain of wrappers
CHAIN = ["bash", "-c", "bash -c 'exec %s -c \"print(\\\"ran\\\")\"'" % sys.executable]
quiet = {"SLUICE_ON_ERROR": None, "SLUICE_REPORTED": None}
r = run(sluice_argv(CHAIN, config=bad), env=quiet)
print("(g) sluice run:", r.returncode, r.stdout.strip(), "|", r.stderr.strip())
check(r.returncode == 0 and r.stdout == "ran\n", f"(g) the chain did not run: {r.returncode} {r.stdout!r}")
check("running unlimited" in one_error(r.stderr, "(g) sluice run"), r.stderr)
r = run(CHAIN, env=dict(quiet, LD_PRELOAD=LIB, SLUICE_CONFIG=bad))
print("(g) env:", r.returncode, r.stdout.strip(), "|", r.stderr.strip())
check(r.returncode == 0 and r.stdout == "ran\n", f"(g) env: the chain did not run: {r.stdout!r}")
check("running unlimited" in one_error(r.stderr, "(g) env"), r.stderr)
r = run(sluice_argv(CHAIN, config=bad_closed), env=quiet)
print("(g) closed:", r.returncode, repr(r.stdout), "|", r.stderr.strip())
check(r.returncode == 78 and r.stdout == "", f"(g) closed: {r.returncode} {r.stdout!r}")
check("refusing to start" in one_error(r.stderr, "(g) closed"), r.stderr)

# (h) on_error = closed holds for errors found before on_error is read
with TempDir() as tmp:
    cases = {
        "nul.conf": "on_error = closed\ninbound \"a\" { rate = \"1/s\" }\n\0\n",
        "large.conf": "on_error = closed\n" + "#" * (1 << 20) + "\n",
        "string.conf": "on_error = closed\ninbound \"a\" {\n    rate = \"1/s\n}\n",
    }
    for name, text in cases.items():
        path = tmp.write(name, text)
        for how, argv, env in (("sluice run", sluice_argv(PROG, config=path), quiet),
                               ("env", PROG, dict(quiet, LD_PRELOAD=LIB, SLUICE_CONFIG=path))):
            r = run(argv, env=env)
            print(f"(h) {name} {how}:", r.returncode, repr(r.stdout), "|", r.stderr.strip()[:120])
            check(r.returncode == 78 and r.stdout == "", f"(h) {name} {how}: the program ran: {r.returncode}")
            check("refusing to start" in one_error(r.stderr, f"(h) {name} {how}"), r.stderr)
r = run(PROG, env=dict(quiet, LD_PRELOAD=LIB, SLUICE_RULES="global on_error=closed; in port=80 rate='1/s"))
print("(h) inline:", r.returncode, repr(r.stdout), "|", r.stderr.strip())
check(r.returncode == 78 and r.stdout == "", f"(h) inline: the program ran: {r.returncode}")
check("unterminated quote" in one_error(r.stderr, "(h) inline"), r.stderr)

# (i) a gossip node among its own peers
with TempDir() as tmp:
    key = tmp.join("gossip.key")
    check(run([SLUICE, "keygen", key]).returncode == 0, "(i) sluice keygen failed")
    path = tmp.write("self.conf", f"""gossip {{
    listen = "127.0.0.2:7946"
    peers  = {{"127.0.0.3:7946", "127.0.0.2:7946"}}
    key_file = "{key}"
}}
""")
    r = run([SLUICE, "check", "-c", path])
    print("(i)", r.returncode, "|", r.stderr.strip())
    check(r.returncode == 1 and "'127.0.0.2:7946' is this node's own listen address" in r.stderr,
          f"(i) {r.returncode} {r.stderr}")

# (j) burst on a sliding window rule: a warning, the config still valid
r = run([SLUICE, "check", "--in", "port=80 rate=20/s burst=5 algorithm=sliding"])
print("(j)", r.returncode, "|", r.stderr.strip())
check(r.returncode == 0 and r.stdout, f"(j) check refused it: {r.returncode} {r.stderr}")
check(len(r.stderr.strip().splitlines()) == 1 and "warning" in r.stderr and "'burst': '5' is ignored" in r.stderr,
      f"(j) expected one warning: {r.stderr}")

# (k) a burst past what GCRA keeps
deep = os.path.join(FIXTURES, "req-burst-too-large.conf")
want = "req-burst-too-large.conf:6: inbound \"api\": option 'req_burst': '54000' is too large " \
       "for req_rate 1/d (at most 53375)"
for how, argv in (("check", [SLUICE, "check", "-c", deep]),
                  ("run", sluice_argv(PROG, config=deep)),
                  ("reload", [SLUICE, "reload", "-c", deep])):
    r = run(argv, env={"SLUICE_ON_ERROR": None})
    print(f"(k) {how}:", r.returncode, repr(r.stdout), "|", r.stderr.strip())
    check(r.returncode == (78 if how == "run" else 1) and "ran" not in r.stdout,
          f"(k) {how}: exit {r.returncode}, {r.stdout!r}")
    check(want in one_error(r.stderr, f"(k) {how}"), f"(k) {how}: {r.stderr}")
r = run([SLUICE, "check", "--out", "to=192.0.2.1 port=443 req_rate=1/m req_burst=77000000 action=delay"])
print("(k) 1/m:", r.returncode, "|", r.stderr.strip())
check(r.returncode == 1 and "option 'req_burst': '77000000' is too large for req_rate 1/m "
      "(at most 76861433)" in r.stderr, f"(k) 1/m: {r.returncode} {r.stderr}")
r = run([SLUICE, "check", "--in", "port=80 req_rate=1/d req_burst=53375"])
check(r.returncode == 0 and "req_burst   = 53375" in r.stdout, f"(k) 53375: {r.returncode} {r.stderr}")

# (l) one --in, one rule
for how, argv in (("check --in", [SLUICE, "check", "--in", "port=8080 rate=5/s; in port=9090 rate=1/d"]),
                  ("check --out", [SLUICE, "check", "--out", "to=192.0.2.1 rate=1/s;out to=0.0.0.0/0 rate=1/d"]),
                  ("run --in", sluice_argv(PROG, ins=["port=8080 rate=5/s;"])),
                  ("reload --in", [SLUICE, "reload", "--pid", str(os.getpid()), "--in", "port=1 rate=1/s; port=2 rate=1/s"])):
    r = run(argv, env={"SLUICE_ON_ERROR": None})
    print(f"(l) {how}:", r.returncode, repr(r.stdout), "|", r.stderr.strip())
    check(r.returncode == 2 and r.stdout == "", f"(l) {how}: exit {r.returncode}, {r.stdout!r}")
    check(len(r.stderr.strip().splitlines()) == 1 and "would start a second rule" in r.stderr
          and f"--{how.split('--')[1]} '" in r.stderr, f"(l) {how}: {r.stderr}")
r = run([SLUICE, "check", "--in", "port=8080 rate=5/s per=header:'X;Y'"])
check("second rule" not in r.stderr, f"(l) a quoted ';' was taken for a separator: {r.stderr}")
print("ok")
