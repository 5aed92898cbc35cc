# SPDX-License-Identifier: BSD-2-Clause
"""An edge-triggered epoll server keeps its readiness when the budget
refills between sluice's decision and the throttle's record of it
(shim/ready.c: sl_ready_throttle).

recv under recv_rate: budget() finds the bucket empty at time T, whose
refill is due at T' <= T + 20 ms (a quantum, a fiftieth of a second's
rate); the hook returns EAGAIN and records the throttle, reading the clock
again. If that second reading is past T' (the thread was preempted there;
CI met it once in 2 MB), sluice used to see nothing throttled and record
nothing: the program, which had used its edge, waited for one that never
came while the kernel held the bytes (the sender blocked on a full
window), and timed out after 10 s.

The race is made certain here, not hoped for: a library preloaded in
front of sluice wraps recv and clock_gettime, and within one recv moves
CLOCK_MONOTONIC 15 ms forward at the third reading (sluice reads it at the
call's start, at the budget's take, then at the throttle's record, or at
the refund of a read that got budget). So a read that got budget leaves
15 ms of refill for the next, less than a quantum: the next take fails
with its refill due 5 ms on, and the jump at the throttle's reading is
past it: the race, every other read. The library counts the recv calls
that returned EAGAIN after a jump: the test asserts there were some (else
it would test nothing), and that the 40 kB arrive with every wait
answered. The server waits until the sender's bytes are all in its
socket's buffer before it reads, so no arrival gives a new edge later
(one did in an earlier form of this test, which then passed without the
fix two runs in three); a wait of 10 s that times out fails. Before the
fix it timed out at its second race, at 19 kB. The rate is 100KB/s: a burst of
10 kB, a quantum of 2 kB (20 ms).
"""
from lib import *

FAKE = r"""#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static __thread int in_recv, calls, jumped;
static long long offset_ns;
static long races;

int clock_gettime(clockid_t id, struct timespec *ts)
{
    int rc = syscall(SYS_clock_gettime, id, ts);
    if (rc || id != CLOCK_MONOTONIC) return rc;
    if (in_recv && ++calls == 3) { offset_ns += 15000000; jumped = 1; }
    long long t = ts->tv_nsec + offset_ns;
    ts->tv_sec += t / 1000000000;
    ts->tv_nsec = t % 1000000000;
    return 0;
}

ssize_t recv(int fd, void *buf, size_t n, int flags)
{
    static ssize_t (*next)(int, void *, size_t, int);
    if (!next) next = (ssize_t (*)(int, void *, size_t, int))dlsym(RTLD_NEXT, "recv");
    in_recv = 1, calls = 0, jumped = 0;
    ssize_t r = next(fd, buf, n, flags);
    int err = errno;
    in_recv = 0;
    if (r < 0 && err == EAGAIN && jumped) races++;
    errno = err;
    return r;
}

__attribute__((destructor)) static void report(void)
{
    fprintf(stderr, "races %ld\n", races);
}
"""

SERVER = r"""/* etserver PORT BYTES: receives BYTES on one non-blocking connection,
 * waiting with edge-triggered epoll (10 s at most a wait). */
#define _GNU_SOURCE
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    long long total = atoll(argv[2]), done = 0;
    int l = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(atoi(argv[1])),
                            .sin_addr.s_addr = htonl(0x7f000001)};
    if (bind(l, (void *)&a, sizeof a) || listen(l, 8)) { perror("bind"); return 1; }
    int c = accept4(l, NULL, NULL, SOCK_NONBLOCK);
    if (c < 0) { perror("accept"); return 1; }
    int ep = epoll_create1(0);
    struct epoll_event ev = {.events = EPOLLIN | EPOLLET, .data.fd = c};
    if (epoll_ctl(ep, EPOLL_CTL_ADD, c, &ev)) { perror("epoll_ctl"); return 1; }
    /* every byte in the socket's buffer first: no arrival gives an edge later */
    int have = 0;
    for (int i = 0; i < 5000 && (ioctl(c, FIONREAD, &have) || have < total); i++) usleep(1000);
    if (have < total) { fprintf(stderr, "only %d bytes came\n", have); return 1; }
    static char buf[65536];
    long waits = 0;
    while (done < total) {
        ssize_t r = recv(c, buf, sizeof buf, 0);
        if (r > 0) { done += r; continue; }
        if (r == 0) { fprintf(stderr, "eof at %lld\n", done); return 1; }
        if (errno == EINTR) continue;
        if (errno != EAGAIN) { perror("recv"); return 1; }
        waits++;
        if (epoll_wait(ep, &ev, 1, 10000) == 0) {
            fprintf(stderr, "epoll_wait timed out at %lld\n", done);
            return 2;
        }
    }
    printf("{\"bytes\": %lld, \"waits\": %ld}\n", done, waits);
    return 0;
}
"""

SIZE = 40_000  # well inside the first receive window (64 kB of a 128 kB buffer on loopback)

with TempDir() as tmp:
    fake = tmp.join("libfakeclock.so")
    src = tmp.write("fakeclock.c", FAKE)
    r = run(["gcc", "-O1", "-Wall", "-shared", "-fPIC", "-o", fake, src, "-ldl"], timeout=60)
    check(r.returncode == 0, f"gcc failed:\n{r.stderr}")
    server = compile_c(SERVER, tmp, "etserver")
    port = free_port()
    e = dict(os.environ)
    e["LD_PRELOAD"] = fake  # sluice run keeps it in front of libsluice
    p = subprocess.Popen(sluice_argv([server, str(port), str(SIZE)], ins=[f"port={port} recv_rate=100KB/s"]),
                         env=e, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         start_new_session=True)
    try:
        wait_listen(port)
        with socket.create_connection(("127.0.0.1", port), timeout=20) as s:
            s.sendall(b"y" * SIZE)
            out, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
    print(out.strip(), err.strip())
    races = [int(x.split()[1]) for x in err.splitlines() if x.startswith("races ")]
    check(races and races[-1] > 0, f"the race was never made (call order changed?): {err}")
    check(p.returncode == 0, f"server exited {p.returncode}: {err}")
    check(last_json(out)["bytes"] == SIZE, out)
print("ok")
