/* SPDX-License-Identifier: BSD-2-Clause */
/* test_table_plans.c - quota use per plan in the table (core/limit/table_plans.h):
 * entries made once per (rule, plan), requests admitted and refused, keys
 * reaching 80/90/100 % ever and in the current window, windows renewing,
 * late requests of an older window, exact totals under threads, and the
 * region's bound. Window ends and "now" are numbers the test chose.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>

#include "../../core/limit/key.h"
#include "../../core/limit/table.h"
#include "../../core/limit/table_plans.h"
#include "testutil.h"

/* A window ending at 2026-11-23 00:00 UTC, and the next day's. */
#define END1 1795392000ull
#define END2 (END1 + 86400)

static struct sl_table *table(void)
{
    char err[256] = "";
    struct sl_table *t = sl_table_open(1024, NULL, SL_FULL_SHARED, err, sizeof err);
    if (!t) fail_msg("sl_table_open: %s", err);
    return t;
}

static int plan(struct sl_table *t, int rule, const char *name, uint64_t quota)
{
    return sl_table_plan(t, rule, sl_name_hash(name), name, quota, SL_QUOTA_DAY);
}

static struct sl_plan_use use(struct sl_table *t, int i, uint64_t wall_s)
{
    struct sl_plan_use u;
    assert_true(sl_table_plan_use(t, i, wall_s, &u));
    return u;
}

/* One key spending n requests of cost 1 against a quota of `limit`. */
static void spend(struct sl_table *t, int p, uint64_t n, uint64_t limit, uint64_t end_s)
{
    for (uint64_t used = 1; used <= n; used++)
        sl_table_plan_admit(t, p, used, 1, limit, end_s);
}

static void a_plan_has_one_entry_per_rule(void **unused)
{
    (void)unused;
    struct sl_table *t = table();
    int gold = plan(t, 0, "gold", 5), free0 = plan(t, 0, "free", 3), gold1 = plan(t, 1, "gold", 5);
    assert_true(gold >= 0 && free0 >= 0 && gold1 >= 0);
    assert_int_not_equal(gold, free0);
    assert_int_not_equal(gold, gold1);
    assert_int_equal(plan(t, 0, "gold", 5), gold);
    struct sl_plan_use u = use(t, gold, END1 - 10);
    assert_string_equal(u.name, "gold");
    assert_int_equal(u.rule, 0);
    assert_int_equal(u.quota, 5);
    assert_int_equal(u.window, SL_QUOTA_DAY);
    assert_int_equal(u.window_end_s, 0);
    assert_int_equal(use(t, gold1, END1).rule, 1);
    /* a reload gave the plan another quota: readers show the new one */
    assert_int_equal(plan(t, 0, "gold", 7), gold);
    assert_int_equal(use(t, gold, END1).quota, 7);
    int n = 0;
    struct sl_plan_use any;
    for (int i = 0; i < sl_table_plan_entries(); i++)
        n += sl_table_plan_use(t, i, END1, &any);
    assert_int_equal(n, 3);
    sl_table_close(t);
}

static void admitted_refused_and_keys_near_their_quota_are_counted(void **unused)
{
    (void)unused;
    struct sl_table *t = table();
    int p = plan(t, 0, "gold", 5);
    spend(t, p, 5, 5, END1); /* key 1: all 5 (80 % is the 4th, 90 % the 5th) */
    sl_table_plan_refuse(t, p);
    sl_table_plan_refuse(t, p);
    spend(t, p, 4, 5, END1); /* key 2: 4, so 80 % only */
    struct sl_plan_use u = use(t, p, END1 - 60);
    assert_int_equal(u.admitted, 9);
    assert_int_equal(u.refused, 2);
    assert_int_equal(u.used, 9);
    assert_int_equal(u.window_end_s, END1);
    assert_int_equal(u.reached[0], 2);
    assert_int_equal(u.reached[1], 1);
    assert_int_equal(u.reached[2], 1);
    assert_int_equal(u.keys[0], 2);
    assert_int_equal(u.keys[1], 1);
    assert_int_equal(u.keys[2], 1);
    /* a request of cost 3 takes a key from 2 to 5: past all three at once */
    sl_table_plan_admit(t, p, 5, 3, 5, END1);
    u = use(t, p, END1 - 60);
    assert_int_equal(u.admitted, 10);
    assert_int_equal(u.used, 12); /* by cost, as the quota counts */
    assert_int_equal(u.keys[2], 2);
    sl_table_close(t);
}

static void the_window_s_figures_end_with_it_and_the_next_starts_at_zero(void **unused)
{
    (void)unused;
    struct sl_table *t = table();
    int p = plan(t, 0, "free", 2);
    spend(t, p, 2, 2, END1);
    struct sl_plan_use u = use(t, p, END1); /* midnight: the day is over */
    assert_int_equal(u.used, 0);
    assert_int_equal(u.keys[2], 0);
    assert_int_equal(u.admitted, 2);
    assert_int_equal(u.reached[2], 1);
    spend(t, p, 1, 2, END2); /* the new day's first request */
    u = use(t, p, END1 + 1);
    assert_int_equal(u.window_end_s, END2);
    assert_int_equal(u.used, 1);
    assert_int_equal(u.keys[0], 0);
    assert_int_equal(u.admitted, 3);
    assert_int_equal(u.reached[2], 1);
    sl_table_close(t);
}

/* Calls queued for the next window (action = delay) count there while the
 * last ones of the current window still pass: those add to the counters
 * ever, and never take the window's counts back to the older window. */
static void a_request_of_an_older_window_counts_ever_only(void **unused)
{
    (void)unused;
    struct sl_table *t = table();
    int p = plan(t, 0, "paid", 2);
    spend(t, p, 1, 2, END1);
    spend(t, p, 2, 2, END2);                  /* booked for tomorrow, 2 of 2 */
    sl_table_plan_admit(t, p, 2, 1, 2, END1); /* today's second */
    struct sl_plan_use u = use(t, p, END1 - 1);
    assert_int_equal(u.window_end_s, END2);
    assert_int_equal(u.used, 2);
    assert_int_equal(u.keys[2], 1);
    assert_int_equal(u.admitted, 4);
    assert_int_equal(u.reached[2], 2);
    sl_table_close(t);
}

#define THREADS 8
#define EACH    20000

struct work {
    struct sl_table *t;
    int p;
};

static void *admit_many(void *arg)
{
    struct work *w = arg;
    for (uint64_t i = 1; i <= EACH; i++)
        sl_table_plan_admit(w->t, w->p, i, 1, 1000000, END1);
    return NULL;
}

static void threads_counting_one_plan_lose_no_request(void **unused)
{
    (void)unused;
    struct sl_table *t = table();
    struct work w = {t, plan(t, 0, "hot", 1000000)};
    pthread_t th[THREADS];
    for (int i = 0; i < THREADS; i++)
        pthread_create(&th[i], NULL, admit_many, &w);
    for (int i = 0; i < THREADS; i++)
        pthread_join(th[i], NULL);
    struct sl_plan_use u = use(t, w.p, END1 - 1);
    assert_int_equal(u.admitted, THREADS * EACH);
    assert_int_equal(u.used, THREADS * EACH);
    sl_table_close(t);
}

static void the_region_is_bounded_and_a_plan_past_it_is_not_counted(void **unused)
{
    (void)unused;
    struct sl_table *t = table();
    char name[16];
    for (int i = 0; i < sl_table_plan_entries(); i++) {
        snprintf(name, sizeof name, "p%d", i);
        assert_true(plan(t, i % 64, name, 10) >= 0);
    }
    assert_int_equal(plan(t, 0, "one-too-many", 10), -1);
    sl_table_plan_admit(t, -1, 1, 1, 10, END1); /* nothing, no crash */
    sl_table_plan_refuse(t, -1);
    assert_int_equal(plan(t, 0, "p0", 10) >= 0, 1); /* the existing ones still found */
    sl_table_close(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_plan_has_one_entry_per_rule),
        cmocka_unit_test(admitted_refused_and_keys_near_their_quota_are_counted),
        cmocka_unit_test(the_window_s_figures_end_with_it_and_the_next_starts_at_zero),
        cmocka_unit_test(a_request_of_an_older_window_counts_ever_only),
        cmocka_unit_test(threads_counting_one_plan_lose_no_request),
        cmocka_unit_test(the_region_is_bounded_and_a_plan_past_it_is_not_counted),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
