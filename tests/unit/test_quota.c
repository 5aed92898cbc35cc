/* SPDX-License-Identifier: BSD-2-Clause */
/* test_quota.c - calendar windows and the quota word, with an injected
 * clock: wall-clock dates for the windows, a monotonic clock for the word. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "../../core/limit/quota.h"
#include "testutil.h"

/* UTC dates as seconds since the epoch (from Python's calendar.timegm). */
#define JAN31_235959    1769903999ull
#define FEB01_0000      1769904000ull
#define MAR01_0000      1772323200ull
#define LEAP_FEB29_1200 1709208000ull
#define LEAP_MAR01_0000 1709251200ull
#define DEC31_2300      1798758000ull
#define JAN01_2027      1798761600ull
#define NOV22_2200      1795384800ull
#define NOV22_2300      1795388400ull
#define NOV23_0000      1795392000ull
#define DEC01_0000      1796083200ull

static void a_day_ends_at_utc_midnight(void **unused)
{
    (void)unused;
    assert_int_equal(sl_quota_window_end(JAN31_235959 * SEC, SL_QUOTA_DAY, 0), FEB01_0000 * SEC);
    assert_int_equal(sl_quota_window_end(FEB01_0000 * SEC, SL_QUOTA_DAY, 0),
                     (FEB01_0000 + 86400) * SEC);
    assert_int_equal(sl_quota_window_seconds(NOV22_2300 * SEC, SL_QUOTA_DAY, 0), 86400);
}

static void a_month_ends_on_the_first_of_the_next(void **unused)
{
    (void)unused;
    assert_int_equal(sl_quota_window_end(JAN31_235959 * SEC, SL_QUOTA_MONTH, 0), FEB01_0000 * SEC);
    assert_int_equal(sl_quota_window_end(FEB01_0000 * SEC, SL_QUOTA_MONTH, 0), MAR01_0000 * SEC);
    assert_int_equal(sl_quota_window_seconds(FEB01_0000 * SEC, SL_QUOTA_MONTH, 0), 28 * 86400);
    assert_int_equal(sl_quota_window_end(LEAP_FEB29_1200 * SEC, SL_QUOTA_MONTH, 0),
                     LEAP_MAR01_0000 * SEC);
    assert_int_equal(sl_quota_window_seconds(LEAP_FEB29_1200 * SEC, SL_QUOTA_MONTH, 0), 29 * 86400);
    assert_int_equal(sl_quota_window_end(DEC31_2300 * SEC, SL_QUOTA_MONTH, 0), JAN01_2027 * SEC);
}

static void an_offset_moves_the_edges_to_local_midnight(void **unused)
{
    (void)unused;
    /* UTC+1: local midnight of Nov 23 is 23:00 UTC on Nov 22 */
    assert_int_equal(sl_quota_window_end(NOV22_2200 * SEC, SL_QUOTA_DAY, 3600), NOV22_2300 * SEC);
    assert_int_equal(sl_quota_window_end(NOV22_2300 * SEC, SL_QUOTA_DAY, 3600),
                     (NOV22_2300 + 86400) * SEC);
    /* UTC-5: Nov 30 19:00 UTC... the month of Nov 30 local ends Dec 1 05:00 UTC */
    assert_int_equal(sl_quota_window_end((DEC01_0000 + 3600) * SEC, SL_QUOTA_MONTH, -5 * 3600),
                     (DEC01_0000 + 5 * 3600) * SEC);
}

/* A quota driven the way core/http/request.c drives it: the window end in
 * monotonic time is now + (wall end - wall now). */
struct clock {
    uint64_t mono, wall;
};

static bool take(uint64_t *state, const struct clock *c, uint64_t limit, uint64_t cost,
                 struct sl_verdict *v)
{
    uint64_t end = c->mono + (sl_quota_window_end(c->wall, SL_QUOTA_DAY, 0) - c->wall);
    return sl_quota_step(*state, limit, cost, end, c->mono, state, v);
}

static void advance(struct clock *c, uint64_t ns)
{
    c->mono += ns;
    c->wall += ns;
}

static void a_daily_quota_admits_its_count_then_resets_at_midnight(void **unused)
{
    (void)unused;
    struct clock c = {.mono = T0, .wall = NOV22_2200 * SEC};
    uint64_t state = 0;
    struct sl_verdict v;
    for (int i = 0; i < 100; i++) {
        assert_true(take(&state, &c, 100, 1, &v));
        advance(&c, 30 * SEC); /* 100 requests over 50 minutes */
    }
    assert_int_equal(v.remaining, 0);
    assert_false(take(&state, &c, 100, 1, &v));
    /* 22:50 now: retry at midnight, 70 minutes on */
    assert_int_equal(v.retry_ns, 70 * MIN);
    assert_int_equal(v.reset_ns, 70 * MIN);
    advance(&c, 70 * MIN - 1);
    assert_false(take(&state, &c, 100, 1, &v));
    advance(&c, 1); /* midnight */
    assert_true(take(&state, &c, 100, 1, &v));
    assert_int_equal(v.remaining, 99);
    assert_int_equal(v.reset_ns, DAY - 0);
}

static void a_monthly_quota_resets_on_the_first(void **unused)
{
    (void)unused;
    struct clock c = {.mono = T0, .wall = JAN31_235959 * SEC};
    uint64_t state = 0;
    struct sl_verdict v;
    uint64_t end = c.mono + (sl_quota_window_end(c.wall, SL_QUOTA_MONTH, 0) - c.wall);
    assert_true(sl_quota_step(state, 2, 2, end, c.mono, &state, &v));
    assert_false(sl_quota_step(state, 2, 1, end, c.mono, &state, &v));
    assert_int_equal(v.retry_ns, SEC);
    advance(&c, SEC);
    end = c.mono + (sl_quota_window_end(c.wall, SL_QUOTA_MONTH, 0) - c.wall);
    assert_true(sl_quota_step(state, 2, 1, end, c.mono, &state, &v));
    assert_int_equal(v.remaining, 1);
    assert_int_equal(v.reset_ns, 28 * DAY);
}

static void a_wall_clock_slewed_by_minutes_keeps_the_count(void **unused)
{
    (void)unused;
    struct clock c = {.mono = T0, .wall = NOV22_2200 * SEC};
    uint64_t state = 0;
    struct sl_verdict v;
    assert_true(take(&state, &c, 2, 2, &v));
    c.wall -= 5 * MIN; /* NTP stepped the wall clock back */
    assert_false(take(&state, &c, 2, 1, &v));
    c.wall += 10 * MIN;
    assert_false(take(&state, &c, 2, 1, &v));
}

static void a_refund_gives_back_only_in_the_same_window(void **unused)
{
    (void)unused;
    struct clock c = {.mono = T0, .wall = NOV22_2300 * SEC};
    uint64_t state = 0;
    struct sl_verdict v;
    uint64_t end = c.mono + (sl_quota_window_end(c.wall, SL_QUOTA_DAY, 0) - c.wall);
    assert_true(take(&state, &c, 1, 1, &v));
    assert_false(take(&state, &c, 1, 1, &v));
    state = sl_quota_refund(state, 1, end);
    assert_true(take(&state, &c, 1, 1, &v));
    /* a refund after midnight must not reach into the new window */
    advance(&c, HOUR);
    uint64_t new_end = c.mono + (sl_quota_window_end(c.wall, SL_QUOTA_DAY, 0) - c.wall);
    assert_int_equal(sl_quota_refund(state, 1, new_end), state);
}

static void the_word_is_idle_for_the_table_only_after_its_window(void **unused)
{
    (void)unused;
    const struct sl_limit *l = sl_quota_slot_limit();
    struct clock c = {.mono = T0, .wall = NOV22_2300 * SEC};
    uint64_t state = 0;
    struct sl_verdict v;
    assert_true(take(&state, &c, 10, 1, &v));
    assert_false(sl_limit_idle(l, state, c.mono + HOUR - SEC));
    assert_true(sl_limit_idle(l, state, c.mono + HOUR + SEC));
}

static void a_request_costing_more_than_the_quota_never_passes(void **unused)
{
    (void)unused;
    struct clock c = {.mono = T0, .wall = NOV22_2300 * SEC};
    uint64_t state = 0;
    struct sl_verdict v;
    assert_false(take(&state, &c, 5, 6, &v));
    assert_int_equal(v.retry_ns, SL_NEVER);
    assert_int_equal(state, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_day_ends_at_utc_midnight),
        cmocka_unit_test(a_month_ends_on_the_first_of_the_next),
        cmocka_unit_test(an_offset_moves_the_edges_to_local_midnight),
        cmocka_unit_test(a_daily_quota_admits_its_count_then_resets_at_midnight),
        cmocka_unit_test(a_monthly_quota_resets_on_the_first),
        cmocka_unit_test(a_wall_clock_slewed_by_minutes_keeps_the_count),
        cmocka_unit_test(a_refund_gives_back_only_in_the_same_window),
        cmocka_unit_test(the_word_is_idle_for_the_table_only_after_its_window),
        cmocka_unit_test(a_request_costing_more_than_the_quota_never_passes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL) != 0;
}
