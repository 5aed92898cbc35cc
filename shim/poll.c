/* poll.c - poll and ppoll that do not report a throttled descriptor.
 *
 * The real call gets a copy of the program's array in which a throttled
 * direction's bits are gone (POLLIN|POLLRDNORM|POLLRDHUP for recv,
 * POLLOUT|POLLWRNORM|POLLWRBAND for send) and a held-back connect's
 * descriptor is -1 (an unconnected socket reports POLLHUP whatever it is
 * asked). The timeout is cut to the earliest refill; a call that comes back
 * empty before the program's own timeout is made again with the refilled
 * bits back and the time left, so the program sees one call. revents is
 * copied back into the program's array; `events` is never touched.
 * POLLERR, POLLHUP and POLLNVAL are reported as the kernel reports them.
 *
 * errno: only the real call's (EINTR, EFAULT, EINVAL, ENOMEM) reaches the
 * program; every other path leaves errno as it was.
 *
 * Cost: with no runtime, nothing; otherwise one sl_fd_get per entry, and a
 * clock read when one of them is tracked. Arrays up to LOCAL entries are
 * copied on the stack; larger ones come from sluice's arena (and pass
 * through unvirtualised if that fails).
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>

#include "../core/clock.h"
#include "../core/mem.h"
#include "ready_int.h"
#include "shim.h"

#define LOCAL 128

/* glibc declares poll's array write-only (access attribute); the program's
 * events are of course read, and GCC then warns they may be uninitialised. */
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

/* Copies fds into cp with throttled bits taken away; returns the earliest
 * refill that matters (SL_RD_FOREVER: nothing was taken). */
static uint64_t masked(const struct pollfd *fds, struct pollfd *cp, nfds_t n, uint64_t now)
{
    uint64_t wake = SL_RD_FOREVER;
    for (nfds_t i = 0; i < n; i++) {
        cp[i] = fds[i];
        cp[i].revents = 0;
        uint64_t w = SL_RD_FOREVER;
        sl_ready_step(fds[i].fd, now);
        unsigned st = sl_ready_state(fds[i].fd, now, &w);
        if (!st) continue;
        short m = sl_rd_poll_mask(st);
        if (st & SL_RD_PARK)
            cp[i].fd = -1;
        else if (cp[i].events & m)
            cp[i].events &= (short)~m;
        else
            continue;
        if (w < wake) wake = w;
    }
    return wake;
}

static int call(bool pp, struct pollfd *p, nfds_t n, uint64_t wait_ns, const sigset_t *sigmask)
{
    if (!pp) return REAL(poll)(p, n, sl_rd_ms(wait_ns));
    struct timespec ts = {.tv_sec = (time_t)(wait_ns / SL_NS_PER_SEC),
                          .tv_nsec = (long)(wait_ns % SL_NS_PER_SEC)};
    return REAL(ppoll)(p, n, wait_ns == SL_RD_FOREVER ? NULL : &ts, sigmask);
}

static int wait_fds(bool pp, struct pollfd *fds, nfds_t n, int64_t timeout_ns,
                    const struct timespec *ts, int timeout_ms, const sigset_t *sigmask)
{
    int saved = errno;
    uint64_t start = sl_clock_now();
    struct pollfd local[LOCAL];
    struct pollfd *cp = n <= LOCAL ? local : sl_alloc(n * sizeof *cp);
    if (!cp) {
        errno = saved;
        return pp ? REAL(ppoll)(fds, n, ts, sigmask) : REAL(poll)(fds, n, timeout_ms);
    }
    uint64_t deadline = sl_rd_deadline(start, timeout_ns), now = start;
    int rc;
    for (bool first = true;; first = false) {
        if (!first && (now = sl_clock_now()) >= deadline) {
            rc = 0;
            break;
        }
        uint64_t wake = masked(fds, cp, n, now);
        errno = saved;
        rc = call(pp, cp, n, sl_rd_wait_ns(now, deadline, wake), sigmask);
        if (rc != 0) break;
    }
    int err = errno;
    if (rc >= 0)
        for (nfds_t i = 0; i < n; i++)
            fds[i].revents = cp[i].revents;
    if (cp != local) sl_free(cp);
    errno = err;
    return rc;
}

/* True when some entry is throttled now: only then is the slow path worth it. */
static bool any_throttled(const struct pollfd *fds, nfds_t n)
{
    nfds_t i = 0;
    while (i < n && !sl_fd_get(fds[i].fd))
        i++;
    if (i == n) return false;
    int saved = errno;
    uint64_t now = sl_clock_now(), w = SL_RD_FOREVER;
    bool any = false;
    for (; i < n && !any; i++) {
        if (!sl_fd_get(fds[i].fd)) continue;
        unsigned st = sl_ready_state(fds[i].fd, now, &w);
        any = (st & SL_RD_PARK) || (fds[i].events & sl_rd_poll_mask(st));
    }
    errno = saved;
    return any;
}

SL_EXPORT int poll(struct pollfd *fds, nfds_t n, int timeout)
{
    if (!sl_runtime() || !fds || !any_throttled(fds, n)) return REAL(poll)(fds, n, timeout);
    return wait_fds(false, fds, n, timeout < 0 ? -1 : (int64_t)timeout * 1000000, NULL, timeout,
                    NULL);
}

SL_EXPORT int ppoll(struct pollfd *fds, nfds_t n, const struct timespec *ts,
                    const sigset_t *sigmask)
{
    if (!sl_runtime() || !fds || !any_throttled(fds, n) ||
        (ts && (ts->tv_sec < 0 || ts->tv_nsec < 0 || ts->tv_nsec >= (long)SL_NS_PER_SEC)))
        return REAL(ppoll)(fds, n, ts, sigmask);
    int64_t t = -1;
    if (ts)
        t = ts->tv_sec >= INT64_MAX / (int64_t)SL_NS_PER_SEC - 1
                ? INT64_MAX
                : (int64_t)ts->tv_sec * (int64_t)SL_NS_PER_SEC + ts->tv_nsec;
    return wait_fds(true, fds, n, t, ts, 0, sigmask);
}
