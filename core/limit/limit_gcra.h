/* SPDX-License-Identifier: BSD-2-Clause */
/* limit_gcra.h - the GCRA step, inline: the table's decision path calls it
 * directly (core/limit/limit.c explains the algorithm). Include only from core/. */
#ifndef SL_LIMIT_GCRA_H
#define SL_LIMIT_GCRA_H

#include <stdbool.h>
#include <stdint.h>

#include "limit.h"

/* A TAT pushed forward by what a vendor said (sl_gcra_hold): the top bit
 * marks it, so the step does not clamp it as it clamps a TAT from a clock
 * read later than ours; the rest is the TAT. A TAT is ns of the monotonic
 * clock, far below 2^63. The first request allowed past it writes a plain
 * TAT again. */
#define SL_GCRA_HELD (1ull << 63)

/* The state that makes the next request of cost c pass no sooner than
 * `until` (gap_ns: burst_ns less c's cost), if that is later than what
 * `old` allows already; else old. */
static inline uint64_t sl_gcra_hold(uint64_t old, uint64_t until, uint64_t gap_ns)
{
    uint64_t tat = until + gap_ns;
    return (old & ~SL_GCRA_HELD) >= tat ? old : tat | SL_GCRA_HELD;
}

/* A request's cost in nanoseconds, never 0: a rate above one per
 * nanosecond is held to one per nanosecond rather than not limited. */
static inline uint64_t sl_gcra_cost_ns(const struct sl_limit *l, uint64_t cost)
{
    if (cost == 1 && l->cost1_ns) return l->cost1_ns; /* the common case (sl_limit_init) */
    /* the others in 64 bits where they fit: a 128-bit division is a library call */
    if (cost < (1ull << 20) && l->interval_ps < (1ull << 43)) {
        uint64_t ns = cost * l->interval_ps / 1000;
        return ns ? ns : 1;
    }
    unsigned __int128 ns = (unsigned __int128)cost * l->interval_ps / 1000;
    if (ns == 0 && cost) ns = 1;
    return ns > UINT64_MAX / 4 ? UINT64_MAX / 4 : (uint64_t)ns;
}

/* A held TAT beyond the horizon: denied until the bucket's time comes,
 * whatever the slack; nothing is published. Out of the common path. */
static inline void sl_gcra_held(const struct sl_limit *l, uint64_t tat, uint64_t now, uint64_t cost,
                                uint64_t *next, struct sl_verdict *v)
{
    uint64_t real = tat & ~SL_GCRA_HELD, allow_at = real + sl_gcra_cost_ns(l, cost);
    allow_at = allow_at > l->burst_ns ? allow_at - l->burst_ns : 0;
    v->limit = l->burst;
    v->allowed = false;
    v->wait_ns = 0;
    v->retry_ns = allow_at > now ? allow_at - now : 1;
    v->reset_ns = real > now ? real - now : 0;
    v->remaining = 0;
    *next = tat;
}

/* How many whole requests fit in `room` ns: floor(room * 1000 / interval_ps)
 * by a multiply with the precomputed reciprocal, which is low by at most
 * one, then corrected. A division here would cost more than the rest of a
 * decision. */
static inline uint64_t sl_gcra_requests_in(const struct sl_limit *l, uint64_t room)
{
    if (room >= (1ull << 53)) return (uint64_t)((unsigned __int128)room * 1000 / l->interval_ps);
    uint64_t r =
        room * l->per_ns_int + (uint64_t)(((unsigned __int128)room * l->per_ns_frac) >> 64);
    while ((unsigned __int128)(r + 1) * l->interval_ps <= (unsigned __int128)room * 1000)
        r++;
    return r;
}

/* The step; `remaining` false leaves v->remaining 0 on an allow: counting
 * the requests still in the burst is a good part of a decision, and a
 * connection's decision reads it only when it denies (the 429), where it is
 * 0 anyway. A constant at every call site, so each gets its own copy. */
static inline __attribute__((always_inline)) void
sl_gcra_step_ex(const struct sl_limit *l, uint64_t tat, uint64_t now, uint64_t cost, uint64_t slack,
                uint64_t *next, struct sl_verdict *v, bool remaining)
{
    uint64_t horizon = now + l->burst_ns + slack;
    if (__builtin_expect(tat > horizon, 0)) {
        if (!(tat & SL_GCRA_HELD)) {
            tat = horizon; /* backwards clock: no worse than empty */
        } else if ((tat & ~SL_GCRA_HELD) > horizon) {
            sl_gcra_held(l, tat, now, cost, next, v);
            return;
        } else {
            tat &= ~SL_GCRA_HELD; /* the hold is within reach: an ordinary TAT */
        }
    }
    uint64_t base = tat > now ? tat : now;
    uint64_t new_tat = base + sl_gcra_cost_ns(l, cost);
    uint64_t allow_at = new_tat > l->burst_ns ? new_tat - l->burst_ns : 0;

    v->limit = l->burst;
    if (allow_at <= now + slack) {
        v->allowed = true;
        v->wait_ns = allow_at > now ? allow_at - now : 0;
        v->retry_ns = 0;
        v->reset_ns = new_tat - now;
        if (remaining) {
            uint64_t room = now + l->burst_ns > new_tat ? now + l->burst_ns - new_tat : 0;
            v->remaining = sl_gcra_requests_in(l, room);
        } else {
            v->remaining = 0;
        }
        *next = new_tat;
    } else {
        v->allowed = false;
        v->wait_ns = 0;
        v->retry_ns =
            sl_gcra_cost_ns(l, cost) > l->burst_ns + slack ? UINT64_MAX / 4 : allow_at - now;
        v->reset_ns = tat > now ? tat - now : 0;
        v->remaining = 0;
        *next = tat;
    }
}

static inline void sl_gcra_step(const struct sl_limit *l, uint64_t tat, uint64_t now, uint64_t cost,
                                uint64_t slack, uint64_t *next, struct sl_verdict *v)
{
    sl_gcra_step_ex(l, tat, now, cost, slack, next, v, true);
}

#endif
