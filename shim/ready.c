/* SPDX-License-Identifier: BSD-2-Clause */
/* ready.c - the readiness layer's entry points for the rest of the shim
 * (ready.h), and what the wait wrappers share.
 *
 * poll/ppoll (poll.c) and select/pselect (select.c) need no memory of their
 * own: every call looks at the descriptors it is given (sl_ready_state, one
 * load for an untracked one). epoll (epoll.c) keeps registrations in the
 * kernel across calls, so it shadows them and must hear about throttles
 * and closes: that is what sl_ready_throttle and sl_ready_forget are for.
 * The algorithm is described in core/limit/readiness.c.
 */
#include <dlfcn.h>
#include <errno.h>
#include <unistd.h>

#include "../core/clock.h"
#include "ready.h"
#include "pending.h"
#include "ready_int.h"

unsigned sl_ready_state(int fd, uint64_t now, uint64_t *wake)
{
    struct sl_fd *e = sl_fd_get(fd);
    if (!e) return 0;
    if (sl_pending_parked(e, now, wake)) return SL_RD_PARK;
    /* pairs with the stores in io.c's budget() and pending.c */
    uint64_t r = atomic_load_explicit(&e->ready_at[SL_IO_RECV], memory_order_relaxed);
    uint64_t s = atomic_load_explicit(&e->ready_at[SL_IO_SEND], memory_order_relaxed);
    uint64_t h = atomic_load_explicit(&e->held_at, memory_order_relaxed);
    unsigned st = sl_rd_throttled(r, s, now, wake);
    if (h && h <= now)
        st |= SL_RD_HELD;
    else if (h && h < *wake)
        *wake = h;
    return st;
}

void sl_ready_step(int fd, uint64_t now)
{
    struct sl_fd *e = sl_fd_get(fd);
    if (e && sl_pending_held(e)) sl_pending_finish(fd, e, now);
}

int sl_ready_wait(const struct sl_ready_wait *w, int64_t timeout_ns, uint64_t *deadline)
{
    int saved = errno;
    uint64_t now = sl_clock_now();
    *deadline = sl_rd_deadline(now, timeout_ns);
    for (bool first = true;; first = false) {
        if (!first && (now = sl_clock_now()) >= *deadline) {
            errno = saved;
            return 0;
        }
        uint64_t wake = w->mask(w->ctx, now);
        errno = saved;
        int rc = w->call(w->ctx, now, sl_rd_wait_ns(now, *deadline, wake));
        if (rc != 0) return rc;
    }
}

void sl_ready_throttle(int fd, struct sl_fd *e, enum sl_io io, uint64_t until_ns)
{
    atomic_store(&e->ready_at[io], until_ns); /* the truth epoll.c reads again under its lock */
    int saved = errno;
    sl_epoll_throttle(fd, sl_clock_now());
    errno = saved;
}

void sl_ready_held(int fd, struct sl_fd *e, uint64_t at)
{
    int saved = errno;
    atomic_store(&e->held_at, at);
    sl_epoll_held(fd, at, false);
    errno = saved;
}

void sl_ready_held_read(int fd, struct sl_fd *e, uint64_t at)
{
    int saved = errno;
    atomic_store(&e->held_at, at);
    sl_epoll_held(fd, at, true);
    errno = saved;
}

void sl_ready_forget_known(int fd)
{
    sl_epoll_forget(fd); /* keeps errno */
}

void sl_ready_after_fork_child(void)
{
    sl_epoll_after_fork_child();
}
