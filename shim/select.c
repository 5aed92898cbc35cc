/* SPDX-License-Identifier: BSD-2-Clause */
/* select.c - select and pselect that do not report a throttled descriptor.
 *
 * As poll.c, on copies of the program's fd_sets: a recv-throttled
 * descriptor leaves the read set, a send-throttled one the write set, a
 * held-back connect all three. The timeout is cut to the earliest refill
 * and an empty return before the program's own timeout is repeated with
 * the time left. The program's sets receive the result (they are left
 * alone on error, as the kernel leaves them). select's timeout, which
 * Linux updates to the time not slept, gets the time left of the program's
 * own timeout.
 *
 * nfds above FD_SETSIZE (sets the program allocated larger) pass through
 * unvirtualised: we cannot copy what we do not know the size of.
 *
 * errno: only the real call's (EINTR, EBADF, EINVAL, ENOMEM) reaches the
 * program.
 */
#include <errno.h>
#include <string.h>
#include <sys/select.h>

#include "../core/clock.h"
#include "ready_query.h"
#include "shim.h"
#include "wait.h"

struct sets {
    fd_set *r, *w, *x; /* the program's, each may be NULL */
    fd_set cr, cw, cx; /* what the real call gets */
    fd_set held;       /* readable for bytes sluice holds (ready.h), whatever the call says */
    int nheld;
};

static bool in_any(const struct sets *s, int fd)
{
    return (s->r && FD_ISSET(fd, s->r)) || (s->w && FD_ISSET(fd, s->w)) ||
           (s->x && FD_ISSET(fd, s->x));
}

/* Fills the copies; returns the earliest refill that matters. With
 * `probe`, stops at the first throttled descriptor (returns its refill). */
static uint64_t masked(struct sets *s, int nfds, uint64_t now, bool probe)
{
    uint64_t wake = SL_RD_FOREVER;
    if (!probe) {
        if (s->r) s->cr = *s->r;
        if (s->w) s->cw = *s->w;
        if (s->x) s->cx = *s->x;
        FD_ZERO(&s->held);
        s->nheld = 0;
    }
    for (int fd = 0; fd < nfds; fd++) {
        if (!in_any(s, fd) || !sl_fd_get(fd)) continue;
        uint64_t w = SL_RD_FOREVER;
        if (!probe) sl_ready_step(fd, now);
        unsigned st = sl_ready_state(fd, now, &w);
        bool in_r = s->r && FD_ISSET(fd, s->r);
        if (in_r && (st & SL_RD_HELD)) {
            if (probe) return now;
            FD_SET(fd, &s->held);
            s->nheld++;
            wake = now;
        } else if (in_r && atomic_load_explicit(&sl_fd_get(fd)->held_at, memory_order_relaxed)) {
            if (probe) return w;
            if (w < wake) wake = w;
        }
        st &= ~SL_RD_HELD;
        bool rd = (st & (SL_RD_RECV | SL_RD_PARK)) && s->r && FD_ISSET(fd, s->r);
        bool wr = (st & (SL_RD_SEND | SL_RD_PARK)) && s->w && FD_ISSET(fd, s->w);
        bool ex = (st & SL_RD_PARK) && s->x && FD_ISSET(fd, s->x);
        if (!rd && !wr && !ex) continue;
        if (probe) return w;
        if (rd) FD_CLR(fd, &s->cr);
        if (wr) FD_CLR(fd, &s->cw);
        if (ex) FD_CLR(fd, &s->cx);
        if (w < wake) wake = w;
    }
    return wake;
}

struct selecting {
    bool ps;
    int nfds;
    struct sets *s;
    const sigset_t *sigmask;
};

static uint64_t mask(void *ctx, uint64_t now)
{
    struct selecting *c = ctx;
    return masked(c->s, c->nfds, now, false);
}

static int call(void *ctx, uint64_t now, uint64_t wait_ns)
{
    struct selecting *c = ctx;
    struct sets *s = c->s;
    (void)now;
    fd_set *r = s->r ? &s->cr : NULL, *w = s->w ? &s->cw : NULL, *x = s->x ? &s->cx : NULL;
    bool forever = wait_ns == SL_RD_FOREVER;
    int rc;
    if (c->ps) {
        struct timespec ts = sl_ns_to_timespec(wait_ns);
        rc = REAL(pselect)(c->nfds, r, w, x, forever ? NULL : &ts, c->sigmask);
    } else {
        uint64_t us = wait_ns / 1000 + (wait_ns % 1000 != 0);
        struct timeval tv = {.tv_sec = (time_t)(us / 1000000), .tv_usec = (long)(us % 1000000)};
        rc = REAL(select)(c->nfds, r, w, x, forever ? NULL : &tv);
    }
    if (rc >= 0 && s->nheld) {
        if (rc == 0) { /* the copies still hold what was asked */
            if (r) FD_ZERO(r);
            if (w) FD_ZERO(w);
            if (x) FD_ZERO(x);
        }
        for (int fd = 0; fd < c->nfds; fd++)
            if (FD_ISSET(fd, &s->held) && !FD_ISSET(fd, r)) {
                FD_SET(fd, r);
                rc++;
            }
    }
    return rc;
}

static int wait_sets(bool ps, int nfds, struct sets *s, int64_t timeout_ns, struct timeval *tv,
                     const sigset_t *sigmask)
{
    struct selecting c = {.ps = ps, .nfds = nfds, .s = s, .sigmask = sigmask};
    struct sl_ready_wait w = {.mask = mask, .call = call, .ctx = &c};
    uint64_t deadline;
    int rc = sl_ready_wait(&w, timeout_ns, &deadline);
    int err = errno;
    if (rc == 0) { /* at the deadline the copies still hold what was asked */
        if (s->r) FD_ZERO(&s->cr);
        if (s->w) FD_ZERO(&s->cw);
        if (s->x) FD_ZERO(&s->cx);
    }
    if (rc >= 0) {
        if (s->r) *s->r = s->cr;
        if (s->w) *s->w = s->cw;
        if (s->x) *s->x = s->cx;
    }
    if (tv) { /* Linux select reports the time left */
        uint64_t left = sl_rd_wait_ns(sl_clock_now(), deadline, SL_RD_FOREVER);
        tv->tv_sec = (time_t)(left / SL_NS_PER_SEC);
        tv->tv_usec = (long)(left % SL_NS_PER_SEC / 1000);
    }
    errno = err;
    return rc;
}

/* Every descriptor in the sets is quiet (ready_int.h): told without a
 * clock read, a word of each set at a time. */
static bool all_quiet(const struct sets *s, int nfds)
{
    const int bits = 8 * (int)sizeof(__fd_mask);
    for (int i = 0; i * bits < nfds; i++) {
        __fd_mask m = (s->r ? __FDS_BITS(s->r)[i] : 0) | (s->w ? __FDS_BITS(s->w)[i] : 0) |
                      (s->x ? __FDS_BITS(s->x)[i] : 0);
        for (; m; m &= m - 1) {
            int fd = i * bits + __builtin_ctzl((unsigned long)m);
            if (fd < nfds && !sl_ready_quiet(fd)) return false;
        }
    }
    return true;
}

/* Worth the slow path: some descriptor in the sets is throttled now. */
static bool virtualise(struct sets *s, int nfds)
{
    if (!sl_watching() || !sl_runtime_now() || nfds <= 0 || nfds > FD_SETSIZE ||
        (!s->r && !s->w && !s->x))
        return false;
    if (all_quiet(s, nfds)) return false;
    int saved = errno;
    bool any = masked(s, nfds, sl_clock_now(), true) != SL_RD_FOREVER;
    errno = saved;
    return any;
}

SL_EXPORT int select(int nfds, fd_set *r, fd_set *w, fd_set *x, struct timeval *tv)
{
    struct sets s = {.r = r, .w = w, .x = x};
    int64_t t = SL_TIMEVAL_NS(tv);
    if (t == -2 || !virtualise(&s, nfds)) return REAL(select)(nfds, r, w, x, tv);
    return wait_sets(false, nfds, &s, t, tv, NULL);
}

SL_EXPORT int pselect(int nfds, fd_set *r, fd_set *w, fd_set *x, const struct timespec *ts,
                      const sigset_t *sigmask)
{
    struct sets s = {.r = r, .w = w, .x = x};
    int64_t t = SL_TIMESPEC_NS(ts);
    if (t == -2 || !virtualise(&s, nfds)) return REAL(pselect)(nfds, r, w, x, ts, sigmask);
    return wait_sets(true, nfds, &s, t, NULL, sigmask);
}
