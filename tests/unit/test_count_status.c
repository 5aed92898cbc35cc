/* SPDX-License-Identifier: BSD-2-Clause */
/* test_count_status.c - count_status (issue 35, item 5): an inbound
 * budget kept only by the responses of the listed statuses (taken at the
 * head, given back by any other status). The option (conf), the refund
 * (core/limit/answer.h), and a
 * connection's requests and responses through core/http/request.h: the
 * program's responses are shown with sl_req_responses_at. Time injected. */
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
#include "../../core/limit/answer.h"
#include "../../core/limit/limit_gcra.h"
#include "reqworld.h"
#include "testutil.h"

static void the_option_is_a_list_of_statuses_and_prints_back(void **unused)
{
    (void)unused;
    char err[512] = "";
    struct sl_config *c =
        load_rules("in port=80 req_rate=10/m per=header:X-User count_status=401,403 action=reply",
                   err, sizeof err);
    if (!c) fail_msg("%s", err);
    const struct sl_rule *r = &c->rules[0];
    assert_true(r->request);
    assert_int_equal(r->ncount_status, 2);
    assert_int_equal(r->count_status[0], 401);
    assert_int_equal(r->count_status[1], 403);
    char path[] = "/tmp/sluice-count-status-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    sl_conf_print(c, f);
    fclose(f);
    enum sl_on_error on_error;
    struct sl_config *again = sl_conf_load(path, NULL, &on_error, err, sizeof err);
    unlink(path);
    if (!again) fail_msg("printed text does not load: %s", err);
    assert_int_equal(again->rules[0].ncount_status, 2);
    assert_int_equal(again->rules[0].count_status[1], 403);
    sl_conf_free(again);
    sl_conf_free(c);
}

static void the_option_is_refused_where_it_cannot_count(void **unused)
{
    (void)unused;
    static const char *const bad[][2] = {
        {"in port=80 count_status=401", "needs req_rate"},
        {"in port=80 req_rate=1/s count_status=4011", "not an HTTP status"},
        {"in port=80 req_rate=1/s count_status=600", "not an HTTP status"},
        {"in port=80 req_rate=1/s count_status=abc", "not an HTTP status"},
        {"in port=80 req_rate=1/s algorithm=log per=rule count_status=401", "algorithm = gcra"},
        {"in port=80 req_rate=1/s quota=5/d count_status=401", "quota"},
        {"out to=127.0.0.1:80 req_rate=1/s count_status=401", "only for inbound"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char err[512] = "";
        struct sl_config *c = load_rules(bad[i][0], err, sizeof err);
        if (c) fail_msg("accepted: %s", bad[i][0]);
        if (!strstr(err, "count_status") || !strstr(err, bad[i][1]))
            fail_msg("%s: message names no count_status or no '%s': %s", bad[i][0], bad[i][1], err);
    }
}

static void a_refund_gives_back_what_the_head_took(void **unused)
{
    (void)unused;
    char err[256];
    struct sl_table *t = sl_table_open(1024, NULL, SL_FULL_SHARED, err, sizeof err);
    assert_non_null(t);
    int e = sl_table_rule(t, 1, "r");
    struct sl_limit l;
    assert_int_equal(sl_limit_init(&l, SL_ALG_GCRA, 2, 60 * SEC, 2), 0);
    struct sl_key k = {.extra = 42}, other = {.extra = 43};
    uint64_t h = sl_key_hash(&k, sl_table_secret(t));
    struct sl_verdict v;
    for (int i = 0; i < 10; i++) { /* taken at each head, given back by each answer */
        sl_table_decide(t, e, &k, &l, T0, 1, 0, &v);
        assert_true(v.allowed);
        assert_true(sl_answer_refund(t, e, h, &l, T0, 1));
    }
    sl_table_decide(t, e, &k, &l, T0, 1, 0, &v); /* two in flight: the budget is spent */
    sl_table_decide(t, e, &k, &l, T0, 1, 0, &v);
    assert_true(v.allowed);
    sl_table_decide(t, e, &k, &l, T0, 1, 0, &v);
    assert_false(v.allowed);
    sl_table_decide(t, e, &other, &l, T0, 1, 0, &v); /* another key: untouched */
    assert_true(v.allowed);
    assert_true(sl_answer_refund(t, e, h, &l, T0, 1)); /* one answer did not count */
    sl_table_decide(t, e, &k, &l, T0, 1, 0, &v);
    assert_true(v.allowed);
    sl_table_close(t);
}

/* An inbound world whose rule counts only `status` answers, a budget of
 * `burst` in a minute (nothing refills within a test), keyed by X-User. */
static struct req_world *world(uint64_t burst, uint16_t status)
{
    struct req_world *w = calloc(1, sizeof *w);
    struct sl_rule *r = req_world_rule(w, burst, burst, SL_ACT_REPLY);
    assert_int_equal(sl_limit_init(&r->req_limit, SL_ALG_GCRA, burst, 60 * SEC, burst), 0);
    r->req_per = SL_REQ_PER_HEADER;
    strcpy(r->req_per_name, "X-User");
    r->count_status[0] = status;
    r->ncount_status = 1;
    req_world_start(w);
    return w;
}

static void world_free(struct req_world *w)
{
    req_world_stop(w);
    free(w);
}

#define LOGIN(user) "GET /login HTTP/1.1\r\nHost: a\r\nX-User: " user "\r\n\r\n"
#define R401        "HTTP/1.1 401 Unauthorized\r\nContent-Length: 4\r\n\r\nno\r\n"
#define R200        "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nok\n"

/* One request read by the program: true when it passed. */
static bool request(struct req_world *w, const char *head, uint64_t now)
{
    struct sl_req_verdict v;
    size_t len = strlen(head), n = sl_req_admit(w->c, head, len, now, &v);
    if (n == len) sl_req_passed(w->c, head, n);
    return n == len;
}

static void respond(struct req_world *w, const char *s)
{
    sl_req_responses_at(w->c, s, strlen(s), T0);
}

static void only_the_counted_statuses_spend_the_budget(void **unused)
{
    (void)unused;
    struct req_world *w = world(3, 401);
    assert_true(sl_req_answers(w->c));
    for (int i = 0; i < 10; i++) { /* 200s: never counted */
        assert_true(request(w, LOGIN("alice"), T0));
        respond(w, R200);
    }
    for (int i = 0; i < 3; i++) {
        assert_true(request(w, LOGIN("alice"), T0));
        respond(w, R401);
    }
    struct sl_req_verdict v;
    const char *next = LOGIN("alice");
    assert_int_equal(sl_req_admit(w->c, next, strlen(next), T0, &v), 0);
    assert_int_equal(v.status, SL_REQ_DENY);
    assert_int_equal(v.action, SL_ACT_REPLY);
    assert_non_null(strstr(v.reply, "429"));
    world_free(w);

    /* another key keeps its budget (a connection of its own: the one
     * above ended at the denial) */
    w = world(3, 401);
    for (int i = 0; i < 3; i++) {
        assert_true(request(w, LOGIN("alice"), T0));
        respond(w, R401);
    }
    assert_true(request(w, LOGIN("bob"), T0));
    respond(w, R401);
    assert_true(request(w, LOGIN("bob"), T0));
    world_free(w);
}

/* The lane (core/http/request.c): a read that repeats the last one's head
 * is decided again without a scan, and its answer still gives back what
 * it took, or keeps it when its status is counted. */
static void a_repeated_head_takes_the_lane_and_its_answer_still_counts(void **unused)
{
    (void)unused;
    struct req_world *w = world(3, 401);
    const char *head = LOGIN("alice");
    uint64_t lane = sl_req_lane_heads();
    for (int i = 0; i < 10; i++) { /* 200s: each given back */
        assert_true(sl_req_admit_all(w->c, head, strlen(head), T0));
        respond(w, R200);
    }
    assert_true(sl_req_lane_heads() - lane >= 9); /* all but the first */
    for (int i = 0; i < 3; i++) {
        assert_true(sl_req_admit_all(w->c, head, strlen(head), T0));
        respond(w, R401);
    }
    assert_false(sl_req_admit_all(w->c, head, strlen(head), T0)); /* three 401s: spent */
    world_free(w);
}

static void pipelined_responses_split_anywhere_are_paired_in_order(void **unused)
{
    (void)unused;
    struct req_world *w = world(2, 401);
    /* three heads in one read: a 200 for bob between alice's two 401s */
    const char heads[] = LOGIN("alice") LOGIN("bob") LOGIN("alice");
    assert_true(request(w, heads, T0));
    const char resp[] = R401 R200 R401;
    for (size_t i = 0; i < sizeof resp - 1; i++) /* byte by byte */
        sl_req_responses_at(w->c, resp + i, 1, T0);
    assert_true(request(w, LOGIN("bob"), T0)); /* bob's 200 took nothing */
    respond(w, R200);
    assert_false(request(w, LOGIN("alice"), T0)); /* alice's two 401s did */
    world_free(w);
}

static void interim_and_bodiless_responses_pair_with_the_right_request(void **unused)
{
    (void)unused;
    struct req_world *w = world(1, 401);
    assert_true(request(w, "HEAD /login HTTP/1.1\r\nHost: a\r\nX-User: bob\r\n\r\n", T0));
    assert_true(request(w, LOGIN("alice"), T0));
    /* the HEAD's 401 has no body (its Content-Length says what a GET
     * would get); a 100 Continue before alice's final 401 counts nothing */
    respond(w, "HTTP/1.1 401 No\r\nContent-Length: 4\r\n\r\n"
               "HTTP/1.1 100 Continue\r\n\r\n" R401);
    assert_false(request(w, LOGIN("alice"), T0));
    world_free(w);

    w = world(1, 401);
    assert_true(request(w, "HEAD /login HTTP/1.1\r\nHost: a\r\nX-User: bob\r\n\r\n", T0));
    /* a budget of one: the HEAD's answer (no body, whatever its
     * Content-Length says) gives it back before bob's next login */
    respond(w, "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\n");
    assert_true(request(w, LOGIN("bob"), T0));
    respond(w, R200);
    assert_true(request(w, LOGIN("bob"), T0)); /* nothing of bob's was counted */
    world_free(w);
}

static void a_response_that_cannot_be_read_keeps_its_charge(void **unused)
{
    (void)unused;
    struct req_world *w = world(1, 401);
    assert_true(request(w, LOGIN("alice"), T0));
    respond(w, R401);
    assert_true(request(w, LOGIN("bob"), T0));
    sl_req_responses_unread(w->c);                /* a splice: what went is unknown */
    respond(w, R200);                             /* not read: nothing given back */
    assert_false(request(w, LOGIN("bob"), T0));   /* the rule of doubt: bob's stays spent */
    assert_false(request(w, LOGIN("alice"), T0)); /* alice's spent budget still holds */
    world_free(w);
}

static void a_connection_without_count_status_reads_no_responses(void **unused)
{
    (void)unused;
    struct req_world *w = world(1, 401);
    w->cfg.rules[0].ncount_status = 0;
    sl_req_conn_fini(w->c);
    struct sl_addr peer = req_world_localhost(5000);
    assert_true(sl_req_conn_init(w->c, &w->rt, SL_IN, NULL, &peer, T0));
    assert_false(sl_req_answers(w->c));
    assert_true(request(w, LOGIN("alice"), T0));
    assert_false(request(w, LOGIN("alice"), T0)); /* every request takes its token */
    world_free(w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_option_is_a_list_of_statuses_and_prints_back),
        cmocka_unit_test(the_option_is_refused_where_it_cannot_count),
        cmocka_unit_test(a_refund_gives_back_what_the_head_took),
        cmocka_unit_test(only_the_counted_statuses_spend_the_budget),
        cmocka_unit_test(a_repeated_head_takes_the_lane_and_its_answer_still_counts),
        cmocka_unit_test(pipelined_responses_split_anywhere_are_paired_in_order),
        cmocka_unit_test(interim_and_bodiless_responses_pair_with_the_right_request),
        cmocka_unit_test(a_response_that_cannot_be_read_keeps_its_charge),
        cmocka_unit_test(a_connection_without_count_status_reads_no_responses),
    };
    return cmocka_run_group_tests(tests, NULL, NULL) != 0;
}
