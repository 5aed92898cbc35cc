# SPDX-License-Identifier: BSD-2-Clause
"""Readiness virtualisation (shim/poll.c, select.c, epoll.c): an event loop
on a byte-limited socket hears about it again when its budget refills,
without spinning and without stalling.

1. A C server sends (send_rate) or receives (recv_rate) 2 MB at 1 MB/s on
   one non-blocking socket, waiting with poll, select, level-triggered
   epoll, edge-triggered epoll, EPOLLONESHOT (re-armed after every event)
   and edge-triggered epoll waited on by another thread with no timeout
   (the restore must come from sluice's helper, not from a timeout). The
   default burst is a tenth of a second (100 kB), so the transfer takes
   (2 MB - 100 kB) / 1 MB/s = 1.9 s: we accept 1.9 s -5 % / +8 %. The
   server's own CPU time (getrusage, user + system) must stay under 10 % of
   the wall time: trickle's level-triggered spin costs ~100 %. An ET server
   that is never told about the refill times out after 10 s and fails.
2. Held-back non-blocking connects (outbound delay, 5/s, burst 1): five
   sequential connects waited for with epoll (LT and ET), poll and select
   complete 200 ms apart (+-50 ms), each really connected, never reported
   with EPOLLHUP/POLLHUP (an unconnected socket reports it), and the wait
   loop wakes a bounded number of times (no spin).
"""
from lib import *

SERVER = r"""/* rdserver MODE DIR PORT BYTES: accepts one connection and sends (DIR=send)
 * or receives (DIR=recv) BYTES on a non-blocking socket, waiting with
 * MODE = poll | select | epoll-lt | epoll-et | epoll-oneshot; prints one JSON line. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <time.h>
#include <fcntl.h>
#include <unistd.h>

static sem_t go, more;
static int g_ep;
/* epoll-et-threads: this thread only waits (epoll_wait with no timeout), the
 * main thread does the I/O: a throttle happens while the wait is under way. */
static void *waiter(void *arg)
{
    (void)arg;
    for (;;) {
        sem_wait(&more);
        struct epoll_event ev;
        while (epoll_wait(g_ep, &ev, 1, -1) != 1) {}
        sem_post(&go);
    }
    return NULL;
}

static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec / 1e9; }

int main(int argc, char **argv)
{
    const char *mode = argv[1];
    int sending = strcmp(argv[2], "send") == 0;
    long long total = atoll(argv[4]), done = 0;
    int l = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(atoi(argv[3])),
                            .sin_addr.s_addr = htonl(0x7f000001)};
    if (bind(l, (void *)&a, sizeof a) || listen(l, 8)) { perror("bind"); return 1; }
    int c = accept4(l, NULL, NULL, SOCK_NONBLOCK);
    if (c < 0) { perror("accept"); return 1; }
    static char buf[65536];
    memset(buf, 'x', sizeof buf);
    long wakeups = 0, eagain = 0;
    int ep = -1;
    uint32_t want = sending ? EPOLLOUT : EPOLLIN;
    if (strncmp(mode, "epoll", 5) == 0) {
        ep = epoll_create1(0);
        struct epoll_event ev = {.events = want, .data.u64 = 0xabcdef};
        if (!strncmp(mode, "epoll-et", 8)) ev.events |= EPOLLET;
        if (!strcmp(mode, "epoll-oneshot")) ev.events |= EPOLLONESHOT;
        if (epoll_ctl(ep, EPOLL_CTL_ADD, c, &ev)) { perror("epoll_ctl"); return 1; }
    }
    int threads = !strcmp(mode, "epoll-et-threads");
    if (threads) {
        pthread_t t;
        g_ep = ep;
        sem_init(&go, 0, 0);
        sem_init(&more, 0, 0);
        pthread_create(&t, NULL, waiter, NULL);
        sem_post(&more); /* the waiter is parked in epoll_wait before the first EAGAIN */
        usleep(20000);
    }
    double t0 = now();
    while (done < total) {
        /* do I/O until EAGAIN */
        for (;;) {
            long long left = total - done;
            size_t n = left < (long long)sizeof buf ? (size_t)left : sizeof buf;
            ssize_t r = sending ? send(c, buf, n, MSG_NOSIGNAL) : recv(c, buf, n, 0);
            if (r > 0) { done += r; if (done >= total) break; continue; }
            if (r == 0) { fprintf(stderr, "eof at %lld\n", done); goto out; }
            if (errno == EAGAIN) { eagain++; break; }
            if (errno == EINTR) continue;
            perror("io"); return 1;
        }
        if (done >= total) break;
        wakeups++;
        if (!strcmp(mode, "poll")) {
            struct pollfd p = {.fd = c, .events = sending ? POLLOUT : POLLIN};
            int r = poll(&p, 1, 10000);
            if (r == 0) { fprintf(stderr, "poll timed out\n"); return 2; }
        } else if (!strcmp(mode, "select")) {
            fd_set s; FD_ZERO(&s); FD_SET(c, &s);
            struct timeval tv = {10, 0};
            int r = select(c + 1, sending ? NULL : &s, sending ? &s : NULL, NULL, &tv);
            if (r == 0) { fprintf(stderr, "select timed out\n"); return 2; }
        } else if (threads) {
            struct timespec dl;
            clock_gettime(CLOCK_REALTIME, &dl);
            dl.tv_sec += 10;
            if (sem_timedwait(&go, &dl)) { fprintf(stderr, "waiter thread never woke at %lld\n", done); return 2; }
            sem_post(&more);
            usleep(1000); /* let it block in epoll_wait before the next EAGAIN */
        } else {
            struct epoll_event ev;
            int r = epoll_wait(ep, &ev, 1, 10000);
            if (r == 0) { fprintf(stderr, "epoll_wait timed out at %lld\n", done); return 2; }
            if (r == 1 && ev.data.u64 != 0xabcdef) { fprintf(stderr, "bad data\n"); return 3; }
            if (!strcmp(mode, "epoll-oneshot")) {
                struct epoll_event re = {.events = want | EPOLLONESHOT, .data.u64 = 0xabcdef};
                epoll_ctl(ep, EPOLL_CTL_MOD, c, &re);
            }
        }
    }
out:;
    double wall = now() - t0;
    struct rusage ru; getrusage(RUSAGE_SELF, &ru);
    double cpu = ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
    printf("{\"bytes\": %lld, \"wall\": %.4f, \"cpu\": %.4f, \"wakeups\": %ld, \"eagain\": %ld}\n", done, wall, cpu, wakeups, eagain);
    close(c);
    return 0;
}
"""

CONNECT = r"""/* rdconnect MODE PORT N: N sequential non-blocking connects to 127.0.0.1:PORT,
 * each waited for with MODE = epoll | epoll-et | poll | select; prints the
 * time each completed (JSON). A connect reported done must be connected. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec / 1e9; }

int main(int argc, char **argv)
{
    const char *mode = argv[1];
    int n = atoi(argv[3]);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(atoi(argv[2])),
                            .sin_addr.s_addr = htonl(0x7f000001)};
    int ep = epoll_create1(0);
    double t0 = now();
    printf("{\"times\": [");
    for (int i = 0; i < n; i++) {
        int s = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
        int r = connect(s, (void *)&a, sizeof a);
        if (r < 0 && errno != EINPROGRESS) { perror("connect"); return 1; }
        int wakeups = 0;
        if (r < 0) for (;;) {
            wakeups++;
            if (wakeups > 50) { fprintf(stderr, "spinning\n"); return 4; }
            int ready = 0, hup = 0;
            if (!strncmp(mode, "epoll", 5)) {
                struct epoll_event ev = {.events = EPOLLOUT | (!strcmp(mode, "epoll-et") ? EPOLLET : 0), .data.fd = s};
                if (wakeups == 1 && epoll_ctl(ep, EPOLL_CTL_ADD, s, &ev)) { perror("epoll_ctl"); return 1; }
                int k = epoll_wait(ep, &ev, 1, 5000);
                ready = k == 1 && (ev.events & EPOLLOUT); hup = k == 1 && (ev.events & EPOLLHUP);
                if (k == 1 && ev.data.fd != s) { fprintf(stderr, "bad data\n"); return 3; }
            } else if (!strcmp(mode, "poll")) {
                struct pollfd p = {.fd = s, .events = POLLOUT};
                int k = poll(&p, 1, 5000);
                ready = k == 1 && (p.revents & POLLOUT); hup = k == 1 && (p.revents & POLLHUP);
            } else {
                fd_set w; FD_ZERO(&w); FD_SET(s, &w);
                struct timeval tv = {5, 0};
                ready = select(s + 1, NULL, &w, NULL, &tv) == 1;
            }
            if (hup) { fprintf(stderr, "HUP on connect %d\n", i); return 5; }
            if (ready) break;
        }
        int err = -1; socklen_t l = sizeof err;
        getsockopt(s, SOL_SOCKET, SO_ERROR, &err, &l);
        struct sockaddr_in peer; socklen_t pl = sizeof peer;
        if (err || getpeername(s, (void *)&peer, &pl)) { fprintf(stderr, "connect %d failed: %d\n", i, err); return 2; }
        printf("%s%.4f", i ? ", " : "", now() - t0);
        fflush(stdout);
        if (!strncmp(mode, "epoll", 5)) epoll_ctl(ep, EPOLL_CTL_DEL, s, NULL);
        close(s);
    }
    printf("]}\n");
    return 0;
}
"""

SIZE, RATE, BURST = 2_000_000, 1_000_000, 100_000
EXPECT = (SIZE - BURST) / RATE


def run_server(binary, mode, direction):
    port = free_port()
    rule = f"port={port} {direction}_rate=1MB/s"
    p = subprocess.Popen(sluice_argv([binary, mode, direction, str(port), str(SIZE)], ins=[rule]),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         start_new_session=True)
    try:
        wait_listen(port)
        with socket.create_connection(("127.0.0.1", port), timeout=20) as s:
            if direction == "send":
                got = 0
                while got < SIZE:
                    d = s.recv(1 << 20)
                    if not d:
                        break
                    got += len(d)
            else:
                s.sendall(b"y" * SIZE)
            out, err = p.communicate(timeout=30)
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
    check(p.returncode == 0, f"{mode} {direction}: server exited {p.returncode}: {err}")
    return last_json(out)


failures = []
with TempDir() as tmp:
    server = compile_c(SERVER, tmp, "rdserver")
    connect = compile_c(CONNECT, tmp, "rdconnect")

    for mode in ["poll", "select", "epoll-lt", "epoll-et", "epoll-oneshot", "epoll-et-threads"]:
        for direction in ["send", "recv"]:
            try:
                r = run_server(server, mode, direction)
                print(f"{mode:17} {direction}: {r}")
                check(r["bytes"] == SIZE, f"{mode} {direction}: {r['bytes']} bytes")
                check(EXPECT * 0.95 <= r["wall"] <= EXPECT * 1.08,
                      f"{mode} {direction}: took {r['wall']:.3f} s, expected {EXPECT:.2f} s")
                check(r["cpu"] < 0.10 * r["wall"],
                      f"{mode} {direction}: cpu {r['cpu']:.3f} s in {r['wall']:.3f} s: spinning")
            except AssertionError as e:
                failures.append(str(e))

    with TcpServer() as srv:
        rule = f"to=127.0.0.1 port={srv.port} rate=5/s burst=1 action=delay"
        for mode in ["epoll", "epoll-et", "poll", "select"]:
            r = run(sluice_argv([connect, mode, str(srv.port), "5"], outs=[rule]), timeout=30)
            print(f"connect {mode:8}: rc={r.returncode} {r.stdout.strip()} {r.stderr.strip()}")
            if r.returncode != 0:
                failures.append(f"connect {mode}: exit {r.returncode}: {r.stderr}")
                continue
            t = last_json(r.stdout)["times"]
            gaps = [b - a for a, b in zip(t, t[1:])]
            if len(t) != 5 or any(abs(g - 0.2) > 0.05 for g in gaps):
                failures.append(f"connect {mode}: completion times {t}")

check(not failures, "\n".join(failures))
print("ok")
