/* SPDX-License-Identifier: BSD-2-Clause */
/* table_log.c - the exact sliding logs of `algorithm = log` rules, in a
 * region of the table beside the buckets: SL_LOG_WORDS words, enough for
 * two logs of the largest size (SL_LOG_MAX_COUNT) or many small ones.
 *
 * A rule entry gets its log the first time it decides: the first process
 * marks the entry as being made (1), takes words from the region and
 * publishes where they are; the others wait the few instructions that
 * takes. A log is never given back (the region is bounded, and a rule
 * keeps its entry for the table's life); a rule whose count changes (a
 * reload) gets a new one while there is room.
 */
#include <stdatomic.h>
#include <string.h>

#include "limit_log.h"
#include "table_int.h"

#define COUNT_BITS 13 /* SL_LOG_MAX_COUNT fits */
_Static_assert(SL_LOG_MAX_COUNT < (1u << COUNT_BITS), "a log's count fits its bits");
_Static_assert(SL_LOG_WORDS + 1 < (1u << (32 - COUNT_BITS)), "a log's place fits its bits");

struct sl_log *sl_table_log(struct sl_table *t, int rule, uint64_t count)
{
    if (rule < 0 || rule >= SL_MAX_RULES || count == 0 || count > SL_LOG_MAX_COUNT) return NULL;
    _Atomic uint32_t *at = &t->hdr->log_at[rule];
    for (int spins = 0; spins < 1000000; spins++) {
        uint32_t cur = atomic_load_explicit(at, memory_order_acquire);
        if (cur > 1 && (cur & ((1u << COUNT_BITS) - 1)) == count)
            return (struct sl_log *)(void *)(t->logs + (cur >> COUNT_BITS) - 1);
        if (cur == 1) continue; /* another process is making it */
        if (!atomic_compare_exchange_strong(at, &cur, 1)) continue;
        uint32_t words = (uint32_t)(sl_log_bytes(count) / sizeof(uint64_t));
        uint32_t from = atomic_fetch_add(&t->hdr->log_next, words);
        if (from + words > SL_LOG_WORDS) { /* no room: the entry keeps what it had */
            atomic_fetch_sub(&t->hdr->log_next, words);
            atomic_store_explicit(at, cur, memory_order_release);
            return NULL;
        }
        memset((void *)(t->logs + from), 0, words * sizeof(uint64_t));
        /* place + 1: a published entry is never 0 (none) or 1 (being made) */
        atomic_store_explicit(at, (from + 1) << COUNT_BITS | (uint32_t)count, memory_order_release);
        return (struct sl_log *)(void *)(t->logs + from);
    }
    return NULL;
}
