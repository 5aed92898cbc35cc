/* SPDX-License-Identifier: BSD-2-Clause */
/* test_pacelog.c - pacing made visible (core/policy/pacelog.c): the first paced
 * decisions of a spell get a line each, then one summary per interval
 * counts every paced decision of it with the longest wait; an interval
 * with nothing beyond the first lines starts a new spell. Time is the
 * injected `now`; N threads give an exact total.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <pthread.h>
#include <string.h>

#include "../../core/policy/pacelog.h"
#include "testutil.h"

static void pace_first_decisions_get_a_line_each_then_none(void **state)
{
    (void)state;
    struct sl_pace p;
    memset(&p, 0, sizeof p);
    struct sl_pace_report r;
    for (unsigned i = 0; i < SL_PACE_FIRST; i++)
        assert_int_equal(sl_pace_step(&p, T0 + i * MS, 100 * MS, &r), SL_PACE_LINE);
    for (unsigned i = 0; i < 500; i++) /* a flood within the interval: silent */
        assert_int_equal(sl_pace_step(&p, T0 + SEC + i * MS, 100 * MS, &r), 0);
}

static void pace_summary_counts_the_interval_with_its_longest_wait(void **state)
{
    (void)state;
    struct sl_pace p;
    memset(&p, 0, sizeof p);
    struct sl_pace_report r;
    for (unsigned i = 0; i < 120; i++)
        sl_pace_step(&p, T0 + i * 50 * MS, i == 70 ? 1200 * MS : 300 * MS, &r);
    memset(&r, 0, sizeof r);
    unsigned say = sl_pace_step(&p, T0 + SL_PACE_INTERVAL_NS, 10 * MS, &r);
    assert_int_equal(say, SL_PACE_SUMMARY); /* and this one is counted, not told */
    assert_int_equal(r.count, 120);
    assert_int_equal(r.longest_ns, 1200 * MS);
    assert_int_equal(r.span_ns, SL_PACE_INTERVAL_NS);
    /* the next interval starts with this decision: 1 + 5 more, longest 10 ms */
    for (unsigned i = 1; i <= 5; i++)
        assert_int_equal(sl_pace_step(&p, T0 + SL_PACE_INTERVAL_NS + i * SEC, 10 * MS, &r), 0);
    say = sl_pace_step(&p, T0 + 2 * SL_PACE_INTERVAL_NS + 3 * SEC, 20 * MS, &r);
    assert_int_equal(say, SL_PACE_SUMMARY);
    assert_int_equal(r.count, 6);
    assert_int_equal(r.longest_ns, 10 * MS);
    assert_int_equal(r.span_ns, SL_PACE_INTERVAL_NS + 3 * SEC); /* told as it was */
}

static void pace_no_summary_when_every_one_had_its_line(void **state)
{
    (void)state;
    struct sl_pace p;
    memset(&p, 0, sizeof p);
    struct sl_pace_report r;
    for (unsigned i = 0; i < 3; i++)
        assert_int_equal(sl_pace_step(&p, T0 + i * SEC, MS, &r), SL_PACE_LINE);
    /* after the interval: nothing to sum up, and the spell starts again */
    assert_int_equal(sl_pace_step(&p, T0 + HOUR, MS, &r), SL_PACE_LINE);
}

static void pace_quiet_interval_after_a_flood_starts_a_new_spell(void **state)
{
    (void)state;
    struct sl_pace p;
    memset(&p, 0, sizeof p);
    struct sl_pace_report r;
    for (unsigned i = 0; i < 50; i++)
        sl_pace_step(&p, T0 + i * MS, MS, &r);
    /* the summary of the flood, then an interval with one decision */
    assert_int_equal(sl_pace_step(&p, T0 + SL_PACE_INTERVAL_NS, MS, &r), SL_PACE_SUMMARY);
    assert_int_equal(r.count, 50);
    /* that one was not told (the spell's lines were spent), so it is summed */
    assert_int_equal(sl_pace_step(&p, T0 + 2 * SL_PACE_INTERVAL_NS, MS, &r), SL_PACE_SUMMARY);
    assert_int_equal(r.count, 1);
    /* that one neither; its interval is then summed, and so on: a trickle
     * after a flood is told once per interval at most */
    assert_int_equal(sl_pace_step(&p, T0 + 3 * SL_PACE_INTERVAL_NS, MS, &r), SL_PACE_SUMMARY);
    assert_int_equal(r.count, 1);
}

#define THREADS    4
#define PER_THREAD 20000

struct worker {
    struct sl_pace *p;
    int t;
    uint64_t lines, summed;
};

static void *hammer(void *arg)
{
    struct worker *w = arg;
    struct sl_pace_report r;
    for (uint64_t i = 0; i < PER_THREAD; i++) {
        /* time runs over 3 intervals, interleaved between threads */
        uint64_t now = T0 + (i * THREADS + (uint64_t)w->t) * (3 * SL_PACE_INTERVAL_NS) /
                                (PER_THREAD * THREADS);
        unsigned say = sl_pace_step(w->p, now, MS, &r);
        if (say & SL_PACE_LINE) w->lines++;
        if (say & SL_PACE_SUMMARY) w->summed += r.count;
    }
    return NULL;
}

static void pace_threads_lose_no_decision(void **state)
{
    (void)state;
    struct sl_pace p;
    memset(&p, 0, sizeof p);
    struct worker w[THREADS];
    pthread_t th[THREADS];
    for (int t = 0; t < THREADS; t++) {
        w[t] = (struct worker){.p = &p, .t = t};
        assert_int_equal(pthread_create(&th[t], NULL, hammer, &w[t]), 0);
    }
    uint64_t lines = 0, summed = 0;
    for (int t = 0; t < THREADS; t++) {
        pthread_join(th[t], NULL);
        lines += w[t].lines;
        summed += w[t].summed;
    }
    assert_int_equal(lines, SL_PACE_FIRST); /* one spell: the lines are never spent twice */
    /* every decision is in a summary or still in the open interval */
    assert_int_equal(summed + atomic_load(&p.count), (uint64_t)THREADS * PER_THREAD);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(pace_first_decisions_get_a_line_each_then_none),
        cmocka_unit_test(pace_summary_counts_the_interval_with_its_longest_wait),
        cmocka_unit_test(pace_no_summary_when_every_one_had_its_line),
        cmocka_unit_test(pace_quiet_interval_after_a_flood_starts_a_new_spell),
        cmocka_unit_test(pace_threads_lose_no_decision),
    };
    return cmocka_run_group_tests(tests, NULL, NULL) != 0;
}
