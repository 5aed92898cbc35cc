/* SPDX-License-Identifier: BSD-2-Clause */
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
#include "ready_query.h"
#include "shim.h"
#include "wait.h"

#define LOCAL 128

/* glibc declares poll's array write-only (access attribute); the program's
 * events are of course read, and GCC then warns they may be uninitialised. */
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

/* Copies fds into cp with throttled bits taken away; returns the earliest
 * refill that matters (SL_RD_FOREVER: nothing was taken). */
static uint64_t masked(const struct pollfd *fds, struct pollfd *cp, bool *held, nfds_t n,
                       uint64_t now)
{
    uint64_t wake = SL_RD_FOREVER;
    for (nfds_t i = 0; i < n; i++) {
        cp[i] = fds[i];
        cp[i].revents = 0;
        held[i] = false;
        uint64_t w = SL_RD_FOREVER;
        sl_ready_step(fds[i].fd, now);
        unsigned st = sl_ready_state(fds[i].fd, now, &w);
        if (w < wake && (fds[i].events & POLLIN)) wake = w; /* held bytes due then */
        if ((st & SL_RD_HELD) && (fds[i].events & POLLIN)) {
            held[i] = true; /* readable now: the real call only adds to it */
            wake = now;
        }
        st &= ~SL_RD_HELD;
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

struct polling {
    bool pp;
    struct pollfd *fds, *cp;
    bool *held;
    nfds_t n;
    const sigset_t *sigmask;
};

static uint64_t mask(void *ctx, uint64_t now)
{
    struct polling *p = ctx;
    return masked(p->fds, p->cp, p->held, p->n, now);
}

static int call(void *ctx, uint64_t now, uint64_t wait_ns)
{
    struct polling *p = ctx;
    (void)now;
    int rc;
    if (!p->pp) {
        rc = REAL(poll)(p->cp, p->n, sl_rd_ms(wait_ns));
    } else {
        struct timespec ts = sl_ns_to_timespec(wait_ns);
        rc = REAL(ppoll)(p->cp, p->n, wait_ns == SL_RD_FOREVER ? NULL : &ts, p->sigmask);
    }
    for (nfds_t i = 0; rc >= 0 && i < p->n; i++) {
        if (!p->held[i]) continue;
        if (!p->cp[i].revents) rc++;
        p->cp[i].revents |= POLLIN;
    }
    return rc;
}

static int wait_fds(bool pp, struct pollfd *fds, nfds_t n, int64_t timeout_ns,
                    const struct timespec *ts, int timeout_ms, const sigset_t *sigmask)
{
    struct pollfd local[LOCAL];
    bool local_held[LOCAL];
    struct pollfd *cp = n <= LOCAL ? local : sl_alloc(n * (sizeof *cp + sizeof(bool)));
    if (!cp) return pp ? REAL(ppoll)(fds, n, ts, sigmask) : REAL(poll)(fds, n, timeout_ms);
    bool *held = cp == local ? local_held : (bool *)(void *)(cp + n);
    struct polling p = {.pp = pp, .fds = fds, .cp = cp, .held = held, .n = n, .sigmask = sigmask};
    struct sl_ready_wait w = {.mask = mask, .call = call, .ctx = &p};
    uint64_t deadline;
    int rc = sl_ready_wait(&w, timeout_ns, &deadline);
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
    while (i < n && sl_ready_quiet(fds[i].fd)) /* no clock read for these */
        i++;
    if (i == n) return false;
    int saved = errno;
    uint64_t now = sl_clock_now(), w = SL_RD_FOREVER;
    bool any = false;
    for (; i < n && !any; i++) {
        if (!sl_fd_get(fds[i].fd)) continue;
        unsigned st = sl_ready_state(fds[i].fd, now, &w);
        any = (st & SL_RD_PARK) || (fds[i].events & sl_rd_poll_mask(st)) ||
              ((fds[i].events & POLLIN) &&
               atomic_load_explicit(&sl_fd_get(fds[i].fd)->held_at, memory_order_relaxed));
    }
    errno = saved;
    return any;
}

/* Every descriptor of the set is untracked or was never throttled, held or
 * held back: the common case, tested inline by the fast halves below (no
 * clock, no stack frame); any_throttled looks closer at the others. */
static inline bool all_quiet(const struct pollfd *fds, nfds_t n)
{
    for (nfds_t i = 0; i < n; i++)
        if (!sl_ready_quiet(fds[i].fd)) return false;
    return true;
}

static __attribute__((noinline)) int poll_slow(struct pollfd *fds, nfds_t n, int timeout)
{
    if (!sl_runtime_now() || !fds || !any_throttled(fds, n)) return REAL(poll)(fds, n, timeout);
    return wait_fds(false, fds, n, timeout < 0 ? -1 : (int64_t)timeout * 1000000, NULL, timeout,
                    NULL);
}

SL_EXPORT int poll(struct pollfd *fds, nfds_t n, int timeout)
{
    if (__builtin_expect((!sl_watching() || !fds || all_quiet(fds, n)) && sl_real.poll != NULL, 1))
        return sl_real.poll(fds, n, timeout);
    return poll_slow(fds, n, timeout);
}

static __attribute__((noinline)) int ppoll_slow(struct pollfd *fds, nfds_t n,
                                                const struct timespec *ts, const sigset_t *sigmask)
{
    int64_t t = SL_TIMESPEC_NS(ts);
    if (!sl_runtime_now() || !fds || !any_throttled(fds, n) || t == -2)
        return REAL(ppoll)(fds, n, ts, sigmask);
    return wait_fds(true, fds, n, t, ts, 0, sigmask);
}

SL_EXPORT int ppoll(struct pollfd *fds, nfds_t n, const struct timespec *ts,
                    const sigset_t *sigmask)
{
    if (__builtin_expect((!sl_watching() || !fds || all_quiet(fds, n)) && sl_real.ppoll != NULL, 1))
        return sl_real.ppoll(fds, n, ts, sigmask);
    return ppoll_slow(fds, n, ts, sigmask);
}
