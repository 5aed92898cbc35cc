/* SPDX-License-Identifier: BSD-2-Clause */
/* limit_log.h - an exact sliding log: at most N requests in any rolling
 * period, for vendors that count "N in any minute" and punish N + 1.
 *
 * The log is a ring of N stamps (the times the last N requests passed) and
 * a head sequence, in memory the caller provides (shared between processes
 * like the table). A request passes when the stamp it would replace, the
 * oldest, is at least one period old. Lock-free: a request writes its stamp
 * with one compare-and-swap, then moves the head with another; a process
 * killed between the two leaves a stamp tagged with the head's sequence,
 * and the next caller moves the head for it. Memory: 8 bytes per N plus 8.
 *
 * Stamps are whole milliseconds, rounded up (a request counts a little
 * longer, never shorter), 42 bits: 139 years of a monotonic clock. Each
 * stamp carries the low 22 bits of its sequence, so N is at most
 * SL_LOG_MAX_COUNT. Stamps never go backwards (a stamp is at least the one
 * before it), so a process that read the clock and then stalled counts its
 * request from when the log moved on.
 */
#ifndef SL_LIMIT_LOG_H
#define SL_LIMIT_LOG_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "../verdict.h"

#define SL_LOG_MAX_COUNT 4096u
/* Words of the region a table keeps for logs (core/limit/table_log.c): a log of
 * N takes N + 1, so two of the largest size, or many small ones. */
#define SL_LOG_TABLE_WORDS (2 * (SL_LOG_MAX_COUNT + 1) + 14)

struct sl_log {
    _Atomic uint64_t head;   /* sequence of the next request to pass */
    _Atomic uint64_t ring[]; /* count stamps; all 0 is an empty log */
};

/* Bytes of a log for `count` requests. */
static inline uint64_t sl_log_bytes(uint64_t count)
{
    return sizeof(struct sl_log) + count * sizeof(uint64_t);
}

/* Decides one request at `now` (monotonic ns) against log `g` of limit `l`
 * (l->count stamps, window l->period_ns). `slack_ns` lets a request pass if
 * the oldest stamp leaves within that time (the delay action): wait_ns is
 * then exactly the time until it leaves, and the request is stamped then.
 * A denied request's retry_ns is exactly when the oldest stamp leaves. */
void sl_log_step(const struct sl_limit *l, struct sl_log *g, uint64_t now, uint64_t slack_ns,
                 struct sl_verdict *v);

#endif
