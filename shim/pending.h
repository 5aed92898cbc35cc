/* SPDX-License-Identifier: BSD-2-Clause */
/* pending.h - connects held back until their turn.
 *
 * A delayed connect that cannot sleep in place (a non-blocking socket, or
 * a blocking one whose wait a signal or SO_SNDTIMEO cut short) is held
 * back: the program is told EINPROGRESS (or EINTR), the socket is parked
 * by the readiness layer until its turn, and the connect is made then by
 * the first wait wrapper or I/O call that looks at it. A wait for a window
 * or a conns place is decided again at each retry time until max_delay;
 * out of time, the socket is left unconnected (writable with POLLHUP to
 * poll) and SO_ERROR, recv and send report the rule's errno, once. Closing
 * the socket before its turn gives the turn back.
 *
 * This is the only file that performs, re-decides or fails a held-back
 * connect; the readiness query (ready.c) only reads its state.
 */
#ifndef SL_PENDING_H
#define SL_PENDING_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "fd.h"

struct sl_decision;
struct sl_runtime;
struct sl_addr;

/* Holds back the connect of fd to sa that decision d let through after
 * d->wait_ns (or, with d->redecide_until, asks the rules again then).
 * Returns 0 (errno EINPROGRESS; the caller tells the readiness layer that
 * fd is not writable before e->connect_at: ready.h includes this file, so
 * this one does not include it), or -1 when fd cannot be tracked (the
 * caller connects now). */
int sl_pending_hold(int fd, const struct sockaddr *sa, socklen_t len, const struct sl_decision *d);

/* fd has a held-back connect, or one that failed and has not said so yet.
 * One load each: cheap. */
static inline bool sl_pending_held(struct sl_fd *e)
{
    return atomic_load_explicit(&e->pending_connect, memory_order_acquire) ||
           atomic_load_explicit(&e->connect_error, memory_order_relaxed);
}

/* A pure query for the readiness layer: true while fd is parked for its
 * held-back connect, with *wake lowered to when to look again. */
bool sl_pending_parked(struct sl_fd *e, uint64_t now, uint64_t *wake);

/* Makes (or decides again) the held-back connect of fd if its turn has
 * come. Keeps errno. */
void sl_pending_finish(int fd, struct sl_fd *e, uint64_t now);

/* For recv/send on fd: 0 when the call may go on (the connect was made),
 * else -1 with errno EAGAIN (not yet) or the failed connect's errno. */
int sl_pending_io(int fd, struct sl_fd *e);

/* connect() again: EALREADY while held, or the failure, once. Returns -1. */
int sl_pending_again(struct sl_fd *e);

/* SO_ERROR of fd's failed held-back connect (consumed), or 0. */
int sl_pending_error(struct sl_fd *e);

/* fd is closed: a connect still held gives its turn back. */
void sl_pending_drop(struct sl_fd *e);

#endif
