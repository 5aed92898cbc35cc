/* test_request.c - one connection's requests: which bytes may pass as heads
 * arrive whole, split and pipelined, with decisions taken once per head,
 * delays held and released by an injected clock, and a denial that stops
 * the stream at its first byte with a 429. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../core/log.h"
#include "../../core/request.h"
#include "../../core/table.h"
#include "testutil.h"

#define SEC 1000000000ull

struct world {
    struct sl_config cfg;
    struct sl_table *table;
    struct sl_runtime rt;
    struct sl_req_conn *c;
};

static struct world *start(uint64_t count, uint64_t burst, enum sl_action action)
{
    struct world *w = calloc(1, sizeof *w);
    sl_log_setup(SL_LOG_NONE, SL_LOG_ERROR);
    struct sl_rule *r = &w->cfg.rules[w->cfg.nrules++];
    snprintf(r->name, sizeof r->name, "api");
    r->id = sl_name_hash("api");
    r->dir = SL_IN;
    r->per = SL_PER_PEER;
    r->prefix4 = 32;
    r->prefix6 = 64;
    r->action = action;
    r->max_delay_ns = 10 * SEC;
    r->request = true;
    r->cost = 1;
    r->req_per = SL_REQ_PER_HEADER;
    snprintf(r->req_per_name, sizeof r->req_per_name, "x-api-key");
    assert_int_equal(sl_limit_init(&r->req_limit, SL_ALG_GCRA, count, SEC, burst), 0);
    char err[256] = "";
    w->table = sl_table_open(4096, NULL, SL_FULL_SHARED, err, sizeof err);
    assert_non_null(w->table);
    assert_int_equal(sl_runtime_init(&w->rt, &w->cfg, w->table, err, sizeof err), 0);
    w->c = calloc(1, sl_req_conn_size());
    struct sl_addr peer = {.v4 = true, .port = 40000};
    peer.a[10] = peer.a[11] = 0xff;
    peer.a[12] = 10;
    peer.a[15] = 1;
    assert_true(sl_req_conn_init(w->c, &w->rt, SL_IN, NULL, &peer, 0));
    return w;
}

static void stop(struct world *w)
{
    sl_req_conn_fini(w->c);
    free(w->c);
    sl_table_close(w->table);
    free(w);
}

/* Shows the stream from `*pos` and passes what may pass, like the shim. */
static size_t show(struct world *w, const char *s, size_t len, size_t *pos, uint64_t now,
                   struct sl_req_verdict *v)
{
    size_t n = sl_req_admit(w->c, s + *pos, len - *pos, now, v);
    sl_req_passed(w->c, s + *pos, n);
    *pos += n;
    return n;
}

#define REQ(k) "GET /r HTTP/1.1\r\nHost: h\r\nX-API-Key: " k "\r\n\r\n"

static void pipelined_requests_pass_up_to_the_first_denied_head(void **state)
{
    (void)state;
    struct world *w = start(1, 2, SL_ACT_REPLY); /* 1/s, burst 2 */
    static const char s[] = REQ("a") REQ("a") REQ("a") REQ("a");
    size_t pos = 0, one = strlen(REQ("a"));
    struct sl_req_verdict v;
    show(w, s, sizeof s - 1, &pos, 0, &v);
    assert_int_equal(pos, 2 * one); /* the burst */
    assert_int_equal(v.status, SL_REQ_DENY);
    assert_int_equal(v.action, SL_ACT_REPLY);
    assert_true(v.reply_len > 0);
    assert_non_null(strstr(v.reply, "429 Too Many Requests"));
    assert_non_null(strstr(v.reply, "Retry-After: 1"));
    assert_non_null(strstr(v.reply, "Connection: close"));
    /* shown again later: still nothing passes, and nothing more is charged */
    assert_int_equal(show(w, s, sizeof s - 1, &pos, 5 * SEC, &v), 0);
    assert_int_equal(v.status, SL_REQ_DENY);
    stop(w);
}

static void a_short_read_never_charges_a_head_twice(void **state)
{
    (void)state;
    struct world *w = start(1, 1, SL_ACT_REPLY);
    static const char s[] = REQ("a") REQ("b");
    struct sl_req_verdict v;
    size_t one = strlen(REQ("a"));
    /* the whole first request may pass, but the program reads 5 bytes */
    assert_int_equal(sl_req_admit(w->c, s, one, 0, &v), one);
    sl_req_passed(w->c, s, 5);
    size_t pos = 5;
    show(w, s, sizeof s - 1, &pos, 0, &v); /* shown again with the second */
    assert_int_equal(pos, sizeof s - 1);   /* key b has its own budget; a was charged once */
    assert_int_equal(v.status, SL_REQ_PASS);
    stop(w);
}

static void an_incomplete_head_waits_for_more_bytes(void **state)
{
    (void)state;
    struct world *w = start(10, 10, SL_ACT_REPLY);
    static const char s[] = REQ("a") REQ("a");
    size_t one = strlen(REQ("a")), len = sizeof s - 1;
    struct sl_req_verdict v;
    size_t n = sl_req_admit(w->c, s, one + 10, 0, &v); /* the second head cut short */
    assert_int_equal(n, one);
    assert_int_equal(v.status, SL_REQ_PASS);
    sl_req_passed(w->c, s, n);
    /* the second head grows a byte at a time: nothing of it passes until it is whole */
    for (size_t shown = 1; one + shown < len; shown++) {
        assert_int_equal(sl_req_admit(w->c, s + one, shown, 0, &v), 0);
        assert_int_equal(v.status, SL_REQ_NEED_MORE);
    }
    assert_int_equal(sl_req_admit(w->c, s + one, len - one, 0, &v), len - one);
    assert_int_equal(v.status, SL_REQ_PASS);
    stop(w);
}

static void delay_holds_a_head_until_its_turn(void **state)
{
    (void)state;
    struct world *w = start(2, 1, SL_ACT_DELAY); /* 2/s, burst 1: turns 500 ms apart */
    static const char s[] = REQ("a") REQ("a");
    size_t one = strlen(REQ("a")), pos = 0;
    struct sl_req_verdict v;
    show(w, s, sizeof s - 1, &pos, 0, &v);
    assert_int_equal(pos, one);
    assert_int_equal(v.status, SL_REQ_HOLD);
    assert_int_equal(v.wait_ns, SEC / 2);
    assert_int_equal(show(w, s, sizeof s - 1, &pos, SEC / 4, &v), 0);
    assert_int_equal(v.status, SL_REQ_HOLD);
    assert_int_equal(v.wait_ns, SEC / 4);
    show(w, s, sizeof s - 1, &pos, SEC / 2, &v); /* its turn: passes, not charged again */
    assert_int_equal(pos, sizeof s - 1);
    assert_int_equal(v.status, SL_REQ_PASS);
    stop(w);
}

static void bodies_pass_and_the_next_head_is_decided(void **state)
{
    (void)state;
    struct world *w = start(1, 1, SL_ACT_REPLY);
    static const char s[] = "POST /u HTTP/1.1\r\nX-API-Key: a\r\nContent-Length: 37\r\n\r\n"
                            "GET /r HTTP/1.1\r\nX-API-Key: a\r\n\r\n____" /* 37 bytes of body */
        REQ("a");
    size_t pos = 0;
    struct sl_req_verdict v;
    show(w, s, sizeof s - 1, &pos, 0, &v);
    assert_int_equal(v.status, SL_REQ_DENY); /* the request after the body: key a is spent */
    assert_int_equal(pos, sizeof s - 1 - strlen(REQ("a")));
    stop(w);
}

static void non_http_passes_untouched(void **state)
{
    (void)state;
    struct world *w = start(1, 1, SL_ACT_REPLY);
    static const char s[] = "\x16\x03\x01\x00\x05hello";
    struct sl_req_verdict v;
    size_t pos = 0;
    show(w, s, sizeof s - 1, &pos, 0, &v);
    assert_int_equal(pos, sizeof s - 1);
    assert_true(sl_req_done(w->c));
    stop(w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(pipelined_requests_pass_up_to_the_first_denied_head),
        cmocka_unit_test(a_short_read_never_charges_a_head_twice),
        cmocka_unit_test(an_incomplete_head_waits_for_more_bytes),
        cmocka_unit_test(delay_holds_a_head_until_its_turn),
        cmocka_unit_test(bodies_pass_and_the_next_head_is_decided),
        cmocka_unit_test(non_http_passes_untouched),
    };
    return cmocka_run_group_tests(tests, NULL, NULL) != 0;
}
