# SPDX-License-Identifier: BSD-2-Clause
"""One limit across the processes and threads of one program.

A. A pre-fork python server (listen, then os.fork() twice; each child
   accepts in a loop with socket.accept, i.e. accept4, and answers with its
   pid) under `--in 'port=P rate=20/s burst=10'`:
   - a 3 s sequential flood gets burst + rate*span admitted, +-2 (as in
     test_inbound_reject: the boundary request and the span the server
     sees differ from the client's by under one token), not twice that;
   - both children served some of them (blocking accept wakes waiters in
     turn, so each gets a share);
   - a burst of 40 connections opened at once against a fresh server with
     rate=1/m burst=10 gets exactly 10 admitted: the children race for
     the same bucket and no token is spent twice or lost (no token comes
     back in the < 2 s the burst takes; the server's readiness is checked
     in /proc/net/tcp, not by connecting, so no probe spends one).
B. A C server with 4 threads calling plain accept() concurrently on one
   blocking socket, same two checks (flood: +-2; burst: exactly 10), then
   the server still answers after the flood (no crash, no hang)."""
from lib import *

RATE, BURST, T = 20, 10, 3.0

PREFORK = r"""
import os, signal, socket, sys
port = int(sys.argv[1])
l = socket.socket(); l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
l.bind(("127.0.0.1", port)); l.listen(128)
kids = []
for _ in range(2):
    pid = os.fork()
    if pid == 0:
        body = str(os.getpid()).encode()
        while True:
            c, _ = l.accept()
            try:
                c.recv(1024)
                c.sendall(b"HTTP/1.0 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
            except OSError:
                pass
            c.close()
    kids.append(pid)
signal.signal(signal.SIGTERM, lambda *a: [os.kill(k, 9) for k in kids] and sys.exit(0))
for k in kids:
    os.waitpid(k, 0)
"""

THREADED = r"""
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static int l;

static void *serve(void *arg)
{
    char body[16], out[128], in[1024];
    int n = snprintf(body, sizeof body, "t%ld", (long)arg);
    int m = snprintf(out, sizeof out, "HTTP/1.0 200 OK\r\nContent-Length: %d\r\n\r\n%s", n, body);
    for (;;) {
        int c = accept(l, NULL, NULL);
        if (c < 0) continue;
        if (recv(c, in, sizeof in, 0) > 0) send(c, out, m, MSG_NOSIGNAL);
        close(c);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(atoi(argv[1]))};
    inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
    int one = 1;
    l = socket(AF_INET, SOCK_STREAM, 0);
    setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(l, (struct sockaddr *)&a, sizeof a) || listen(l, 128)) { perror("listen"); return 2; }
    pthread_t t[4];
    for (long i = 0; i < 4; i++) pthread_create(&t[i], NULL, serve, (void *)i);
    pause();
    return 0;
}
"""


def burst_at_once(port, n=40):
    """Opens n connections before reading any answer; returns the bodies
    of those answered (denied ones are reset, possibly while connecting)."""
    socks = []
    for _ in range(n):
        s = socket.socket()
        s.settimeout(5)
        try:
            # a server thread already waiting in accept can reset a denied
            # connection before our connect() has even returned
            s.connect(("127.0.0.1", port))
            s.sendall(b"GET / HTTP/1.0\r\n\r\n")
            socks.append(s)
        except (ConnectionResetError, BrokenPipeError):
            s.close()
    bodies = []
    for s in socks:
        try:
            data = b""
            while True:
                chunk = s.recv(4096)
                if not chunk:
                    break
                data += chunk
            if data.startswith(b"HTTP/1.0 200"):
                bodies.append(data.partition(b"\r\n\r\n")[2].decode())
        except (ConnectionResetError, socket.timeout):
            pass
        finally:
            s.close()
    return bodies


def check_flood(label, port):
    ok, bad, span, results = flood(port, T)
    expected = BURST + RATE * span
    servers = {}
    for _, r in results:
        if r[0] == 200:
            servers[r[2].decode()] = servers.get(r[2].decode(), 0) + 1
    print(f"{label} flood: admitted {ok}, reset {bad}, span {span:.3f}s, expected {expected:.1f}; "
          f"served by {servers}")
    check(bad > 0, f"{label}: never limited")
    check(ok + bad > 3 * (BURST + RATE * T), f"{label}: client too slow to test the limit")
    check(abs(ok - expected) <= 2, f"{label}: admitted {ok}, expected {expected:.1f} +-2")
    return servers


def check_burst(label, argv_fn):
    port = free_port()
    with Proc(sluice_argv(argv_fn(port), ins=[f"port={port} rate=1/m burst={BURST}"])) as p:
        wait_listen(port)
        t0 = time.monotonic()
        bodies = burst_at_once(port)
        took = time.monotonic() - t0
        print(f"{label} burst: {len(bodies)} of 40 admitted in {took:.2f}s by {sorted(set(bodies))}")
        check(len(bodies) == BURST, f"{label}: {len(bodies)} admitted of 40, expected exactly {BURST}")
        check(p.p.poll() is None, f"{label}: server died:\n{p.stderr()}")


with TempDir() as tmp:
    # A. pre-fork
    argv = lambda port: [sys.executable, "-c", PREFORK, str(port)]
    port = free_port()
    with Proc(sluice_argv(argv(port), ins=[f"port={port} rate={RATE}/s burst={BURST}"])) as p:
        wait_listen(port)
        servers = check_flood("pre-fork", port)
        check(len(servers) == 2, f"pre-fork: not both children served: {servers}")
        check(p.p.poll() is None, "pre-fork server died:\n" + p.stderr())
    check_burst("pre-fork", argv)

    # B. 4 threads in accept()
    prog = compile_c(THREADED, tmp, "threaded")
    argv = lambda port: [prog, str(port)]
    port = free_port()
    with Proc(sluice_argv(argv(port), ins=[f"port={port} rate={RATE}/s burst={BURST}"])) as p:
        wait_listen(port)
        check_flood("threads", port)
        time.sleep(1.0 / RATE + 0.05)
        st, _, body = http_get(port)
        check(st == 200, f"threads: no answer after the flood ({st}): hung?\n{p.stderr()}")
        check(p.p.poll() is None, "threaded server died:\n" + p.stderr())
    check_burst("threads", argv)
print("ok")
