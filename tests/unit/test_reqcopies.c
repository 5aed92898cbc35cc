/* SPDX-License-Identifier: BSD-2-Clause */
/* test_reqcopies.c - a request carrying its key more than once (issue 31
 * item 7): PHP reads the last of `?api_key=a&api_key=b` and of X-API-Key /
 * X_API_KEY, python's SimpleCookie the last of `sid=a; sid=b`. A rule
 * charges the copies its per_copy names: each distinct one by default (the
 * request passes only if every copy's budget lets it, and a denial gives
 * back what the others took), the first, or the last; more than
 * SL_REQ_COPIES_MAX distinct copies count as without a key. On a private
 * table with the time injected. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../conf/conf.h"
#include "../../core/log.h"
#include "../../core/http/reqdecide.h"
#include "../../core/limit/table.h"
#include "testutil.h"

struct world {
    struct sl_config *cfg;
    struct sl_table *table;
    struct sl_runtime rt;
};

/* One rule, 1 request a minute with a burst of 2, keyed by `per`. */
static struct world *world_new(enum sl_req_per per, const char *name)
{
    struct world *w = calloc(1, sizeof *w);
    w->cfg = calloc(1, sizeof *w->cfg);
    sl_log_setup(SL_LOG_NONE, SL_LOG_ERROR);
    struct sl_rule *r = &w->cfg->rules[w->cfg->nrules++];
    snprintf(r->name, sizeof r->name, "keys");
    r->id = sl_name_hash(r->name);
    r->dir = SL_IN;
    r->per = SL_PER_PEER;
    r->prefix4 = 32;
    r->prefix6 = 64;
    r->action = SL_ACT_REPLY;
    r->request = true;
    r->cost = 1;
    r->req_per = per;
    snprintf(r->req_per_name, sizeof r->req_per_name, "%s", name);
    assert_int_equal(sl_limit_init(&r->req_limit, SL_ALG_GCRA, 1, MIN, 2), 0);
    char err[256] = "";
    w->table = sl_table_open(4096, NULL, SL_FULL_SHARED, err, sizeof err);
    if (!w->table) fail_msg("sl_table_open: %s", err);
    assert_int_equal(sl_runtime_init(&w->rt, w->cfg, w->table, err, sizeof err), 0);
    return w;
}

static void world_free(struct world *w)
{
    sl_table_close(w->table);
    free(w->cfg);
    free(w);
}

/* The connection's view, from 10.0.0.1. */
static struct sl_req_rules conn(struct world *w)
{
    struct sl_req_rules x = {.rt = &w->rt, .match = 1};
    x.peer = (struct sl_addr){.v4 = true, .port = 40000};
    x.peer.a[10] = x.peer.a[11] = 0xff;
    x.peer.a[12] = 10;
    x.peer.a[15] = 1;
    if (w->cfg->rules[0].req_per == SL_REQ_PER_HEADER)
        snprintf(x.header, sizeof x.header, "%s", w->cfg->rules[0].req_per_name);
    sl_req_rules_entries(&x);
    return x;
}

/* A GET of target whose key field (header value, query or Cookie line,
 * as the rule reads it) is `field`. */
static bool ask(struct world *w, const struct sl_req_rules *x, const char *field, uint64_t now)
{
    struct sl_req_head h = {.method = "GET", .method_len = 3, .path = "/", .path_len = 1};
    switch (w->cfg->rules[0].req_per) {
    case SL_REQ_PER_HEADER:
        h.header = field;
        h.header_len = strlen(field);
        break;
    case SL_REQ_PER_QUERY:
        h.query = field;
        h.query_len = strlen(field);
        break;
    default:
        h.cookie = field;
        h.cookie_len = strlen(field);
        break;
    }
    struct sl_req_decision d;
    sl_req_decide(x, &h, now, &d);
    return d.allowed;
}

/* 10 requests whose copies are fmt's with rand-i then R: how many pass. */
static int passed(struct world *w, const char *fmt)
{
    struct sl_req_rules x = conn(w);
    int ok = 0;
    for (int i = 0; i < 10; i++) {
        char field[128];
        snprintf(field, sizeof field, fmt, i);
        ok += ask(w, &x, field, T0 + (uint64_t)i * MS);
    }
    return ok;
}

/* Before the fix: 10 each (the first copy, rand-i, was charged). */
static void each_copy_is_charged_so_the_key_the_app_reads_is_bounded(void **unused)
{
    (void)unused;
    static const struct {
        enum sl_req_per per;
        const char *name, *fmt;
    } cases[] = {
        {SL_REQ_PER_HEADER, "X-API-Key", "rand-%d, R"}, /* two lines, or node's join */
        {SL_REQ_PER_QUERY, "api_key", "api_key=rand-%d&api_key=R"},
        {SL_REQ_PER_QUERY, "api_key", "api_key=rand-%d&api.key=R"}, /* PHP: one name */
        {SL_REQ_PER_QUERY, "api_key", "api_key=rand-%d&api%%20key=R"},
        {SL_REQ_PER_COOKIE, "sid", "sid=rand-%d; sid=R"},          /* one line */
        {SL_REQ_PER_COOKIE, "sid", "sid=rand-%d; theme=x; sid=R"}, /* two lines, joined */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct world *w = world_new(cases[i].per, cases[i].name);
        int n = passed(w, cases[i].fmt);
        if (n != 2) fail_msg("%s: %d of 10 passed, want 2", cases[i].fmt, n);
        /* and the control: one copy, exact */
        struct world *c = world_new(cases[i].per, cases[i].name);
        const char *one = cases[i].per == SL_REQ_PER_HEADER  ? "R"
                          : cases[i].per == SL_REQ_PER_QUERY ? "api_key=R"
                                                             : "sid=R";
        assert_int_equal(passed(c, one), 2);
        world_free(c);
        world_free(w);
    }
}

/* A request denied by one copy takes nothing from the others: x keeps
 * its whole burst after "x, R" was denied for R. Before the fix: "x, R"
 * was one key of its own, and passed. */
static void a_copy_denied_gives_back_what_the_others_took(void **unused)
{
    (void)unused;
    struct world *w = world_new(SL_REQ_PER_HEADER, "X-API-Key");
    struct sl_req_rules x = conn(w);
    assert_true(ask(w, &x, "R", T0));
    assert_true(ask(w, &x, "R", T0));
    assert_false(ask(w, &x, "x, R", T0));
    assert_false(ask(w, &x, "R, x", T0));
    assert_true(ask(w, &x, "x", T0));
    assert_true(ask(w, &x, "x", T0));
    assert_false(ask(w, &x, "x", T0));
    /* a request of two copies is one request in the counters */
    assert_true(ask(w, &x, "p, q", T0));
    assert_int_equal(sl_table_counter(w->table, x.entry[0], SL_C_ALLOWED), 5);
    world_free(w);
}

/* per_copy = first or last: one copy, as the application reads it. */
static void first_and_last_charge_one_copy(void **unused)
{
    (void)unused;
    static const struct {
        enum sl_req_per per;
        const char *name, *fmt;
    } cases[] = {
        {SL_REQ_PER_HEADER, "X-API-Key", "rand-%d, R"},
        {SL_REQ_PER_QUERY, "api_key", "api_key=rand-%d&api.key=R"},
        {SL_REQ_PER_COOKIE, "sid", "sid=rand-%d; sid=R"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct world *w = world_new(cases[i].per, cases[i].name);
        w->cfg->rules[0].per_copy = SL_COPY_LAST;
        assert_int_equal(passed(w, cases[i].fmt), 2);
        world_free(w);
        w = world_new(cases[i].per, cases[i].name);
        w->cfg->rules[0].per_copy = SL_COPY_FIRST;
        assert_int_equal(passed(w, cases[i].fmt), 10); /* rand-i each time */
        world_free(w);
    }
}

/* More distinct copies than SL_REQ_COPIES_MAX: without a key (here
 * per_missing = deny); up to it, each charged. */
static void more_copies_than_the_cap_count_as_without_a_key(void **unused)
{
    (void)unused;
    struct world *w = world_new(SL_REQ_PER_HEADER, "X-API-Key");
    w->cfg->rules[0].per_missing = SL_MISSING_DENY;
    struct sl_req_rules x = conn(w);
    assert_true(ask(w, &x, "a, b, c, d", T0));
    assert_false(ask(w, &x, "e, f, g, h, i", T0));
    assert_true(ask(w, &x, "e, e, e, e, e, f", T0)); /* two distinct */
    world_free(w);
}

/* per_copy in an inline rule: each (the default), first, last; anything
 * else is refused, naming the option. */
static void per_copy_is_read_from_the_configuration(void **unused)
{
    (void)unused;
    static const struct {
        const char *rule;
        int want; /* -1: refused */
    } cases[] = {
        {"in port=80 req_rate=2/s per=header:X-API-Key", SL_COPY_EACH},
        {"in port=80 req_rate=2/s per=query:api_key per_copy=last", SL_COPY_LAST},
        {"in port=80 req_rate=2/s per=cookie:sid per_copy=first", SL_COPY_FIRST},
        {"in port=80 req_rate=2/s per=header:X-API-Key per_copy=each", SL_COPY_EACH},
        {"in port=80 req_rate=2/s per=header:X-API-Key per_copy=second", -1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char err[512] = "";
        enum sl_on_error on_error;
        struct sl_config *c = sl_conf_load(NULL, cases[i].rule, &on_error, err, sizeof err);
        if (cases[i].want < 0) {
            if (c) fail_msg("accepted: %s", cases[i].rule);
            if (!strstr(err, "per_copy")) fail_msg("%s: %s", cases[i].rule, err);
            continue;
        }
        if (!c) fail_msg("%s: %s", cases[i].rule, err);
        assert_int_equal(c->rules[0].per_copy, cases[i].want);
        sl_conf_free(c);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(each_copy_is_charged_so_the_key_the_app_reads_is_bounded),
        cmocka_unit_test(a_copy_denied_gives_back_what_the_others_took),
        cmocka_unit_test(first_and_last_charge_one_copy),
        cmocka_unit_test(more_copies_than_the_cap_count_as_without_a_key),
        cmocka_unit_test(per_copy_is_read_from_the_configuration),
    };
    return cmocka_run_group_tests(tests, NULL, NULL) != 0;
}
