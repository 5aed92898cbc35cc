/* SPDX-License-Identifier: BSD-2-Clause */
/* pending.c - connects held back until their turn: see pending.h. */
#include <errno.h>
#include <string.h>

#include "../core/clock.h"
#include "../core/policy/connect.h"
#include "pending.h"
#include "shim.h"

int sl_pending_hold(int fd, const struct sockaddr *sa, socklen_t len, const struct sl_decision *d)
{
    struct sl_fd *e = sl_fd_track(fd);
    if (!e || len > sizeof e->peer) return -1;
    e->redecide = d->redecide_until != 0;
    e->connect_deadline = d->redecide_until;
    if (!e->redecide) sl_fd_carry(fd, d);      /* a re-decided connect carries its final decision */
    e->took = d->redecide_until ? 0 : d->took; /* given back if closed before its turn */
    memcpy(&e->peer, sa, len);
    e->peerlen = len;
    e->connect_at = sl_clock_now() + d->wait_ns;
    atomic_store(&e->ready_at[SL_IO_SEND], e->connect_at);
    atomic_store(&e->pending_connect, 1);
    errno = EINPROGRESS;
    return 0;
}

/* Decides a held-back connect again (a window or a conns place): true when
 * it was made or failed, false when put off. */
static bool redecide(int fd, struct sl_fd *e, uint64_t now)
{
    struct sl_runtime *rt = atomic_load(&sl_runtime_ptr);
    struct sl_addr dst;
    if (!rt || !sl_addr_from_sockaddr(&dst, (struct sockaddr *)&e->peer, e->peerlen)) return true;
    struct sl_decision d;
    int err = 0;
    switch (sl_decide_connect(rt, &dst, 0, e->connect_deadline, now, &d, &err)) {
    case SL_CONNECT_TURN: /* a GCRA turn booked now: connect then */
        sl_fd_carry(fd, &d);
        e->redecide = false;
        e->took = d.took;
        e->connect_at = now + d.wait_ns;
        atomic_store(&e->ready_at[SL_IO_SEND], e->connect_at);
        return false;
    case SL_CONNECT_GO: {
        sl_fd_carry(fd, &d);
        e->redecide = false;
        e->took = d.took;
        atomic_store(&e->ready_at[SL_IO_SEND], 0);
        int rc = REAL(connect)(fd, (struct sockaddr *)&e->peer, e->peerlen);
        (void)rc; /* EINPROGRESS as usual */
        return true;
    }
    case SL_CONNECT_RETRY:
        e->connect_at = now + d.v.retry_ns;
        atomic_store(&e->ready_at[SL_IO_SEND], e->connect_at);
        return false;
    case SL_CONNECT_DENY:
        break;
    }
    /* Out of time: the socket stays unconnected, so the program sees it
     * writable with POLLHUP and reads this errno from SO_ERROR. */
    atomic_store(&e->connect_error, err);
    atomic_store(&e->ready_at[SL_IO_SEND], 0);
    return true;
}

void sl_pending_finish(int fd, struct sl_fd *e, uint64_t now)
{
    if (now < e->connect_at) return;
    int one = 1;
    if (!atomic_compare_exchange_strong(&e->pending_connect, &one, 2)) return;
    int saved = errno;
    bool done = true;
    if (e->redecide) {
        done = redecide(fd, e, now);
    } else {
        atomic_store(&e->ready_at[SL_IO_SEND], 0);
        int rc = REAL(connect)(fd, (struct sockaddr *)&e->peer, e->peerlen);
        (void)rc; /* EINPROGRESS as usual; an immediate failure shows in SO_ERROR */
    }
    atomic_store(&e->pending_connect, done ? 0 : 1);
    errno = saved;
}

bool sl_pending_parked(struct sl_fd *e, uint64_t now, uint64_t *wake)
{
    /* connect_at was written before pending_connect was set */
    int p = atomic_load_explicit(&e->pending_connect, memory_order_acquire);
    if (!p) return false;
    /* due but not made yet (another thread is at it, or put off): look soon */
    uint64_t at = p == 1 && e->connect_at > now ? e->connect_at : now + 1000000;
    if (at < *wake) *wake = at;
    return true;
}

int sl_pending_io(int fd, struct sl_fd *e)
{
    sl_pending_finish(fd, e, sl_clock_now());
    if (atomic_load(&e->pending_connect)) {
        errno = EAGAIN;
        return -1;
    }
    int failed = atomic_exchange(&e->connect_error, 0);
    if (failed) { /* the held-back connect failed: report it as the kernel would */
        errno = failed;
        return -1;
    }
    return 0;
}

int sl_pending_again(struct sl_fd *e)
{
    int failed = atomic_exchange(&e->connect_error, 0);
    errno = failed ? failed : EALREADY;
    return -1;
}

int sl_pending_error(struct sl_fd *e)
{
    return atomic_exchange(&e->connect_error, 0);
}

void sl_pending_drop(struct sl_fd *e)
{
    int one = 1;
    if (!atomic_compare_exchange_strong(&e->pending_connect, &one, 0) || !e->took) return;
    struct sl_runtime *rt = atomic_load(&sl_runtime_ptr);
    struct sl_addr dst;
    if (rt && sl_addr_from_sockaddr(&dst, (struct sockaddr *)&e->peer, e->peerlen))
        sl_decide_out_refund(rt, &dst, e->took, sl_clock_now());
}
