# SPDX-License-Identifier: BSD-2-Clause
"""Outbound action=reject with errno=EHOSTUNREACH, rate=2/s burst=3:
10 connects in quick succession to the matched 127.0.0.1:P give exactly 3
successes and 7 failures with errno EHOSTUNREACH, and the server sees
exactly 3. While that bucket is empty, what the rule does not match goes
through untouched: TCP to another port, UDP connect to the same addr:port
(only TCP is limited), and a Unix socket connect. The same address written
IPv4-mapped (::ffff:127.0.0.1 on an AF_INET6 socket) is the same destination
and is refused too.

Exact, not approximate: the 10 connects take a few milliseconds, and a
token comes back only every 500 ms, so no refill can land inside the
burst; the test checks that the 10 connects really took < 400 ms, or the
exact count would not be owed."""
import errno as E
from lib import *

CLIENT = r"""
import json, os, socket, sys, time
port, other, unix_path = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
res = {"matched": []}
t0 = time.monotonic()
for i in range(10):
    s = socket.socket()
    res["matched"].append(s.connect_ex(("127.0.0.1", port)))
    s.close()
res["burst_s"] = time.monotonic() - t0
s = socket.socket(); res["other_port"] = s.connect_ex(("127.0.0.1", other)); s.close()
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
res["udp"] = u.connect_ex(("127.0.0.1", port))
try:
    u.send(b"x"); res["udp_send"] = 0
except OSError as e:
    res["udp_send"] = e.errno
u.close()
x = socket.socket(socket.AF_UNIX)
res["unix"] = x.connect_ex(unix_path)
x.close()
# the bucket is still empty: a matched connect still fails, also when the
# same address is written IPv4-mapped on an IPv6 socket
s = socket.socket(); res["matched_again"] = s.connect_ex(("127.0.0.1", port)); s.close()
s = socket.socket(socket.AF_INET6); res["mapped"] = s.connect_ex(("::ffff:127.0.0.1", port)); s.close()
print(json.dumps(res))
"""

with TempDir() as tmp, TcpServer() as srv, TcpServer() as other:
    upath = tmp.join("u.sock")
    us = socket.socket(socket.AF_UNIX)
    us.bind(upath)
    us.listen(8)
    try:
        rule = f"to=127.0.0.1 port={srv.port} rate=2/s burst=3 action=reject errno=EHOSTUNREACH"
        r = run(sluice_argv([sys.executable, "-c", CLIENT, str(srv.port), str(other.port), upath],
                            outs=[rule]), timeout=30)
        check(r.returncode == 0, f"client failed: {r.returncode}\n{r.stderr}")
        res = last_json(r.stdout)
        m = res["matched"]
        print(f"matched connects: {m} in {res['burst_s'] * 1000:.1f} ms; other port "
              f"{res['other_port']}, udp {res['udp']}/{res['udp_send']}, unix {res['unix']}, "
              f"again {res['matched_again']}")
        check(res["burst_s"] < 0.4, f"10 connects took {res['burst_s']:.3f}s: a token may have "
                                    "come back, the exact count is not owed")
        check(m[:3] == [0, 0, 0], f"the burst of 3 did not pass: {m}")
        check(m[3:] == [E.EHOSTUNREACH] * 7, f"expected 7 x EHOSTUNREACH ({E.EHOSTUNREACH}): {m}")
        check(res["other_port"] == 0, f"unmatched port: errno {res['other_port']}")
        check(res["udp"] == 0 and res["udp_send"] == 0, f"UDP connect/send: {res['udp']}/{res['udp_send']}")
        check(res["unix"] == 0, f"unix connect: errno {res['unix']}")
        check(res["matched_again"] == E.EHOSTUNREACH, f"matched again: {res['matched_again']}")
        check(res["mapped"] == E.EHOSTUNREACH, f"::ffff:127.0.0.1 escaped the rule: errno {res['mapped']}")
        time.sleep(0.2)
        check(srv.accepted == 3, f"the matched server accepted {srv.accepted}, expected 3")
        check(other.accepted == 1, f"the other server accepted {other.accepted}, expected 1")
        lines = [l for l in sluice_lines(r.stderr) if "limited connect" in l]
        check(len(lines) == 9, f"expected 9 'limited connect' lines:\n{r.stderr}")
        check(f'rule "out-1": limited connect to 127.0.0.1 port {srv.port}' in lines[0], lines[0])
    finally:
        us.close()
print("ok")
