# SPDX-License-Identifier: BSD-2-Clause
"""The reference has one option table: every option of conf/options.c is
a row, once, in the tables of "Global options" and "Rule options"
(docs/configuration.md) and of the gossip and redis sections
(docs/fleet.md), where the reference moved from README.md (issue 33 item
7). `per` was once described in two tables, and the gossip options in
none. sluice.conf(5) is generated from the same option table
(test_man.py). The Configuration example, in README.md and on that page,
passes `sluice check`."""
import re

from lib import *

src = open(os.path.join(ROOT, "conf", "options.c")).read()
names = re.findall(r'^\s*\{"(\w+)",\s*\w+,', src, re.M)
check(len(names) > 40, f"option table not found: {names}")
readme = open(os.path.join(ROOT, "README.md")).read()
reference = open(os.path.join(ROOT, "docs", "configuration.md")).read()
fleet = open(os.path.join(ROOT, "docs", "fleet.md")).read()
rows = {}
for line in (reference + fleet).splitlines():
    m = re.match(r"^\| ((?:`\w+`(?:, )?)+) \|", line)
    if not m:
        continue
    for n in re.findall(r"`(\w+)`", m.group(1)):
        rows[n] = rows.get(n, 0) + 1
# dry_run and interval/key_file are rows of two sections each by design
# (global and per rule; gossip and redis): at most one row per section.
twice = {"dry_run", "interval", "key_file"}
bad = [f"{n}: {rows.get(n, 0)} rows" for n in dict.fromkeys(names)
       if rows.get(n, 0) == 0 or (rows[n] > 1 and n not in twice) or rows[n] > 2]
check(not bad, "options without exactly one row in docs/configuration.md and docs/fleet.md: " + ", ".join(bad))
print(f"{len(set(names))} options, each a row of the option tables")

# The Configuration example is a valid file, and its paid API is paced by
# requests (a connection `rate` there once left keep-alive calls unlimited).
for where, text in (("README.md", readme), ("docs/configuration.md", reference)):
    conf = text.split("# Configuration", 1)[1].split("```", 2)[1]
    check('req_rate  = "50/m"' in conf, f"{where}: the outbound example must use req_rate")
    with TempDir() as tmp:
        r = run([SLUICE, "check", "-c", tmp.write("readme.conf", conf)])
        check(r.returncode == 0 and 'outbound "vendor"' in r.stdout, f"{where}: {r.stdout}{r.stderr}")
    print(f"{where}: the Configuration example passes sluice check")
print("ok")
