/* SPDX-License-Identifier: BSD-2-Clause */
/* verdict.h - what a rate limit is and what a decision answers: the types
 * the algorithms share (limit.c, limit_log.c, window.h) and that their
 * callers pass around. Kept apart from limit.h so the algorithms can use
 * them without depending on each other's module.
 */
#ifndef SL_VERDICT_H
#define SL_VERDICT_H

#include <stdbool.h>
#include <stdint.h>

#define SL_NS_PER_SEC 1000000000ull

enum sl_alg {
    SL_ALG_GCRA,    /* token bucket as a theoretical arrival time */
    SL_ALG_SLIDING, /* sliding window counter: two windows, weighted */
    SL_ALG_FIXED,   /* fixed window: counts reset at each window edge */
    SL_ALG_LOG,     /* exact sliding log (limit_log.h): never in a table slot */
};

/* Window algorithms pack counts into the state word. */
#define SL_SLIDING_MAX_COUNT ((1u << 20) - 1)
#define SL_FIXED_MAX_COUNT   0xffffffffu

struct sl_limit {
    enum sl_alg alg;
    uint64_t count;     /* N of N per period */
    uint64_t period_ns; /* the period (and window length) */
    uint64_t burst;     /* GCRA: requests that may pass at once */
    /* derived by sl_limit_init */
    uint64_t interval_ps; /* GCRA emission interval, picoseconds */
    uint64_t burst_ns;    /* GCRA: burst * interval */
    uint64_t cost1_ns;    /* GCRA: a request of cost 1, sl_gcra_cost_ns(l, 1) */
    uint64_t per_ns_int;  /* GCRA: requests per ns, whole part and 64-bit fraction: */
    uint64_t per_ns_frac; /*   remaining is computed without a division */
};

struct sl_verdict {
    bool allowed;
    uint64_t wait_ns;   /* allowed: how long the caller must wait first (delay mode) */
    uint64_t retry_ns;  /* denied: time until this request would pass */
    uint64_t reset_ns;  /* time until the bucket is whole again */
    uint64_t remaining; /* requests that could pass now after this one */
    uint64_t limit;     /* the quota reported to clients */
};

/* A limit that steps from its rate to another over time (core/limit/ramp.c):
 * part of what a rule says, so it lives with the limit's own type. */
struct sl_ramp {
    uint64_t to_count; /* the final N, in the start rate's period */
    int64_t from_s; /* when the ramp starts (unix seconds, UTC); the first step one `every` later */
    uint64_t every_ns; /* between steps */
    uint32_t steps;    /* 0: no ramp */
    bool burst_given;  /* keep the start limit's burst */
};

#endif
