# SPDX-License-Identifier: BSD-2-Clause
"""An outbound rule on a host name: `to=api.vendor.example port=P rate=1/m
burst=2 action=reject`, with the name resolving to 127.0.0.7 only inside
the test (a private mount namespace with a temporary /etc/hosts
bind-mounted over the real one, so the machine's resolver is untouched).

Asserted, with the client resolving the name itself (getaddrinfo):
  - 5 quick connects to the name: exactly 2 succeed (burst), 3 fail with
    ECONNREFUSED (reject's default errno); rate 1/m means no token returns
    during the test, so the count is exact;
  - 127.0.0.8:P (same port, another server) is not limited;
  - an address the name did not have at load (127.0.0.9) is not limited
    until the program resolves the name to it: the test rewrites the hosts
    file in place, the client resolves again, and the very next connect to
    127.0.0.9 fails: the rule learned it from the program's own lookup.
If unshare or mount is not permitted, the test falls back to "localhost"
(127.0.0.1) for the first two points and says so."""
import errno as E
from lib import *

CLIENT = r"""
import json, socket, sys
name, port, hosts2, newhosts = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
def conn(addr):
    s = socket.socket(); rc = s.connect_ex((addr, port)); s.close(); return rc
res = {}
if hosts2 != "-":
    res["unlearned"] = [conn("127.0.0.9") for _ in range(3)]
addrs = sorted({ai[4][0] for ai in socket.getaddrinfo(name, port, socket.AF_INET, socket.SOCK_STREAM)})
res["resolved"] = addrs
res["named"] = [conn(addrs[0]) for _ in range(5)]
res["other"] = [conn("127.0.0.8") for _ in range(5)]
if hosts2 != "-":
    with open(hosts2, "w") as f:          # in place: the bind mount follows the inode
        f.write(newhosts)
    res["resolved2"] = sorted({ai[4][0] for ai in socket.getaddrinfo(name, port, socket.AF_INET, socket.SOCK_STREAM)})
    res["learned"] = [conn("127.0.0.9") for _ in range(2)]
print(json.dumps(res))
"""

NAME = "api.vendor.example"
with TempDir() as tmp:
    hosts = tmp.write("hosts", f"127.0.0.1 localhost\n127.0.0.7 {NAME}\n")
    newhosts = f"127.0.0.1 localhost\n127.0.0.9 {NAME}\n"
    probe = run(["unshare", "-m", "sh", "-c", f"mount --bind {hosts} /etc/hosts && getent hosts {NAME}"],
                timeout=10)
    isolated = probe.returncode == 0 and "127.0.0.7" in probe.stdout
    if os.environ.get("SLUICE_IT_NO_UNSHARE"):       # to exercise the fallback itself
        isolated, probe.stderr = False, "SLUICE_IT_NO_UNSHARE is set"
    if isolated:
        name, target = NAME, "127.0.0.7"
    else:
        print(f"NOTE: unshare -m / mount --bind not permitted ({probe.stderr.strip()}); "
              "falling back to 'localhost' and skipping the learned-address check")
        name, target = "localhost", "127.0.0.1"
    port = free_port(target)
    with TcpServer(target, port) as named, TcpServer("127.0.0.8", port) as other, \
            TcpServer("127.0.0.9", port) as late:
        rule = f"to={name} port={port} rate=1/m burst=2 action=reject"
        cmd = sluice_argv([sys.executable, "-c", CLIENT, name, str(port),
                           hosts if isolated else "-", newhosts], outs=[rule])
        if isolated:
            quoted = " ".join("'" + a.replace("'", "'\\''") + "'" for a in cmd)
            cmd = ["unshare", "-m", "sh", "-c", f"mount --bind {hosts} /etc/hosts && exec {quoted}"]
        r = run(cmd, timeout=30)
        check(r.returncode == 0, f"client failed: {r.returncode}\n{r.stdout}\n{r.stderr}")
        res = last_json(r.stdout)
        print("client:", res)
        refused = E.ECONNREFUSED
        check(res["resolved"] == [target], f"{name} resolved to {res['resolved']}, wanted {target}")
        check(res["named"] == [0, 0, refused, refused, refused],
              f"connects to {name}: {res['named']} (wanted 2 ok, 3 ECONNREFUSED)")
        check(res["other"] == [0] * 5, f"127.0.0.8 was limited: {res['other']}")
        if isolated:
            check(res["unlearned"] == [0, 0, 0],
                  f"127.0.0.9 limited before the program resolved the name to it: {res['unlearned']}")
            check(res["resolved2"] == ["127.0.0.9"], f"second lookup: {res['resolved2']}")
            check(res["learned"] == [refused, refused],
                  f"127.0.0.9 not limited after the program resolved {name} to it: {res['learned']}")
        time.sleep(0.2)
        check(named.accepted == 2, f"{target} server accepted {named.accepted}, expected 2")
        check(other.accepted == 5, f"127.0.0.8 server accepted {other.accepted}, expected 5")
        if isolated:
            check(late.accepted == 3, f"127.0.0.9 server accepted {late.accepted}, expected 3")
    # the namespace was private: the real /etc/hosts does not know the name
    check(run(["getent", "hosts", NAME]).returncode != 0, "the host's /etc/hosts was changed")
print("ok")
