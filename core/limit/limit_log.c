/* SPDX-License-Identifier: BSD-2-Clause */
/* limit_log.c - the exact sliding log (see limit_log.h). */
#include "limit_log.h"

#define TAG_BITS  22
#define TAG_MASK  ((1ull << TAG_BITS) - 1)
#define NS_PER_MS 1000000ull
#define MAX_TRIES 64 /* compare-and-swap rounds before failing open */

static inline uint64_t stamp_ms(uint64_t e)
{
    return e >> TAG_BITS;
}
static inline uint64_t stamp_tag(uint64_t e)
{
    return e & TAG_MASK;
}
static inline uint64_t make_stamp(uint64_t ms, uint64_t seq)
{
    return ms << TAG_BITS | (seq & TAG_MASK);
}

void sl_log_step(const struct sl_limit *l, struct sl_log *g, uint64_t now, uint64_t slack_ns,
                 struct sl_verdict *v)
{
    const uint64_t n = l->count;
    *v = (struct sl_verdict){.allowed = true, .limit = n};
    for (int tries = 0; tries < MAX_TRIES; tries++) {
        uint64_t h = atomic_load_explicit(&g->head, memory_order_acquire);
        _Atomic uint64_t *slot = &g->ring[h % n];
        uint64_t e = atomic_load_explicit(slot, memory_order_acquire);
        if (e && stamp_tag(e) == (h & TAG_MASK)) {
            /* written for h by a caller that has not moved the head (or died) */
            atomic_compare_exchange_strong(&g->head, &h, h + 1);
            continue;
        }
        /* e is the stamp of request h - n (0 while the log is not full) */
        uint64_t at = now; /* when this request passes */
        if (e) {
            uint64_t leaves = stamp_ms(e) * NS_PER_MS + l->period_ns;
            if (leaves > now) {
                if (leaves - now > slack_ns) {
                    v->allowed = false;
                    v->retry_ns = leaves - now;
                    v->reset_ns = leaves - now;
                    return;
                }
                at = leaves;
                v->wait_ns = leaves - now;
            }
        }
        uint64_t ms = (at + NS_PER_MS - 1) / NS_PER_MS;
        uint64_t prev = atomic_load_explicit(&g->ring[(h + n - 1) % n], memory_order_acquire);
        if (stamp_ms(prev) > ms) ms = stamp_ms(prev);
        if (!atomic_compare_exchange_strong(slot, &e, make_stamp(ms, h))) continue;
        atomic_compare_exchange_strong(&g->head, &h, h + 1); /* or someone did it for us */
        /* remaining: stamps that have left by `at`, beyond the one just taken */
        uint64_t left = 0;
        for (uint64_t i = 1; i < n; i++) {
            uint64_t o = atomic_load_explicit(&g->ring[(h + i) % n], memory_order_relaxed);
            if (o && stamp_ms(o) * NS_PER_MS + l->period_ns > at) break;
            left++;
        }
        v->remaining = left;
        v->reset_ns = ms * NS_PER_MS + l->period_ns - now;
        return;
    }
    /* contention beyond reason: fail open, as the shim does on any failure */
}
