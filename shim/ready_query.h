/* SPDX-License-Identifier: BSD-2-Clause */
/* ready_query.h - the readiness query the wait wrappers share (poll.c,
 * select.c, epoll.c): what is throttled, held or parked on a descriptor
 * now, the held-back connect's step, and the one wait loop. A pure query
 * of each descriptor's state (fd.h), calling nothing above it: the hooks
 * that change that state tell epoll.c's shadow through ready.h. */
#ifndef SL_READY_QUERY_H
#define SL_READY_QUERY_H

#include <stdint.h>

#include "../core/limit/readiness.h"
#include "fd.h"

/* What is throttled on fd at `now` (SL_RD_* bits); *wake is lowered to
 * when that ends. A pure query: an untracked fd costs one load. */
unsigned sl_ready_state(int fd, uint64_t now, uint64_t *wake);

/* fd cannot be throttled, held or parked now, told without a clock: it is
 * untracked, or nothing was ever throttled, held or held back on it (a
 * throttle that ended leaves its time behind: then ask sl_ready_state). */
static inline bool sl_ready_quiet(int fd)
{
    struct sl_fd *e = sl_fd_get(fd);
    return !e || !(atomic_load_explicit(&e->ready_at[SL_IO_RECV], memory_order_relaxed) |
                   atomic_load_explicit(&e->ready_at[SL_IO_SEND], memory_order_relaxed) |
                   atomic_load_explicit(&e->held_at, memory_order_relaxed) |
                   (uint64_t)atomic_load_explicit(&e->pending_connect, memory_order_relaxed));
}

/* The step a wait wrapper takes for fd before it asks sl_ready_state:
 * makes a held-back connect whose turn has come (pending.c). Call it
 * without holding a lock; it keeps errno. */
void sl_ready_step(int fd, uint64_t now);

/* The loop every wait wrapper runs: hide what is throttled (`mask`, which
 * returns the earliest refill that matters), make the real wait for at
 * most until then or the deadline (`call`), and again while nothing was
 * reported and time is left. Returns the last real call's result, or 0 at
 * the deadline, with the real call's errno; *deadline is when the
 * program's timeout (timeout_ns, -1: none) ends. */
struct sl_ready_wait {
    uint64_t (*mask)(void *ctx, uint64_t now);
    int (*call)(void *ctx, uint64_t now, uint64_t wait_ns);
    void *ctx;
};
int sl_ready_wait(const struct sl_ready_wait *w, int64_t timeout_ns, uint64_t *deadline);

#endif
