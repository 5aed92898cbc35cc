# SPDX-License-Identifier: BSD-2-Clause
"""Outbound request rules that name a host (issue 23 item 2): `to=NAME
port=P req_rate=1/m req_burst=2 action=reject` counts a connection's
requests when the connection reached an address of NAME, whether sluice
resolved it at start or the program resolved it later, and when the client
named NAME itself (TLS SNI, or the request's Host), whatever address it
reached. rate 1/m: no token returns during the test, so every count is
exact: the third request of a matched connection fails with ECONNREFUSED
(reject's errno) and the server never sees it; an unmatched one gets 200
four times.

1. Learned address: inside a private mount namespace a test-made hosts
   file (bind-mounted over /etc/hosts; the machine's is untouched) maps
   NAME to 127.0.0.7 when sluice starts. The client first makes 3 requests
   to 127.0.0.1 (Host: localhost): not NAME's, all 200. It then rewrites
   the hosts file to map NAME to 127.0.0.1, resolves NAME (getaddrinfo),
   and makes 4 requests to 127.0.0.1 with Host: localhost: 200, 200,
   ECONNREFUSED. Before the fix (core/http/request.c's own copy of the matcher,
   blind to learned addresses) all 4 were 200. Skipped, saying so, when
   unshare/mount is not permitted.
2. By Host alone (NAME resolves nowhere): requests to 127.0.0.1 with
   `Host: NAME:P` -> 200, 200, ECONNREFUSED; with `Host: other.example`
   -> 4 x 200.
3. By SNI alone: TLS to 127.0.0.1 (python's ssl, OpenSSL's SSL_write) with
   server_hostname=NAME and `Host: 127.0.0.1` -> 200, 200, then the
   SSL_write fails (python raises ssl.SSLError, as in test_tls_outbound);
   with server_hostname=other.example -> 4 x 200.
"""
import errno as E

from lib import *

NAME = "api.vendor.example"

CLIENT = r"""
import http.client, json, socket, ssl, sys
port, host, sni, n = int(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4])
hosts, newhosts, name = (sys.argv[5:8] + ["-", "-", "-"])[:3]
def requests(tag, host, sni, n):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    if sni != "-":
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.check_hostname = False; ctx.verify_mode = ssl.CERT_NONE
        c.sock = ctx.wrap_socket(socket.create_connection(("127.0.0.1", port)), server_hostname=sni)
    codes = []
    for i in range(n):
        try:
            c.request("GET", "/%s%d" % (tag, i), headers={"Host": host})
            r = c.getresponse(); r.read(); codes.append(r.status)
        except ssl.SSLError:   # the library's own error for the failed SSL_write
            codes.append("error"); break
        except OSError as e:
            codes.append(e.errno); break
    c.close()
    return codes
res = {}
if hosts != "-":
    res["before"] = requests("b", host, sni, 3)
    with open(hosts, "w") as f:          # in place: the bind mount follows the inode
        f.write(newhosts)
    res["resolved"] = sorted({a[4][0] for a in socket.getaddrinfo(name, port, socket.AF_INET, socket.SOCK_STREAM)})
res["codes"] = requests("r", host, sni, n)
print(json.dumps(res))
"""

REFUSED = [200, 200, E.ECONNREFUSED]


def client(port, host, sni, rule, n=4, ns=None):
    argv = sluice_argv([sys.executable, "-c", CLIENT, str(port), host, sni, str(n)] +
                       (list(ns[1:]) + [NAME] if ns else []), outs=[rule])
    if ns:
        quoted = " ".join("'" + a.replace("'", "'\\''") + "'" for a in argv)
        argv = ["unshare", "-m", "sh", "-c", f"mount --bind {ns[1]} /etc/hosts && exec {quoted}"]
    r = run(argv, timeout=30)
    check(r.returncode == 0, f"client failed: {r.returncode}\n{r.stdout}\n{r.stderr}")
    return last_json(r.stdout)


with TempDir() as tmp:
    crt, key = make_cert(tmp)
    port, tport = free_port(), free_port()
    rule = f"to={NAME} port={port} req_rate=1/m req_burst=2 action=reject"
    trule = f"to={NAME} port={tport} req_rate=1/m req_burst=2 action=reject"
    with Proc(keepalive_argv(port, log=True)) as plain, \
            Proc(keepalive_argv(tport, log=True, tls=(crt, key))) as tls:
        wait_port(port)
        wait_port(tport)

        # 1. an address the program resolved NAME to after sluice started
        hosts = tmp.write("hosts", f"127.0.0.1 localhost\n127.0.0.7 {NAME}\n")
        probe = run(["unshare", "-m", "sh", "-c",
                     f"mount --bind {hosts} /etc/hosts && getent hosts {NAME}"], timeout=10)
        learned = probe.returncode == 0 and "127.0.0.7" in probe.stdout
        if learned:
            got = client(port, "localhost", "-", rule,
                         ns=(None, hosts, f"127.0.0.1 localhost {NAME}\n"))
            print("learned:", got)
            check(got["before"] == [200] * 3, f"before the lookup: {got['before']} (wanted 3 x 200)")
            check(got["resolved"] == ["127.0.0.1"], f"the program's lookup: {got['resolved']}")
            check(got["codes"] == REFUSED,
                  f"after the program resolved {NAME} to 127.0.0.1: {got['codes']} "
                  f"(wanted {REFUSED}: the request rule ignores learned addresses)")
        else:
            print(f"NOTE: unshare -m / mount --bind not permitted ({probe.stderr.strip()}); "
                  "the learned-address part is skipped")

        # 2. by Host alone
        got = client(port, f"{NAME}:{port}", "-", rule)
        print("host:", got)
        check(got["codes"] == REFUSED, f"Host: {NAME}: {got['codes']} (wanted {REFUSED})")
        got = client(port, "other.example", "-", rule)
        check(got["codes"] == [200] * 4, f"Host: other.example: {got['codes']} (wanted 4 x 200)")
        # the server logs a request before it answers it: its lines are there
        want = 2 + 4 + (2 if learned else 0)
        check(len(served(plain, "/r")) == want,
              f"the server saw {len(served(plain, '/r'))} requests, wanted {want}")

        # 3. by SNI alone
        got = client(tport, "127.0.0.1", NAME, trule)
        print("sni:", got)
        check(got["codes"] == [200, 200, "error"], f"SNI {NAME}: {got['codes']} (wanted 2 x 200, error)")
        got = client(tport, "127.0.0.1", "other.example", trule)
        check(got["codes"] == [200] * 4, f"SNI other.example: {got['codes']} (wanted 4 x 200)")
        check(len(served(tls, "/r")) == 2 + 4, f"TLS server saw {len(served(tls, '/r'))} requests")
print("ok")
