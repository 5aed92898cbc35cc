/* SPDX-License-Identifier: BSD-2-Clause */
/* quota.c - calendar windows and the quota word (see quota.h).
 *
 * Calendar arithmetic is Howard Hinnant's days_from_civil / civil_from_days
 * ("chrono-Compatible Low-Level Date Algorithms"): exact for the proleptic
 * Gregorian calendar, no tables, no time zone database, no locale, and so
 * testable with any date.
 */
#include "quota.h"

#define END_UNIT  (1ull << 28)
#define COUNT_MAX SL_QUOTA_MAX
#define TOLERANCE (3600ull * SL_NS_PER_SEC)
#define DAY_S     86400

static int64_t days_from_civil(int64_t y, unsigned m, unsigned d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    unsigned yoe = (unsigned)(y - era * 400);
    unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
    unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + (int64_t)doe - 719468;
}

static void civil_from_days(int64_t z, int64_t *y, unsigned *m)
{
    z += 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    unsigned doe = (unsigned)(z - era * 146097);
    unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    unsigned mp = (5 * doy + 2) / 153;
    *m = mp < 10 ? mp + 3 : mp - 9;
    *y = (int64_t)yoe + era * 400 + (*m <= 2);
}

static int64_t floor_div(int64_t a, int64_t b)
{
    return a / b - (a % b != 0 && (a < 0) != (b < 0));
}

/* The window holding local second t, as local seconds [start, end). */
static void window(int64_t t, enum sl_quota_window w, int64_t *start, int64_t *end)
{
    int64_t day = floor_div(t, DAY_S);
    if (w == SL_QUOTA_MONTH) {
        int64_t y;
        unsigned m;
        civil_from_days(day, &y, &m);
        *start = days_from_civil(y, m, 1) * DAY_S;
        *end = (m == 12 ? days_from_civil(y + 1, 1, 1) : days_from_civil(y, m + 1, 1)) * DAY_S;
    } else {
        *start = day * DAY_S;
        *end = *start + DAY_S;
    }
}

uint64_t sl_quota_window_end(uint64_t wall_ns, enum sl_quota_window w, int32_t offset_s)
{
    int64_t t = (int64_t)(wall_ns / SL_NS_PER_SEC) + offset_s, start, end;
    window(t, w, &start, &end);
    return (uint64_t)(end - offset_s) * SL_NS_PER_SEC;
}

uint64_t sl_quota_window_seconds(uint64_t wall_ns, enum sl_quota_window w, int32_t offset_s)
{
    int64_t t = (int64_t)(wall_ns / SL_NS_PER_SEC) + offset_s, start, end;
    window(t, w, &start, &end);
    return (uint64_t)(end - start);
}

static uint64_t round_end(uint64_t end_mono)
{
    return (end_mono + END_UNIT - 1) & ~(END_UNIT - 1);
}

/* The count the word holds for the window ending at end (rounded). A word
 * of a later window was booked by calls waiting for it (action = delay),
 * which happens only once this window is full: it counts as full. */
static uint64_t count_in(uint64_t state, uint64_t end)
{
    uint64_t stored = state & ~(END_UNIT - 1);
    if (state == 0 || stored + TOLERANCE < end) return 0; /* a past window */
    if (stored > end + TOLERANCE) return COUNT_MAX;       /* a later window */
    return state & (END_UNIT - 1);
}

bool sl_quota_step(uint64_t old, uint64_t limit, uint64_t cost, uint64_t end_mono, uint64_t now,
                   uint64_t *next, struct sl_verdict *v)
{
    uint64_t end = round_end(end_mono);
    uint64_t used = count_in(old, end);
    uint64_t left = end_mono > now ? end_mono - now : 0;
    if (limit > COUNT_MAX) limit = COUNT_MAX;
    v->limit = limit;
    v->wait_ns = 0;
    v->reset_ns = left;
    if (used + cost <= limit) {
        used += cost;
        v->allowed = true;
        v->retry_ns = 0;
        v->remaining = limit - used;
        *next = end | used;
        return true;
    }
    v->allowed = false;
    v->retry_ns = cost > limit ? UINT64_MAX / 4 : left;
    v->remaining = limit - used;
    *next = old;
    return false;
}

uint64_t sl_quota_refund(uint64_t state, uint64_t cost, uint64_t end_mono)
{
    uint64_t end = round_end(end_mono);
    uint64_t used = count_in(state, end);
    if (used == 0 || (state & ~(END_UNIT - 1)) > end + TOLERANCE) return state;
    return (state & ~(END_UNIT - 1)) | (used > cost ? used - cost : 0);
}

const struct sl_limit *sl_quota_slot_limit(void)
{
    /* only alg and period reach the slot's meta; any valid GCRA will do */
    static const struct sl_limit l = {.alg = SL_ALG_GCRA,
                                      .count = 1,
                                      .period_ns = SL_NS_PER_SEC,
                                      .burst = 1,
                                      .interval_ps = 1000000000000ull,
                                      .burst_ns = SL_NS_PER_SEC,
                                      .cost1_ns = SL_NS_PER_SEC};
    return &l;
}
