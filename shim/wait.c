/* SPDX-License-Identifier: BSD-2-Clause */
/* wait.c - see wait.h. Raw system calls only: these run inside the
 * program's own recv, connect, poll, and must not re-enter sluice's hooks. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <unistd.h>

#include "../core/clock.h"
#include "../core/sys.h"
#include "wait.h"

/* The kernel's struct sigaction for rt_sigaction (not glibc's). */
struct k_sigaction {
    void (*handler)(int);
    unsigned long flags;
    void (*restorer)(void);
    unsigned long mask;
};

bool sl_wait_restarts(void)
{
    int saved = errno;
    bool restart = true;
    for (int sig = 1; sig < 65 && restart; sig++) {
        struct k_sigaction old;
        if (sl_syscall(SYS_rt_sigaction, sig, NULL, &old, sizeof old.mask) != 0) continue;
        if (old.handler == SIG_DFL || old.handler == SIG_IGN) continue;
        /* A fault's signal goes to the thread that faults, never to one
         * asleep here: ASan's, a JVM's or faulthandler's SIGSEGV handler
         * says nothing about what interrupted the wait. */
        if (sig == SIGSEGV || sig == SIGBUS || sig == SIGFPE || sig == SIGILL || sig == SIGTRAP ||
            sig == SIGSYS)
            continue;
        if (!(old.flags & SA_RESTART)) restart = false;
    }
    errno = saved;
    return restart;
}

uint64_t sl_wait_deadline(int fd, int optname, uint64_t start)
{
    int saved = errno;
    struct timeval tv = {0, 0};
    socklen_t len = sizeof tv;
    long rc = sl_syscall(SYS_getsockopt, fd, SOL_SOCKET, optname, &tv, &len);
    errno = saved;
    if (rc != 0 || (tv.tv_sec == 0 && tv.tv_usec == 0)) return 0;
    return start + (uint64_t)tv.tv_sec * 1000000000ull + (uint64_t)tv.tv_usec * 1000;
}

/* ppoll's sigmask argument is the kernel's, _NSIG / 8 bytes. */
#define K_SIGSET_SIZE 8

int sl_wait_until_masked(uint64_t until, uint64_t deadline, const sigset_t *mask)
{
    bool timeout = deadline && deadline < until;
    uint64_t end = timeout ? deadline : until;
    for (;;) {
        uint64_t now = sl_clock_now();
        if (now >= end) break;
        struct timespec ts = sl_ns_to_timespec(end - now);
        long rc = sl_syscall(SYS_ppoll, NULL, 0, &ts, mask, K_SIGSET_SIZE);
        if (rc >= 0) continue; /* the end is checked above */
        if (errno != EINTR || !sl_wait_restarts()) return -1;
    }
    if (timeout) {
        errno = EAGAIN;
        return -1;
    }
    return 0;
}

int sl_wait_until(uint64_t until, uint64_t deadline)
{
    return sl_wait_until_masked(until, deadline, NULL);
}

int sl_wait_fd_masked(int fd, short events, uint64_t deadline, const sigset_t *mask)
{
    struct pollfd p = {.fd = fd, .events = events};
    for (;;) {
        struct timespec ts, *tp = NULL;
        if (deadline) {
            uint64_t now = sl_clock_now();
            if (now >= deadline) {
                errno = EAGAIN;
                return -1;
            }
            ts = sl_ns_to_timespec(deadline - now);
            tp = &ts;
        }
        long rc = sl_syscall(SYS_ppoll, &p, 1, tp, mask, K_SIGSET_SIZE);
        if (rc > 0) return 0;
        if (rc == 0) continue; /* the deadline is checked above */
        if (errno != EINTR || !sl_wait_restarts()) return -1;
    }
}

int sl_wait_fd(int fd, short events, uint64_t deadline)
{
    return sl_wait_fd_masked(fd, events, deadline, NULL);
}

bool sl_fd_nonblocking(int fd)
{
    int saved = errno;
    long fl = sl_syscall(SYS_fcntl, fd, F_GETFL);
    errno = saved;
    return fl >= 0 && (fl & O_NONBLOCK);
}
