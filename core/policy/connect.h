/* SPDX-License-Identifier: BSD-2-Clause */
/* connect.h - the verdict of an outbound connect.
 *
 * From the rules' decision (policy.h: sl_decide_out) and how long the
 * connect has waited so far, one step says what happens to it: made now,
 * made at a turn booked for it (a GCRA reservation), asked again later (a
 * window or a connections-at-once place cannot be booked), or refused.
 * `delay` rules wait at most max_delay from the connect's first ask; a
 * turn further away than that fails at once rather than after a pointless
 * wait; `reject` rules refuse at once. A refusal is counted and logged
 * here, as an inbound connection's is in policy.c. The shim carries the
 * step out (shim/connect.c sleeps or holds the connect back, shim/pending.c
 * makes it at its time), with time passed in, never read here.
 */
#ifndef SL_CONNECT_H
#define SL_CONNECT_H

#include <stdint.h>

#include "policy.h"

enum sl_connect_step {
    SL_CONNECT_GO,    /* connect now: d carries the decision */
    SL_CONNECT_TURN,  /* a turn was booked: connect at now + d->wait_ns; d carries it */
    SL_CONNECT_RETRY, /* nothing can be booked: ask again at now + d->v.retry_ns, which is
                         before d->redecide_until (the last time it may be asked) */
    SL_CONNECT_DENY,  /* refused, counted and logged: fail with *err */
};

/* One step of the decision of a connect to dst at `now`. `start` is when
 * the program asked for it; `until` is 0 at that first ask, or the
 * d->redecide_until a RETRY gave, for a connect asked again. */
enum sl_connect_step sl_decide_connect(struct sl_runtime *rt, const struct sl_addr *dst,
                                       uint64_t start, uint64_t until, uint64_t now,
                                       struct sl_decision *d, int *err);

#endif
