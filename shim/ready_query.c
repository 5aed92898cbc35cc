/* SPDX-License-Identifier: BSD-2-Clause */
/* ready_query.c - the readiness query: see ready_query.h. The algorithm
 * is described in core/limit/readiness.c. */
#include <errno.h>

#include "../core/clock.h"
#include "pending.h"
#include "ready_query.h"

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
