# SPDX-License-Identifier: BSD-2-Clause
"""No lost readiness under every wait API (issue 21 item 2).

A small C server reads its one connection with a 64-byte buffer the way
nginx does (a read shorter than the buffer means "drained": wait for the
next readiness report) and answers every request head (blank line) with
an empty 200. It waits with edge-triggered epoll, EPOLLONESHOT epoll
(re-armed after each batch), level-triggered epoll, poll or select. Under
a request rule that never limits, sluice hands it heads in parts and
keeps bytes aside; whatever it keeps must be announced again, or the
server waits for ever. Each mode gets five pipelined requests with heads
of 60 to 2,000 bytes, written at once and in two parts split inside the
second and the fourth head; it must answer all five (bare: all five), in
well under the 3 s the client waits.
"""
import socket

from lib import *

SERVER = r"""
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <unistd.h>

static const char ok[] = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";

/* reads until a short read; answers each blank line; -1 at the end */
static int drain(int c, unsigned *last)
{
    for (;;) {
        char buf[64];
        ssize_t n = read(c, buf, sizeof buf);
        if (n == 0) return -1;
        if (n < 0) return errno == EAGAIN ? 0 : -1;
        for (ssize_t i = 0; i < n; i++) {
            *last = *last << 8 | (unsigned char)buf[i];
            if (*last == 0x0d0a0d0a && write(c, ok, sizeof ok - 1) < 0) return -1;
        }
        if ((size_t)n < sizeof buf) return 0;
    }
}

int main(int argc, char **argv)
{
    const char *mode = argv[2];
    int ls = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(atoi(argv[1]))};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(ls, (struct sockaddr *)&a, sizeof a) || listen(ls, 8)) return 1;
    for (;;) {
        int c = accept(ls, NULL, NULL);
        if (c < 0) continue;
        fcntl(c, F_SETFL, O_NONBLOCK);
        unsigned last = 0;
        int ep = epoll_create1(0);
        uint32_t base = !strcmp(mode, "et") ? EPOLLIN | EPOLLET
                        : !strcmp(mode, "oneshot") ? EPOLLIN | EPOLLONESHOT : EPOLLIN;
        struct epoll_event ev = {.events = base, .data.fd = c};
        epoll_ctl(ep, EPOLL_CTL_ADD, c, &ev);
        for (;;) {
            int r;
            if (!strcmp(mode, "poll")) {
                struct pollfd p = {.fd = c, .events = POLLIN};
                r = poll(&p, 1, 5000);
            } else if (!strcmp(mode, "select")) {
                fd_set rd;
                FD_ZERO(&rd);
                FD_SET(c, &rd);
                struct timeval tv = {.tv_sec = 5};
                r = select(c + 1, &rd, NULL, NULL, &tv);
            } else {
                struct epoll_event got;
                r = epoll_wait(ep, &got, 1, 5000);
            }
            if (r <= 0 || drain(c, &last) < 0) break;
            if (!strcmp(mode, "oneshot")) epoll_ctl(ep, EPOLL_CTL_MOD, c, &ev);
        }
        close(ep);
        close(c);
    }
}
"""


def req(pad):
    head = "GET /a HTTP/1.1\r\nHost: x\r\n"
    return (head + "X-Pad: " + "p" * (pad - len(head) - 11) + "\r\n\r\n").encode()


HEADS = [req(n) for n in (60, 300, 65, 1000, 2000)]
STREAM = b"".join(HEADS)
SPLITS = [None, len(HEADS[0]) + 100, sum(map(len, HEADS[:3])) + 500]


def answers(port, cut):
    """Responses to STREAM (written in two parts at `cut`) within 3 s."""
    with socket.create_connection(("127.0.0.1", port), timeout=3) as s:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            if cut is None:
                s.sendall(STREAM)
            else:
                s.sendall(STREAM[:cut])
                time.sleep(0.02)  # the second part arrives after the first was read
                s.sendall(STREAM[cut:])
        except OSError:
            pass  # the server gave up on the connection: what it answered counts
        buf = b""
        deadline = time.monotonic() + 3
        while buf.count(b"\r\n\r\n") < len(HEADS) and time.monotonic() < deadline:
            try:
                chunk = s.recv(4096)
            except OSError:
                break
            if not chunk:
                break
            buf += chunk
        return buf.count(b"\r\n\r\n")


with TempDir() as tmp:
    prog = compile_c(SERVER, tmp, "evsrv")
    bad = []
    for mode in ("et", "oneshot", "level", "poll", "select"):
        for under in (False, True):
            port = free_port()
            argv = [prog, str(port), mode]
            if under:
                argv = sluice_argv(argv, ins=[f"port={port} req_rate=1000000/s req_burst=1000000"])
            with Proc(argv):
                wait_listen(port)
                for cut in SPLITS:
                    t0 = time.monotonic()
                    try:
                        n = answers(port, cut)
                    except OSError as e:  # the server is gone
                        n = repr(e)
                    took = time.monotonic() - t0
                    if n != len(HEADS) or took > 2:
                        bad.append(f"{mode}, {'under the rule' if under else 'bare'}, split at "
                                   f"{cut}: {n} of {len(HEADS)} answered in {took:.2f} s")
        print(f"{mode}: {'stalls' if any(b.startswith(mode + ',') for b in bad) else 'all answered'}")
    check(not bad, "\n".join(bad))
print("ok")
