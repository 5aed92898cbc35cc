# SPDX-License-Identifier: BSD-2-Clause
"""README.md is a newcomer's path (issue 33 item 7): at most 300 lines, and
every page of docs/ is reachable from it by links; every relative link of
README.md, docs/*.md and the modules' README.md files names a file that
exists and, with a #fragment, a heading of that file (GitHub's anchors).
The reference once moved out of README.md with its links left behind."""
import glob
import re

from lib import *


def slug(heading):
    t = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return t.replace(" ", "-")


def anchors(path):
    seen, out = {}, set()
    fence = False
    for line in open(path).read().splitlines():
        if line.startswith("```"):
            fence = not fence
        if fence or not line.startswith("#"):
            continue
        s = slug(line.lstrip("#"))
        n = seen.get(s, 0)
        seen[s] = n + 1
        out.add(s if n == 0 else f"{s}-{n}")
    return out


pages = [os.path.join(ROOT, "README.md")] + sorted(glob.glob(os.path.join(ROOT, "docs", "*.md")))
pages += sorted(glob.glob(os.path.join(ROOT, "*", "README.md")))
pages += sorted(glob.glob(os.path.join(ROOT, "*", "*", "README.md")))
links, bad = {}, []
for page in pages:
    text = re.sub(r"```.*?```", "", open(page).read(), flags=re.S)
    links[page] = set()
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:", target):
            continue  # https:, mailto:
        path, _, frag = target.partition("#")
        dest = os.path.normpath(os.path.join(os.path.dirname(page), path)) if path else page
        where = os.path.relpath(page, ROOT)
        if not os.path.exists(dest):
            bad.append(f"{where}: {target}: no such file")
            continue
        links[page].add(dest)
        if frag and dest.endswith(".md") and frag not in anchors(dest):
            bad.append(f"{where}: {target}: no such heading")
check(not bad, "broken links:\n  " + "\n  ".join(bad))
print(f"{sum(len(v) for v in links.values())} links in {len(pages)} pages resolve")

readme = os.path.join(ROOT, "README.md")
n = len(open(readme).read().splitlines())
check(n <= 300, f"README.md has {n} lines (at most 300: the reference belongs in docs/)")
reached, todo = {readme}, [readme]
while todo:
    for dest in links.get(todo.pop(), ()):
        if dest not in reached:
            reached.add(dest)
            todo.append(dest)
lost = [os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT, "docs", "*.md"))
        if p not in reached]
check(not lost, f"pages no link from README.md reaches: {lost}")
print(f"README.md: {n} lines; every page of docs/ reachable from it")
print("ok")
