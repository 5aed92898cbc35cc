/* SPDX-License-Identifier: BSD-2-Clause */
/* testutil.h - what the unit tests share: time units, a stepping helper
 * that keeps a limiter's state word the way the table does, a small
 * deterministic random generator (runs must repeat exactly), and a
 * configuration loaded from inline rules alone.
 *
 * Include after <cmocka.h>'s prerequisites; nothing here reads a clock.
 */
#ifndef SL_TESTUTIL_H
#define SL_TESTUTIL_H

#include <stdbool.h>
#include <stdint.h>

#include "../../conf/conf.h"
#include "../../core/limit/limit.h"

#define NS   1ull
#define US   1000ull
#define MS   1000000ull
#define SEC  1000000000ull
#define MIN  (60 * SEC)
#define HOUR (3600 * SEC)
#define DAY  (86400 * SEC)

/* An arbitrary, window-aligned start far from 0 (a fresh state is 0). */
#define T0 (1000000 * SEC)

/* "Never": what the window algorithms report for a request that cannot pass. */
#define SL_NEVER (UINT64_MAX / 4)

/* One decision against *state, publishing the next state as the table
 * does (sl_table_decide publishes whatever sl_limit_step returns). */
static inline bool step(const struct sl_limit *l, uint64_t *state, uint64_t now, uint64_t cost,
                        uint64_t slack, struct sl_verdict *v)
{
    uint64_t next;
    sl_limit_step(l, *state, now, cost, slack, &next, v);
    *state = next;
    return v->allowed;
}

/* The same decision without publishing anything: "what if I asked now?" */
static inline bool probe(const struct sl_limit *l, uint64_t state, uint64_t now, uint64_t cost)
{
    uint64_t next;
    struct sl_verdict v;
    sl_limit_step(l, state, now, cost, 0, &next, &v);
    return v.allowed;
}

/* splitmix64: a fixed seed gives the same sequence on every run. */
static inline uint64_t rnd(uint64_t *seed)
{
    uint64_t z = (*seed += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* A configuration from inline rules (as `sluice run --in/--out` gives
 * them), no file; NULL with err filled when they do not load. */
static inline struct sl_config *load_rules(const char *rules, char *err, size_t errlen)
{
    enum sl_on_error on_error;
    return sl_conf_load(NULL, rules, &on_error, err, errlen);
}

#endif
