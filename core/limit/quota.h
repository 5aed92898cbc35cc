/* SPDX-License-Identifier: BSD-2-Clause */
/* quota.h - quotas over calendar windows: "10000/d", "1000000/month".
 *
 * A window is a UTC day or a calendar month, shifted by an offset from UTC
 * (quota_offset, in seconds: the windows then begin at local midnight of
 * that zone; a fixed offset, no daylight saving). The count lives in one
 * word of the shared table, so every process sharing the table shares the
 * quota and a named table keeps it across restarts of the program (not
 * across a reboot: the table is in /dev/shm).
 *
 * The word: [window end : 36][count : 28]. The end is CLOCK_MONOTONIC
 * nanoseconds rounded up to 2^28 ns (0.27 s), which keeps the word a valid
 * GCRA state for the table: a slot is idle (reusable) only once its window
 * has ended. A state whose end lies more than an hour before the end of
 * the current window belongs to a past window and counts 0; the hour
 * absorbs the wall clock being stepped or slewed, whose windows the
 * monotonic ends are computed from. A state whose end lies more than an
 * hour after it belongs to the next window (calls queued for it under
 * action = delay booked it) and makes the current one full. Counts stop at
 * 2^28 - 1 per window.
 */
#ifndef SL_QUOTA_H
#define SL_QUOTA_H

#include <stdbool.h>
#include <stdint.h>

#include "limit.h"
#include "../rule.h"

#define SL_QUOTA_MAX ((1ull << 28) - 1)

/* The wall-clock time (ns since the epoch, UTC) at which the window
 * holding `wall_ns` ends. */
uint64_t sl_quota_window_end(uint64_t wall_ns, enum sl_quota_window w, int32_t offset_s);
/* Its length in seconds (for RateLimit-Policy's w). */
uint64_t sl_quota_window_seconds(uint64_t wall_ns, enum sl_quota_window w, int32_t offset_s);

/* One request of `cost` against a quota of `limit` per window, the current
 * window ending at monotonic time end_mono. Writes the word to publish to
 * *next and fills v (remaining, reset, retry: the window's end). */
bool sl_quota_step(uint64_t old, uint64_t limit, uint64_t cost, uint64_t end_mono, uint64_t now,
                   uint64_t *next, struct sl_verdict *v);
/* Gives back a request counted by sl_quota_step. */
uint64_t sl_quota_refund(uint64_t state, uint64_t cost, uint64_t end_mono);
/* The limit a quota's slot is claimed with: a GCRA limit, for which the
 * table judges the quota word idle once its window has ended. */
const struct sl_limit *sl_quota_slot_limit(void);

#endif
