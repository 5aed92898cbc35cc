/* SPDX-License-Identifier: BSD-2-Clause */
/* ramp.c - see ramp.h. */
#include "ramp.h"

#include "../clock.h"

uint32_t sl_ramp_step(const struct sl_ramp *r, int64_t wall_ns)
{
    int64_t from_ns = r->from_s * (int64_t)SL_NS_PER_SEC;
    if (!r->steps || wall_ns < from_ns) return 0;
    uint64_t k = (uint64_t)(wall_ns - from_ns) / r->every_ns;
    return k > r->steps ? r->steps : (uint32_t)k;
}

void sl_ramp_limit(const struct sl_limit *start, const struct sl_ramp *r, uint32_t k,
                   struct sl_limit *out)
{
    if (k == 0 || !r->steps) {
        *out = *start;
        return;
    }
    /* a straight line from the start's N to the final one, rounded to the
     * nearest whole request, never below 1 */
    int64_t a = (int64_t)start->count, b = (int64_t)r->to_count;
    int64_t d = (b - a) * (int64_t)k;
    int64_t n = a + (d >= 0 ? d + r->steps / 2 : d - (int64_t)(r->steps / 2)) / (int64_t)r->steps;
    uint64_t count = n < 1 ? 1 : (uint64_t)n;
    if (sl_limit_init(out, start->alg, count, start->period_ns,
                      r->burst_given ? start->burst : count) != 0)
        *out = *start;
}
