# SPDX-License-Identifier: BSD-2-Clause
"""Calls made before sluice's constructor has run pass straight through: a
library preloaded next to sluice calls connect() and getaddrinfo() from its
own constructor, in both preload orders. The program must run normally, the
early connect must report the real result (ECONNREFUSED from a closed port),
and sluice must still limit afterwards (checked with a reject rule on the
program's later connects)."""
import os
import subprocess
import tempfile
from lib import *

EARLY_C = r"""
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>
__attribute__((constructor)) static void early(void) {
    int port = atoi(getenv("EARLY_PORT"));
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
    inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    int rc = connect(fd, (struct sockaddr *)&a, sizeof a);
    fprintf(stderr, "early connect rc=%d errno=%d\n", rc, rc ? errno : 0);
    close(fd);
    struct addrinfo *res;
    if (getaddrinfo("localhost", NULL, NULL, &res) == 0) freeaddrinfo(res);
}
"""

MAIN_PY = r"""
import socket, sys
port = int(sys.argv[1])
ok = bad = 0
for _ in range(5):
    s = socket.socket()
    try:
        s.connect(("127.0.0.1", port)); ok += 1
    except OSError:
        bad += 1
    s.close()
print(f"main ok={ok} bad={bad}")
"""

with tempfile.TemporaryDirectory() as d:
    so = os.path.join(d, "libearly.so")
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", so, "-x", "c", "-"], input=EARLY_C.encode(), check=True)
    closed = free_port()
    srv = socket.socket(); srv.bind(("127.0.0.1", 0)); srv.listen(64)
    port = srv.getsockname()[1]
    for order in ([so, LIB], [LIB, so]):
        env = dict(os.environ, EARLY_PORT=str(closed), LD_PRELOAD=" ".join(order),
                   SLUICE_RULES=f"out to=127.0.0.1 port={port} rate=1/m burst=2 action=reject")
        r = subprocess.run([sys.executable, "-c", MAIN_PY, str(port)], env=env,
                           capture_output=True, text=True, timeout=30)
        print(order, r.returncode, r.stdout.strip(), r.stderr.strip().splitlines()[:3])
        check(r.returncode == 0, "program failed")
        check(f"early connect rc=-1 errno={111}" in r.stderr, "early connect did not report ECONNREFUSED")
        check("main ok=2 bad=3" in r.stdout, "limit not applied after the early calls")
print("ok")
