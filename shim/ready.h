/* SPDX-License-Identifier: BSD-2-Clause */
/* ready.h - readiness virtualisation for event loops.
 *
 * A non-blocking descriptor whose byte budget is empty gets EAGAIN from
 * recv/send. The program must hear about it again, without spinning: so
 * while it is throttled, poll/ppoll/select/pselect/epoll_wait* do not
 * report it readable (recv) or writable (send); their timeouts are cut to
 * the moment it refills; and when it refills, an edge-triggered epoll
 * registration gets its edge back (EPOLL_CTL_MOD re-arms it). A held-back
 * non-blocking connect is parked until its turn, when the wait wrappers
 * perform it (pending.c) before they look at readiness.
 */
#ifndef SL_READY_H
#define SL_READY_H

#include <stdint.h>

#include "epoll.h"
#include "fd.h"

/* fd's io direction is throttled until `until_ns` (stored in e's
 * ready_at). Called by the I/O hooks when they return EAGAIN (a byte
 * budget, a request that waits its turn), and by connect for a held-back
 * connect. */
void sl_ready_throttle(int fd, struct sl_fd *e, enum sl_io io, uint64_t until_ns);

/* sluice holds bytes of fd that the program may read from `at` on (0: no
 * more), which the kernel cannot report: from then on until they are read
 * poll/select report fd readable, and epoll as the kernel reports bytes
 * it holds (epoll.c): level-triggered at every wait, edge-triggered once
 * per call of this and again after the program's ADD or MOD (into any
 * set, from any thread), EPOLLONESHOT once per arming; a thread already
 * blocked in epoll_wait on a set that holds it, or that another thread
 * adds it to, is woken (a blocked poll or select is not, nor an
 * epoll_wait that blocked before this process had a request connection or
 * held bytes: documented). The end of a stream sluice reports (a denied
 * request: gate.h) is held the same way, from the denial to the close. */
void sl_ready_held(int fd, struct sl_fd *e, uint64_t at);

/* The same, called by a read of fd that left the bytes: under
 * EPOLLONESHOT the read means the registration's event fired, so the
 * announcement waits for the program's re-arm. */
void sl_ready_held_read(int fd, struct sl_fd *e, uint64_t at);

/* reqin.c: this process reads the requests of a connection (accept), so
 * bytes may be held from now on: every epoll wait from then on is one that
 * sl_ready_held can wake (epoll.h). One load once it was said. */
static inline void sl_ready_requests(void)
{
    if (!atomic_load_explicit(&sl_epoll_counted, memory_order_relaxed)) sl_epoll_count_waits();
}

void sl_ready_forget_known(int fd);

/* fd is being closed. */
static inline void sl_ready_forget(int fd)
{
    if ((unsigned)fd >= SL_FD_MAX ||
        atomic_load_explicit(&sl_ready_maybe[fd], memory_order_relaxed))
        sl_ready_forget_known(fd);
}

/* In a forked child: drop state that belongs to the parent. */
void sl_ready_after_fork_child(void);

#endif
