/* SPDX-License-Identifier: BSD-2-Clause */
/* limit.h - rate-limit algorithms over one 64-bit word of state.
 *
 * Each algorithm is a pure function: (old state, now, cost) -> (new state,
 * verdict). The caller owns the word and publishes the new value with a
 * compare-and-swap, so the same code serves the shared table, the overflow
 * buckets and the unit tests, which drive `now` by hand. A state of 0 is a
 * fresh bucket for every algorithm.
 */
#ifndef SL_LIMIT_H
#define SL_LIMIT_H

#include <stdbool.h>
#include <stdint.h>

#include "../verdict.h" /* struct sl_limit, struct sl_verdict */

/* Fills the derived fields. Returns 0, or -1 if the numbers cannot work
 * (count or period zero, burst zero for GCRA, a window count too large). */
int sl_limit_init(struct sl_limit *l, enum sl_alg alg, uint64_t count, uint64_t period_ns,
                  uint64_t burst);

/* Decides one request of `cost` at `now` against state `old`.
 * `slack_ns` lets a GCRA request pass if it can go within that time (the
 * outbound delay action): the verdict's wait_ns says how long to wait. The
 * window algorithms ignore slack. Writes the state to publish to *next
 * (unchanged when denied). */
void sl_limit_step(const struct sl_limit *l, uint64_t old, uint64_t now, uint64_t cost,
                   uint64_t slack_ns, uint64_t *next, struct sl_verdict *v);

/* Takes up to `want` units (bytes) from a GCRA bucket: returns how many
 * and the state to publish in *next. When at least min(want, `quantum`,
 * burst) units are there, it grants what is there up to `want` and
 * *wait_ns is 0 (partial grants are the point: a read or write may be
 * shorter than asked). Otherwise it queues: it takes that minimum at once,
 * at the bucket's far end, and *wait_ns says how long until the bucket has
 * refilled up to it, when the caller may use it (turn.h). A throttled
 * transfer so moves in quanta, not in the slivers that build up between
 * two calls, and callers that queue one after another are served in that
 * order: the state is the queue. Never returns 0 for a `want` above 0. */
uint64_t sl_limit_take(const struct sl_limit *l, uint64_t old, uint64_t now, uint64_t want,
                       uint64_t quantum, uint64_t *next, uint64_t *wait_ns);

/* Gives back a request that passed but was then not used (another rule
 * denied it). */
uint64_t sl_limit_refund(const struct sl_limit *l, uint64_t state, uint64_t now, uint64_t cost);

/* True when the state holds no information any more: the bucket has
 * refilled (GCRA) or its windows have passed. Such a slot may be reused. */
bool sl_limit_idle(const struct sl_limit *l, uint64_t state, uint64_t now);

#endif
