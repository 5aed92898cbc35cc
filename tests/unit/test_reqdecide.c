/* SPDX-License-Identifier: BSD-2-Clause */
/* test_reqdecide.c - request rules deciding request heads: budgets per key,
 * routes and cost, refunds, dry run, missing keys, plans, quotas and
 * Idempotency-Key, on a private table with the time injected. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../core/log.h"
#include "../../core/limit/plan.h"
#include "../../core/limit/quota.h"
#include "../../core/http/reqdecide.h"
#include "../../core/limit/table.h"
#include "../../core/limit/table_plans.h"
#include "testutil.h"

struct world {
    struct sl_config *cfg;
    struct sl_table *table;
    struct sl_runtime rt;
};

static struct world *world_new(void)
{
    struct world *w = calloc(1, sizeof *w);
    w->cfg = calloc(1, sizeof *w->cfg);
    sl_log_setup(SL_LOG_NONE, SL_LOG_ERROR);
    return w;
}

/* A request rule limiting `count` requests per `period` with `burst`. */
static struct sl_rule *rule(struct world *w, const char *name, uint64_t count, uint64_t period,
                            uint64_t burst)
{
    struct sl_rule *r = &w->cfg->rules[w->cfg->nrules++];
    snprintf(r->name, sizeof r->name, "%s", name);
    r->id = sl_name_hash(name);
    r->dir = SL_IN;
    r->per = SL_PER_PEER;
    r->prefix4 = 32;
    r->prefix6 = 64;
    r->action = SL_ACT_REPLY;
    r->request = true;
    r->cost = 1;
    if (count) assert_int_equal(sl_limit_init(&r->req_limit, SL_ALG_GCRA, count, period, burst), 0);
    return r;
}

static void start(struct world *w)
{
    char err[256] = "";
    w->table = sl_table_open(4096, NULL, SL_FULL_SHARED, err, sizeof err);
    if (!w->table) fail_msg("sl_table_open: %s", err);
    assert_int_equal(sl_runtime_init(&w->rt, w->cfg, w->table, err, sizeof err), 0);
}

static void world_free(struct world *w)
{
    sl_table_close(w->table);
    for (int i = 0; i < w->cfg->nrules; i++)
        sl_plans_free((struct sl_plans *)w->cfg->rules[i].plans);
    free(w->cfg);
    free(w);
}

static struct sl_addr peer(uint8_t last)
{
    struct sl_addr a = {.v4 = true, .port = 40000};
    a.a[10] = a.a[11] = 0xff;
    a.a[12] = 10;
    a.a[15] = last;
    return a;
}

/* The connection's view: every request rule, from peer 10.0.0.last. */
static struct sl_req_rules conn(struct world *w, uint8_t last, const char *header)
{
    struct sl_req_rules x = {.rt = &w->rt, .peer = peer(last)};
    for (int i = 0; i < w->cfg->nrules; i++)
        if (w->cfg->rules[i].request) x.match |= 1ull << i;
    if (header) snprintf(x.header, sizeof x.header, "%s", header);
    x.wall_offset = 0;
    sl_req_rules_entries(&x);
    return x;
}

/* The body digests of the tests (core/http/bodydigest.h): requests are whole
 * with an empty body unless a test says otherwise. */
static const uint8_t body_empty[16], body_other[16] = {1};

static struct sl_req_head head(const char *method, const char *target)
{
    struct sl_req_head h = {
        .method = method, .method_len = strlen(method), .path = target, .body_digest = body_empty};
    const char *q = strchr(target, '?');
    h.path_len = q ? (size_t)(q - target) : strlen(target);
    if (q) {
        h.query = q + 1;
        h.query_len = strlen(q + 1);
    }
    return h;
}

static struct sl_req_head with_header(struct sl_req_head h, const char *v)
{
    h.header = v;
    h.header_len = strlen(v);
    return h;
}

static bool ask(const struct sl_req_rules *x, const struct sl_req_head *h, uint64_t now,
                struct sl_req_decision *d)
{
    sl_req_decide(x, h, now, d);
    return d->allowed;
}

/* Requests admitted out of n asked evenly over [start, start + span). */
static int admitted(const struct sl_req_rules *x, const struct sl_req_head *h, uint64_t start,
                    uint64_t span, int n)
{
    int ok = 0;
    struct sl_req_decision d;
    for (int i = 0; i < n; i++)
        ok += ask(x, h, start + span * (uint64_t)i / (uint64_t)n, &d);
    return ok;
}

static uint64_t counter(struct world *w, const struct sl_req_rules *x, int rule, enum sl_counter c)
{
    return sl_table_counter(w->table, x->entry[rule], c);
}

static void admitted_requests_are_burst_plus_rate_times_time(void **unused)
{
    (void)unused;
    struct world *w = world_new();
    rule(w, "api", 20, SEC, 5);
    start(w);
    struct sl_req_rules x = conn(w, 1, NULL);
    struct sl_req_head h = head("GET", "/");
    /* a flood of 1000 requests a second for 3 s: 5 + 20 * 3 pass (the last
     * arrival is 1 ms before the end, so the 60th token of the rate may
     * or may not be there yet) */
    int ok = admitted(&x, &h, T0, 3 * SEC, 3000);
    assert_in_range(ok, 5 + 60 - 1, 5 + 60);
    assert_int_equal(counter(w, &x, 0, SL_C_ALLOWED), (uint64_t)ok);
    assert_int_equal(counter(w, &x, 0, SL_C_LIMITED), 3000 - (uint64_t)ok);
    world_free(w);
}

static void a_denial_carries_the_bucket_and_the_rule_as_policy(void **unused)
{
    (void)unused;
    struct world *w = world_new();
    rule(w, "api", 100, MIN, 2);
    start(w);
    struct sl_req_rules x = conn(w, 1, NULL);
    struct sl_req_head h = head("GET", "/");
    struct sl_req_decision d;
    assert_true(ask(&x, &h, T0, &d));
    assert_true(ask(&x, &h, T0, &d));
    assert_false(ask(&x, &h, T0, &d));
    assert_int_equal(d.rule, 0);
    assert_int_equal(d.v.retry_ns, 600 * MS); /* one request at 100/min */
    assert_string_equal(d.policy.name, "api");
    assert_int_equal(d.policy.quota, 100);
    assert_int_equal(d.policy.window_s, 60);
    world_free(w);
}

static void two_keys_from_one_address_get_a_budget_each(void **unused)
{
    (void)unused;
    struct world *w = world_new();
    struct sl_rule *r = rule(w, "keys", 1, SEC, 3);
    r->req_per = SL_REQ_PER_HEADER;
    strcpy(r->req_per_name, "X-API-Key");
    start(w);
    struct sl_req_rules x = conn(w, 1, "x-api-key");
    struct sl_req_head a = with_header(head("GET", "/"), "alpha");
    struct sl_req_head b = with_header(head("GET", "/"), "beta");
    assert_int_equal(admitted(&x, &a, T0, MS, 10), 3);
    assert_int_equal(admitted(&x, &b, T0, MS, 10), 3);
    /* and the same key from another address shares its budget */
    struct sl_req_rules y = conn(w, 2, "X-API-Key");
    assert_int_equal(admitted(&y, &a, T0, MS, 10), 0);
    world_free(w);
}

static void a_query_key_is_one_key_however_it_is_spelled(void **unused)
{
    (void)unused;
    struct world *w = world_new();
    struct sl_rule *r = rule(w, "q", 1, SEC, 2);
    r->req_per = SL_REQ_PER_QUERY;
    strcpy(r->req_per_name, "api_key");
    start(w);
    struct sl_req_rules x = conn(w, 1, NULL);
    struct sl_req_head a = head("GET", "/x?page=2&api_key=abc");
    struct sl_req_head b = head("GET", "/y?api_key=%61bc");
    struct sl_req_decision d;
    assert_true(ask(&x, &a, T0, &d));
    assert_true(ask(&x, &b, T0, &d));
    assert_false(ask(&x, &a, T0, &d));
    struct sl_req_head other = head("GET", "/y?api_key=abd");
    assert_true(ask(&x, &other, T0, &d));
    world_free(w);
}

static void a_cookie_key_is_found_among_cookies(void **unused)
{
    (void)unused;
    struct world *w = world_new();
    struct sl_rule *r = rule(w, "c", 1, SEC, 1);
    r->req_per = SL_REQ_PER_COOKIE;
    strcpy(r->req_per_name, "session");
    start(w);
    struct sl_req_rules x = conn(w, 1, NULL);
    struct sl_req_head a = head("GET", "/"), b = head("GET", "/");
    a.cookie = "theme=dark; session=s1";
    a.cookie_len = strlen(a.cookie);
    b.cookie = "session=\"s2\" ;theme=dark";
    b.cookie_len = strlen(b.cookie);
    struct sl_req_decision d;
    assert_true(ask(&x, &a, T0, &d));
    assert_true(ask(&x, &b, T0, &d));
    assert_false(ask(&x, &a, T0, &d));
    assert_false(ask(&x, &b, T0, &d));
    world_free(w);
}

static void a_request_without_the_key_falls_back_to_its_peer(void **unused)
{
    (void)unused;
    struct world *w = world_new();
    struct sl_rule *r = rule(w, "keys", 1, SEC, 2);
    r->req_per = SL_REQ_PER_HEADER;
    strcpy(r->req_per_name, "X-API-Key");
    start(w);
    struct sl_req_rules one = conn(w, 1, "X-API-Key"), two = conn(w, 2, "X-API-Key");
    struct sl_req_head none = head("GET", "/");
    assert_int_equal(admitted(&one, &none, T0, MS, 10), 2);
    assert_int_equal(admitted(&two, &none, T0, MS, 10), 2);
    world_free(w);
}

static void per_missing_rule_shares_one_budget_and_deny_denies(void **unused)
{
    (void)unused;
    struct world *w = world_new();
    struct sl_rule *r = rule(w, "keys", 1, SEC, 2);
    r->req_per = SL_REQ_PER_HEADER;
    strcpy(r->req_per_name, "X-API-Key");
    r->per_missing = SL_MISSING_RULE;
    start(w);
    struct sl_req_rules one = conn(w, 1, "X-API-Key"), two = conn(w, 2, "X-API-Key");
    struct sl_req_head none = head("GET", "/");
    assert_int_equal(admitted(&one, &none, T0, MS, 10), 2);
    assert_int_equal(admitted(&two, &none, T0, MS, 10), 0);
    r->per_missing = SL_MISSING_DENY;
    assert_int_equal(admitted(&one, &none, T0 + MIN, MS, 10), 0);
    struct sl_req_head key = with_header(head("GET", "/"), "k");
    assert_int_equal(admitted(&one, &key, T0 + MIN, MS, 10), 2);
    world_free(w);
}

static void a_route_of_cost_ten_drains_the_key_ten_times_faster(void **unused)
{
    (void)unused;
    struct world *w = world_new();
    struct sl_rule *all = rule(w, "all", 10, SEC, 100);
    all->req_per = SL_REQ_PER_HEADER;
    strcpy(all->req_per_name, "X-API-Key");
    /* the same bucket charged 10 for an export: a second rule on the route
     * with its own budget would not show the drain, so cost lives on the
     * route rule and the key's budget is that rule's */
    struct sl_rule *exp = rule(w, "export", 10, SEC, 100);
    exp->req_per = SL_REQ_PER_HEADER;
    strcpy(exp->req_per_name, "X-API-Key");
    exp->cost = 10;
    strcpy(exp->routes[exp->nroutes++], "/export");
    start(w);
    struct sl_req_rules x = conn(w, 1, "X-API-Key");
    struct sl_req_head e = with_header(head("GET", "/export/all"), "k1");
    struct sl_req_head s = with_header(head("GET", "/search"), "k2");
    int exports = 0, searches = 0;
    struct sl_req_decision d;
    for (int i = 0; i < 200; i++) {
        exports += ask(&x, &e, T0, &d);
        searches += ask(&x, &s, T0, &d);
    }
    assert_int_equal(exports, 10);   /* 100 tokens / 10 */
    assert_int_equal(searches, 100); /* 100 tokens / 1 (the route rule does not match) */
    /* and over 10 s of refill: 100 tokens more each */
    exports = admitted(&x, &e, T0 + MS, 10 * SEC, 10000);
    assert_in_range(exports, 9, 10);
    world_free(w);
}

static void a_rule_of_cost_zero_counts_and_never_limits(void **unused)
{
    (void)unused;
    struct world *w = world_new();
    struct sl_rule *r = rule(w, "count", 1, SEC, 1);
    r->cost = 0;
    start(w);
    struct sl_req_rules x = conn(w, 1, NULL);
    struct sl_req_head h = head("GET", "/");
    assert_int_equal(admitted(&x, &h, T0, MS, 50), 50);
    assert_int_equal(counter(w, &x, 0, SL_C_ALLOWED), 50);
    world_free(w);
}

static void methods_and_hosts_select_requests(void **unused)
{
    (void)unused;
    struct world *w = world_new();
    struct sl_rule *r = rule(w, "writes", 1, SEC, 1);
    strcpy(r->methods[r->nmethods++], "POST");
    strcpy(r->req_hosts[r->nreq_hosts++], "api.example.com");
    start(w);
    struct sl_req_rules x = conn(w, 1, NULL);
    struct sl_req_head get = head("GET", "/"), post = head("POST", "/");
    get.host = post.host = "API.example.com:443";
    get.host_len = post.host_len = strlen(post.host);
    struct sl_req_head other = post;
    other.host = "www.example.com";
    other.host_len = strlen(other.host);
    assert_int_equal(admitted(&x, &get, T0, MS, 5), 5);
    assert_int_equal(admitted(&x, &other, T0, MS, 5), 5);
    assert_int_equal(admitted(&x, &post, T0, MS, 5), 1);
    world_free(w);
}

/* A head sluice could not read (odd: an HTTP/2 block nothing decodes, a
 * head http-parser refused before its request line ended) has no method,
 * path or host: route, method and host rules count it, never pass it
 * (issue 31, defect 2: route=/export passed 30 of 30 such requests). A
 * readable head of another route, method or host still passes. */
static void route_method_and_host_rules_count_what_they_cannot_read(void **unused)
{
    (void)unused;
    struct world *w = world_new();
    struct sl_rule *r = rule(w, "export", 1, SEC, 1);
    r->nroutes = 1;
    strcpy(r->routes[0], "/export");
    r = rule(w, "writes", 1, SEC, 1);
    strcpy(r->methods[r->nmethods++], "POST");
    r = rule(w, "api", 1, SEC, 1);
    strcpy(r->req_hosts[r->nreq_hosts++], "api.example.com");
    start(w);
    struct sl_req_rules x = conn(w, 1, NULL);
    struct sl_req_head blind = head("", ""), other = head("GET", "/other");
    blind.odd = true;
    other.host = "www.example.com";
    other.host_len = strlen(other.host);
    assert_int_equal(admitted(&x, &other, T0, MS, 5), 5);
    assert_int_equal(admitted(&x, &blind, T0, MS, 5), 1);
    for (int i = 0; i < 3; i++)
        assert_int_equal(counter(w, &x, i, SL_C_ALLOWED), 1);
    world_free(w);
}

static void a_later_denial_gives_back_what_earlier_rules_took(void **unused)
{
    (void)unused;
    struct world *w = world_new();
    rule(w, "wide", 100, SEC, 10);
    struct sl_rule *narrow = rule(w, "narrow", 1, SEC, 1);
    strcpy(narrow->routes[narrow->nroutes++], "/search");
    start(w);
    struct sl_req_rules x = conn(w, 1, NULL);
    struct sl_req_head s = head("GET", "/search"), o = head("GET", "/other");
    struct sl_req_decision d;
    assert_true(ask(&x, &s, T0, &d));
    for (int i = 0; i < 20; i++) {
        assert_false(ask(&x, &s, T0, &d));
        assert_int_equal(d.rule, 1);
    }
    /* the 20 denied searches cost "wide" nothing: 9 of its 10 are left */
    assert_int_equal(admitted(&x, &o, T0, 0, 20), 9);
    assert_int_equal(counter(w, &x, 0, SL_C_ALLOWED), 10);
    assert_int_equal(counter(w, &x, 1, SL_C_LIMITED), 20);
    world_free(w);
}

static void dry_run_counts_what_it_would_deny_and_passes_it(void **unused)
{
    (void)unused;
    struct world *w = world_new();
    struct sl_rule *r = rule(w, "dry", 1, SEC, 2);
    r->dry_run = true;
    start(w);
    struct sl_req_rules x = conn(w, 1, NULL);
    struct sl_req_head h = head("GET", "/");
    assert_int_equal(admitted(&x, &h, T0, MS, 10), 10);
    assert_int_equal(counter(w, &x, 0, SL_C_ALLOWED), 2);
    assert_int_equal(counter(w, &x, 0, SL_C_WOULD_LIMIT), 8);
    assert_int_equal(counter(w, &x, 0, SL_C_LIMITED), 0);
    world_free(w);
}

static void a_delay_rule_holds_requests_until_their_turn(void **unused)
{
    (void)unused;
    struct world *w = world_new();
    struct sl_rule *r = rule(w, "paced", 10, SEC, 1);
    r->action = SL_ACT_DELAY;
    r->max_delay_ns = 250 * MS;
    start(w);
    struct sl_req_rules x = conn(w, 1, NULL);
    struct sl_req_head h = head("GET", "/");
    struct sl_req_decision d;
    assert_true(ask(&x, &h, T0, &d));
    assert_int_equal(d.wait_ns, 0);
    assert_true(ask(&x, &h, T0, &d));
    assert_int_equal(d.wait_ns, 100 * MS);
    assert_true(ask(&x, &h, T0, &d));
    assert_int_equal(d.wait_ns, 200 * MS);
    assert_false(ask(&x, &h, T0, &d)); /* 300 ms is past max_delay */
    assert_int_equal(counter(w, &x, 0, SL_C_DELAYED), 2);
    world_free(w);
}

/* algorithm = log: exactly N in any rolling period, for one rule; a
 * request waits (delay) or is told to retry exactly until the oldest of
 * the last N leaves the period. */
static void a_log_rule_admits_n_in_any_rolling_period(void **unused)
{
    (void)unused;
    struct world *w = world_new();
    struct sl_rule *r = rule(w, "vendor", 0, 0, 0);
    assert_int_equal(sl_limit_init(&r->req_limit, SL_ALG_LOG, 3, SEC, 0), 0);
    r->per = SL_PER_RULE;
    start(w);
    struct sl_req_rules x = conn(w, 1, NULL), y = conn(w, 2, NULL);
    struct sl_req_head h = head("GET", "/");
    struct sl_req_decision d;
    assert_true(ask(&x, &h, T0, &d));
    assert_true(ask(&y, &h, T0 + 400 * MS, &d)); /* one log for the rule, whoever asks */
    assert_true(ask(&x, &h, T0 + 900 * MS, &d));
    assert_false(ask(&y, &h, T0 + 950 * MS, &d));
    assert_int_equal(d.v.retry_ns, 50 * MS); /* the first leaves at T0 + 1 s */
    assert_true(ask(&x, &h, T0 + SEC, &d));
    assert_false(ask(&x, &h, T0 + SEC + 100 * MS, &d)); /* 400 ms, 900 ms, 1 s are in */
    assert_true(ask(&x, &h, T0 + 1400 * MS, &d));
    r->action = SL_ACT_DELAY;
    r->max_delay_ns = SEC;
    assert_true(ask(&x, &h, T0 + 1500 * MS, &d)); /* waits for 900 ms's stamp to leave */
    assert_int_equal(d.wait_ns, 400 * MS);
    assert_int_equal(counter(w, &x, 0, SL_C_ALLOWED), 6);
    assert_int_equal(counter(w, &x, 0, SL_C_LIMITED), 2);
    world_free(w);
}

static struct sl_plans *plans_gold(void)
{
    struct sl_plans *ps = sl_plans_new();
    struct sl_plan gold = {.name = "gold"};
    assert_int_equal(sl_limit_init(&gold.req_limit, SL_ALG_GCRA, 100, SEC, 20), 0);
    assert_int_equal(sl_plans_add(ps, &gold), 0);
    assert_int_equal(sl_plans_add_key(ps, 0, "sk_gold", 7, 1), 0);
    sl_plans_seal(ps);
    return ps;
}

static void a_key_with_a_plan_gets_its_plan_and_others_the_rule(void **unused)
{
    (void)unused;
    struct world *w = world_new();
    struct sl_rule *r = rule(w, "api", 3, SEC, 3);
    r->req_per = SL_REQ_PER_HEADER;
    strcpy(r->req_per_name, "X-API-Key");
    r->plans = plans_gold();
    start(w);
    struct sl_req_rules x = conn(w, 1, "X-API-Key");
    struct sl_req_head gold = with_header(head("GET", "/"), "sk_gold");
    struct sl_req_head tin = with_header(head("GET", "/"), "sk_tin");
    assert_int_equal(admitted(&x, &gold, T0, MS, 50), 20);
    assert_int_equal(admitted(&x, &tin, T0, MS, 50), 3);
    struct sl_req_decision d;
    assert_false(ask(&x, &gold, T0 + MS, &d));
    assert_string_equal(d.policy.name, "gold");
    assert_int_equal(d.policy.quota, 100);
    world_free(w);
}

static void a_daily_quota_in_the_table_resets_at_midnight(void **unused)
{
    (void)unused;
    struct world *w = world_new();
    struct sl_rule *r = rule(w, "daily", 0, 0, 0);
    r->quota = 3;
    r->quota_window = SL_QUOTA_DAY;
    start(w);
    struct sl_req_rules x = conn(w, 1, NULL);
    /* the wall clock says 2026-11-22 23:00 UTC when the monotonic says T0 */
    x.wall_offset = (int64_t)(1795388400ull * SEC - T0);
    struct sl_req_head h = head("GET", "/");
    assert_int_equal(admitted(&x, &h, T0, 59 * MIN, 10), 3);
    struct sl_req_decision d;
    assert_false(ask(&x, &h, T0 + 59 * MIN, &d));
    assert_int_equal(d.v.retry_ns, MIN);
    assert_int_equal(d.policy.quota, 3);
    assert_int_equal(d.policy.window_s, 86400);
    assert_true(ask(&x, &h, T0 + HOUR, &d)); /* midnight */
    world_free(w);
}

static void a_quota_denial_gives_back_the_rate_token(void **unused)
{
    (void)unused;
    struct world *w = world_new();
    struct sl_rule *r = rule(w, "both", 1, SEC, 5);
    r->quota = 2;
    r->quota_window = SL_QUOTA_MONTH;
    struct sl_rule *other = rule(w, "other", 1, SEC, 5);
    (void)other;
    start(w);
    struct sl_req_rules x = conn(w, 1, NULL);
    struct sl_req_head h = head("GET", "/");
    x.wall_offset = (int64_t)(1795388400ull * SEC - T0);
    assert_int_equal(admitted(&x, &h, T0, 0, 10), 2);
    /* the quota denied 8: the rate bucket of "both" kept 3 of its 5 */
    r->quota = 0;
    assert_int_equal(admitted(&x, &h, T0, 0, 10), 3);
    world_free(w);
}

/* Under delay, a call over its quota whose window renews within max_delay
 * waits for the new window, paced by the rate from there, and counts
 * against the new window; one whose renewal is further away fails. */
static void under_delay_an_exhausted_quota_waits_for_its_window_within_max_delay(void **unused)
{
    (void)unused;
    struct world *w = world_new();
    struct sl_rule *r = rule(w, "paid", 1, SEC, 1);
    r->quota = 2;
    r->quota_window = SL_QUOTA_DAY;
    r->action = SL_ACT_DELAY;
    r->max_delay_ns = 5 * SEC;
    start(w);
    struct sl_req_rules x = conn(w, 1, NULL);
    /* 2026-11-22 23:59:57 UTC at T0: midnight is 3 s away */
    x.wall_offset = (int64_t)(1795391997ull * SEC - T0);
    struct sl_req_head h = head("GET", "/");
    struct sl_req_decision d;
    assert_true(ask(&x, &h, T0, &d));
    assert_int_equal(d.wait_ns, 0);
    assert_true(ask(&x, &h, T0, &d));
    assert_int_equal(d.wait_ns, SEC); /* the rate: 1/s */
    /* the quota is spent: waits for midnight (3 s), the new day's first */
    assert_true(ask(&x, &h, T0, &d));
    assert_int_equal(d.wait_ns, 3 * SEC);
    /* the next one is paced by the rate from midnight on */
    assert_true(ask(&x, &h, T0, &d));
    assert_int_equal(d.wait_ns, 4 * SEC);
    /* the new day's quota (2) is booked: the next would wait a day */
    assert_false(ask(&x, &h, T0, &d));
    assert_int_equal(d.policy.quota, 2);
    /* at midnight the booked ones are the new day's two */
    assert_false(ask(&x, &h, T0 + 3 * SEC, &d));
    world_free(w);
}

static void under_delay_a_quota_renewing_beyond_max_delay_fails_at_once(void **unused)
{
    (void)unused;
    struct world *w = world_new();
    struct sl_rule *r = rule(w, "paid", 0, 0, 0);
    r->quota = 1;
    r->quota_window = SL_QUOTA_DAY;
    r->action = SL_ACT_DELAY;
    r->max_delay_ns = 2 * SEC;
    start(w);
    struct sl_req_rules x = conn(w, 1, NULL);
    x.wall_offset = (int64_t)(1795391997ull * SEC - T0); /* 3 s to midnight */
    struct sl_req_head h = head("GET", "/");
    struct sl_req_decision d;
    assert_true(ask(&x, &h, T0, &d));
    assert_false(ask(&x, &h, T0, &d));
    assert_int_equal(d.v.retry_ns, 3 * SEC);
    /* 1.5 s to midnight: within max_delay, it waits */
    assert_true(ask(&x, &h, T0 + 1500 * MS, &d));
    assert_int_equal(d.wait_ns, 1500 * MS);
    world_free(w);
}

/* Two plans with daily quotas (gold 3, free 2), keys sk_gold and sk_free. */
static struct sl_plans *plans_with_quotas(void)
{
    struct sl_plans *ps = sl_plans_new();
    struct sl_plan gold = {.name = "gold", .quota = 3, .quota_window = SL_QUOTA_DAY};
    struct sl_plan free_ = {.name = "free", .quota = 2, .quota_window = SL_QUOTA_DAY};
    assert_int_equal(sl_plans_add(ps, &gold), 0);
    assert_int_equal(sl_plans_add(ps, &free_), 1);
    assert_int_equal(sl_plans_add_key(ps, 0, "sk_gold", 7, 1), 0);
    assert_int_equal(sl_plans_add_key(ps, 1, "sk_free", 7, 2), 0);
    sl_plans_seal(ps);
    return ps;
}

/* The table's figures for plan `name` at wall second wall_s. */
static struct sl_plan_use plan_use(struct world *w, const char *name, uint64_t wall_s)
{
    struct sl_plan_use u;
    for (int i = 0; i < sl_table_plan_entries(); i++)
        if (sl_table_plan_use(w->table, i, wall_s, &u) && strcmp(u.name, name) == 0) return u;
    fail_msg("no counters for plan %s", name);
    return u;
}

/* Each plan's requests are counted against its quota: admitted, refused,
 * keys at 80/90/100 %; a request a later rule denies is not admitted (its
 * quota was given back), and a key without a plan counts for none. At
 * midnight the window's figures start again; those ever stay. */
static void quota_use_is_counted_per_plan(void **unused)
{
    (void)unused;
    struct world *w = world_new();
    struct sl_rule *r = rule(w, "api", 0, 0, 0);
    r->req_per = SL_REQ_PER_HEADER;
    strcpy(r->req_per_name, "X-API-Key");
    r->quota = 100;
    r->quota_window = SL_QUOTA_DAY;
    r->plans = plans_with_quotas();
    struct sl_rule *after = rule(w, "after", 1, HOUR, 6); /* denies the 7th request */
    start(w);
    struct sl_req_rules x = conn(w, 1, "X-API-Key");
    x.wall_offset = (int64_t)(1795388400ull * SEC - T0); /* 2026-11-22 23:00 UTC */
    const uint64_t midnight = 1795392000ull, before = midnight - 60;
    struct sl_req_head gold = with_header(head("GET", "/"), "sk_gold");
    struct sl_req_head free_ = with_header(head("GET", "/"), "sk_free");
    struct sl_req_head none = with_header(head("GET", "/"), "sk_none");
    assert_int_equal(admitted(&x, &gold, T0, MIN, 5), 3);
    assert_int_equal(admitted(&x, &none, T0, MIN, 2), 2);
    assert_int_equal(admitted(&x, &free_, T0, MIN, 1), 1);
    /* "after" has given out its 6: the free key's second call passes its
     * quota, then is denied, and its quota use is given back */
    struct sl_req_decision d;
    assert_false(ask(&x, &free_, T0 + MIN, &d));
    assert_int_equal(d.rule, 1);
    struct sl_plan_use g = plan_use(w, "gold", before), f = plan_use(w, "free", before);
    assert_int_equal(g.admitted, 3);
    assert_int_equal(g.refused, 2);
    assert_int_equal(g.used, 3);
    assert_int_equal(g.quota, 3);
    assert_int_equal(g.window_end_s, midnight);
    assert_int_equal(g.keys[0], 1);
    assert_int_equal(g.keys[2], 1);
    assert_int_equal(f.admitted, 1);
    assert_int_equal(f.refused, 0);
    assert_int_equal(f.used, 1);
    assert_int_equal(f.keys[0], 0); /* 1 of 2: under 80 % */
    assert_int_equal(f.quota, 2);
    int plans = 0;
    struct sl_plan_use any;
    for (int i = 0; i < sl_table_plan_entries(); i++)
        plans += sl_table_plan_use(w->table, i, before, &any);
    assert_int_equal(plans, 2); /* no entry for the key without a plan */
    /* midnight: gold's key has a new day */
    after->req_limit.count = 0; /* "after" no longer limits */
    assert_true(ask(&x, &gold, T0 + HOUR, &d));
    g = plan_use(w, "gold", midnight + 1);
    assert_int_equal(g.admitted, 4);
    assert_int_equal(g.used, 1);
    assert_int_equal(g.keys[2], 0);
    assert_int_equal(g.reached[2], 1);
    assert_int_equal(g.window_end_s, midnight + 86400);
    world_free(w);
}

/* Under delay, a call queued for the next window counts for its plan in
 * that window: the figures of the window are then the next one's. */
static void a_plan_s_call_queued_for_the_next_window_counts_there(void **unused)
{
    (void)unused;
    struct world *w = world_new();
    struct sl_rule *r = rule(w, "paid", 0, 0, 0);
    r->req_per = SL_REQ_PER_HEADER;
    strcpy(r->req_per_name, "X-API-Key");
    r->plans = plans_with_quotas(); /* free: 2 a day */
    r->action = SL_ACT_DELAY;
    r->max_delay_ns = 5 * SEC;
    start(w);
    struct sl_req_rules x = conn(w, 1, "X-API-Key");
    const uint64_t midnight = 1795392000ull;
    x.wall_offset = (int64_t)((midnight - 3) * SEC - T0); /* 3 s to midnight */
    struct sl_req_head h = with_header(head("GET", "/"), "sk_free");
    struct sl_req_decision d;
    assert_true(ask(&x, &h, T0, &d));
    assert_true(ask(&x, &h, T0, &d));
    struct sl_plan_use f = plan_use(w, "free", midnight - 3);
    assert_int_equal(f.window_end_s, midnight);
    assert_int_equal(f.used, 2);
    assert_int_equal(f.keys[2], 1);
    assert_true(ask(&x, &h, T0, &d)); /* waits for midnight */
    assert_int_equal(d.wait_ns, 3 * SEC);
    f = plan_use(w, "free", midnight - 3);
    assert_int_equal(f.window_end_s, midnight + 86400);
    assert_int_equal(f.used, 1);
    assert_int_equal(f.admitted, 3);
    assert_int_equal(f.refused, 0);
    world_free(w);
}

/* A ramped rule's rate is computed per decision; when a later rule denies,
 * what the ramped rule took is given back with that rate, after the
 * function that computed it returned (it must not point into its frame:
 * ASan with detect_stack_use_after_return=1 sees it). */
static void a_ramped_grant_is_given_back_when_a_later_rule_denies(void **unused)
{
    (void)unused;
    struct world *w = world_new();
    struct sl_rule *ramped = rule(w, "ramped", 10, SEC, 2);
    ramped->ramp = (struct sl_ramp){.to_count = 2, .from_s = 0, .every_ns = SEC, .steps = 4};
    rule(w, "strict", 1, MIN, 1);
    start(w);
    struct sl_req_rules x = conn(w, 1, NULL);
    struct sl_req_head h = head("GET", "/");
    struct sl_req_decision d;
    assert_true(ask(&x, &h, T0, &d));
    for (int i = 0; i < 5; i++) { /* denied by "strict": "ramped" keeps its tokens */
        assert_false(ask(&x, &h, T0, &d));
        assert_string_equal(d.policy.name, "strict");
    }
    w->cfg->rules[1].req_limit.count = 0; /* "strict" off: "ramped" has 1 of its 2 left */
    assert_int_equal(admitted(&x, &h, T0, 0, 5), 1);
    world_free(w);
}

static void a_retry_with_the_same_idempotency_key_is_not_charged_again(void **unused)
{
    (void)unused;
    struct world *w = world_new();
    rule(w, "api", 1, MIN, 2);
    start(w);
    struct sl_req_rules x = conn(w, 1, NULL);
    struct sl_req_head h = head("POST", "/orders");
    h.idem = "order-17";
    h.idem_len = strlen(h.idem);
    struct sl_req_decision d;
    assert_true(ask(&x, &h, T0, &d));           /* charged: 1 left */
    assert_true(ask(&x, &h, T0 + SEC, &d));     /* retry: free */
    assert_true(ask(&x, &h, T0 + 2 * SEC, &d)); /* retry: free */
    struct sl_req_head other = head("POST", "/orders");
    assert_true(ask(&x, &other, T0 + 3 * SEC, &d)); /* charged: 0 left */
    assert_false(ask(&x, &other, T0 + 3 * SEC, &d));
    /* SL_IDEM_FREE retries were free; the next one is charged like any */
    assert_false(ask(&x, &h, T0 + 4 * SEC, &d));
    world_free(w);
}

static void an_idempotency_key_of_a_denied_request_stays_unspent(void **unused)
{
    (void)unused;
    struct world *w = world_new();
    rule(w, "api", 1, MIN, 1);
    start(w);
    struct sl_req_rules x = conn(w, 1, NULL);
    struct sl_req_head plain = head("POST", "/"), h = head("POST", "/");
    h.idem = "k";
    h.idem_len = 1;
    struct sl_req_decision d;
    assert_true(ask(&x, &plain, T0, &d));
    assert_false(ask(&x, &h, T0, &d));            /* denied: its key was not marked */
    assert_true(ask(&x, &h, T0 + MIN, &d));       /* charged now */
    assert_true(ask(&x, &h, T0 + MIN + SEC, &d)); /* and only now free */
    world_free(w);
}

/* Issue 18.5: one key under other methods, paths or queries used to ride
 * free (each token bought three different requests). */
static void an_idempotency_key_frees_only_retries_of_the_same_request(void **unused)
{
    (void)unused;
    struct world *w = world_new();
    rule(w, "api", 1, HOUR, 4);
    start(w);
    struct sl_req_rules x = conn(w, 1, NULL);
    static const char *const reqs[][2] = {
        {"POST", "/orders"}, {"DELETE", "/orders"}, {"POST", "/export"}, {"POST", "/orders?all=1"}};
    struct sl_req_decision d;
    for (int i = 0; i < 4; i++) { /* four different requests: four tokens */
        struct sl_req_head h = head(reqs[i][0], reqs[i][1]);
        h.idem = "same";
        h.idem_len = 4;
        assert_true(ask(&x, &h, T0 + (uint64_t)i, &d));
    }
    struct sl_req_head h = head("PUT", "/orders");
    h.idem = "same";
    h.idem_len = 4;
    assert_false(ask(&x, &h, T0 + 10, &d)); /* the bucket is empty */
    /* while retries of the first are still free */
    struct sl_req_head retry = head("POST", "/orders");
    retry.idem = "same";
    retry.idem_len = 4;
    assert_true(ask(&x, &retry, T0 + 11, &d));
    world_free(w);
}

/* Issue 18.5, what was left: the mark is bound to the body's digest too;
 * the same key, method and target with another body is another request
 * (it used to ride free), and a body not whole when the head is decided
 * (no digest) is charged and opens no free retries. */
static void an_idempotency_key_frees_only_retries_with_the_same_body(void **unused)
{
    (void)unused;
    struct world *w = world_new();
    rule(w, "api", 1, HOUR, 3);
    start(w);
    struct sl_req_rules x = conn(w, 1, NULL);
    struct sl_req_head a = head("POST", "/orders"), b = head("POST", "/orders");
    a.idem = b.idem = "same";
    a.idem_len = b.idem_len = 4;
    b.body_digest = body_other;
    struct sl_req_decision d;
    assert_true(ask(&x, &a, T0, &d));     /* charged: 2 left */
    assert_true(ask(&x, &b, T0 + 1, &d)); /* another body: charged, 1 left */
    assert_true(ask(&x, &a, T0 + 2, &d)); /* a retry of a: free */
    assert_true(ask(&x, &b, T0 + 3, &d)); /* a retry of b: free */
    struct sl_req_head c = head("POST", "/orders");
    c.idem = "same";
    c.idem_len = 4;
    c.body_digest = NULL;                  /* its body not at hand */
    assert_true(ask(&x, &c, T0 + 4, &d));  /* charged: 0 left */
    assert_false(ask(&x, &c, T0 + 5, &d)); /* and never free */
    assert_true(ask(&x, &a, T0 + 6, &d));  /* while a's retries still are */
    world_free(w);
}

/* Free retries are SL_IDEM_FREE within the window the charged attempt
 * opened, not SL_IDEM_FREE at any moment: retrying every 4 minutes used to
 * be free forever (the mark's bucket refilled one every 5 minutes). */
static void idempotent_retries_are_free_at_most_twice_within_the_window(void **unused)
{
    (void)unused;
    struct world *w = world_new();
    rule(w, "api", 1, 24 * HOUR, 100);
    start(w);
    struct sl_req_rules x = conn(w, 1, NULL);
    struct sl_req_head h = head("POST", "/orders");
    h.idem = "order-9";
    h.idem_len = 7;
    struct sl_req_decision d;
    for (uint64_t i = 0; i < 20; i++) /* 20 attempts 4 minutes apart */
        assert_true(ask(&x, &h, T0 + i * 4 * MIN, &d));
    /* what is left of the 100 says how many were charged (80 minutes at
     * 1/day refill none) */
    struct sl_req_head plain = head("GET", "/");
    uint64_t charged = 100 - (uint64_t)admitted(&x, &plain, T0 + 80 * MIN, 0, 200);
    /* each charged attempt opens 5 minutes with 2 free retries in them:
     * attempts at 0 charged, 4 free; 8 charged, 12 free; ... */
    assert_int_equal(charged, 10);
    world_free(w);
}

/* A connection's one plain rule is decided without the general loop
 * (reqdecide.c: solo_decide): the same answers, counters and waits as the
 * loop gives on a twin table, over keys present, missing and an
 * Idempotency-Key, for each kind of plain rule. */
static void a_lone_plain_rule_decides_as_the_general_loop(void **unused)
{
    (void)unused;
    struct {
        enum sl_req_per per;
        enum sl_action action;
        uint64_t cost;
        enum sl_per_missing missing;
    } kinds[] = {
        {SL_REQ_PER_HEADER, SL_ACT_REPLY, 1, SL_MISSING_PEER},
        {SL_REQ_PER_HEADER, SL_ACT_REJECT, 3, SL_MISSING_RULE},
        {SL_REQ_PER_HEADER, SL_ACT_DELAY, 1, SL_MISSING_DENY},
        {SL_REQ_PER_ADDRESS, SL_ACT_REPLY, 2, SL_MISSING_PEER},
        {SL_REQ_PER_ADDRESS, SL_ACT_DELAY, 1, SL_MISSING_PEER},
    };
    const char *keys[] = {"alpha", "beta", "gamma", NULL};
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        struct world *w[2];
        struct sl_req_rules x[2];
        for (int t = 0; t < 2; t++) {
            w[t] = world_new();
            struct sl_rule *r = rule(w[t], "api", 5, SEC, 4);
            r->req_per = kinds[k].per;
            r->action = kinds[k].action;
            r->cost = kinds[k].cost;
            r->per_missing = kinds[k].missing;
            r->max_delay_ns = 2 * SEC;
            if (r->req_per == SL_REQ_PER_HEADER)
                snprintf(r->req_per_name, sizeof r->req_per_name, "X-API-Key");
            start(w[t]);
            x[t] = conn(w[t], 7, "x-api-key");
        }
        assert_int_equal(x[0].solo, 0); /* the short path is the one measured */
        x[1].solo = -1;                 /* the general loop */
        uint64_t now = T0, seed = 12345;
        for (int i = 0; i < 400; i++) {
            seed = seed * 6364136223846793005ull + 1442695040888963407ull;
            now += (seed >> 33) % (SEC / 4);
            struct sl_req_head h = head("GET", "/v1/things");
            const char *key = keys[(seed >> 20) % 4];
            if (key) h = with_header(h, key);
            if ((seed >> 40) % 16 == 0) { /* an Idempotency-Key: the general path's */
                h.idem = "k1";
                h.idem_len = 2;
            }
            struct sl_req_decision d[2];
            for (int t = 0; t < 2; t++)
                sl_req_decide(&x[t], &h, now, &d[t]);
            assert_int_equal(d[0].allowed, d[1].allowed);
            assert_int_equal(d[0].rule, d[1].rule);
            if (d[0].allowed) {
                assert_int_equal(d[0].wait_ns, d[1].wait_ns);
                continue;
            }
            assert_int_equal(d[0].v.retry_ns, d[1].v.retry_ns);
            assert_int_equal(d[0].v.remaining, d[1].v.remaining);
            assert_int_equal(d[0].v.limit, d[1].v.limit);
            assert_string_equal(d[0].policy.name, d[1].policy.name);
            assert_int_equal(d[0].policy.quota, d[1].policy.quota);
            assert_int_equal(d[0].policy.window_s, d[1].policy.window_s);
        }
        for (int c = 0; c < SL_NCOUNTERS; c++)
            assert_int_equal(counter(w[0], &x[0], 0, (enum sl_counter)c),
                             counter(w[1], &x[1], 0, (enum sl_counter)c));
        for (int t = 0; t < 2; t++)
            world_free(w[t]);
    }
}

/* Found by fuzz_lean: a key value with blanks around it (the conservative
 * reading hands over "k " when a bare CR ends the line) is the key without
 * them, on the lone rule's path as on the general loop (whose copies are
 * trimmed). The lone path hashed "k " as a key of its own (seen failing:
 * the fifth request, "k ", was let through on x[0] and refused on x[1]). */
static void blanks_around_a_key_value_are_not_part_of_the_key(void **unused)
{
    (void)unused;
    const char *spelled[] = {"k", "k ", " k", "k\t", " \tk  "};
    for (int t = 0; t < 2; t++) {
        struct world *w = world_new();
        struct sl_rule *r = rule(w, "api", 1, 3600 * SEC, 4);
        r->req_per = SL_REQ_PER_HEADER;
        r->action = SL_ACT_REPLY;
        snprintf(r->req_per_name, sizeof r->req_per_name, "X-API-Key");
        start(w);
        struct sl_req_rules x = conn(w, 7, "x-api-key");
        if (t) x.solo = -1; /* the general loop */
        struct sl_req_decision d;
        for (int i = 0; i < 4; i++) {
            struct sl_req_head h = with_header(head("GET", "/"), spelled[i]);
            assert_true(ask(&x, &h, T0, &d));
        }
        for (size_t i = 0; i < sizeof spelled / sizeof spelled[0]; i++) {
            struct sl_req_head h = with_header(head("GET", "/"), spelled[i]);
            if (ask(&x, &h, T0, &d)) print_message("path %d: \"%s\" let through\n", t, spelled[i]);
            assert_false(d.allowed);
        }
        assert_int_equal(counter(w, &x, 0, SL_C_CLAIMED), 1);
        world_free(w);
    }
}

/* What makes a rule not plain sends its connections down the general loop. */
static void a_rule_with_more_than_a_rate_is_not_decided_alone(void **unused)
{
    (void)unused;
    for (int k = 0; k < 4; k++) {
        struct world *w = world_new();
        struct sl_rule *r = rule(w, "api", 5, SEC, 4);
        r->req_per = SL_REQ_PER_ADDRESS;
        if (k == 0) r->dry_run = true;
        if (k == 1) r->nmethods = 1;
        if (k == 2) r->req_per = SL_REQ_PER_QUERY;
        if (k == 3) rule(w, "second", 5, SEC, 4)->req_per = SL_REQ_PER_ADDRESS; /* two rules */
        start(w);
        struct sl_req_rules x = conn(w, 7, NULL);
        assert_int_equal(x.solo, -1);
        world_free(w);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(admitted_requests_are_burst_plus_rate_times_time),
        cmocka_unit_test(a_lone_plain_rule_decides_as_the_general_loop),
        cmocka_unit_test(blanks_around_a_key_value_are_not_part_of_the_key),
        cmocka_unit_test(a_rule_with_more_than_a_rate_is_not_decided_alone),
        cmocka_unit_test(a_denial_carries_the_bucket_and_the_rule_as_policy),
        cmocka_unit_test(two_keys_from_one_address_get_a_budget_each),
        cmocka_unit_test(a_query_key_is_one_key_however_it_is_spelled),
        cmocka_unit_test(a_cookie_key_is_found_among_cookies),
        cmocka_unit_test(a_request_without_the_key_falls_back_to_its_peer),
        cmocka_unit_test(per_missing_rule_shares_one_budget_and_deny_denies),
        cmocka_unit_test(a_route_of_cost_ten_drains_the_key_ten_times_faster),
        cmocka_unit_test(a_rule_of_cost_zero_counts_and_never_limits),
        cmocka_unit_test(methods_and_hosts_select_requests),
        cmocka_unit_test(route_method_and_host_rules_count_what_they_cannot_read),
        cmocka_unit_test(a_later_denial_gives_back_what_earlier_rules_took),
        cmocka_unit_test(dry_run_counts_what_it_would_deny_and_passes_it),
        cmocka_unit_test(a_delay_rule_holds_requests_until_their_turn),
        cmocka_unit_test(a_log_rule_admits_n_in_any_rolling_period),
        cmocka_unit_test(a_key_with_a_plan_gets_its_plan_and_others_the_rule),
        cmocka_unit_test(a_daily_quota_in_the_table_resets_at_midnight),
        cmocka_unit_test(a_quota_denial_gives_back_the_rate_token),
        cmocka_unit_test(under_delay_an_exhausted_quota_waits_for_its_window_within_max_delay),
        cmocka_unit_test(under_delay_a_quota_renewing_beyond_max_delay_fails_at_once),
        cmocka_unit_test(quota_use_is_counted_per_plan),
        cmocka_unit_test(a_plan_s_call_queued_for_the_next_window_counts_there),
        cmocka_unit_test(a_ramped_grant_is_given_back_when_a_later_rule_denies),
        cmocka_unit_test(a_retry_with_the_same_idempotency_key_is_not_charged_again),
        cmocka_unit_test(an_idempotency_key_of_a_denied_request_stays_unspent),
        cmocka_unit_test(an_idempotency_key_frees_only_retries_of_the_same_request),
        cmocka_unit_test(idempotent_retries_are_free_at_most_twice_within_the_window),
        cmocka_unit_test(an_idempotency_key_frees_only_retries_with_the_same_body),
    };
    return cmocka_run_group_tests(tests, NULL, NULL) != 0;
}
