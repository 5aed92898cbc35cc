/* SPDX-License-Identifier: BSD-2-Clause */
/* test_ramp.c - a rate that steps from one value to another (core/limit/ramp.h)
 * with the wall time injected, and its options (conf). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "../../conf/conf.h"
#include "../../core/limit/ramp.h"
#include "testutil.h"

#define DEC01_2026 1796083200ll /* calendar.timegm((2026, 12, 1, 0, 0, 0)) */
#define ONE_DAY    (86400ll * 1000000000ll)

static struct sl_config *load(const char *rules, char *err, size_t errlen)
{
    enum sl_on_error on_error;
    return sl_conf_load(NULL, rules, &on_error, err, errlen);
}

static uint64_t count_at(const struct sl_rule *r, int64_t wall_ns)
{
    struct sl_limit l;
    sl_ramp_limit(&r->req_limit, &r->ramp, sl_ramp_step(&r->ramp, wall_ns), &l);
    return l.count;
}

static void a_retirement_steps_down_a_tenth_a_day(void **unused)
{
    (void)unused;
    char err[512] = "";
    struct sl_config *c = load("in port=80 req_rate=100/s ramp_to=10/s ramp_from=2026-12-01 "
                               "ramp_over=9d",
                               err, sizeof err);
    if (!c) fail_msg("%s", err);
    const struct sl_rule *r = &c->rules[0];
    int64_t from = DEC01_2026 * 1000000000ll;
    assert_int_equal(count_at(r, from - 1), 100); /* before the start: the rule's own */
    assert_int_equal(count_at(r, from), 100);     /* the first step one day later */
    assert_int_equal(count_at(r, from + ONE_DAY - 1), 100);
    assert_int_equal(count_at(r, from + ONE_DAY), 90);
    assert_int_equal(count_at(r, from + 5 * ONE_DAY + 3600ll * 1000000000ll), 50);
    assert_int_equal(count_at(r, from + 9 * ONE_DAY), 10);
    assert_int_equal(count_at(r, from + 400 * ONE_DAY), 10); /* and it stays there */
    struct sl_limit l;
    sl_ramp_limit(&r->req_limit, &r->ramp, 3, &l);
    assert_int_equal(l.burst, 70); /* the burst follows the rate's N */
    assert_int_equal(l.period_ns, 1000000000ull);
    sl_conf_free(c);
}

static void a_given_burst_stays_and_rates_convert_to_the_start_period(void **unused)
{
    (void)unused;
    char err[512] = "";
    struct sl_config *c = load("in port=80 req_rate=600/m req_burst=20 ramp_to=1/s "
                               "ramp_from=2026-12-01T12:00:00Z ramp_over=4h ramp_every=1h",
                               err, sizeof err);
    if (!c) fail_msg("%s", err);
    const struct sl_rule *r = &c->rules[0];
    assert_int_equal(r->ramp.to_count, 60); /* 1/s in the start's minute */
    assert_int_equal(r->ramp.steps, 4);
    int64_t noon = (DEC01_2026 + 12 * 3600) * 1000000000ll, hour = 3600ll * 1000000000ll;
    assert_int_equal(count_at(r, noon + hour), 465); /* 600 - 540/4, rounded */
    assert_int_equal(count_at(r, noon + 4 * hour), 60);
    struct sl_limit l;
    sl_ramp_limit(&r->req_limit, &r->ramp, 2, &l);
    assert_int_equal(l.burst, 20);
    sl_conf_free(c);
}

static void an_incomplete_ramp_is_refused_naming_what_is_missing(void **unused)
{
    (void)unused;
    char err[512] = "";
    assert_null(load("in port=80 req_rate=100/s ramp_to=10/s ramp_over=9d", err, sizeof err));
    assert_non_null(strstr(err, "ramp_from"));
    assert_null(load("in port=80 ramp_to=10/s ramp_from=2026-12-01 ramp_over=9d", err, sizeof err));
    assert_non_null(strstr(err, "req_rate"));
    assert_null(load("in port=80 req_rate=100/s ramp_to=10/s ramp_from=2026-02-30 ramp_over=9d",
                     err, sizeof err));
    assert_non_null(strstr(err, "ramp_from"));
    assert_null(load("in port=80 req_rate=100/s ramp_to=10/s ramp_from=2026-12-01 ramp_over=1h",
                     err, sizeof err));
    assert_non_null(strstr(err, "ramp_over"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_retirement_steps_down_a_tenth_a_day),
        cmocka_unit_test(a_given_burst_stays_and_rates_convert_to_the_start_period),
        cmocka_unit_test(an_incomplete_ramp_is_refused_naming_what_is_missing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
