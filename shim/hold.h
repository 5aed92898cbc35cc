/* SPDX-License-Identifier: BSD-2-Clause */
/* hold.h - the one hold step: a call that may not go on before a time
 * (a request head's turn, a byte budget, a swallowed request's responses)
 * is held here, whoever asks (reqin.c, reqout.c, io.c).
 *   - a non-blocking descriptor: EAGAIN at once, and the readiness layer
 *     (ready.h) reports the descriptor ready at that time, not before;
 *   - a blocking one: the call sleeps until then; the socket's timeout
 *     (SO_RCVTIMEO / SO_SNDTIMEO, read at the first wait and kept for the
 *     whole call) and signals keep their meaning (wait.h).
 * One struct sl_hold lives for one call, across its waits. */
#ifndef SL_HOLD_H
#define SL_HOLD_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#include "fd.h"

struct sl_hold {
    int fd;
    struct sl_fd *e;
    enum sl_io io;
    int nonblock;         /* -1: asked at the first hold (fcntl), then 0 or 1 */
    bool held_read;       /* non-blocking: bytes sluice keeps are announced then too */
    bool deadline_known;  /* deadline was read (0: the socket has no timeout) */
    uint64_t deadline;    /* the call's end by its socket timeout */
    const sigset_t *mask; /* blocking: the mask to wait under (io.c), NULL: the caller's */
};

/* A hold for a call on fd; nonblock: the call said so itself (MSG_DONTWAIT). */
static inline struct sl_hold sl_hold_for(int fd, struct sl_fd *e, enum sl_io io, bool nonblock)
{
    return (struct sl_hold){.fd = fd, .e = e, .io = io, .nonblock = nonblock ? 1 : -1};
}

/* Whether the call does not block (asked once). */
bool sl_hold_nonblocking(struct sl_hold *h);

/* Holds the call until `until` (now: when it was decided). 0: the time
 * came, decide again; -1 with errno EAGAIN (non-blocking, or the socket's
 * timeout came) or EINTR. */
int sl_hold_until(struct sl_hold *h, uint64_t now, uint64_t until);

#endif
