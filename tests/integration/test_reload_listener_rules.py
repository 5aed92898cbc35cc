# SPDX-License-Identifier: BSD-2-Clause
"""A listener keeps the inbound rules of its port from its first accept
(shim/accept.c: listen_rules); a reload that moves a rule to another port
or back must be seen at the next accept, not the cached set.

python http.server under a config file with one rule on its port, rate
1/min burst 1 action=reply: wait_port's connection takes the one turn,
the next two get 429. `sluice reload` moves the rule to a port nothing listens on:
the next five connections are all admitted (a stale set would still send
429s). Reloaded back to the server's port: 429 again at once (the key's
state is the rule's, kept in the shared table by name, and a minute has
not passed). Deterministic: counts of single requests, no timing.
"""
from lib import *


def conf(name, port):
    return (f'shared = "{name}"\n'
            f'inbound "web" {{ port = {port}  rate = "1/m"  burst = 1  action = reply }}\n')


def statuses(port, n):
    return [http_get(port, timeout=5)[0] for _ in range(n)]


name = f"it-relisten-{os.getpid()}"
try:
    with TempDir() as tmp:
        port, elsewhere = free_port(), free_port()
        path = tmp.write("r.conf", conf(name, port))
        with http_server(port, config=path) as p:
            wait_port(port)
            got = statuses(port, 2)  # wait_port's connection took the one turn
            check(got == [429, 429], f"under the rule: {got}")

            tmp.write("r.conf", conf(name, elsewhere))
            r = run([SLUICE, "reload", "-c", path])
            check(r.returncode == 0, f"reload: {r.stdout} {r.stderr}")
            got = statuses(port, 5)
            check(got == [200] * 5, f"the rule moved to another port: {got}")

            tmp.write("r.conf", conf(name, port))
            r = run([SLUICE, "reload", "-c", path])
            check(r.returncode == 0, f"reload back: {r.stdout} {r.stderr}")
            got = statuses(port, 2)
            check(got == [429, 429], f"the rule back on the port: {got}")
            check(p.p.poll() is None, "the program runs on")
finally:
    shm_cleanup(name)
print("ok")
