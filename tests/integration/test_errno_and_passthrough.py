# SPDX-License-Identifier: BSD-2-Clause
"""What sluice does not limit, it does not touch.

1. A python program doing ordinary socket work (TCP to an unlimited port
   and back, a TCP server of its own on a port no rule names, a Unix
   socketpair, a Unix stream server, UDP both ways, getaddrinfo) prints the
   same results with and without sluice, under rules that match none of it
   (an inbound rule on another port, an outbound rule to 127.0.0.99).
2. errno: a C program sets errno = 1234 before a successful connect,
   accept4 and accept and prints errno after each; glibc leaves errno
   alone on success, so 1234 must survive the shim too: under rules that
   match nothing, and under rules that match those very calls but admit
   them (large burst: the shim's whole decision path runs). A connect to a
   closed port fails with ECONNREFUSED, matched by a rule or not.
The baseline run without sluice is asserted too, so a failure points at
the shim and not at the test's idea of libc."""
import errno as E
from lib import *

PY = r"""
import json, os, socket, sys, tempfile
port = int(sys.argv[1]); res = {}
s = socket.create_connection(("127.0.0.1", port)); res["tcp_line"] = s.recv(100).decode(); s.close()
srv = socket.socket(); srv.bind(("127.0.0.1", 0)); srv.listen(8)
for _ in range(20):
    c = socket.create_connection(srv.getsockname()); a, _ = srv.accept(); c.sendall(b"hi")
    res.setdefault("own_server", []).append(a.recv(2).decode()); a.close(); c.close()
srv.close()
a, b = socket.socketpair(); a.sendall(b"pair"); res["socketpair"] = b.recv(4).decode()
d = tempfile.mkdtemp(); path = os.path.join(d, "s")
us = socket.socket(socket.AF_UNIX); us.bind(path); us.listen(1)
uc = socket.socket(socket.AF_UNIX); uc.connect(path); ua, _ = us.accept(); uc.sendall(b"unix")
res["unix"] = ua.recv(4).decode(); os.unlink(path); os.rmdir(d)
u1 = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u1.bind(("127.0.0.1", 0))
u2 = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u2.connect(u1.getsockname()); u2.send(b"udp")
msg, peer = u1.recvfrom(10); u1.sendto(b"back", peer); res["udp"] = [msg.decode(), u2.recv(10).decode()]
res["gai"] = sorted({ai[4][0] for ai in socket.getaddrinfo("localhost", 80, socket.AF_INET)})
print(json.dumps(res, sort_keys=True))
"""

C = r"""
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    int port = atoi(argv[1]), closed = atoi(argv[2]);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
    inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
    int l = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(l, (struct sockaddr *)&a, sizeof a) || listen(l, 8)) { perror("listen"); return 2; }

    int c1 = socket(AF_INET, SOCK_STREAM, 0);
    errno = 1234;
    int rc = connect(c1, (struct sockaddr *)&a, sizeof a);
    printf("connect %d %d\n", rc, errno);
    struct sockaddr_storage ss; socklen_t len = sizeof ss;
    errno = 1234;
    int f = accept4(l, (struct sockaddr *)&ss, &len, SOCK_CLOEXEC);
    printf("accept4 %d %d\n", f >= 0 ? 0 : -1, errno);

    int c2 = socket(AF_INET, SOCK_STREAM, 0);
    connect(c2, (struct sockaddr *)&a, sizeof a);
    errno = 1234;
    f = accept(l, NULL, NULL);
    printf("accept %d %d\n", f >= 0 ? 0 : -1, errno);

    struct sockaddr_in b = a;
    b.sin_port = htons(closed);
    int c3 = socket(AF_INET, SOCK_STREAM, 0);
    errno = 1234;
    rc = connect(c3, (struct sockaddr *)&b, sizeof b);
    printf("connect_closed %d %d\n", rc, errno);
    return 0;
}
"""

with TempDir() as tmp, TcpServer(reply=b"hello\n") as srv:
    # 1. identical behaviour
    unused = free_port()
    nomatch = dict(ins=[f"port={unused} rate=1/m burst=1"],
                   outs=["to=127.0.0.99 port=1 rate=1/m burst=1 action=reject"])
    base = run([sys.executable, "-c", PY, str(srv.port)], env={"LD_PRELOAD": None})
    shim = run(sluice_argv([sys.executable, "-c", PY, str(srv.port)], **nomatch))
    print("without:", base.stdout.strip())
    print("with:   ", shim.stdout.strip())
    check(base.returncode == 0, f"baseline failed: {base.stderr}")
    check(shim.returncode == 0, f"under sluice failed: {shim.stderr}")
    check(base.stdout == shim.stdout, "results differ under sluice")
    check(sluice_lines(shim.stderr) == [], f"sluice said something:\n{shim.stderr}")

    # 2. errno
    prog = compile_c(C, tmp, "errno_probe")
    port, closed = free_port(), free_port()
    want = ["connect 0 1234", "accept4 0 1234", "accept 0 1234",
            f"connect_closed -1 {E.ECONNREFUSED}"]
    matching = dict(ins=[f"port={port} rate=100/s burst=100"],
                    outs=[f"to=127.0.0.1 port={port},{closed} rate=100/s burst=100 action=delay"])
    for label, kw in (("no shim", None), ("rules match nothing", nomatch),
                      ("rules match and admit", matching)):
        argv = [prog, str(port), str(closed)]
        r = run(argv if kw is None else sluice_argv(argv, **kw),
                env={"LD_PRELOAD": None} if kw is None else None)
        got = r.stdout.split("\n")[:-1]
        print(f"{label}: {got}")
        check(r.returncode == 0, f"{label}: exit {r.returncode} {r.stderr}")
        check(got == want, f"{label}: errno not preserved: {got}, wanted {want}")
        check(sluice_lines(r.stderr) == [], f"{label}: sluice said something:\n{r.stderr}")
print("ok")
