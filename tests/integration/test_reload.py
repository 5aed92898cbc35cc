# SPDX-License-Identifier: BSD-2-Clause
"""`sluice reload -c FILE` (issue 13): a new configuration reaches the
running program without a restart and without a signal.

1. python http.server under a config file (a named table, inbound
   rate=5/s burst=1 action=reply), flooded by a client making one
   connection after another for 1 s: admitted 1 + 5 (+-2: one refill at
   each edge of the window). The file is edited to rate=50/s and `sluice
   reload -c FILE` publishes it; the next second admits 50 (35-56: the
   client's own pace on a loaded machine may not offer much more than
   50/s, and the first refill after the reload comes at once), and the
   first half second already admits more than 15 (the old rule would give
   3). The program's pid is unchanged and it logged the reload once.
2. An invalid file (a syntax error): reload exits 1 naming the file and
   line, the program keeps 50/s. A file with a larger table_slots than the
   running table: refused by reload. A file renaming the rule: refused by
   reload too (names are what keys are made of), which compares it with
   what the program runs (the file its table names); the program keeps
   50/s and loads nothing.
3. nginx with 2 workers under rate=5/s, reloaded to 50/s, then flooded by
   wrk -c8 with `Connection: close` for 1 s: about 50 admitted (not 5), and
   both workers logged the reload.
"""
import subprocess

from lib import *


def flood(port, seconds):
    ok = bad = 0
    t0 = time.monotonic()
    while time.monotonic() - t0 < seconds:
        r = http_get(port, timeout=2)
        if r[0] == 200:
            ok += 1
        else:
            bad += 1
    return ok, bad


def conf(name, port, rate, rule="web", slots=None):
    return (f'shared = "{name}"\n' + (f"table_slots = {slots}\n" if slots else "") +
            f'inbound "{rule}" {{ port = {port}  rate = "{rate}"  burst = 1  action = reply }}\n')


name = f"it-reload-{os.getpid()}"
try:
    with TempDir() as tmp:
        port = free_port()
        path = tmp.write("r.conf", conf(name, port, "5/s"))
        with http_server(port, config=path) as p:
            wait_port(port)
            pid = p.p.pid
            time.sleep(1.1)
            ok, bad = flood(port, 1.0)
            check(4 <= ok <= 8, f"before the reload: {ok} admitted in 1 s at 5/s ({bad} refused)")

            tmp.write("r.conf", conf(name, port, "50/s"))
            r = run([SLUICE, "reload", "-c", path])
            check(r.returncode == 0 and "generation" in r.stdout, f"reload: {r.stdout} {r.stderr}")
            first, _ = flood(port, 0.5)
            rest, _ = flood(port, 0.5)
            check(first > 15, f"within half a second of the reload: {first} admitted")
            check(35 <= first + rest <= 56, f"after the reload: {first + rest} admitted in 1 s at 50/s")
            check(p.p.poll() is None and p.p.pid == pid, "the program runs on, same pid")
            check(p.stderr().count("reloaded the configuration") == 1, f"logged once: {p.stderr()}")

            tmp.write("bad.conf", conf(name, port, "50/s") + "inbound {\n")
            r = run([SLUICE, "reload", "-c", tmp.join("bad.conf")])
            check(r.returncode == 1 and "bad.conf" in r.stderr, f"an invalid file: {r.returncode} {r.stderr}")
            tmp.write("big.conf", conf(name, port, "50/s", slots=1 << 22))
            r = run([SLUICE, "reload", "-c", tmp.join("big.conf")])
            check(r.returncode == 1 and "table_slots" in r.stderr, f"table_slots: {r.returncode} {r.stderr}")
            tmp.write("renamed.conf", conf(name, port, "5/s", rule="renamed"))
            r = run([SLUICE, "reload", "-c", tmp.join("renamed.conf")])
            check(r.returncode == 1 and "keep their names" in r.stderr,
                  f"a renamed rule is refused before it is published: {r.returncode} {r.stderr}")
            time.sleep(1.0)
            ok, _ = flood(port, 1.0)
            check(35 <= ok <= 56, f"after refused reloads: still 50/s: {ok}")
            check(p.stderr().count("reloaded the configuration") == 1,
                  f"the program loaded nothing more: {p.stderr()}")

        # 3. nginx, 2 workers
        shm_cleanup(name)
        port = free_port()
        www = tmp.join("www")
        os.makedirs(www)
        with open(os.path.join(www, "x"), "w") as f:
            f.write("ok\n")
        os.chmod(www, 0o755)
        _, argv = nginx_config(tmp, workers=2, events="use epoll;", http=f"""
    access_log off;
    server {{ listen 127.0.0.1:{port}; root {www}; }}
""")
        path = tmp.write("n.conf", conf(name, port, "5/s"))
        with Proc(sluice_argv(argv, config=path)) as ng:
            wait_listen(port)
            wait_children(ng.p.pid, 2)
            tmp.write("n.conf", conf(name, port, "50/s"))
            r = run([SLUICE, "reload", "-c", path])
            check(r.returncode == 0, f"reload nginx: {r.stderr}")
            time.sleep(0.1)
            out = subprocess.run(["wrk", "-t2", "-c8", "-d1s", "-H", "Connection: close",
                                  f"http://127.0.0.1:{port}/x"], capture_output=True, text=True,
                                 timeout=30).stdout
            total = int(re.search(r"(\d+) requests in", out).group(1))
            m = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
            ok = total - (int(m.group(1)) if m else 0)
            check(35 <= ok <= 60, f"nginx after the reload: {ok} admitted in 1 s at 50/s\n{out}")
            log = open(tmp.join("error.log")).read()
            pids = set(re.findall(r"sluice\[(\d+)\]: info: reloaded the configuration", log))
            check(len(pids) >= 2, f"both workers reloaded: {pids}\n{log[-2000:]}")
finally:
    shm_cleanup(name)
print("ok")
