/* SPDX-License-Identifier: BSD-2-Clause */
/* test_reqconf.c - the request options in files and inline rules: values,
 * defaults, errors, and `sluice check` output that reloads to itself. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../conf/conf.h"
#include "../../core/limit/limit.h"
#include "../../core/limit/plan.h"
#include "../../core/limit/quota.h"
#include "testutil.h"

static void request_options_fill_the_rule(void **unused)
{
    (void)unused;
    char err[512] = "";
    struct sl_config *c =
        load_rules("in name=api port=8080 req_rate=20/s req_burst=5 per=header:X-API-Key "
                   "route=/export,/api/*/dump method=get,POST host=API.example.com cost=10 "
                   "per_missing=rule quota=10000/d action=reply on_odd=deny",
                   err, sizeof err);
    if (!c) fail_msg("%s", err);
    const struct sl_rule *r = &c->rules[0];
    assert_true(r->request);
    assert_int_equal(r->req_limit.count, 20);
    assert_int_equal(r->req_limit.burst, 5);
    assert_int_equal(r->req_limit.period_ns, 1000000000ull);
    assert_int_equal(r->req_per, SL_REQ_PER_HEADER);
    assert_string_equal(r->req_per_name, "X-API-Key");
    assert_int_equal(r->per, SL_PER_PEER); /* the fallback keeps the address default */
    assert_int_equal(r->nroutes, 2);
    assert_string_equal(r->routes[1], "/api/*/dump");
    assert_int_equal(r->nmethods, 2);
    assert_string_equal(r->methods[0], "GET");
    assert_string_equal(r->req_hosts[0], "api.example.com");
    assert_int_equal(r->cost, 10);
    assert_int_equal(r->per_missing, SL_MISSING_RULE);
    assert_int_equal(r->on_odd, SL_ODD_DENY);
    assert_int_equal(r->quota, 10000);
    assert_int_equal(r->quota_window, SL_QUOTA_DAY);
    sl_conf_free(c);
}

static void defaults_are_cost_one_and_fallback_to_the_peer(void **unused)
{
    (void)unused;
    char err[512] = "";
    struct sl_config *c =
        load_rules("in port=80 req_rate=3/s; in port=81 rate=3/s", err, sizeof err);
    if (!c) fail_msg("%s", err);
    assert_true(c->rules[0].request);
    assert_int_equal(c->rules[0].cost, 1);
    assert_int_equal(c->rules[0].req_limit.burst, 3);
    assert_int_equal(c->rules[0].per_missing, SL_MISSING_PEER);
    assert_int_equal(c->rules[0].on_odd, SL_ODD_COUNT);
    assert_int_equal(c->rules[0].req_per, SL_REQ_PER_ADDRESS);
    assert_false(c->rules[1].request);
    sl_conf_free(c);
}

static void a_request_option_alone_makes_a_valid_rule(void **unused)
{
    (void)unused;
    char err[512] = "";
    struct sl_config *c = load_rules("in port=80 quota=5/month per=cookie:sid", err, sizeof err);
    if (!c) fail_msg("%s", err);
    assert_int_equal(c->rules[0].quota_window, SL_QUOTA_MONTH);
    assert_int_equal(c->rules[0].req_per, SL_REQ_PER_COOKIE);
    sl_conf_free(c);
}

static void bad_values_are_refused_with_the_option_named(void **unused)
{
    (void)unused;
    static const char *const bad[][2] = {
        {"in port=80 req_rate=20/q", "req_rate"},
        {"in port=80 req_rate=2/s quota=10/week", "quota"},
        {"in port=80 req_rate=2/s route=export", "route"},
        {"in port=80 req_rate=2/s method=GE@T", "method"},
        {"in port=80 req_rate=2/s per=header:", "per"},
        {"in port=80 req_rate=2/s per_missing=maybe", "per_missing"},
        {"in port=80 req_rate=2/s on_odd=maybe", "on_odd"},
        {"in port=80 req_rate=2/s cost=-1", "cost"},
        {"in port=80 quota=5/d quota_offset=+15", "quota_offset"},
        {"in port=80 quota=5/d quota_offset=5:75", "quota_offset"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char err[512] = "";
        struct sl_config *c = load_rules(bad[i][0], err, sizeof err);
        if (c) fail_msg("accepted: %s", bad[i][0]);
        if (!strstr(err, bad[i][1]))
            fail_msg("%s: message names no %s: %s", bad[i][0], bad[i][1], err);
    }
}

static void check_output_reloads_to_itself(void **unused)
{
    (void)unused;
    char err[512] = "";
    struct sl_config *c =
        load_rules("in name=api port=8080 req_rate=20/s per=query:key route=/a,/b* method=GET "
                   "host=*.example.com cost=0 per_missing=deny quota=7/month quota_offset=-5:30 "
                   "action=reply on_odd=deny",
                   err, sizeof err);
    if (!c) fail_msg("%s", err);
    char path[] = "/tmp/sluice-reqconf-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    sl_conf_print(c, f);
    fclose(f);
    enum sl_on_error on_error;
    struct sl_config *again = sl_conf_load(path, NULL, &on_error, err, sizeof err);
    if (!again) fail_msg("%s", err);
    char *a = NULL, *b = NULL;
    size_t alen, blen;
    FILE *fa = open_memstream(&a, &alen), *fb = open_memstream(&b, &blen);
    sl_conf_print(c, fa);
    sl_conf_print(again, fb);
    fclose(fa);
    fclose(fb);
    assert_string_equal(a, b);
    assert_non_null(strstr(a, "per         = \"query:key\""));
    assert_non_null(strstr(a, "quota       = \"7/month\""));
    assert_non_null(strstr(a, "cost        = 0"));
    assert_non_null(strstr(a, "on_odd      = deny"));
    assert_non_null(strstr(a, "quota_offset = \"-5:30\""));
    assert_int_equal(again->rules[0].quota_offset_s, -(5 * 3600 + 30 * 60));
    free(a);
    free(b);
    unlink(path);
    sl_conf_free(c);
    sl_conf_free(again);
}

static void the_api_keys_example_loads(void **unused)
{
    (void)unused;
    char err[512] = "";
    enum sl_on_error on_error;
    struct sl_config *c = sl_conf_load("examples/api-keys.conf", NULL, &on_error, err, sizeof err);
    if (!c) fail_msg("%s", err);
    assert_int_equal(c->nrules, 2);
    assert_int_equal(c->rules[0].quota, 10000);
    assert_int_equal(c->rules[1].cost, 10);
    sl_conf_free(c);
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void a_plans_file_maps_hashed_key_values_to_plans(void **unused)
{
    (void)unused;
    const char *path = "/tmp/sluice-test-plans.txt";
    write_file(path, "# plans\n"
                     "plan gold req_rate=100/s req_burst=20 quota=1000000/month\n"
                     "plan free req_rate=3/s\n"
                     "plan wide req_burst=40\n"
                     "key gold  sk_gold\n"
                     "key free sk free 2  \n"
                     "key wide sk_wide\n");
    char err[512] = "", rules[256];
    snprintf(rules, sizeof rules, "in port=80 req_rate=10/s per=header:K plans=%s", path);
    struct sl_config *c = load_rules(rules, err, sizeof err);
    if (!c) fail_msg("%s", err);
    const struct sl_plans *ps = c->rules[0].plans;
    assert_non_null(ps);
    const struct sl_plan *gold = sl_plans_find(ps, "sk_gold", 7);
    assert_non_null(gold);
    assert_string_equal(gold->name, "gold");
    assert_int_equal(gold->req_limit.burst, 20);
    assert_int_equal(gold->quota, 1000000);
    assert_int_equal(gold->quota_window, SL_QUOTA_MONTH);
    assert_string_equal(sl_plans_find(ps, "sk free 2", 9)->name, "free");
    assert_int_equal(sl_plans_find(ps, "sk free 2", 9)->req_limit.burst, 3);
    /* a plan with a burst alone keeps the rule's rate */
    const struct sl_plan *wide = sl_plans_find(ps, "sk_wide", 7);
    assert_int_equal(wide->req_limit.burst, 40);
    assert_int_equal(wide->req_limit.count, 10);
    assert_int_equal(wide->req_limit.period_ns, 1000000000ull);
    assert_null(sl_plans_find(ps, "sk_other", 8));
    sl_conf_free(c);

    write_file(path, "plan gold req_rate=100/s\nkey silver sk\n");
    snprintf(rules, sizeof rules,
             "in port=80 req_rate=10/s per=header:K plans=%s; global on_error=closed", path);
    c = load_rules(rules, err, sizeof err);
    assert_null(c);
    assert_non_null(strstr(err, "plans"));
    assert_non_null(strstr(err, "line 2"));
    assert_null(strstr(err, "sk")); /* a key value never reaches a message */
    unlink(path);
}

/* Issue 18.8: a plans file that cannot be loaded under on_error = open
 * used to drop the whole configuration: the program ran with no limits
 * at all. Now the rule keeps its own limits and the load says why once. */
static void a_bad_plans_file_under_on_error_open_keeps_the_rule_s_limits(void **unused)
{
    (void)unused;
    const char *path = "/tmp/sluice-test-plans-bad.txt";
    char err[512] = "", rules[256];
    snprintf(rules, sizeof rules, "in port=80 req_rate=1/m per=header:K plans=%s", path);
    for (int missing = 0; missing < 2; missing++) {
        if (missing)
            unlink(path);
        else
            write_file(path, "plan gold req_rate=100/s\nkey gold sk_1\nkey gold sk_1\n");
        struct sl_config *c = load_rules(rules, err, sizeof err);
        if (!c) fail_msg("%s", err);
        assert_int_equal(c->nrules, 1);
        assert_null(c->rules[0].plans);
        assert_int_equal(c->rules[0].req_limit.count, 1);
        assert_int_equal(c->rules[0].req_limit.period_ns, 60 * 1000000000ull);
        assert_non_null(strstr(c->degraded, "inline rule 1: inbound"));
        assert_non_null(strstr(c->degraded, "option 'plans'"));
        assert_non_null(strstr(c->degraded, path));
        assert_non_null(strstr(c->degraded, missing ? "cannot" : "line 3 gives one key value two"));
        assert_null(strstr(c->degraded, "sk_")); /* a key value never reaches a message */
        sl_conf_free(c);
    }
}

/* A plans file over 64 KiB (1,900 keys in the review) was refused; 100,000
 * keys (3.5 MB) load, each finds its plan. */
static void a_plans_file_of_100000_keys_loads(void **unused)
{
    (void)unused;
    const char *path = "/tmp/sluice-test-plans-big.txt";
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("plan gold req_rate=100/s\nplan free req_rate=1/s\n", f);
    for (int i = 0; i < 100000; i++)
        fprintf(f, "key %s sk_live_%08d_padding_to_make_it_long\n", i % 3 ? "free" : "gold", i);
    fclose(f);
    char err[512] = "", rules[256];
    snprintf(rules, sizeof rules, "in port=80 req_rate=1/m per=header:K plans=%s", path);
    struct sl_config *c = load_rules(rules, err, sizeof err);
    if (!c) fail_msg("%s", err);
    assert_string_equal(c->degraded, "");
    const struct sl_plans *ps = c->rules[0].plans;
    assert_non_null(ps);
    char v[64];
    for (int i = 0; i < 100000; i += 997) {
        int n = snprintf(v, sizeof v, "sk_live_%08d_padding_to_make_it_long", i);
        assert_string_equal(sl_plans_find(ps, v, (size_t)n)->name, i % 3 ? "free" : "gold");
    }
    assert_int_equal(sl_plans_keys(ps, 0) + sl_plans_keys(ps, 1), 100000);
    sl_conf_free(c);
    unlink(path);
}

/* The error of rules that must not load, or "" when they load. */
static const char *refusal(const char *rules)
{
    static char err[512];
    err[0] = 0;
    struct sl_config *c = load_rules(rules, err, sizeof err);
    if (c) sl_conf_free(c);
    return c ? "" : err;
}

/* Issue 31, defect 9: GCRA keeps burst x interval in nanoseconds under
 * 2^62 (core/limit/limit.c); past it sl_limit_init failed unchecked, the
 * rule loaded with a bucket of depth 0 and refused every request
 * (req_rate=1/d req_burst=54000, 1/m with 77,000,000). The largest burst
 * loads and admits a burst of that size; one more is refused, naming
 * req_burst and the bound. */
static void the_largest_burst_a_request_rate_keeps_loads_and_one_more_is_refused(void **unused)
{
    (void)unused;
    char err[512] = "";
    struct sl_config *c = load_rules("in port=80 req_rate=1/d req_burst=53375", err, sizeof err);
    if (!c) fail_msg("%s", err);
    const struct sl_limit *l = &c->rules[0].req_limit;
    assert_int_equal(l->burst, 53375);
    uint64_t tat = 0, now = 40ull * 86400 * 1000000000; /* 40 days of uptime */
    struct sl_verdict v;
    for (int i = 0; i < 3; i++) {
        sl_limit_step(l, tat, now, 1, 0, &tat, &v);
        assert_true(v.allowed);
        assert_int_equal(v.remaining, 53375 - 1 - i);
    }
    sl_conf_free(c);
    assert_string_equal(refusal("in port=80 req_rate=1/d req_burst=53376"),
                        "inline rule 1: inbound \"in-1\": option 'req_burst': '53376' is too large "
                        "for req_rate 1/d (at most 53375)");
    assert_string_equal(refusal("in port=80 req_rate=1/d req_burst=54000"),
                        "inline rule 1: inbound \"in-1\": option 'req_burst': '54000' is too large "
                        "for req_rate 1/d (at most 53375)");
    assert_string_equal(refusal("in port=80 req_rate=1/m req_burst=76861433"), "");
    assert_string_equal(refusal("out to=192.0.2.1 req_rate=1/m req_burst=77000000 action=delay"),
                        "inline rule 1: outbound \"out-1\": option 'req_burst': '77000000' is too "
                        "large for req_rate 1/m (at most 76861433)");
    /* a rate too fast for a picosecond interval is refused, not kept as 0 */
    assert_non_null(strstr(refusal("in port=80 req_rate=1000000000/1ns"), "option 'req_rate'"));
}

/* The bound conf states is core's: for rates across the range, the burst
 * "at most" names loads, sl_limit_init keeps it, and not one more. */
static void the_stated_bound_is_the_one_core_keeps(void **unused)
{
    (void)unused;
    static const char *const rates[] = {"1/d",   "1/m",           "3/s",   "50/m",   "7/366d",
                                        "1/1ns", "1000000000/1s", "3/7ns", "999/7ms"};
    for (size_t i = 0; i < sizeof rates / sizeof *rates; i++) {
        char rules[128];
        snprintf(rules, sizeof rules, "in port=80 req_rate=%s req_burst=9223372036854775807",
                 rates[i]);
        const char *err = refusal(rules), *most = strstr(err, "(at most ");
        if (!most) fail_msg("%s: %s", rates[i], err);
        uint64_t n = strtoull(most + 9, NULL, 10);
        snprintf(rules, sizeof rules, "in port=80 req_rate=%s req_burst=%llu", rates[i],
                 (unsigned long long)n);
        if (*refusal(rules)) fail_msg("%s: %s", rules, refusal(rules));
        char e2[512];
        struct sl_config *c = load_rules(rules, e2, sizeof e2);
        const struct sl_limit *l = &c->rules[0].req_limit;
        struct sl_limit t;
        assert_int_equal(sl_limit_init(&t, SL_ALG_GCRA, l->count, l->period_ns, n), 0);
        assert_int_not_equal(sl_limit_init(&t, SL_ALG_GCRA, l->count, l->period_ns, n + 1), 0);
        sl_conf_free(c);
    }
}

/* A request's cost x interval is kept the same way (limit_gcra.h), and
 * so is the burst at a ramp's slowest step and a plan's own rate. */
static void a_cost_ramp_or_plan_the_rate_cannot_keep_is_refused(void **unused)
{
    (void)unused;
    assert_string_equal(refusal("in port=80 req_rate=1/d req_burst=53375 cost=53375"), "");
    assert_string_equal(refusal("in port=80 req_rate=1/d cost=53376"),
                        "inline rule 1: inbound \"in-1\": option 'cost': '53376' is too large "
                        "for req_rate 1/d (at most 53375)");
    const char *ramp = "in port=80 req_rate=100/d req_burst=%d ramp_to=1/d "
                       "ramp_from=2026-01-01 ramp_over=10d ramp_every=1d";
    char rules[256];
    snprintf(rules, sizeof rules, ramp, 53375);
    assert_string_equal(refusal(rules), "");
    snprintf(rules, sizeof rules, ramp, 53376);
    assert_string_equal(refusal(rules),
                        "inline rule 1: inbound \"in-1\": option 'req_burst': '53376' is too large "
                        "for ramp_to 1/d (at most 53375)");
    assert_non_null(strstr(refusal("in port=80 req_rate=1/d ramp_to=1000000000/1us "
                                   "ramp_from=2026-01-01 ramp_over=10d ramp_every=1d"),
                           "option 'ramp_to': '1000000000/1us' is too fast to keep"));

    const char *path = "/tmp/sluice-test-plans-deep.txt";
    write_file(path, "plan deep req_rate=1/d req_burst=54000\nkey deep sk_1\n");
    snprintf(rules, sizeof rules, "in port=80 req_rate=1/s per=header:K plans=%s", path);
    char err[512] = "";
    struct sl_config *c = load_rules(rules, err, sizeof err);
    if (!c) fail_msg("%s", err);
    assert_null(c->rules[0].plans); /* on_error = open: the rule's own limits */
    assert_non_null(strstr(c->degraded, "line 1 has a req_burst too large for its req_rate (at "
                                        "most 53375)"));
    sl_conf_free(c);
    unlink(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(request_options_fill_the_rule),
        cmocka_unit_test(defaults_are_cost_one_and_fallback_to_the_peer),
        cmocka_unit_test(a_request_option_alone_makes_a_valid_rule),
        cmocka_unit_test(bad_values_are_refused_with_the_option_named),
        cmocka_unit_test(check_output_reloads_to_itself),
        cmocka_unit_test(the_api_keys_example_loads),
        cmocka_unit_test(a_plans_file_maps_hashed_key_values_to_plans),
        cmocka_unit_test(a_bad_plans_file_under_on_error_open_keeps_the_rule_s_limits),
        cmocka_unit_test(a_plans_file_of_100000_keys_loads),
        cmocka_unit_test(the_largest_burst_a_request_rate_keeps_loads_and_one_more_is_refused),
        cmocka_unit_test(the_stated_bound_is_the_one_core_keeps),
        cmocka_unit_test(a_cost_ramp_or_plan_the_rate_cannot_keep_is_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL) != 0;
}
