# SPDX-License-Identifier: BSD-2-Clause
"""A thread already blocked in epoll_wait is woken when sluice makes bytes
readable (issue 24 item 6).

The case of Java's HttpClient: its selector thread sits in epoll_wait
while another thread writes a request; an outbound `reply` rule denies
it, so sluice queues a 429 for the program to read, which the kernel
knows nothing about. A small C client: thread A waits in epoll_wait (10 s
timeout) for its socket to be readable; the main thread then writes two
requests to a destination that never answers (a listening socket in this
test that accepts nothing), under `req_rate=1/m req_burst=1
action=reply`: the first, on another connection, goes out; the second,
on the watched one, is denied. A must wake with
the 429 at once: within 1 s (it took the whole 10 s timeout before: the
wait wrapper looked at held bytes only when a wait began or ended).
Also with EPOLLONESHOT (armed once, before the wait).

Again (issue 22 item 3), a thread blocked on a set it has waited on
before: the waiting thread first makes a 50 ms wait on the set (nothing
comes), which gives the set its waker; its second wait, 10 s, then goes to
the kernel without a lock (nothing throttled, nothing held), counted only
in the set's slot. The held path must see that lock-free waiter and wake
it: within 1 s, not at its 10 s timeout. Also with EPOLLONESHOT.
"""
import socket

from lib import *

CLIENT = r"""
#include <arpa/inet.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static int ep, s;
static double t_write, t_woke;
static char got[64];
static int second, again;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void *waiter(void *arg)
{
    (void)arg;
    struct epoll_event ev;
    /* "again": a first wait (nothing comes) gives the set its waker; the
     * second is then sluice's lock-free wait, blocked when the 429 is queued */
    if (again && epoll_wait(ep, &ev, 1, 50) != 0) return NULL;
    __atomic_store_n(&second, 1, __ATOMIC_SEQ_CST);
    int n = epoll_wait(ep, &ev, 1, 10000);
    t_woke = now();
    if (n == 1 && read(s, got, sizeof got - 1) < 0) got[0] = 0;
    return NULL;
}

static const char req[] = "GET /x HTTP/1.1\r\nHost: x\r\n\r\n";

int main(int argc, char **argv)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(atoi(argv[1]))};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int first = socket(AF_INET, SOCK_STREAM, 0); /* takes the rule's one token */
    if (connect(first, (struct sockaddr *)&a, sizeof a)) return 2;
    if (write(first, req, sizeof req - 1) < 0) return 3;
    s = socket(AF_INET, SOCK_STREAM, 0);
    if (connect(s, (struct sockaddr *)&a, sizeof a)) return 2;
    again = argc > 3 && !strcmp(argv[3], "again");
    ep = epoll_create1(0);
    struct epoll_event ev = {.events = EPOLLIN | (!strcmp(argv[2], "oneshot") ? EPOLLONESHOT
                                                                             : EPOLLET),
                             .data.fd = s};
    epoll_ctl(ep, EPOLL_CTL_ADD, s, &ev);
    pthread_t t;
    pthread_create(&t, NULL, waiter, NULL);
    for (int i = 0; i < 200 && !__atomic_load_n(&second, __ATOMIC_SEQ_CST); i++)
        usleep(10000);
    usleep(200000); /* A is in its (second) epoll_wait by now (if not, it sees the 429 as it starts) */
    t_write = now();
    if (write(s, req, sizeof req - 1) < 0) return 4; /* denied: its 429 is queued */
    pthread_join(t, NULL);
    printf("{\"woke_after\": %.3f, \"got\": \"%.12s\"}\n", t_woke - t_write, got);
    return 0;
}
"""


with TempDir() as tmp:
    prog = compile_c(CLIENT, tmp, "waker")
    for mode, again in (("et", "first"), ("oneshot", "first"), ("et", "again"), ("oneshot", "again")):
        with socket.socket() as ls:
            ls.bind(("127.0.0.1", 0))
            ls.listen(8)  # accepts nothing: only sluice's 429 can wake the client
            port = ls.getsockname()[1]
            r = run(sluice_argv([prog, str(port), mode, again],
                                outs=[f"to=127.0.0.1/32 port={port} req_rate=1/m req_burst=1 "
                                      "action=reply"]), timeout=30)
            res = last_json(r.stdout)
            print(mode, again, res)
            case = f"{mode} ({again} wait)"
            check(res["got"].startswith("HTTP/1.1 429"), f"{case}: the waiter read {res}\n{r.stderr}")
            check(res["woke_after"] < 1.0, f"{case}: the blocked waiter woke {res['woke_after']} s "
                                           "after the denied write (its timeout is 10 s)")
print("ok")
