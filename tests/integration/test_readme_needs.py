# SPDX-License-Identifier: BSD-2-Clause
"""README's "Needs" names exactly the packages the build needs.

scripts/deps.sh keeps two lists: `build` (what `make` needs) and `tests`
(the programs the tests run). The README's "Building and installing"
paragraph must name every package of `build` and no other package, and
debian/control's Build-Depends must cover the libraries among them, so the
three never drift (the README once omitted five -dev packages)."""
import re

from lib import *

deps = open(os.path.join(ROOT, "scripts", "deps.sh")).read()
build = re.search(r"^build=\((.*?)\)", deps, re.S | re.M)
check(build, "scripts/deps.sh has no build=(...) list")
build = set(build.group(1).split())

readme = open(os.path.join(ROOT, "README.md")).read()
para = readme.split("## Building and installing", 1)[1].split("`make deps`", 1)[0]
named = set(re.findall(r"`([a-z0-9][a-z0-9+.-]*)`", para)) - {"scripts/deps.sh", "build", "tests"}
check(named == build, f"README names {sorted(named - build)} beyond the build list, "
                      f"and misses {sorted(build - named)}")

control = open(os.path.join(ROOT, "debian", "control")).read()
bdeps = control.split("Build-Depends:", 1)[1].split("Standards-Version", 1)[0]
libs = {p for p in build if p.startswith("lib") and p != "libc6-dev"}
missing = sorted(p for p in libs if p not in bdeps)
check(not missing, f"debian/control Build-Depends misses {missing}")
print(f"README and debian/control agree with scripts/deps.sh: {len(build)} build packages")
print("ok")
