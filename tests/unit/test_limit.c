/* SPDX-License-Identifier: BSD-2-Clause */
/* test_limit.c - the three rate-limit algorithms, driven by an injected
 * clock: every `now` below is a number the test chose.
 *
 * Most GCRA tests use 20/s with a burst of 10: the emission interval T is
 * exactly 50 ms and a full bucket holds 500 ms of credit, so every expected
 * value can be checked by hand.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdbool.h>

#include "../../core/limit/limit.h"
#include "testutil.h"

static struct sl_limit gcra(uint64_t count, uint64_t period, uint64_t burst)
{
    struct sl_limit l;
    assert_int_equal(sl_limit_init(&l, SL_ALG_GCRA, count, period, burst), 0);
    return l;
}

static struct sl_limit window(enum sl_alg alg, uint64_t count, uint64_t period)
{
    struct sl_limit l;
    assert_int_equal(sl_limit_init(&l, alg, count, period, 0), 0);
    return l;
}

/* Requests of `cost` at one instant until one is denied; returns how many passed. */
static uint64_t drain(const struct sl_limit *l, uint64_t *state, uint64_t now, uint64_t cost)
{
    struct sl_verdict v;
    uint64_t n = 0;
    while (step(l, state, now, cost, 0, &v))
        n++;
    return n;
}

/* ---- GCRA ------------------------------------------------------------ */

static void gcra_passes_exactly_the_burst_at_one_instant(void **unused)
{
    (void)unused;
    struct sl_limit l = gcra(20, SEC, 10);
    uint64_t s = 0;
    assert_int_equal(drain(&l, &s, T0, 1), 10);
}

static void gcra_denies_the_request_after_the_burst_with_retry_of_one_interval(void **unused)
{
    (void)unused;
    struct sl_limit l = gcra(20, SEC, 10);
    uint64_t s = 0;
    struct sl_verdict v;
    for (int i = 0; i < 10; i++)
        assert_true(step(&l, &s, T0, 1, 0, &v));
    uint64_t before = s;
    assert_false(step(&l, &s, T0, 1, 0, &v));
    assert_int_equal(v.retry_ns, 50 * MS);
    assert_int_equal(v.reset_ns, 500 * MS);
    assert_int_equal(v.remaining, 0);
    assert_int_equal(v.limit, 10);
    assert_int_equal(s, before); /* a denial publishes nothing */
}

static void gcra_then_passes_exactly_one_request_per_interval(void **unused)
{
    (void)unused;
    struct sl_limit l = gcra(20, SEC, 10);
    uint64_t s = 0;
    struct sl_verdict v;
    assert_int_equal(drain(&l, &s, T0, 1), 10);
    for (uint64_t k = 1; k <= 1000; k++) {
        uint64_t t = T0 + k * 50 * MS;
        assert_false(probe(&l, s, t - 1, 1));
        assert_true(step(&l, &s, t, 1, 0, &v));
        assert_false(step(&l, &s, t, 1, 0, &v));
        assert_int_equal(v.retry_ns, 50 * MS);
    }
}

static void gcra_reports_remaining_and_reset_after_each_request(void **unused)
{
    (void)unused;
    struct sl_limit l = gcra(20, SEC, 10);
    uint64_t s = 0;
    struct sl_verdict v;
    for (uint64_t k = 1; k <= 10; k++) {
        assert_true(step(&l, &s, T0, 1, 0, &v));
        assert_int_equal(v.remaining, 10 - k);
        assert_int_equal(v.reset_ns, k * 50 * MS);
        assert_int_equal(v.wait_ns, 0);
        assert_int_equal(v.retry_ns, 0);
        assert_int_equal(v.limit, 10);
    }
    /* half an interval later: still nothing whole to spend */
    assert_false(step(&l, &s, T0 + 25 * MS, 1, 0, &v));
    assert_int_equal(v.retry_ns, 25 * MS);
    assert_int_equal(v.reset_ns, 475 * MS);
}

/* The cost of one request, made once by sl_limit_init (cost1_ns), is the
 * general formula's: whole nanoseconds of the interval, never 0. */
static void gcra_one_request_costs_its_interval_in_whole_nanoseconds(void **unused)
{
    (void)unused;
    const struct {
        uint64_t count, period_ns, want;
    } rates[] = {
        {1, SEC, SEC},                 /* 1/s */
        {3, SEC, 333333333},           /* 333,333,333.33 ns: cut */
        {7, 1000, 142},                /* 142.857 ns */
        {1000000000, SEC, 1},          /* 1 ns */
        {3000000000ull, SEC, 1},       /* 0.33 ns: held to one per ns */
        {50, 60 * SEC, 1200000000ull}, /* 50/min */
    };
    for (size_t i = 0; i < sizeof rates / sizeof rates[0]; i++) {
        struct sl_limit l;
        assert_int_equal(sl_limit_init(&l, SL_ALG_GCRA, rates[i].count, rates[i].period_ns, 1), 0);
        assert_int_equal(l.cost1_ns, rates[i].want);
        /* one request takes cost1_ns of the bucket: the next passes then */
        struct sl_verdict v;
        uint64_t s = 0, next;
        sl_limit_step(&l, s, T0, 1, 0, &next, &v);
        assert_true(v.allowed);
        assert_int_equal(next, T0 + rates[i].want);
    }
}

static void gcra_charges_a_cost_of_three_as_three_requests(void **unused)
{
    (void)unused;
    struct sl_limit l = gcra(20, SEC, 10);
    uint64_t s = 0;
    struct sl_verdict v;
    assert_int_equal(drain(&l, &s, T0, 3), 3); /* 9 of 10 spent */
    assert_false(step(&l, &s, T0, 3, 0, &v));
    assert_int_equal(v.retry_ns, 100 * MS);  /* two more intervals: 11 of 10 -> 9 of 10 */
    assert_true(step(&l, &s, T0, 1, 0, &v)); /* the tenth token is still there */
    assert_int_equal(v.remaining, 0);
    assert_false(probe(&l, s, T0 + 150 * MS - 1, 3));
    assert_true(step(&l, &s, T0 + 150 * MS, 3, 0, &v));
}

static void gcra_never_passes_a_cost_above_the_burst(void **unused)
{
    (void)unused;
    struct sl_limit l = gcra(20, SEC, 10);
    uint64_t s = 0;
    struct sl_verdict v;
    assert_false(step(&l, &s, T0, 11, 0, &v));
    assert_int_equal(s, 0);
    assert_false(step(&l, &s, T0 + v.retry_ns, 11, 0, &v));
    assert_false(step(&l, &s, T0 + DAY, 11, 0, &v));
    assert_int_equal(s, 0);
    assert_true(step(&l, &s, T0 + DAY, 10, 0, &v)); /* exactly the burst is fine */
}

/* A request that can never pass is told "never" (UINT64_MAX / 4), as the
 * window algorithms do, not a retry time that would be denied again. */
static void gcra_reports_never_as_retry_for_a_cost_above_the_burst(void **unused)
{
    (void)unused;
    struct sl_limit l = gcra(20, SEC, 10);
    uint64_t s = 0;
    struct sl_verdict v;
    assert_false(step(&l, &s, T0, 11, 0, &v));
    assert_int_equal(v.retry_ns, SL_NEVER);
}

static void gcra_clamps_a_bucket_written_by_a_later_clock_to_an_empty_one(void **unused)
{
    (void)unused;
    struct sl_limit l = gcra(20, SEC, 10);
    uint64_t s = 0;
    struct sl_verdict v;
    assert_int_equal(drain(&l, &s, T0, 1), 10); /* TAT = T0 + 500 ms */

    /* a later call reads an earlier clock, 10 s behind */
    uint64_t back = T0 - 10 * SEC;
    assert_false(step(&l, &s, back, 1, 0, &v));
    assert_int_equal(v.retry_ns, 50 * MS); /* an empty bucket's wait, not 10.05 s */
    assert_int_equal(v.reset_ns, 500 * MS);
    assert_false(probe(&l, s, back + 50 * MS - 1, 1));
    assert_true(step(&l, &s, back + 50 * MS, 1, 0, &v));
    assert_false(step(&l, &s, back + 50 * MS, 1, 0, &v));
}

static void gcra_clamps_a_small_backward_step_too(void **unused)
{
    (void)unused;
    struct sl_limit l = gcra(20, SEC, 10);
    uint64_t s = 0;
    struct sl_verdict v;
    assert_int_equal(drain(&l, &s, T0, 1), 10);
    assert_false(step(&l, &s, T0 - 120 * MS, 1, 0, &v));
    assert_int_equal(v.retry_ns, 50 * MS);
    assert_true(step(&l, &s, T0 - 70 * MS, 1, 0, &v));
}

static void gcra_one_per_day_passes_exactly_once_a_day(void **unused)
{
    (void)unused;
    struct sl_limit l = gcra(1, DAY, 1);
    uint64_t s = 0, passed = 0;
    struct sl_verdict v;
    for (uint64_t t = T0; t < T0 + 30 * DAY; t += HOUR)
        passed += step(&l, &s, t, 1, 0, &v);
    assert_int_equal(passed, 30);
    assert_false(probe(&l, s, T0 + 30 * DAY - 1, 1));
    assert_true(probe(&l, s, T0 + 30 * DAY, 1));
}

static void gcra_24_per_day_passes_exactly_once_an_hour(void **unused)
{
    (void)unused;
    struct sl_limit l = gcra(24, DAY, 1);
    uint64_t s = 0, passed = 0;
    struct sl_verdict v;
    for (uint64_t t = T0; t < T0 + 7 * DAY; t += MIN)
        passed += step(&l, &s, t, 1, 0, &v);
    assert_int_equal(passed, 7 * 24);
}

static void gcra_50_per_minute_passes_one_every_1_2_seconds_after_the_burst(void **unused)
{
    (void)unused;
    struct sl_limit l = gcra(50, MIN, 5);
    uint64_t s = 0, passed = 0;
    struct sl_verdict v;
    for (uint64_t t = T0; t < T0 + HOUR; t += 100 * MS)
        passed += step(&l, &s, t, 1, 0, &v);
    /* 5 at T0, then one at T0 + k * 1.2 s for k = 1 .. 2999 */
    assert_int_equal(passed, 5 + 2999);
}

static void gcra_3_per_second_drifts_less_than_one_request_in_a_million(void **unused)
{
    (void)unused;
    struct sl_limit l = gcra(3, SEC, 1);
    uint64_t s = 0, passed = 0, t = T0;
    struct sl_verdict v;
    const uint64_t span = 1000000 * SEC / 3; /* a million requests' worth of time */
    while (t < T0 + span) {
        if (step(&l, &s, t, 1, 0, &v))
            passed++;
        else
            t += v.retry_ns; /* the client retries exactly when told */
    }
    assert_in_range(passed, 1000000 - 1, 1000000 + 1);
}

static void gcra_delay_mode_waits_0_then_t_then_2t_up_to_the_slack(void **unused)
{
    (void)unused;
    struct sl_limit l = gcra(20, SEC, 1);
    uint64_t s = 0;
    struct sl_verdict v;
    for (uint64_t k = 0; k <= 4; k++) {
        assert_true(step(&l, &s, T0, 1, 200 * MS, &v));
        assert_int_equal(v.wait_ns, k * 50 * MS);
        assert_int_equal(v.retry_ns, 0);
    }
    uint64_t before = s;
    assert_false(step(&l, &s, T0, 1, 200 * MS, &v)); /* would have to wait 250 ms */
    assert_int_equal(v.wait_ns, 0);
    assert_int_equal(v.retry_ns, 250 * MS);
    assert_int_equal(s, before);
}

static void gcra_delay_mode_reservations_are_spaced_one_interval_apart(void **unused)
{
    (void)unused;
    struct sl_limit l = gcra(20, SEC, 1);
    uint64_t s = 0;
    struct sl_verdict v;
    /* reservations made 10 ms apart still leave 50 ms apart */
    for (uint64_t k = 0; k < 4; k++) {
        uint64_t t = T0 + k * 10 * MS;
        assert_true(step(&l, &s, t, 1, 200 * MS, &v));
        assert_int_equal(t + v.wait_ns, T0 + k * 50 * MS);
    }
}

static void gcra_refund_gives_one_token_back(void **unused)
{
    (void)unused;
    struct sl_limit l = gcra(20, SEC, 10);
    uint64_t s = 0;
    struct sl_verdict v;
    assert_int_equal(drain(&l, &s, T0, 1), 10);
    s = sl_limit_refund(&l, s, T0, 1);
    assert_true(step(&l, &s, T0, 1, 0, &v));
    assert_false(step(&l, &s, T0, 1, 0, &v));
    s = sl_limit_refund(&l, s, T0, 3);
    assert_int_equal(drain(&l, &s, T0, 1), 3);
}

static void gcra_refund_of_a_fresh_bucket_leaves_it_fresh(void **unused)
{
    (void)unused;
    struct sl_limit l = gcra(20, SEC, 10);
    uint64_t s = sl_limit_refund(&l, 0, T0, 5);
    assert_int_equal(s, 0);
    assert_int_equal(drain(&l, &s, T0, 1), 10);
}

static void gcra_is_idle_exactly_when_the_bucket_has_refilled(void **unused)
{
    (void)unused;
    struct sl_limit l = gcra(20, SEC, 10);
    uint64_t s = 0;
    struct sl_verdict v;
    assert_true(sl_limit_idle(&l, s, T0));
    assert_true(step(&l, &s, T0, 1, 0, &v));
    assert_false(sl_limit_idle(&l, s, T0 + 50 * MS - 1));
    assert_true(sl_limit_idle(&l, s, T0 + 50 * MS));
    assert_int_equal(drain(&l, &s, T0, 1), 9);
    assert_false(sl_limit_idle(&l, s, T0 + 500 * MS - 1));
    assert_true(sl_limit_idle(&l, s, T0 + 500 * MS));
}

/* ---- sliding window counter ------------------------------------------ */

static void sliding_passes_n_in_a_fresh_window_then_denies(void **unused)
{
    (void)unused;
    struct sl_limit l = window(SL_ALG_SLIDING, 10, SEC);
    uint64_t s = 0;
    struct sl_verdict v;
    for (uint64_t k = 1; k <= 10; k++) {
        assert_true(step(&l, &s, T0 + 300 * MS, 1, 0, &v));
        assert_int_equal(v.remaining, 10 - k);
        assert_int_equal(v.limit, 10);
        assert_int_equal(v.reset_ns, 700 * MS + SEC); /* this window, then the next */
    }
    uint64_t before = s;
    assert_false(step(&l, &s, T0 + 300 * MS, 1, 0, &v));
    assert_int_equal(s, before);
    assert_int_equal(v.remaining, 0);
}

static void sliding_weights_the_previous_window_by_the_share_still_inside(void **unused)
{
    (void)unused;
    struct sl_limit l = window(SL_ALG_SLIDING, 10, SEC);
    uint64_t s = 0;
    assert_int_equal(drain(&l, &s, T0, 1), 10);
    /* 25 % into the next window, 7.5 of the 10 still count: 2 more fit */
    uint64_t s1 = s;
    assert_int_equal(drain(&l, &s1, T0 + SEC + 250 * MS, 1), 2);
    /* 30 % in, 7 count: 3 fit */
    uint64_t s2 = s;
    assert_int_equal(drain(&l, &s2, T0 + SEC + 300 * MS, 1), 3);
    /* one nanosecond earlier, 7.00000001 count: still 2 */
    uint64_t s3 = s;
    assert_int_equal(drain(&l, &s3, T0 + SEC + 300 * MS - 1, 1), 2);
    /* two windows on, nothing counts */
    uint64_t s4 = s;
    assert_int_equal(drain(&l, &s4, T0 + 2 * SEC, 1), 10);
}

static void sliding_retry_is_exact_when_the_request_fits_in_the_next_window(void **unused)
{
    (void)unused;
    struct sl_limit l = window(SL_ALG_SLIDING, 10, SEC);
    uint64_t s = 0;
    struct sl_verdict v;
    assert_int_equal(drain(&l, &s, T0, 1), 10);
    assert_false(step(&l, &s, T0, 1, 0, &v));
    assert_int_equal(v.retry_ns, SEC + 100 * MS); /* 10 weighted down to 9 */
    assert_false(probe(&l, s, T0 + v.retry_ns - 1, 1));
    assert_true(probe(&l, s, T0 + v.retry_ns, 1));
}

static void sliding_retry_is_exact_when_the_previous_window_decays_in_this_one(void **unused)
{
    (void)unused;
    struct sl_limit l = window(SL_ALG_SLIDING, 10, SEC);
    uint64_t s = 0;
    struct sl_verdict v;
    assert_int_equal(drain(&l, &s, T0, 1), 10);
    uint64_t mid = T0 + SEC + 500 * MS;
    assert_int_equal(drain(&l, &s, mid, 1), 5);
    assert_false(step(&l, &s, mid, 1, 0, &v));
    assert_int_equal(v.retry_ns, 100 * MS); /* prev must weigh 4: 60 % into the window */
    assert_false(probe(&l, s, mid + v.retry_ns - 1, 1));
    assert_true(probe(&l, s, mid + v.retry_ns, 1));
}

/* For random histories, costs and window lengths, every denial's retry_ns
 * is the first instant at which the same request passes. */
static void sliding_retry_is_exact_for_random_histories(void **unused)
{
    (void)unused;
    static const uint64_t periods[] = {1000, 7919, SEC, 3 * SEC + 7};
    uint64_t seed = 42, denials = 0;
    for (int trial = 0; trial < 400; trial++) {
        uint64_t n = 1 + rnd(&seed) % 20, W = periods[rnd(&seed) % 4];
        struct sl_limit l = window(SL_ALG_SLIDING, n, W);
        uint64_t s = 0, now = (T0 / W) * W + rnd(&seed) % W;
        for (int i = 0; i < 200; i++) {
            uint64_t cost = 1 + rnd(&seed) % (n < 3 ? n : 3);
            struct sl_verdict v;
            if (!step(&l, &s, now, cost, 0, &v)) {
                denials++;
                assert_true(v.retry_ns > 0 && v.retry_ns <= 2 * W);
                assert_false(probe(&l, s, now + v.retry_ns - 1, cost));
                assert_true(probe(&l, s, now + v.retry_ns, cost));
            }
            now += rnd(&seed) % (W / 3);
        }
    }
    assert_true(denials > 1000); /* the histories did hit the limit */
}

/* Largest number of passes inside any half-open span [t, t + W). */
static uint64_t max_in_any_window(const uint64_t *t, uint64_t n, uint64_t W)
{
    uint64_t best = 0;
    for (uint64_t i = 0, j = 0; i < n; i++) {
        while (t[i] - t[j] >= W)
            j++;
        if (i - j + 1 > best) best = i - j + 1;
    }
    return best;
}

static uint64_t passes[200000];

/* Attempts every W/1000, starting `phase` into a window, for 20 windows. */
static uint64_t dense_stream_max(uint64_t n, uint64_t W, uint64_t phase)
{
    struct sl_limit l = window(SL_ALG_SLIDING, n, W);
    uint64_t s = 0, np = 0, start = (T0 / W) * W + phase;
    struct sl_verdict v;
    for (uint64_t t = start; t < start + 20 * W; t += W / 1000)
        if (step(&l, &s, t, 1, 0, &v)) passes[np++] = t;
    assert_true(np >= 10 * n);
    return max_in_any_window(passes, np, W);
}

static void sliding_never_passes_more_than_n_per_window_to_a_steady_stream(void **unused)
{
    (void)unused;
    static const uint64_t counts[] = {1, 7, 10, 100};
    for (int i = 0; i < 4; i++)
        assert_true(dense_stream_max(counts[i], SEC, 0) <= counts[i]);
}

/* The counter assumes the previous window's passes were spread evenly. A
 * stream that starts mid-window bunches them at that window's end, and a
 * sliding span holding them also holds the next window's first passes: 18
 * of 10 for a start 90 % into a window. What the algorithm does guarantee
 * is fewer than 2N (prev * (1 - el/W) + curr + 1 <= N and prev <= N give
 * prev * el/W + curr + 1 <= N + prev * el/W < 2N), and that is checked. */
static void sliding_passes_fewer_than_2n_in_any_window_whatever_the_start_phase(void **unused)
{
    (void)unused;
    for (uint64_t phase = 0; phase < SEC; phase += 50 * MS)
        assert_true(dense_stream_max(10, SEC, phase) <= 2 * 10 - 1);
}

static void sliding_never_passes_2n_in_any_window_for_random_arrivals(void **unused)
{
    (void)unused;
    uint64_t seed = 7;
    for (int trial = 0; trial < 50; trial++) {
        uint64_t n = 1 + rnd(&seed) % 50, W = SEC;
        struct sl_limit l = window(SL_ALG_SLIDING, n, W);
        uint64_t s = 0, np = 0, t = T0 + rnd(&seed) % W;
        struct sl_verdict v;
        for (int i = 0; i < 20000; i++) {
            if (step(&l, &s, t, 1, 0, &v)) passes[np++] = t;
            t += rnd(&seed) % (W / (4 * n));
        }
        assert_true(max_in_any_window(passes, np, W) <= 2 * n - 1);
    }
}

static void sliding_never_passes_a_cost_above_the_count(void **unused)
{
    (void)unused;
    struct sl_limit l = window(SL_ALG_SLIDING, 10, SEC);
    uint64_t s = 0;
    struct sl_verdict v;
    assert_false(step(&l, &s, T0, 11, 0, &v));
    assert_int_equal(v.retry_ns, SL_NEVER);
    assert_false(step(&l, &s, T0 + DAY, 11, 0, &v));
    assert_true(step(&l, &s, T0 + DAY, 10, 0, &v));
}

static void sliding_refund_gives_one_request_back_in_the_same_window(void **unused)
{
    (void)unused;
    struct sl_limit l = window(SL_ALG_SLIDING, 10, SEC);
    uint64_t s = 0;
    assert_int_equal(drain(&l, &s, T0, 1), 10);
    s = sl_limit_refund(&l, s, T0 + 10 * MS, 1);
    assert_int_equal(drain(&l, &s, T0 + 10 * MS, 1), 1);
}

static void sliding_refund_after_the_window_has_moved_on_changes_nothing(void **unused)
{
    (void)unused;
    struct sl_limit l = window(SL_ALG_SLIDING, 10, SEC);
    uint64_t s = 0;
    assert_int_equal(drain(&l, &s, T0, 1), 10);
    assert_int_equal(sl_limit_refund(&l, s, T0 + SEC, 1), s);
}

static void sliding_is_idle_only_once_both_windows_have_passed(void **unused)
{
    (void)unused;
    struct sl_limit l = window(SL_ALG_SLIDING, 10, SEC);
    uint64_t s = 0;
    struct sl_verdict v;
    assert_true(sl_limit_idle(&l, s, T0));
    assert_true(step(&l, &s, T0 + 999 * MS, 1, 0, &v));
    assert_false(sl_limit_idle(&l, s, T0 + SEC));
    assert_false(sl_limit_idle(&l, s, T0 + 2 * SEC - 1));
    assert_true(sl_limit_idle(&l, s, T0 + 2 * SEC));
    assert_int_equal(v.reset_ns, 1 * MS + SEC);
}

/* ---- fixed window ---------------------------------------------------- */

static void fixed_passes_n_per_window_and_resets_at_the_edge(void **unused)
{
    (void)unused;
    struct sl_limit l = window(SL_ALG_FIXED, 10, SEC);
    uint64_t s = 0;
    struct sl_verdict v;
    for (uint64_t k = 1; k <= 10; k++) {
        assert_true(step(&l, &s, T0 + 400 * MS, 1, 0, &v));
        assert_int_equal(v.remaining, 10 - k);
        assert_int_equal(v.reset_ns, 600 * MS);
    }
    assert_false(step(&l, &s, T0 + 400 * MS, 1, 0, &v));
    assert_int_equal(v.retry_ns, 600 * MS);
    assert_false(probe(&l, s, T0 + SEC - 1, 1));
    assert_int_equal(drain(&l, &s, T0 + SEC, 1), 10);
}

static void fixed_permits_a_double_burst_across_the_edge(void **unused)
{
    (void)unused;
    struct sl_limit l = window(SL_ALG_FIXED, 10, SEC);
    uint64_t s = 0;
    struct sl_verdict v;
    uint64_t edge = T0 + SEC;
    assert_int_equal(drain(&l, &s, edge - 1, 1), 10);
    assert_false(step(&l, &s, edge - 1, 1, 0, &v));
    assert_int_equal(v.retry_ns, 1);
    assert_int_equal(drain(&l, &s, edge, 1), 10); /* 20 within 2 ns */
}

static void fixed_never_passes_a_cost_above_the_count(void **unused)
{
    (void)unused;
    struct sl_limit l = window(SL_ALG_FIXED, 10, SEC);
    uint64_t s = 0;
    struct sl_verdict v;
    assert_false(step(&l, &s, T0, 11, 0, &v));
    assert_int_equal(v.retry_ns, SL_NEVER);
    assert_int_equal(drain(&l, &s, T0, 3), 3);
}

static void fixed_refund_gives_one_request_back_in_the_same_window(void **unused)
{
    (void)unused;
    struct sl_limit l = window(SL_ALG_FIXED, 10, SEC);
    uint64_t s = 0;
    assert_int_equal(drain(&l, &s, T0, 1), 10);
    s = sl_limit_refund(&l, s, T0, 1);
    assert_int_equal(drain(&l, &s, T0, 1), 1);
    assert_int_equal(sl_limit_refund(&l, s, T0 + SEC, 1), s);
}

static void fixed_is_idle_once_its_window_has_passed(void **unused)
{
    (void)unused;
    struct sl_limit l = window(SL_ALG_FIXED, 10, SEC);
    uint64_t s = 0;
    struct sl_verdict v;
    assert_true(sl_limit_idle(&l, s, T0));
    assert_true(step(&l, &s, T0, 1, 0, &v));
    assert_false(sl_limit_idle(&l, s, T0 + SEC - 1));
    assert_true(sl_limit_idle(&l, s, T0 + SEC));
}

/* ---- sl_limit_init --------------------------------------------------- */

static void init_rejects_a_zero_count_for_every_algorithm(void **unused)
{
    (void)unused;
    struct sl_limit l;
    assert_int_equal(sl_limit_init(&l, SL_ALG_GCRA, 0, SEC, 1), -1);
    assert_int_equal(sl_limit_init(&l, SL_ALG_SLIDING, 0, SEC, 0), -1);
    assert_int_equal(sl_limit_init(&l, SL_ALG_FIXED, 0, SEC, 0), -1);
}

static void init_rejects_a_zero_period_for_every_algorithm(void **unused)
{
    (void)unused;
    struct sl_limit l;
    assert_int_equal(sl_limit_init(&l, SL_ALG_GCRA, 10, 0, 1), -1);
    assert_int_equal(sl_limit_init(&l, SL_ALG_SLIDING, 10, 0, 0), -1);
    assert_int_equal(sl_limit_init(&l, SL_ALG_FIXED, 10, 0, 0), -1);
}

static void init_rejects_a_zero_burst_for_gcra_only(void **unused)
{
    (void)unused;
    struct sl_limit l;
    assert_int_equal(sl_limit_init(&l, SL_ALG_GCRA, 10, SEC, 0), -1);
    assert_int_equal(sl_limit_init(&l, SL_ALG_SLIDING, 10, SEC, 0), 0);
    assert_int_equal(sl_limit_init(&l, SL_ALG_FIXED, 10, SEC, 0), 0);
}

static void init_rejects_window_counts_too_large_for_the_state_word(void **unused)
{
    (void)unused;
    struct sl_limit l;
    assert_int_equal(sl_limit_init(&l, SL_ALG_SLIDING, SL_SLIDING_MAX_COUNT, SEC, 0), 0);
    assert_int_equal(sl_limit_init(&l, SL_ALG_SLIDING, SL_SLIDING_MAX_COUNT + 1ull, SEC, 0), -1);
    assert_int_equal(sl_limit_init(&l, SL_ALG_FIXED, SL_FIXED_MAX_COUNT, SEC, 0), 0);
    assert_int_equal(sl_limit_init(&l, SL_ALG_FIXED, SL_FIXED_MAX_COUNT + 1ull, SEC, 0), -1);
}

static void init_rejects_a_gcra_interval_below_one_picosecond(void **unused)
{
    (void)unused;
    struct sl_limit l;
    assert_int_equal(sl_limit_init(&l, SL_ALG_GCRA, 1001, 1, 1), -1);
    assert_int_equal(sl_limit_init(&l, SL_ALG_GCRA, 1000, 1, 1), 0); /* 1 ps */
}

static void init_keeps_the_gcra_interval_in_picoseconds(void **unused)
{
    (void)unused;
    struct sl_limit l = gcra(3, SEC, 2);
    assert_int_equal(l.interval_ps, 333333333333ull);
    assert_int_equal(l.burst_ns, 666666666ull);
    l = gcra(50, MIN, 5);
    assert_int_equal(l.interval_ps, 1200000000000ull);
    assert_int_equal(l.burst_ns, 6 * SEC);
}

/* A rate above one per nanosecond must not round to a free request: it is
 * held to one per nanosecond. */
static void gcra_still_limits_a_rate_above_one_per_nanosecond(void **unused)
{
    (void)unused;
    struct sl_limit l;
    if (sl_limit_init(&l, SL_ALG_GCRA, 2 * SEC, SEC, 1) != 0) return; /* rejecting is fine */
    uint64_t s = 0, passed = 0;
    struct sl_verdict v;
    for (int i = 0; i < 100; i++)
        passed += step(&l, &s, T0, 1, 0, &v);
    assert_int_equal(passed, 1);
}

/* ---- what "N per period" promises (README, issue 12 defect 7) ----------- */

/* The most admissions any half-open interval [t, t+W) holds, for a client
 * that stays idle until `start` and then asks every millisecond for 3 s. */
static int busiest_period(const struct sl_limit *l, uint64_t start)
{
    static uint64_t at[4000];
    int n = 0, best = 0;
    uint64_t s = 0;
    struct sl_verdict v;
    for (uint64_t t = start; t < start + 3 * SEC; t += MS)
        if (step(l, &s, t, 1, 0, &v)) at[n++] = t;
    for (int i = 0, j = 0; i < n; i++) {
        while (at[i] - at[j] >= l->period_ns)
            j++;
        if (i - j + 1 > best) best = i - j + 1;
    }
    return best;
}

/* The sliding window counter is an estimate: it takes the previous window's
 * requests as spread evenly. Bunched at a window's end they are not, and a
 * period straddling the edge holds nearly 2N (README: not "never more than
 * N in any period"). */
static void a_sliding_window_can_admit_nearly_twice_n_across_an_edge(void **unused)
{
    (void)unused;
    struct sl_limit l = window(SL_ALG_SLIDING, 20, SEC);
    int most = busiest_period(&l, T0 + 900 * MS);
    assert_true(most > 20);
    assert_true(most < 40);
}

/* GCRA with burst 1 spaces requests a period/N apart: never more than N in
 * any period, whatever the pattern. */
static void gcra_with_burst_one_never_admits_more_than_n_in_a_period(void **unused)
{
    (void)unused;
    struct sl_limit l = gcra(20, SEC, 1);
    assert_int_equal(busiest_period(&l, T0 + 900 * MS), 20);
    assert_int_equal(busiest_period(&l, T0 + 3 * MS), 20);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(gcra_passes_exactly_the_burst_at_one_instant),
        cmocka_unit_test(gcra_denies_the_request_after_the_burst_with_retry_of_one_interval),
        cmocka_unit_test(gcra_then_passes_exactly_one_request_per_interval),
        cmocka_unit_test(gcra_reports_remaining_and_reset_after_each_request),
        cmocka_unit_test(gcra_charges_a_cost_of_three_as_three_requests),
        cmocka_unit_test(gcra_one_request_costs_its_interval_in_whole_nanoseconds),
        cmocka_unit_test(gcra_never_passes_a_cost_above_the_burst),
        cmocka_unit_test(gcra_reports_never_as_retry_for_a_cost_above_the_burst),
        cmocka_unit_test(gcra_clamps_a_bucket_written_by_a_later_clock_to_an_empty_one),
        cmocka_unit_test(gcra_clamps_a_small_backward_step_too),
        cmocka_unit_test(gcra_one_per_day_passes_exactly_once_a_day),
        cmocka_unit_test(gcra_24_per_day_passes_exactly_once_an_hour),
        cmocka_unit_test(gcra_50_per_minute_passes_one_every_1_2_seconds_after_the_burst),
        cmocka_unit_test(gcra_3_per_second_drifts_less_than_one_request_in_a_million),
        cmocka_unit_test(gcra_delay_mode_waits_0_then_t_then_2t_up_to_the_slack),
        cmocka_unit_test(gcra_delay_mode_reservations_are_spaced_one_interval_apart),
        cmocka_unit_test(gcra_refund_gives_one_token_back),
        cmocka_unit_test(gcra_refund_of_a_fresh_bucket_leaves_it_fresh),
        cmocka_unit_test(gcra_is_idle_exactly_when_the_bucket_has_refilled),
        cmocka_unit_test(gcra_still_limits_a_rate_above_one_per_nanosecond),
        cmocka_unit_test(sliding_passes_n_in_a_fresh_window_then_denies),
        cmocka_unit_test(sliding_weights_the_previous_window_by_the_share_still_inside),
        cmocka_unit_test(sliding_retry_is_exact_when_the_request_fits_in_the_next_window),
        cmocka_unit_test(sliding_retry_is_exact_when_the_previous_window_decays_in_this_one),
        cmocka_unit_test(sliding_retry_is_exact_for_random_histories),
        cmocka_unit_test(sliding_never_passes_more_than_n_per_window_to_a_steady_stream),
        cmocka_unit_test(sliding_passes_fewer_than_2n_in_any_window_whatever_the_start_phase),
        cmocka_unit_test(sliding_never_passes_2n_in_any_window_for_random_arrivals),
        cmocka_unit_test(sliding_never_passes_a_cost_above_the_count),
        cmocka_unit_test(sliding_refund_gives_one_request_back_in_the_same_window),
        cmocka_unit_test(sliding_refund_after_the_window_has_moved_on_changes_nothing),
        cmocka_unit_test(sliding_is_idle_only_once_both_windows_have_passed),
        cmocka_unit_test(fixed_passes_n_per_window_and_resets_at_the_edge),
        cmocka_unit_test(fixed_permits_a_double_burst_across_the_edge),
        cmocka_unit_test(fixed_never_passes_a_cost_above_the_count),
        cmocka_unit_test(fixed_refund_gives_one_request_back_in_the_same_window),
        cmocka_unit_test(fixed_is_idle_once_its_window_has_passed),
        cmocka_unit_test(init_rejects_a_zero_count_for_every_algorithm),
        cmocka_unit_test(init_rejects_a_zero_period_for_every_algorithm),
        cmocka_unit_test(init_rejects_a_zero_burst_for_gcra_only),
        cmocka_unit_test(init_rejects_window_counts_too_large_for_the_state_word),
        cmocka_unit_test(init_rejects_a_gcra_interval_below_one_picosecond),
        cmocka_unit_test(init_keeps_the_gcra_interval_in_picoseconds),
        cmocka_unit_test(a_sliding_window_can_admit_nearly_twice_n_across_an_edge),
        cmocka_unit_test(gcra_with_burst_one_never_admits_more_than_n_in_a_period),
    };
    return cmocka_run_group_tests(tests, NULL, NULL) != 0;
}
