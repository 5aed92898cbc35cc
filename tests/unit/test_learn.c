/* SPDX-License-Identifier: BSD-2-Clause */
/* test_learn.c - limits learned from a vendor's responses: the field
 * parsers of core/http/learn.h (each format, its bounds, garbage), what a
 * response head teaches at a given wall time, the fields read by the
 * response counter (core/http/h1resp.h) split anywhere, and the learned
 * hold in the shared table (sl_table_hold) with `now` chosen by the test. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "../../core/http/h1resp.h"
#include "../../core/http/learn.h"
#include "../../core/limit/table.h"

#define S  1000000000ll
#define MS 1000000ll

/* 2024-05-01T12:00:00Z */
#define T2024 (1714564800ll * S)

static bool delta(const char *v, uint64_t *ns)
{
    return sl_learn_parse_delta(v, strlen(v), ns);
}

static bool go(const char *v, uint64_t *ns)
{
    return sl_learn_parse_go_duration(v, strlen(v), ns);
}

static bool date(const char *v, int64_t *ns)
{
    return sl_learn_parse_http_date(v, strlen(v), ns);
}

static bool rfc3339(const char *v, int64_t *ns)
{
    return sl_learn_parse_rfc3339(v, strlen(v), ns);
}

static void delta_seconds_are_digits_only(void **unused)
{
    (void)unused;
    uint64_t ns;
    assert_true(delta("2", &ns));
    assert_int_equal(ns, 2 * S);
    assert_true(delta("0", &ns));
    assert_int_equal(ns, 0);
    assert_true(delta("99999999999999999999999", &ns)); /* saturates, never wraps */
    assert_true(ns > SL_LEARN_ABSURD_NS);
    assert_false(delta("", &ns));
    assert_false(delta("-1", &ns));
    assert_false(delta("1.5", &ns));
    assert_false(delta("2 s", &ns));
    assert_false(delta("+2", &ns));
    assert_true(sl_learn_parse_ms("1500", 4, &ns));
    assert_int_equal(ns, 1500 * MS);
    assert_true(sl_learn_parse_ms("20.5", 4, &ns));
    assert_int_equal(ns, 20 * MS + 500000);
    assert_false(sl_learn_parse_ms("ms", 2, &ns));
}

static void http_dates_in_all_three_forms(void **unused)
{
    (void)unused;
    int64_t ns;
    assert_true(date("Sun, 06 Nov 1994 08:49:37 GMT", &ns));
    assert_int_equal(ns, 784111777ll * S);
    assert_true(date("Sunday, 06-Nov-94 08:49:37 GMT", &ns));
    assert_int_equal(ns, 784111777ll * S);
    assert_true(date("Sun Nov  6 08:49:37 1994", &ns));
    assert_int_equal(ns, 784111777ll * S);
    assert_true(date("Wed, 01 May 2024 12:00:00 GMT", &ns));
    assert_int_equal(ns, T2024);
    assert_true(date("Thu, 29 Feb 2024 00:00:00 GMT", &ns)); /* a leap day */
    assert_false(date("Thu, 29 Feb 2023 00:00:00 GMT", &ns));
    assert_false(date("Sun, 31 Nov 1994 08:49:37 GMT", &ns));
    assert_false(date("Sun, 06 Nov 1994 24:00:00 GMT", &ns));
    assert_false(date("Sun, 06 Nov 1994 08:49:37 UTC", &ns));
    assert_false(date("Sun, 06 Nov 1994 08:49:37 GMT trailing", &ns));
    assert_false(date("Sun, 06 Foo 1994 08:49:37 GMT", &ns));
    assert_false(date("", &ns));
    assert_false(date("Sun,", &ns));
}

static void go_durations_as_openai_writes_them(void **unused)
{
    (void)unused;
    uint64_t ns;
    assert_true(go("6m0s", &ns));
    assert_int_equal(ns, 360 * S);
    assert_true(go("1.5s", &ns));
    assert_int_equal(ns, 1500 * MS);
    assert_true(go("20ms", &ns));
    assert_int_equal(ns, 20 * MS);
    assert_true(go("1h2m3.25s", &ns));
    assert_int_equal(ns, 3723 * S + 250 * MS);
    assert_true(go(".5s", &ns));
    assert_int_equal(ns, 500 * MS);
    assert_true(go("7us", &ns));
    assert_int_equal(ns, 7000);
    assert_true(go("0", &ns));
    assert_int_equal(ns, 0);
    assert_false(go("-1", &ns)); /* Azure's placeholder */
    assert_false(go("-1s", &ns));
    assert_false(go("5", &ns)); /* a number without its unit */
    assert_false(go("1.5", &ns));
    assert_false(go("s", &ns));
    assert_false(go("1x", &ns));
    assert_false(go("", &ns));
    assert_false(go(".s", &ns));
    assert_true(go("99999999999999999999h", &ns)); /* saturates */
    assert_true(ns > SL_LEARN_ABSURD_NS);
}

static void rfc3339_times_with_fractions_and_offsets(void **unused)
{
    (void)unused;
    int64_t ns;
    assert_true(rfc3339("2024-05-01T12:00:00Z", &ns));
    assert_int_equal(ns, T2024);
    assert_true(rfc3339("2024-05-01T12:00:30.5Z", &ns));
    assert_int_equal(ns, T2024 + 30 * S + 500 * MS);
    assert_true(rfc3339("2024-05-01T14:00:00+02:00", &ns));
    assert_int_equal(ns, T2024);
    assert_true(rfc3339("2024-05-01T11:30:00-00:30", &ns));
    assert_int_equal(ns, T2024);
    assert_false(rfc3339("2024-05-01", &ns));
    assert_false(rfc3339("2024-13-01T12:00:00Z", &ns));
    assert_false(rfc3339("2024-05-01T12:00:00", &ns)); /* no offset */
    assert_false(rfc3339("2024-05-01T12:00:00.Z", &ns));
    assert_false(rfc3339("1714564800", &ns));
    int64_t e;
    assert_true(sl_learn_parse_epoch("1714564800", 10, &e));
    assert_int_equal(e, T2024);
    assert_false(sl_learn_parse_epoch("17145648OO", 10, &e));
}

static void ratelimit_fields_of_the_ietf_draft(void **unused)
{
    (void)unused;
    int64_t r;
    uint64_t t, q, w;
    const char *a = "\"default\";r=0;t=30";
    assert_true(sl_learn_parse_ratelimit(a, strlen(a), &r, &t));
    assert_int_equal(r, 0);
    assert_int_equal(t, 30 * S);
    const char *two = "\"day\";r=50;t=3600, \"burst\";r=0;t=2";
    assert_true(sl_learn_parse_ratelimit(two, strlen(two), &r, &t)); /* the least remaining */
    assert_int_equal(r, 0);
    assert_int_equal(t, 2 * S);
    const char *tok = "default;r=5;t=9;pk=:abc=:";
    assert_true(sl_learn_parse_ratelimit(tok, strlen(tok), &r, &t));
    assert_int_equal(r, 5);
    const char *old = "limit=100, remaining=0, reset=30"; /* draft 07 */
    assert_true(sl_learn_parse_ratelimit(old, strlen(old), &r, &t));
    assert_int_equal(r, 0);
    assert_int_equal(t, 30 * S);
    const char *bad[] = {
        "", "\"x\"", "\"x\";r=1", "\"unterminated;r=0;t=1", ";r=0;t=1", "\"x\";r=0;t=1 junk"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        assert_false(sl_learn_parse_ratelimit(bad[i], strlen(bad[i]), &r, &t));
    const char *pol = "\"default\";q=100;w=60";
    assert_true(sl_learn_parse_policy(pol, strlen(pol), &q, &w));
    assert_int_equal(q, 100);
    assert_int_equal(w, 60);
    assert_false(sl_learn_parse_policy("\"x\";q=0;w=60", 12, &q, &w));
}

/* A response head's fields, as (name, value) pairs, taught at now. */
static bool teach(int status, const char *const *hv, int64_t now, uint64_t cap,
                  struct sl_learned *out)
{
    struct sl_learn_resp f;
    sl_learn_resp_init(&f, status);
    for (; hv[0]; hv += 2)
        sl_learn_header(&f, hv[0], strlen(hv[0]), hv[1], strlen(hv[1]));
    return sl_learn_decide(&f, now, cap, out);
}

#define CAP (600 * S)

static void a_429_with_retry_after_holds_and_a_200_does_not(void **unused)
{
    (void)unused;
    struct sl_learned o;
    const char *ra[] = {"Retry-After", " 2 ", NULL};
    assert_true(teach(429, ra, T2024, CAP, &o));
    assert_int_equal(o.wait_ns, 2 * S);
    assert_string_equal(o.field, "retry-after");
    assert_true(teach(503, ra, T2024, CAP, &o));
    assert_false(teach(200, ra, T2024, CAP, &o)); /* a Retry-After on a 200: nothing */
    assert_false(teach(301, ra, T2024, CAP, &o));
    const char *date[] = {"retry-after", "Wed, 01 May 2024 12:00:05 GMT", NULL};
    assert_true(teach(429, date, T2024, CAP, &o));
    assert_int_equal(o.wait_ns, 5 * S);
    const char *ms[] = {"Retry-After", "1", "retry-after-ms", "1500", NULL};
    assert_true(teach(429, ms, T2024, CAP, &o)); /* the finer one */
    assert_int_equal(o.wait_ns, 1500 * MS);
    assert_string_equal(o.field, "retry-after-ms");
}

static void zero_remaining_with_a_reset_holds_in_every_vendors_form(void **unused)
{
    (void)unused;
    struct sl_learned o;
    const char *openai[] = {"x-ratelimit-remaining-requests", "0", "x-ratelimit-reset-requests",
                            "1.5s", NULL};
    assert_true(teach(200, openai, T2024, CAP, &o));
    assert_int_equal(o.wait_ns, 1500 * MS);
    const char *openai_left[] = {"x-ratelimit-remaining-requests", "3",
                                 "x-ratelimit-reset-requests", "1.5s", NULL};
    assert_true(teach(200, openai_left, T2024, CAP, &o)); /* 3 left: a spread, not a hold */
    assert_int_equal(o.wait_ns, 500 * MS);
    assert_true(o.spread);
    const char *anthropic[] = {"anthropic-ratelimit-requests-remaining", "0",
                               "anthropic-ratelimit-requests-reset", "2024-05-01T12:00:30Z", NULL};
    assert_true(teach(429, anthropic, T2024, CAP, &o));
    assert_int_equal(o.wait_ns, 30 * S);
    const char *github[] = {"X-RateLimit-Remaining", "0", "X-RateLimit-Reset", "1714564860", NULL};
    assert_true(teach(403, github, T2024, CAP, &o));
    assert_int_equal(o.wait_ns, 60 * S);
    assert_string_equal(o.field, "x-ratelimit-reset");
    const char *ietf[] = {"RateLimit", "\"default\";r=0;t=7", "RateLimit-Policy",
                          "\"default\";q=10;w=60", NULL};
    assert_true(teach(200, ietf, T2024, CAP, &o));
    assert_int_equal(o.wait_ns, 7 * S);
    const char *pair[] = {"RateLimit-Remaining", "0", "RateLimit-Reset", "4", NULL};
    assert_true(teach(200, pair, T2024, CAP, &o));
    assert_int_equal(o.wait_ns, 4 * S);
    /* the latest of several wins */
    const char *both[] = {
        "Retry-After", "3", "x-ratelimit-remaining-requests", "0", "x-ratelimit-reset-requests",
        "6m0s",        NULL};
    assert_true(teach(429, both, T2024, CAP, &o));
    assert_int_equal(o.wait_ns, 360 * S);
}

static void past_absurd_and_unreadable_values_are_ignored_and_counted(void **unused)
{
    (void)unused;
    struct sl_learned o;
    const char *past[] = {"Retry-After", "Wed, 01 May 2024 11:59:00 GMT", NULL};
    assert_false(teach(429, past, T2024, CAP, &o));
    assert_int_equal(o.ignored, 1);
    assert_int_equal(o.why, SL_IGN_PAST);
    const char *epoch_as_delay[] = {"Retry-After", "1714564860", NULL};
    assert_false(teach(429, epoch_as_delay, T2024, CAP, &o));
    assert_int_equal(o.why, SL_IGN_ABSURD);
    const char *garbage[] = {"Retry-After", "soon", "x-ratelimit-remaining-requests", "zero", NULL};
    assert_false(teach(429, garbage, T2024, CAP, &o));
    assert_int_equal(o.ignored, 2);
    assert_int_equal(o.why, SL_IGN_BAD);
    const char *azure[] = {"x-ratelimit-remaining-requests", "-1", "x-ratelimit-reset-requests",
                           "-1", NULL};
    assert_false(teach(200, azure, T2024, CAP, &o)); /* placeholders: not counted */
    assert_int_equal(o.ignored, 0);
    /* long but plausible: capped */
    const char *week[] = {"Retry-After", "561635", NULL};
    assert_true(teach(429, week, T2024, 2 * S, &o));
    assert_int_equal(o.wait_ns, 2 * S);
    assert_true(o.capped);
    assert_int_equal(o.asked_ns, 561635ull * S);
    const char *other[] = {"Content-Type", "text/plain", NULL};
    assert_false(teach(429, other, T2024, CAP, &o));
}

static void n_left_for_t_spreads_them_t_over_n_apart(void **unused)
{
    (void)unused;
    struct sl_learned o;
    const char *openai[] = {"x-ratelimit-remaining-requests", "10", "x-ratelimit-reset-requests",
                            "5s", NULL};
    assert_true(teach(200, openai, T2024, CAP, &o));
    assert_int_equal(o.wait_ns, 500 * MS);
    assert_true(o.spread);
    assert_int_equal(o.left, 10);
    assert_int_equal(o.window_ns, 5 * S);
    assert_string_equal(o.field, "x-ratelimit-remaining-requests");
    /* held only where the rule itself could send more than the 10 in 5 s */
    assert_true(sl_learn_spread_needed(&o, 100, 100, S, 1)); /* 100/s, burst 100 */
    assert_false(sl_learn_spread_needed(&o, 1, 1, S, 1));    /* 1/s: at most 6 in 5 s */
    assert_true(sl_learn_spread_needed(&o, 1, 2, S, 1));     /* 2/s: 11 */
    assert_false(sl_learn_spread_needed(&o, 4, 2, S, 2));    /* cost 2: 7 */
    const char *plenty[] = {"x-ratelimit-remaining-requests", "10000", "x-ratelimit-reset-requests",
                            "1s", NULL};
    assert_true(teach(200, plenty, T2024, CAP, &o));
    assert_false(sl_learn_spread_needed(&o, 100, 100, S, 1)); /* the burst is kept */
    /* every vendor's form: IETF, the older pair, Anthropic's time, GitHub's epoch */
    const char *ietf[] = {"RateLimit", "\"default\";r=4;t=2", NULL};
    assert_true(teach(200, ietf, T2024, CAP, &o));
    assert_int_equal(o.wait_ns, 500 * MS);
    const char *pair[] = {"RateLimit-Remaining", "2", "RateLimit-Reset", "3", NULL};
    assert_true(teach(200, pair, T2024, CAP, &o));
    assert_int_equal(o.wait_ns, 1500 * MS);
    const char *anthropic[] = {"anthropic-ratelimit-requests-remaining", "30",
                               "anthropic-ratelimit-requests-reset", "2024-05-01T12:00:30Z", NULL};
    assert_true(teach(200, anthropic, T2024, CAP, &o));
    assert_int_equal(o.wait_ns, S);
    const char *github[] = {"x-ratelimit-remaining", "4", "x-ratelimit-reset", "1714564860", NULL};
    assert_true(teach(200, github, T2024, CAP, &o));
    assert_int_equal(o.wait_ns, 15 * S);
    assert_string_equal(o.field, "x-ratelimit-remaining");
    /* the strictest of several families; a hold beats a spread */
    const char *two[] = {"x-ratelimit-remaining-requests",
                         "10",
                         "x-ratelimit-reset-requests",
                         "5s",
                         "RateLimit",
                         "\"x\";r=1;t=2",
                         NULL};
    assert_true(teach(200, two, T2024, CAP, &o));
    assert_int_equal(o.wait_ns, 2 * S);
    assert_string_equal(o.field, "ratelimit");
    const char *held[] = {
        "Retry-After", "1", "x-ratelimit-remaining-requests", "10", "x-ratelimit-reset-requests",
        "5s",          NULL};
    assert_true(teach(429, held, T2024, CAP, &o));
    assert_int_equal(o.wait_ns, S);
    assert_false(o.spread);
    /* capped by learn_max */
    const char *hour[] = {"x-ratelimit-remaining", "1", "x-ratelimit-reset", "1714568400", NULL};
    assert_true(teach(200, hour, T2024, 2 * S, &o));
    assert_int_equal(o.wait_ns, 2 * S);
    assert_true(o.capped && o.spread);
    assert_int_equal(o.asked_ns, 3600 * S);
    /* a past reset beside N left: ignored and counted, nothing spread */
    const char *past[] = {"x-ratelimit-remaining", "5", "x-ratelimit-reset", "1714564700", NULL};
    assert_false(teach(200, past, T2024, CAP, &o));
    assert_int_equal(o.ignored, 1);
    assert_int_equal(o.why, SL_IGN_PAST);
    /* no reset, or a reset of 0: nothing to spread over */
    const char *noreset[] = {"x-ratelimit-remaining-requests", "10", NULL};
    assert_false(teach(200, noreset, T2024, CAP, &o));
    const char *now[] = {"RateLimit", "\"x\";r=3;t=0", NULL};
    assert_false(teach(200, now, T2024, CAP, &o));
}

static uint64_t seen_index;
static struct sl_learn_resp seen;
static int heads;

static void on_head(void *arg, uint64_t index, const struct sl_learn_resp *f)
{
    (void)arg;
    seen_index = index;
    seen = *f;
    heads++;
}

static void the_response_counter_reads_the_fields_split_anywhere(void **unused)
{
    (void)unused;
    static const char resp[] =
        "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"
        "HTTP/1.1 100 Continue\r\nRetry-After: 9\r\n\r\n"
        "HTTP/1.1 429 Too Many Requests\r\nRetry-After:  2\r\n"
        "X-Long: " /* a value longer than kept */
        "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
        "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
        "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
        "\r\nContent-Length: 2\r\n\r\nno";
    for (size_t split = 1; split < sizeof resp - 1; split += 7) {
        struct sl_h1resp r;
        sl_h1resp_init(&r);
        sl_h1resp_learn(&r, on_head, NULL);
        sl_h1resp_sent(&r, "GET");
        sl_h1resp_sent(&r, "GET");
        heads = 0;
        for (size_t i = 0; i < sizeof resp - 1; i += split)
            sl_h1resp_feed(&r, resp + i, i + split < sizeof resp - 1 ? split : sizeof resp - 1 - i);
        assert_int_equal(sl_h1resp_outstanding(&r), 0);
        assert_int_equal(heads, 1); /* the 200 had no fields, the 100 is interim */
        assert_int_equal(seen_index, 1);
        assert_int_equal(seen.status, 429);
        struct sl_learned o;
        assert_true(sl_learn_decide(&seen, T2024, CAP, &o));
        assert_int_equal(o.wait_ns, 2 * S);
    }
}

/* ---- the hold in the table -------------------------------------------- */

#define T0 (1000 * S)

static void a_learned_hold_delays_the_key_then_the_rate_resumes(void **unused)
{
    (void)unused;
    char err[128];
    struct sl_table *t = sl_table_open(1024, NULL, SL_FULL_SHARED, err, sizeof err);
    assert_non_null(t);
    int rule = sl_table_rule(t, 0x77, "api:req");
    struct sl_limit l;
    assert_int_equal(sl_limit_init(&l, SL_ALG_GCRA, 100, S, 100), 0); /* 100/s, burst 100 */
    struct sl_key k = {.rule = 0x77, .lo = 1, .extra = 128}, other = {.rule = 0x77, .lo = 2};
    uint64_t h = sl_key_hash(&k, sl_table_secret(t)), gap = l.burst_ns - l.cost1_ns;
    struct sl_verdict v;
    sl_table_decide(t, rule, &k, &l, T0, 1, 0, &v);
    assert_true(v.allowed);

    /* held 30 s: beyond burst and slack, so a reject rule is refused with the
     * real retry, and a delay rule of max_delay 10 s too, until the last 10 s */
    assert_true(sl_table_hold(t, rule, h, &l, T0 + 30 * S, gap, T0));
    assert_false(sl_table_hold(t, rule, h, &l, T0 + 20 * S, gap, T0)); /* only ever later */
    sl_table_decide(t, rule, &k, &l, T0 + S, 1, 0, &v);
    assert_false(v.allowed);
    assert_int_equal(v.retry_ns, 29 * S);
    for (int i = 0; i < 50; i++) { /* denials do not wear the hold down */
        sl_table_decide(t, rule, &k, &l, T0 + 2 * S + (uint64_t)i * 100 * MS, 1, 10 * S, &v);
        assert_false(v.allowed);
    }
    sl_table_decide(t, rule, &k, &l, T0 + 19 * S, 1, 10 * S, &v);
    assert_false(v.allowed);
    assert_int_equal(v.retry_ns, 11 * S);
    sl_table_decide(t, rule, &other, &l, T0 + S, 1, 0, &v); /* another key: not held */
    assert_true(v.allowed);

    /* within max_delay: the calls queue for the learned time, then at the rate */
    sl_table_decide(t, rule, &k, &l, T0 + 25 * S, 1, 10 * S, &v);
    assert_true(v.allowed);
    assert_int_equal(v.wait_ns, 5 * S);
    sl_table_decide(t, rule, &k, &l, T0 + 25 * S, 1, 10 * S, &v);
    assert_true(v.allowed);
    assert_int_equal(v.wait_ns, 5 * S + 10 * MS);
    /* a reject rule (no slack) refuses until then, then passes */
    struct sl_key k3 = {.rule = 0x77, .lo = 3};
    uint64_t h3 = sl_key_hash(&k3, sl_table_secret(t));
    assert_true(sl_table_hold(t, rule, h3, &l, T0 + 2 * S, gap, T0));
    sl_table_decide(t, rule, &k3, &l, T0 + 2 * S - 1, 1, 0, &v);
    assert_false(v.allowed);
    sl_table_decide(t, rule, &k3, &l, T0 + 2 * S, 1, 0, &v);
    assert_true(v.allowed);
    sl_table_close(t);
}

/* A vendor allowing 10 calls per 5 s window from the first, and one
 * client calling as fast as sluice lets it (a delay rule, 100/s, burst
 * 100): each answer's "N left, reset in T" spreads the window's calls
 * over it, where the rule alone would send all 10 at once. The clock is
 * the test's: a call leaves at the time its decision says, its answer
 * comes 20 ms later, and the hold is made then. */
static void a_spread_sends_the_windows_calls_over_the_window(void **unused)
{
    (void)unused;
    char err[128];
    struct sl_table *t = sl_table_open(1024, NULL, SL_FULL_SHARED, err, sizeof err);
    assert_non_null(t);
    int rule = sl_table_rule(t, 0x78, "api:req");
    struct sl_limit l;
    assert_int_equal(sl_limit_init(&l, SL_ALG_GCRA, 100, S, 100), 0);
    struct sl_key k = {.rule = 0x78, .lo = 9};
    uint64_t h = sl_key_hash(&k, sl_table_secret(t)), gap = l.burst_ns - l.cost1_ns;
    const uint64_t rtt = 20 * MS, window = 5 * S;
    uint64_t now = T0, sent[10];
    for (int i = 0; i < 10; i++) {
        struct sl_verdict v;
        sl_table_decide(t, rule, &k, &l, now, 1, 10 * S, &v); /* max_delay 10 s */
        assert_true(v.allowed);
        now += v.wait_ns;
        sent[i] = now;
        now += rtt; /* the answer: the vendor's count and its window's end */
        char left[8], reset[32];
        snprintf(left, sizeof left, "%d", 10 - (i + 1));
        uint64_t end = T0 + window > now ? T0 + window - now : 0;
        snprintf(reset, sizeof reset, "%.3fs", (double)end / S);
        const char *hv[] = {"x-ratelimit-remaining-requests", left, "x-ratelimit-reset-requests",
                            reset, NULL};
        struct sl_learned o;
        if (teach(200, hv, (int64_t)now, CAP, &o)) /* the wall clock is now too, here */
            sl_table_hold(t, rule, h, &l, now + o.wait_ns, gap, now);
    }
    for (int i = 1; i < 10; i++) /* each gap: what was left of the window over the calls left */
        assert_true(sent[i] - sent[i - 1] >= 450 * MS);
    assert_true(sent[9] - sent[0] >= 4 * S); /* not all at once */
    /* the gaps start at the answers, so the last call leaves at the end of
     * the window plus about one round trip: never before the vendor allows */
    assert_true(sent[9] - sent[0] >= window - rtt && sent[9] - sent[0] <= window + 2 * rtt);

    /* a rule stricter than the spread: the hold moves nothing */
    struct sl_limit slow;
    assert_int_equal(sl_limit_init(&slow, SL_ALG_GCRA, 1, S, 1), 0);
    struct sl_key k2 = {.rule = 0x78, .lo = 10};
    uint64_t h2 = sl_key_hash(&k2, sl_table_secret(t));
    struct sl_verdict v;
    sl_table_decide(t, rule, &k2, &slow, T0, 1, 0, &v);
    assert_true(v.allowed);
    assert_false(sl_table_hold(t, rule, h2, &slow, T0 + 500 * MS, 0, T0));
    sl_table_close(t);
}

static void a_held_bucket_is_idle_only_once_its_time_is_past(void **unused)
{
    (void)unused;
    struct sl_limit l;
    assert_int_equal(sl_limit_init(&l, SL_ALG_GCRA, 1, S, 1), 0);
    uint64_t s = 0, next;
    struct sl_verdict v;
    /* a hold shorter than the burst's reach is an ordinary TAT to the step */
    sl_limit_step(&l, s, T0, 1, 0, &next, &v);
    assert_true(v.allowed);
    s = (T0 + 5 * S) | (1ull << 63);
    assert_false(sl_limit_idle(&l, s, T0 + 4 * S));
    assert_true(sl_limit_idle(&l, s, T0 + 5 * S));
    sl_limit_step(&l, s, T0 + 3 * S, 1, 0, &next, &v);
    assert_false(v.allowed);
    assert_int_equal(next, s);                         /* nothing published */
    sl_limit_step(&l, s, T0 + 4 * S, 1, 0, &next, &v); /* within reach: a plain TAT again */
    assert_false(v.allowed);
    assert_int_equal(next, T0 + 5 * S);
    sl_limit_step(&l, next, T0 + 5 * S, 1, 0, &next, &v);
    assert_true(v.allowed);
    assert_int_equal(next, T0 + 6 * S);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(delta_seconds_are_digits_only),
        cmocka_unit_test(http_dates_in_all_three_forms),
        cmocka_unit_test(go_durations_as_openai_writes_them),
        cmocka_unit_test(rfc3339_times_with_fractions_and_offsets),
        cmocka_unit_test(ratelimit_fields_of_the_ietf_draft),
        cmocka_unit_test(a_429_with_retry_after_holds_and_a_200_does_not),
        cmocka_unit_test(zero_remaining_with_a_reset_holds_in_every_vendors_form),
        cmocka_unit_test(past_absurd_and_unreadable_values_are_ignored_and_counted),
        cmocka_unit_test(n_left_for_t_spreads_them_t_over_n_apart),
        cmocka_unit_test(the_response_counter_reads_the_fields_split_anywhere),
        cmocka_unit_test(a_learned_hold_delays_the_key_then_the_rate_resumes),
        cmocka_unit_test(a_spread_sends_the_windows_calls_over_the_window),
        cmocka_unit_test(a_held_bucket_is_idle_only_once_its_time_is_past),
    };
    return cmocka_run_group_tests(tests, NULL, NULL) != 0;
}
