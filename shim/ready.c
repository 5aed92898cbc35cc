/* SPDX-License-Identifier: BSD-2-Clause */
/* ready.c - the readiness layer's entry points for the rest of the shim
 * (ready.h): the hooks that throttle, hold or close a descriptor change
 * its state here, and epoll.c's shadow hears of it. The query the wait
 * wrappers share is ready_query.c.
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
#include "epoll.h"
#include "ready.h"

void sl_ready_throttle(int fd, struct sl_fd *e, enum sl_io io, uint64_t until_ns)
{
    atomic_store(&e->ready_at[io], until_ns); /* the truth epoll.c reads again under its lock */
    int saved = errno;
    /* The hook has told the program EAGAIN already. If the refill came
     * between its decision and now (a thread preempted there, a refill a
     * few microseconds away), the throttle must still be seen: else an
     * edge-triggered registration, whose edge the program has used, would
     * never hear of bytes the kernel holds. So it is seen as of just
     * before `until_ns`: masked, listed, and restored (a new edge) by the
     * next wait, or by the helper for a thread already waiting. */
    uint64_t now = sl_clock_now();
    sl_epoll_throttle(fd, until_ns && now >= until_ns ? until_ns - 1 : now);
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
