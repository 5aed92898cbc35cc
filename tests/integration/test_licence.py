# SPDX-License-Identifier: BSD-2-Clause
"""The licence is stated where a reader and a packager look: LICENSE is
BSD-2-Clause, debian/copyright (DEP-5) names it, README says it, and every
source file carries the SPDX identifier on its first lines
(scripts/spdx.py lists any that does not)."""
import subprocess

from lib import *

lic = open(os.path.join(ROOT, "LICENSE")).read()
check(lic.startswith("BSD 2-Clause License") and "the sluice authors" in lic, "LICENSE")
cp = open(os.path.join(ROOT, "debian", "copyright")).read()
check("copyright-format/1.0" in cp and "License: BSD-2-Clause" in cp, "debian/copyright")
check("Licence: BSD-2-Clause" in open(os.path.join(ROOT, "README.md")).read(), "README")
r = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "spdx.py")],
                   capture_output=True, text=True)
check(r.returncode == 0, "files without the SPDX identifier:\n" + r.stdout[-3000:])
print("LICENSE, debian/copyright, README and every source file say BSD-2-Clause")
print("ok")
