# SPDX-License-Identifier: BSD-2-Clause
"""A gossip port another program bound first is said, naming its user
(issue 31, defect 6).

Before the fix sluice took EADDRINUSE on its `listen` address for "another
process of mine sends", said nothing, and the node neither sent its
counts nor heard its peers (three nodes admitted 76-95 where 59-70 were
due). Here a UDP socket of this test (uid 0, not under the shim) holds
127.0.0.2:P; a node under the shim with `listen = "127.0.0.2:P"` starts:
`sluice check` says the port is bound and by whom; its log says once that
the address is bound by another program (uid 0),
that cluster rules count on this host alone, and the node still serves
(its rule still limits: 2 of 10 connections under rate=1/m burst=2,
counted on this host).
"""
import shutil

from lib import *

with TempDir() as tmp:
    gport, port = free_port("127.0.0.2"), free_port()
    squat = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    squat.bind(("127.0.0.2", gport))
    key = tmp.join("gossip.key")
    shutil.copy(os.path.join(FIXTURES, "gossip.key"), key)
    os.chmod(key, 0o600)
    conf = tmp.write("node.conf", f"""
gossip {{
    listen   = "127.0.0.2:{gport}"
    peers    = {{"127.0.0.3:{gport}"}}
    key_file = "{key}"
}}
inbound "api" {{
    port  = {port}
    rate  = 1/m
    burst = 2
    scope = cluster
}}
""")
    r = run([SLUICE, "check", "-c", conf])
    check(r.returncode == 0 and f"UDP port {gport}" in r.stderr and "(uid 0)" in r.stderr,
          f"sluice check does not say the port is taken: {r.stderr}")
    print("ok: sluice check names the port's holder")
    srv = Proc(sluice_argv([sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1"],
                           config=conf), cwd=SERVE_DIR)
    try:
        wait_listen(port)
        answered = sum(1 for _ in range(10) if http_get(port)[0] == 200)
        log = srv.stderr()
        want = f"gossip: 127.0.0.2:{gport} is bound by another program (uid 0)"
        check(want in log, f"the squatter is not said:\n{log}")
        check(log.count("is bound by another program") == 1, f"said more than once:\n{log}")
        check(answered <= 2, f"answered {answered} of 10 (bound 2, counted here):\n{log}")
        print(f"ok: a squatted gossip port is said with its user; {answered}/10 answered")
    finally:
        srv.stop()
        squat.close()
print("test_cluster_squat: ok")
