/* SPDX-License-Identifier: BSD-2-Clause */
/* test_req_conns.c - req_conns (issue 35, item 4): requests in flight
 * per key, from the head to the end of its response, through
 * core/http/request.h on several connections of one key sharing a table.
 * Time injected. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../conf/conf.h"
#include "h2_frames.h"
#include "reqworld.h"
#include "testutil.h"

#define GET  "GET /x HTTP/1.1\r\nHost: a\r\nX-Key: k\r\n\r\n"
#define R200 "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nok\n"

/* A world whose one rule allows 2 requests in flight per X-Key, no rate. */
static struct req_world *world(enum sl_action action)
{
    struct req_world *w = calloc(1, sizeof *w);
    struct sl_rule *r = req_world_rule(w, 1, 1, action);
    memset(&r->req_limit, 0, sizeof r->req_limit);
    r->req_per = SL_REQ_PER_HEADER;
    strcpy(r->req_per_name, "X-Key");
    r->req_conns = 2;
    req_world_start(w);
    return w;
}

/* Another connection of the world's peer, of direction dir. */
static struct sl_req_conn *conn(struct req_world *w, enum sl_dir dir)
{
    struct sl_req_conn *c = calloc(1, sl_req_conn_size());
    struct sl_addr peer = req_world_localhost(dir == SL_IN ? 5000 : 80);
    assert_true(sl_req_conn_init(c, &w->rt, dir, NULL, &peer, T0));
    return c;
}

static void conn_free(struct sl_req_conn *c)
{
    sl_req_conn_fini(c);
    free(c);
}

static size_t admit(struct sl_req_conn *c, const char *s, uint64_t now, struct sl_req_verdict *v)
{
    size_t n = sl_req_admit(c, s, strlen(s), now, v);
    sl_req_passed(c, s, n);
    return n;
}

static void world_free(struct req_world *w)
{
    req_world_stop(w);
    free(w);
}

static void a_request_holds_its_place_until_its_response_ends(void **unused)
{
    (void)unused;
    struct req_world *w = world(SL_ACT_REPLY);
    struct sl_req_conn *a = conn(w, SL_IN), *b = conn(w, SL_IN), *c = conn(w, SL_IN);
    assert_true(sl_req_answers(a));
    struct sl_req_verdict v;
    assert_int_equal(admit(a, GET, T0, &v), strlen(GET));
    assert_int_equal(admit(b, GET, T0, &v), strlen(GET));
    assert_int_equal(admit(c, GET, T0, &v), 0); /* a third at once: the rule's action */
    assert_int_equal(v.status, SL_REQ_DENY);
    assert_int_equal(v.action, SL_ACT_REPLY);
    conn_free(c);
    /* a's response is written in two parts: the place is given back at
     * its last byte, not before */
    sl_req_responses_at(a, R200, 20, T0);
    c = conn(w, SL_IN);
    assert_int_equal(admit(c, GET, T0, &v), 0);
    conn_free(c);
    sl_req_responses_at(a, R200 + 20, strlen(R200) - 20, T0);
    c = conn(w, SL_IN);
    assert_int_equal(admit(c, GET, T0, &v), strlen(GET));
    conn_free(c);
    /* a connection that ends gives back what its requests held */
    conn_free(b);
    c = conn(w, SL_IN);
    assert_int_equal(admit(c, GET, T0, &v), strlen(GET));
    conn_free(c);
    conn_free(a);
    world_free(w);
}

/* HTTP/2: a stream the client resets gives back its place once the
 * program has been passed the reset, also when the whole read passes at
 * once (sl_req_admit_all, the common path: it advanced past the reset
 * without giving the place back, so the key stayed full while the
 * connection lived). */
static void a_client_reset_gives_back_its_streams_place(void **unused)
{
    (void)unused;
    struct req_world *w = world(SL_ACT_REPLY);
    struct sl_req_conn *a = conn(w, SL_IN), *b = conn(w, SL_IN);
    /* GET / http, :authority a, x-key: k (literal, new name) */
    static const char block[] = "\x82\x84\x86\x01\x01"
                                "a"
                                "\x00\x05"
                                "x-key"
                                "\x01"
                                "k";
    static struct h2out o;
    memcpy(o.buf, H2_PREFACE, 24);
    o.len = 24;
    h2frame(&o, 4, 0, 0, "", 0);                     /* SETTINGS */
    h2frame(&o, 1, 0x5, 1, block, sizeof block - 1); /* HEADERS, END_STREAM */
    h2frame(&o, 1, 0x5, 3, block, sizeof block - 1);
    assert_true(sl_req_admit_all(a, o.buf, o.len, T0)); /* both places taken */
    struct sl_req_verdict v;
    assert_int_equal(admit(b, GET, T0, &v), 0);
    assert_int_equal(v.status, SL_REQ_DENY);
    conn_free(b);
    o.len = 0;
    h2frame(&o, 3, 0, 1, "\x00\x00\x00\x08", 4); /* RST_STREAM 1, CANCEL */
    assert_true(sl_req_admit_all(a, o.buf, o.len, T0));
    b = conn(w, SL_IN);
    assert_int_equal(admit(b, GET, T0, &v), strlen(GET)); /* stream 1's place */
    struct sl_req_conn *c = conn(w, SL_IN);
    assert_int_equal(admit(c, GET, T0, &v), 0); /* stream 3 still holds its own */
    conn_free(c);
    conn_free(b);
    conn_free(a);
    world_free(w);
}

static void pipelined_requests_each_hold_a_place(void **unused)
{
    (void)unused;
    struct req_world *w = world(SL_ACT_REPLY);
    struct sl_req_conn *a = conn(w, SL_IN);
    struct sl_req_verdict v;
    assert_int_equal(admit(a, GET, T0, &v), strlen(GET));
    sl_req_responses_at(a, R200, strlen(R200), T0); /* its responses are read */
    const char three[] = GET GET GET;
    assert_int_equal(admit(a, three, T0, &v), 2 * strlen(GET));
    assert_int_equal(v.status, SL_REQ_DENY);
    conn_free(a);
    struct sl_req_conn *b = conn(w, SL_IN), *c = conn(w, SL_IN);
    assert_int_equal(admit(b, GET, T0, &v), strlen(GET)); /* a's ended with it */
    assert_int_equal(admit(c, GET, T0, &v), strlen(GET));
    conn_free(b);
    conn_free(c);
    world_free(w);
}

static void delay_waits_for_a_place_within_max_delay(void **unused)
{
    (void)unused;
    struct req_world *w = world(SL_ACT_DELAY); /* max_delay 1 s */
    struct sl_req_conn *a = conn(w, SL_IN), *b = conn(w, SL_IN), *c = conn(w, SL_IN);
    struct sl_req_verdict v;
    assert_int_equal(admit(a, GET, T0, &v), strlen(GET));
    assert_int_equal(admit(b, GET, T0, &v), strlen(GET));
    assert_int_equal(admit(c, GET, T0, &v), 0);
    assert_int_equal(v.status, SL_REQ_HOLD);
    assert_true(v.wait_ns > 0 && v.wait_ns <= SEC / 100);
    uint64_t t = T0 + v.wait_ns;
    assert_int_equal(admit(c, GET, t, &v), 0); /* still none free: it looks again */
    assert_int_equal(v.status, SL_REQ_HOLD);
    sl_req_responses_at(b, R200, strlen(R200), t);
    t += v.wait_ns;
    assert_int_equal(admit(c, GET, t, &v), strlen(GET)); /* b's place */
    /* a fourth finds none until its max_delay has gone: denied */
    struct sl_req_conn *d = conn(w, SL_IN);
    assert_int_equal(admit(d, GET, t, &v), 0);
    assert_int_equal(v.status, SL_REQ_HOLD);
    for (int i = 0; i < 1000 && v.status == SL_REQ_HOLD; i++) {
        t += v.wait_ns;
        assert_int_equal(admit(d, GET, t, &v), 0);
    }
    assert_int_equal(v.status, SL_REQ_DENY);
    assert_true(t - T0 >= SEC && t - T0 <= SEC + SEC / 50);
    conn_free(d);
    conn_free(c);
    conn_free(b);
    conn_free(a);
    world_free(w);
}

static void outbound_the_responses_read_give_the_places_back(void **unused)
{
    (void)unused;
    struct req_world *w = world(SL_ACT_REJECT);
    req_world_outbound(w);
    struct sl_req_conn *a = w->c, *b = conn(w, SL_OUT), *c = conn(w, SL_OUT);
    assert_true(sl_req_replies(a));
    struct sl_req_verdict v;
    assert_int_equal(admit(a, GET, T0, &v), strlen(GET));
    assert_int_equal(admit(b, GET, T0, &v), strlen(GET));
    assert_int_equal(admit(c, GET, T0, &v), 0);
    assert_int_equal(v.status, SL_REQ_DENY);
    assert_int_equal(v.action, SL_ACT_REJECT);
    conn_free(c);
    sl_req_responses(a, R200, strlen(R200)); /* the program read a's response */
    c = conn(w, SL_OUT);
    assert_int_equal(admit(c, GET, T0, &v), strlen(GET));
    conn_free(c);
    conn_free(b);
    world_free(w);
}

static void outbound_reply_answers_the_third_with_a_429_and_goes_on(void **unused)
{
    (void)unused;
    struct req_world *w = world(SL_ACT_REPLY);
    req_world_outbound(w);
    struct sl_req_conn *a = w->c, *b = conn(w, SL_OUT);
    struct sl_req_verdict v;
    assert_int_equal(admit(a, GET, T0, &v), strlen(GET));
    assert_int_equal(admit(b, GET, T0, &v), strlen(GET));
    /* b's second request while both places are held: swallowed, its 429
     * queued once b's first response was read; b's connection goes on */
    sl_req_responses(a, R200, 10); /* a's response, not yet whole */
    assert_int_equal(admit(b, GET, T0, &v), 0);
    assert_int_equal(v.status, SL_REQ_SWALLOW);
    assert_int_equal(sl_req_swallow(b, GET, strlen(GET), T0), 0); /* b's first not read yet */
    sl_req_responses(b, R200, strlen(R200));
    assert_int_equal(sl_req_swallow(b, GET, strlen(GET), T0), strlen(GET));
    const char *q;
    assert_true(sl_req_inject_peek(b, &q) > 0);
    assert_memory_equal(q, "HTTP/1.1 429 ", 13);
    /* b's first ended: a third request has a place */
    assert_int_equal(admit(b, GET, T0, &v), strlen(GET));
    conn_free(b);
    world_free(w);
}

static void the_option_loads_and_prints_back(void **unused)
{
    (void)unused;
    char err[512] = "";
    enum sl_on_error on_error;
    struct sl_config *c = sl_conf_load(
        NULL,
        "in port=80 per=header:X-Key req_conns=2 action=delay; out to=127.0.0.1:80 req_conns=3",
        &on_error, err, sizeof err);
    if (!c) fail_msg("%s", err);
    assert_true(c->rules[0].request);
    assert_int_equal(c->rules[0].req_conns, 2);
    assert_int_equal(c->rules[1].req_conns, 3);
    char *text = NULL;
    size_t len;
    FILE *f = open_memstream(&text, &len);
    sl_conf_print(c, f);
    fclose(f);
    assert_non_null(strstr(text, "req_conns   = 2\n"));
    free(text);
    sl_conf_free(c);
    c = sl_conf_load(NULL, "in port=80 req_conns=-1", &on_error, err, sizeof err);
    assert_null(c);
    assert_non_null(strstr(err, "req_conns"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_request_holds_its_place_until_its_response_ends),
        cmocka_unit_test(pipelined_requests_each_hold_a_place),
        cmocka_unit_test(delay_waits_for_a_place_within_max_delay),
        cmocka_unit_test(outbound_the_responses_read_give_the_places_back),
        cmocka_unit_test(outbound_reply_answers_the_third_with_a_429_and_goes_on),
        cmocka_unit_test(the_option_loads_and_prints_back),
        cmocka_unit_test(a_client_reset_gives_back_its_streams_place),
    };
    return cmocka_run_group_tests(tests, NULL, NULL) != 0;
}
