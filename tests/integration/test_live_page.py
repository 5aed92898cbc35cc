# SPDX-License-Identifier: BSD-2-Clause
"""The live page of `sluice metrics --listen` (issue 19.5), in a real
browser: Debian's chromium, headless, driven by chromium-driver through
python3-selenium.

A keep-alive server runs under a named table with a request rule
(req_rate=20/s req_burst=5 per=header:X-API-Key quota=100000/d,
action=reply); `sluice metrics --listen` serves the page. Three client
threads flood it with three API keys whose values are secrets.
- The page loads from / (no other request than /stats.json, which it
  reads every second) and draws a row per rule with a chart of the last
  minute's rates (an SVG polyline with points).
- While the flood runs, its numbers match `sluice stats`: counters only
  grow, so the page read before `sluice stats` is at most what stats
  says, and the page's next update at least (allowed and limited of the
  requests row); and the limited count is above 0.
- After the flood, the page's next update equals `sluice stats` exactly.
- Top offenders show the keys as `sluice top` names them (`key` and a
  short hash), the same hashes as `sluice top --once`; no key value
  appears in the page, its JSON, or `sluice top`.
- Quota use per plan: the rule has a plans file (alpha and bravo on plan
  "pro", quota 100000/d; charlie on "trial", quota 50/d, which the flood
  spends at once); at rest, the page's table of the rule's plans equals
  the plans section of `sluice stats` (quota, used, keys at 80/90/100 %,
  admitted, refused), and trial shows its key at 100 %.
- A screenshot is written under /tmp/sluice-artifacts/ (path printed).
"""
import sys

try:
    from selenium import webdriver
except ImportError:  # a python3 other than Debian's
    sys.path.append("/usr/lib/python3/dist-packages")
    from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By

from lib import *
import urllib.request

ARTIFACTS = "/tmp/sluice-artifacts"
KEYS = ["sk-live-alpha-0123456789", "sk-live-bravo-9876543210", "sk-live-charlie-5555555555"]


def stats_requests(name):
    """allowed, limited of the requests section of `sluice stats`."""
    r = run([SLUICE, "stats", "--shared", name])
    check(r.returncode == 0, f"sluice stats: {r.stderr}")
    _, _, req = r.stdout.partition("requests (")
    for line in req.splitlines():
        w = line.split()
        if w and w[0] == "api":
            return int(w[1]), int(w[2])
    raise AssertionError(f"no requests row for api:\n{r.stdout}")


def page_requests(drv):
    """(allowed, limited) of rule api's requests row, read in one script (one
    redraw's figures: the page redraws every second)."""
    got = drv.execute_script("""
        const row = document.querySelector('tr[data-rule="api"][data-kind="requests"]');
        return ["allowed", "limited"].map(
            c => row.querySelector('td[data-counter="' + c + '"]').textContent.trim());""")
    return int(got[0]), int(got[1])


def stats_plans(name):
    """plan -> [quota, admitted, refused, used, keys_80, keys_90, keys_100]
    of the plans section of `sluice stats`."""
    r = run([SLUICE, "stats", "--shared", name])
    check(r.returncode == 0, f"sluice stats: {r.stderr}")
    _, _, sect = r.stdout.partition("\nplans (")
    return {w[1]: w[2:] for w in map(str.split, sect.splitlines()[2:]) if len(w) == 9}


def page_plans(drv):
    """The same, from the page's table of rule api's plans, read in one
    script: the page redraws every second, so elements found one by one
    can go stale between two reads."""
    return drv.execute_script("""
        const out = {};
        for (const row of document.querySelectorAll('table[data-plans="api"] tr[data-plan]'))
            out[row.getAttribute("data-plan")] =
                ["quota", "admitted", "refused", "used", "keys80", "keys90", "keys100"].map(
                    f => row.querySelector('td[data-field="' + f + '"]').textContent.trim());
        return out;""")


def updates(drv):
    return int(drv.find_element(By.TAG_NAME, "body").get_attribute("data-updates") or 0)


def next_update(drv, timeout=10.0):
    """Waits for the page's next refresh from /stats.json (bounded)."""
    n = updates(drv)
    deadline = time.monotonic() + timeout
    while updates(drv) <= n:
        check(time.monotonic() < deadline, "the page did not refresh")
        time.sleep(0.05)


name = f"it-live-{os.getpid()}"
port, mport = free_port(), free_port()
os.makedirs(ARTIFACTS, exist_ok=True)
with TempDir() as tmp:
    plans = tmp.write("plans.txt", "plan pro quota=100000/d\nplan trial quota=50/d\n"
                      f"key pro {KEYS[0]}\nkey pro {KEYS[1]}\nkey trial {KEYS[2]}\n", mode=0o600)
    # the quota windows renew about 12 h from now: not during the test
    offset = 12 - time.gmtime().tm_hour
    conf = tmp.write("api.conf", f"""
shared = "{name}"
inbound "api" {{ port = {port}  req_rate = "20/s"  req_burst = 5  quota = "100000/d"
                 quota_offset = "{offset:+d}"  plans = "{plans}"
                 per = "header:X-API-Key"  action = reply }}
""")
    opts = webdriver.ChromeOptions()
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
              "--window-size=1400,1000", f"--user-data-dir={tmp.join('chromium')}"):
        opts.add_argument(a)
    drv = None
    try:
        with Proc(sluice_argv(keepalive_argv(port), config=conf)), \
             Proc([SLUICE, "metrics", "-c", conf, "--listen", f"127.0.0.1:{mport}"]):
            wait_listen(port)
            wait_listen(mport)
            stop = threading.Event()

            def client(key):
                while not stop.is_set():
                    http_get(port, headers=f"X-API-Key: {key}\r\n")
            ts = [threading.Thread(target=client, args=(k,)) for k in KEYS]
            for t in ts:
                t.start()
            try:
                drv = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=opts)
                drv.set_page_load_timeout(20)
                drv.get(f"http://127.0.0.1:{mport}/")
                for _ in range(3):  # a few refreshes: the charts have points
                    next_update(drv)
                check("sluice" in drv.title, f"the page's title: {drv.title}")
                for _ in range(3):
                    a = page_requests(drv)
                    b = stats_requests(name)
                    next_update(drv)
                    c = page_requests(drv)
                    print(f"during the flood: page {a} <= sluice stats {b} <= page {c}")
                    check(a[0] <= b[0] <= c[0] and a[1] <= b[1] <= c[1],
                          f"the page matches sluice stats: {a} {b} {c}")
                check(c[1] > 0 and c[0] > 0, f"the flood was limited: {c}")
                pts = drv.find_element(
                    By.CSS_SELECTOR, 'tr[data-rule="api"][data-kind="requests"] svg polyline')
                check(len((pts.get_attribute("points") or "").split()) >= 2,
                      "the rates chart has points")
                shot = os.path.join(ARTIFACTS, "live-page.png")
                drv.save_screenshot(shot)
                print(f"screenshot: {shot}")
            finally:
                stop.set()
                for t in ts:
                    t.join(15)
            next_update(drv)
            next_update(drv)
            final_page, final_stats = page_requests(drv), stats_requests(name)
            print(f"after the flood: page {final_page}, sluice stats {final_stats}")
            check(final_page == final_stats, f"equal at rest: {final_page} {final_stats}")
            final_plans, stats_p = page_plans(drv), stats_plans(name)
            print(f"plans after the flood: page {final_plans}, sluice stats {stats_p}")
            check(set(final_plans) == {"pro", "trial"} and final_plans == stats_p,
                  f"the page's plans equal sluice stats: {final_plans} {stats_p}")
            trial = final_plans["trial"]
            check(trial[0] == "50/day" and trial[3] == "50" and trial[6] == "1"
                  and int(trial[2]) > 0, f"trial spent its quota: {trial}")

            top_rows = drv.find_elements(By.CSS_SELECTOR, "#top tbody tr")
            shown = {r.find_elements(By.TAG_NAME, "td")[2].text for r in top_rows}
            r = run([SLUICE, "top", "--shared", name, "--once", "--window", "60"])
            top_keys = set(re.findall(r"key [0-9a-f]{6}", r.stdout))
            print("page's top offenders:", sorted(shown), "sluice top:", sorted(top_keys))
            check(len(shown) == 3 and all(re.fullmatch(r"key [0-9a-f]{6}", k) for k in shown),
                  f"three keys, as short hashes: {shown}")
            check(shown == top_keys, f"the hashes `sluice top` shows: {shown} {top_keys}")
            with urllib.request.urlopen(f"http://127.0.0.1:{mport}/stats.json", timeout=5) as f:
                js = f.read().decode()
            for text, where in ((drv.page_source, "the page"), (js, "stats.json"),
                                (r.stdout, "sluice top")):
                for k in KEYS:
                    check(k not in text and k[-10:] not in text, f"{where} shows a key in clear")
    finally:
        if drv:
            drv.quit()
        shm_cleanup(name)
print("ok")
