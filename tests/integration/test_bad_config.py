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
The program is `python3 -c 'print("ran")'`: it makes no network calls, so
"runs unlimited" is observed as "runs at all", and the shim must not add
anything to its output but the one line."""
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
print("ok")
