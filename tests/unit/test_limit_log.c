/* SPDX-License-Identifier: BSD-2-Clause */
/* test_limit_log.c - the exact sliding log (core/limit/limit_log.h) with the
 * clock injected: no rolling window ever holds more than N, and a denied or
 * delayed request learns exactly when the oldest stamp leaves. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "../../core/limit/limit_log.h"

#define MS  1000000ull
#define SEC 1000000000ull

static struct sl_log *new_log(uint64_t n)
{
    struct sl_log *g = calloc(1, sl_log_bytes(n));
    assert_non_null(g);
    return g;
}

/* Counts the passes (times in ns, sorted) in [t, t + period). */
static uint64_t in_window(const uint64_t *t, size_t k, size_t from, uint64_t period)
{
    uint64_t c = 0;
    for (size_t j = from; j < k && t[j] < t[from] + period; j++)
        c++;
    return c;
}

static void random_arrivals_never_exceed_n_in_any_window(void **unused)
{
    (void)unused;
    const uint64_t ns[] = {1, 3, 10, 60, 1000};
    for (size_t c = 0; c < sizeof ns / sizeof ns[0]; c++) {
        const uint64_t n = ns[c], period = 60 * SEC;
        struct sl_limit l = {.count = n, .period_ns = period};
        for (int delay = 0; delay < 2; delay++) {
            struct sl_log *g = new_log(n);
            srand(42 + (unsigned)c);
            enum { K = 20000 };
            static uint64_t passed[K];
            size_t k = 0;
            uint64_t now = 1000 * SEC; /* a monotonic clock well past zero */
            uint64_t last = 0;
            for (int i = 0; i < K; i++) {
                /* bursts and gaps: bunches at the window's edge are the point */
                now += (uint64_t)(rand() % 4 == 0 ? rand() % (int)(2 * period / n + 1)
                                                  : rand() % 1000) *
                       1000;
                struct sl_verdict v;
                sl_log_step(&l, g, now, delay ? 5 * SEC : 0, &v);
                if (!v.allowed) {
                    /* stamps of delayed requests may lie up to the slack ahead */
                    assert_true(v.retry_ns > 0 && v.retry_ns <= period + 5 * SEC + MS);
                    continue;
                }
                uint64_t at = now + v.wait_ns;
                assert_true(at >= last); /* passes in order */
                last = at;
                if (k < K) passed[k++] = at;
            }
            assert_true(k > n); /* the test did reach the limit */
            for (size_t j = 0; j < k; j++)
                assert_true(in_window(passed, k, j, period) <= n);
            free(g);
        }
    }
}

static void denied_learns_when_the_oldest_leaves(void **unused)
{
    (void)unused;
    struct sl_limit l = {.count = 3, .period_ns = SEC};
    struct sl_log *g = new_log(3);
    struct sl_verdict v;
    uint64_t t0 = 5000 * SEC;
    sl_log_step(&l, g, t0, 0, &v);
    assert_true(v.allowed);
    assert_int_equal(v.remaining, 2);
    sl_log_step(&l, g, t0 + 300 * MS, 0, &v);
    assert_true(v.allowed);
    sl_log_step(&l, g, t0 + 900 * MS, 0, &v);
    assert_true(v.allowed);
    assert_int_equal(v.remaining, 0);
    sl_log_step(&l, g, t0 + 950 * MS, 0, &v);
    assert_false(v.allowed);
    assert_int_equal(v.retry_ns, 50 * MS); /* the first leaves at t0 + 1 s */
    sl_log_step(&l, g, t0 + SEC - 1, 0, &v);
    assert_false(v.allowed);
    assert_int_equal(v.retry_ns, 1);
    sl_log_step(&l, g, t0 + SEC, 0, &v);
    assert_true(v.allowed);
    /* delay: the next may go when the second leaves, at t0 + 1.3 s exactly */
    sl_log_step(&l, g, t0 + SEC + 100 * MS, SEC, &v);
    assert_true(v.allowed);
    assert_int_equal(v.wait_ns, 200 * MS);
    /* and it is stamped then: the one after waits for the third (t0 + 1.9 s) */
    sl_log_step(&l, g, t0 + SEC + 100 * MS, SEC, &v);
    assert_true(v.allowed);
    assert_int_equal(v.wait_ns, 800 * MS);
    /* a slack shorter than the wait denies, with the same time */
    sl_log_step(&l, g, t0 + SEC + 100 * MS, 100 * MS, &v);
    assert_false(v.allowed);
    assert_int_equal(v.retry_ns, 900 * MS); /* the stamp of t0 + 1 s leaves at t0 + 2 s */
    free(g);
}

/* A process killed between writing its stamp and moving the head: the next
 * caller moves the head for it and the dead process's request still counts. */
static void a_stamp_left_behind_is_counted(void **unused)
{
    (void)unused;
    struct sl_limit l = {.count = 2, .period_ns = SEC};
    struct sl_log *g = new_log(2);
    struct sl_verdict v;
    uint64_t t0 = 7000 * SEC;
    sl_log_step(&l, g, t0, 0, &v);
    assert_true(v.allowed);
    sl_log_step(&l, g, t0 + 10 * MS, 0, &v);
    assert_true(v.allowed);
    atomic_fetch_sub(&g->head, 1); /* as if it died before moving the head */
    sl_log_step(&l, g, t0 + 20 * MS, 0, &v);
    assert_false(v.allowed);
    assert_int_equal(v.retry_ns, 980 * MS);
    assert_int_equal(atomic_load(&g->head), 2);
    free(g);
}

/* A process that read the clock, stalled, and wrote late does not stamp
 * its request earlier than the one before it. */
static void stamps_never_go_backwards(void **unused)
{
    (void)unused;
    struct sl_limit l = {.count = 2, .period_ns = SEC};
    struct sl_log *g = new_log(2);
    struct sl_verdict v;
    uint64_t t0 = 9000 * SEC;
    sl_log_step(&l, g, t0 + 500 * MS, 0, &v);
    assert_true(v.allowed);
    sl_log_step(&l, g, t0, 0, &v); /* its clock read is older */
    assert_true(v.allowed);
    sl_log_step(&l, g, t0 + 1200 * MS, 0, &v);
    assert_false(v.allowed); /* the second counts from t0 + 0.5 s, not t0 */
    assert_int_equal(v.retry_ns, 300 * MS);
    free(g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(random_arrivals_never_exceed_n_in_any_window),
        cmocka_unit_test(denied_learns_when_the_oldest_leaves),
        cmocka_unit_test(a_stamp_left_behind_is_counted),
        cmocka_unit_test(stamps_never_go_backwards),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
