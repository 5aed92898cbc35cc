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
        if (syscall(SYS_rt_sigaction, sig, NULL, &old, sizeof old.mask) != 0) continue;
        if (old.handler == SIG_DFL || old.handler == SIG_IGN) continue;
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
    long rc = syscall(SYS_getsockopt, fd, SOL_SOCKET, optname, &tv, &len);
    errno = saved;
    if (rc != 0 || (tv.tv_sec == 0 && tv.tv_usec == 0)) return 0;
    return start + (uint64_t)tv.tv_sec * 1000000000ull + (uint64_t)tv.tv_usec * 1000;
}

int sl_wait_until(uint64_t until, uint64_t deadline)
{
    bool timeout = deadline && deadline < until;
    struct timespec ts = sl_ns_to_timespec(timeout ? deadline : until);
    for (;;) {
        int rc = clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
        if (rc == 0) break;
        if (rc != EINTR || !sl_wait_restarts()) {
            errno = rc == EINTR ? EINTR : rc;
            return -1;
        }
    }
    if (timeout) {
        errno = EAGAIN;
        return -1;
    }
    return 0;
}

int sl_wait_fd(int fd, short events, uint64_t deadline)
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
        long rc = syscall(SYS_ppoll, &p, 1, tp, NULL, 0);
        if (rc > 0) return 0;
        if (rc == 0) continue; /* the deadline is checked above */
        if (errno != EINTR || !sl_wait_restarts()) return -1;
    }
}

bool sl_fd_nonblocking(int fd)
{
    int saved = errno;
    long fl = syscall(SYS_fcntl, fd, F_GETFL);
    errno = saved;
    return fl >= 0 && (fl & O_NONBLOCK);
}
