# SPDX-License-Identifier: BSD-2-Clause
"""A host's own test suite under the shim (issue 21): CPython's own tests
of sockets, selectors, HTTP, FTP, SMTP and POP3 (Debian's
libpython3.11-testsuite, run by /usr/bin/python3 -m test) pass under
sluice with rules that never limit, as they pass bare.

One run, under hostlib's never-limiting request rule alone, inbound on
every port and outbound to loopback: each socket these tests open goes
through the request reader and its stash (with a byte rule as well, reads
take the byte-limited path instead, which hid the two defects this test
found: a MSG_PEEK that showed only what an earlier, shorter peek had
stashed, and a scatter read (recvmsg, readv) that filled only its first
buffer). The byte rules were run by hand: docs/hosts.md.
A test that fails under the shim is run again bare: the test fails only
for those that pass bare (a suite test that fails on this machine anyway
says nothing about sluice). 80-95 s on a loaded 2-vCPU machine; the
longer modules (test_asyncio, test_ssl, test_xmlrpc, test_imaplib) were
run by hand, bare and under each rule set: docs/hosts.md.
"""
from hostlib import *

PY = "/usr/bin/python3"
MODULES = ["test_socket", "test_httplib", "test_urllib2_localnet", "test_selectors", "test_poll",
           "test_select", "test_epoll", "test_ftplib", "test_smtplib", "test_poplib"]
r = run([PY, "-c", "import test.test_socket"], timeout=30)
check(r.returncode == 0, "python's test suite is not installed (apt-get install libpython3.11-testsuite)")

argv = sluice_argv([PY, "-m", "test", "-v", "-i", "*VSOCK*", "--timeout", "120", *MODULES],
                   ins=[REQ], outs=[f"to=127.0.0.0/8,::1 {REQ}"])


def outcomes(text):
    """{test id: ok | FAIL | ERROR | skipped} from unittest's -v lines."""
    out = {}
    for m in re.finditer(r"^(\w+) \(([\w.]+)\)[^\n]*?\.\.\. (ok|FAIL|ERROR|skipped|expected failure)",
                         text, re.M):
        out[m.group(2)] = m.group(3)
    return out


t0 = time.monotonic()
r = run(argv, timeout=140)  # run.sh stops a test at 180 s
took = time.monotonic() - t0
got = outcomes(r.stdout + r.stderr)
bad = sorted(k for k, v in got.items() if v in ("FAIL", "ERROR"))
summary = {v: sum(1 for x in got.values() if x == v) for v in set(got.values())}
print(f"under the shim: {summary} in {took:.0f} s; exit {r.returncode}")
check(len(got) > 1000, f"the suite ran (parsed {len(got)} results):\n{(r.stdout + r.stderr)[-2000:]}")
if bad or r.returncode != 0:
    print("failed under the shim:", bad)
    check(bad, "the suite failed under the shim with no failing test named:\n"
          + (r.stdout + r.stderr)[-3000:])
    # the same tests alone, bare (--matchfile: only those ids)
    ids = os.path.join(SCRATCH, "ids")
    with open(ids, "w") as f:
        f.write("\n".join(bad) + "\n")
    mods = sorted({re.search(r"test_\w+", k).group(0) for k in bad})
    b = run([PY, "-m", "test", "-v", "--matchfile", ids, *mods], timeout=35)
    bare = outcomes(b.stdout + b.stderr)
    only_shim = [k for k in bad if bare.get(k) == "ok"]
    print("bare:", {k: bare.get(k) for k in bad})
    check(not only_shim, "fail under the shim and pass bare:\n" + "\n".join(only_shim) + "\n"
          + "\n".join(l for l in (r.stdout + r.stderr).splitlines()
                      if l.startswith(("FAIL:", "ERROR:", "AssertionError", "  File"))))
print("ok")
