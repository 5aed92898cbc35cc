/* SPDX-License-Identifier: BSD-2-Clause */
/* test_cost.c - token budgets (issue 35, item 3): the options (conf), the
 * budget's look and charge (core/limit/cost.h), the cost read from an
 * answer (core/http/costread.h, through core/http/h1resp.h for chunked
 * bodies), and an outbound connection's calls and answers through
 * core/http/request.h, both budgets decided together. Time injected. */
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
#include "../../core/http/costread.h"
#include "../../core/http/h1resp.h"
#include "../../core/limit/cost.h"
#include "h2_frames.h"
#include "reqworld.h"
#include "testutil.h"

static void the_options_load_and_print_back(void **unused)
{
    (void)unused;
    char err[512] = "";
    struct sl_config *c =
        load_rules("out to=127.0.0.1:80 req_rate=50/m cost_from=json:usage.total_tokens "
                   "cost_rate=10000/m cost_burst=2000",
                   err, sizeof err);
    if (!c) fail_msg("%s", err);
    const struct sl_cost_rule *cr = &c->rules[0].tokens;
    assert_true(c->rules[0].request);
    assert_int_equal(cr->from, SL_COST_JSON);
    assert_string_equal(cr->name, "usage.total_tokens");
    assert_int_equal(cr->limit.count, 10000);
    assert_int_equal(cr->limit.period_ns, MIN);
    assert_int_equal(cr->limit.burst, 2000);
    char path[] = "/tmp/sluice-cost-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    sl_conf_print(c, f);
    fclose(f);
    enum sl_on_error on_error;
    struct sl_config *again = sl_conf_load(path, NULL, &on_error, err, sizeof err);
    unlink(path);
    if (!again) fail_msg("printed text does not load: %s", err);
    assert_int_equal(again->rules[0].tokens.from, SL_COST_JSON);
    assert_int_equal(again->rules[0].tokens.limit.burst, 2000);
    sl_conf_free(again);
    sl_conf_free(c);

    /* a header; the burst defaults to the rate's N; no req_rate needed */
    c = load_rules("out to=127.0.0.1:80 cost_from=header:X-Tokens cost_rate=1000/m", err,
                   sizeof err);
    if (!c) fail_msg("%s", err);
    cr = &c->rules[0].tokens;
    assert_true(c->rules[0].request);
    assert_int_equal(cr->from, SL_COST_HEADER);
    assert_string_equal(cr->name, "X-Tokens");
    assert_int_equal(cr->limit.burst, 1000);
    sl_conf_free(c);
}

static void the_options_are_refused_alone_or_malformed(void **unused)
{
    (void)unused;
    static const char *const bad[][3] = {
        {"out to=127.0.0.1:80 cost_from=json:usage.total_tokens", "cost_from", "needs cost_rate"},
        {"out to=127.0.0.1:80 cost_rate=1000/m", "cost_rate", "needs cost_from"},
        {"out to=127.0.0.1:80 cost_burst=10", "cost_burst", "needs cost_from"},
        {"out to=127.0.0.1:80 cost_from=body:x cost_rate=1/s", "cost_from", "neither"},
        {"out to=127.0.0.1:80 cost_from=json:a..b cost_rate=1/s", "cost_from", "dots"},
        {"out to=127.0.0.1:80 cost_from=header: cost_rate=1/s", "cost_from", "names no header"},
        {"out to=127.0.0.1:80 cost_from=header:X-T cost_rate=lots", "cost_rate", ""},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char err[512] = "";
        struct sl_config *c = load_rules(bad[i][0], err, sizeof err);
        if (c) fail_msg("accepted: %s", bad[i][0]);
        if (!strstr(err, bad[i][1]) || !strstr(err, bad[i][2]))
            fail_msg("%s: message names no %s or no '%s': %s", bad[i][0], bad[i][1], bad[i][2],
                     err);
    }
}

/* 1,000 tokens a minute, a burst of 1,000: a token every 60 ms. */
static struct sl_limit thousand_a_minute(void)
{
    struct sl_limit l;
    assert_int_equal(sl_limit_init(&l, SL_ALG_GCRA, 1000, MIN, 1000), 0);
    return l;
}

static void calls_pass_until_the_budget_is_in_debt(void **unused)
{
    (void)unused;
    struct sl_limit l = thousand_a_minute();
    struct sl_verdict v;
    uint64_t tat = 0;
    for (int call = 1; call <= 3; call++) { /* 0, 400, 800 spent: not in debt */
        sl_cost_look(tat, &l, T0, 0, &v);
        if (!v.allowed) fail_msg("call %d refused", call);
        tat = sl_cost_charged(tat, &l, T0, 400);
    }
    sl_cost_look(tat, &l, T0, 0, &v); /* 1,200 spent: 200 in debt */
    assert_false(v.allowed);
    assert_int_equal(v.retry_ns, 12 * SEC); /* 200 tokens at 60 ms */
    sl_cost_look(tat, &l, T0 + 12 * SEC - 1, 0, &v);
    assert_false(v.allowed);
    sl_cost_look(tat, &l, T0 + 12 * SEC, 0, &v); /* paid: passes, nothing left */
    assert_true(v.allowed);
    assert_int_equal(v.remaining, 0);
    /* under delay: a call within max_delay of the payment waits for it */
    sl_cost_look(tat, &l, T0, 15 * SEC, &v);
    assert_true(v.allowed);
    assert_int_equal(v.wait_ns, 12 * SEC);
}

static void the_debt_is_at_most_one_burst(void **unused)
{
    (void)unused;
    struct sl_limit l = thousand_a_minute();
    uint64_t tat = sl_cost_charged(0, &l, T0, 1000000); /* a huge answer */
    assert_int_equal(tat, T0 + 2 * MIN);
    struct sl_verdict v;
    sl_cost_look(tat, &l, T0, 0, &v);
    assert_false(v.allowed);
    assert_int_equal(v.retry_ns, MIN);
    /* a word from a clock read later than ours: no longer than that either */
    sl_cost_look(T0 + 100 * MIN, &l, T0, 0, &v);
    assert_int_equal(v.retry_ns, MIN);
    /* a zero cost charges nothing */
    assert_int_equal(sl_cost_charged(T0 - SEC, &l, T0, 0), T0);
}

static void a_look_in_the_table_takes_nothing_and_keys_stay_apart(void **unused)
{
    (void)unused;
    char err[256];
    struct sl_table *t = sl_table_open(1024, NULL, SL_FULL_SHARED, err, sizeof err);
    assert_non_null(t);
    int e = sl_table_rule(t, 1, "r:cost");
    struct sl_limit l = thousand_a_minute();
    struct sl_verdict v;
    for (int i = 0; i < 10; i++) {
        sl_cost_peek(t, e, 42, &l, T0, 0, &v);
        assert_true(v.allowed);
        assert_int_equal(v.remaining, 1000);
    }
    assert_true(sl_cost_charge(t, e, 42, &l, T0, 1001));
    sl_cost_peek(t, e, 42, &l, T0, 0, &v);
    assert_false(v.allowed);
    sl_cost_peek(t, e, 43, &l, T0, 0, &v);
    assert_true(v.allowed);
    /* a token budget's key is not its request bucket's */
    struct sl_key k = {.rule = 7, .lo = 1, .extra = SL_REQ_KEY_BUCKET}, ck;
    sl_cost_key(&ck, &k);
    assert_true(sl_key_hash(&ck, sl_table_secret(t)) != sl_key_hash(&k, sl_table_secret(t)));
    sl_table_close(t);
}

/* ---- the cost read from an answer ---- */

/* The cost of the response `text` read by h1resp + costread, fed in
 * pieces of `step` bytes (0: whole); *found says whether one was read. */
struct reader {
    struct sl_costread r;
    bool done, found;
    uint64_t cost;
};

static void on_field(void *arg, uint64_t index, const char *n, size_t nl, const char *v, size_t vl)
{
    sl_costread_header(&((struct reader *)arg)->r, n, nl, v, vl);
}

static void on_body(void *arg, uint64_t index, const char *at, size_t n)
{
    sl_costread_body(&((struct reader *)arg)->r, at, n);
}

static void on_done(void *arg, uint64_t index)
{
    struct reader *rd = arg;
    rd->done = true;
    rd->found = sl_costread_end(&rd->r, &rd->cost);
}

static bool cost_of(enum sl_cost_from from, const char *name, const char *text, size_t len,
                    size_t step, uint64_t *cost)
{
    struct reader rd = {0};
    struct sl_h1resp h;
    sl_costread_init(&rd.r, from, name);
    sl_h1resp_init(&h);
    sl_h1resp_bodies(&h, on_field, on_body, &rd);
    sl_h1resp_ends(&h, on_done, &rd);
    sl_h1resp_sent(&h, "POST");
    for (size_t i = 0; i < len; i += step ? step : len)
        sl_h1resp_feed(&h, text + i, step && len - i > step ? step : len - i);
    sl_h1resp_eof(&h);
    sl_costread_fini(&rd.r);
    assert_true(rd.done);
    *cost = rd.cost;
    return rd.found;
}

/* The same cost whatever the pieces. */
static bool cost_split(enum sl_cost_from from, const char *name, const char *text, uint64_t *cost)
{
    size_t len = strlen(text);
    bool found = cost_of(from, name, text, len, 0, cost);
    for (size_t step = 1; step < 40; step++) {
        uint64_t c2;
        bool f2 = cost_of(from, name, text, len, step, &c2);
        if (f2 != found || (found && c2 != *cost))
            fail_msg("pieces of %zu: %d/%llu, whole: %d/%llu", step, f2, (unsigned long long)c2,
                     found, (unsigned long long)*cost);
    }
    return found;
}

#define JSON_HEAD "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
#define SSE_HEAD                                                                                   \
    "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"

static void a_json_body_gives_its_number_however_framed(void **unused)
{
    (void)unused;
    uint64_t c;
    const char *usage = "json", *path = "usage.total_tokens";
    (void)usage;
    assert_true(cost_split(SL_COST_JSON, path,
                           JSON_HEAD
                           "Content-Length: 55\r\n\r\n"
                           "{\"id\":1,\"usage\":{\"prompt_tokens\":5,\"total_tokens\":400}}",
                           &c));
    assert_int_equal(c, 400);
    assert_true(cost_split(SL_COST_JSON, path,
                           JSON_HEAD "Transfer-Encoding: chunked\r\n\r\n"
                                     "a\r\n{\"usage\": \r\n"
                                     "16\r\n{\"total_tokens\": 123}}\r\n0\r\n\r\n",
                           &c));
    assert_int_equal(c, 123);
    /* delimited by the end of the stream */
    assert_true(
        cost_split(SL_COST_JSON, path, JSON_HEAD "\r\n{\"usage\":{\"total_tokens\":7.0}}", &c));
    assert_int_equal(c, 7);
    /* an array place written as digits */
    assert_true(
        cost_split(SL_COST_JSON, "data.1.n", JSON_HEAD "\r\n{\"data\":[{\"n\":1},{\"n\":2}]}", &c));
    assert_int_equal(c, 2);
}

static void a_json_body_without_a_whole_number_gives_none(void **unused)
{
    (void)unused;
    uint64_t c;
    const char *path = "usage.total_tokens";
    static const char *const none[] = {
        JSON_HEAD "Content-Length: 2\r\n\r\n{}",
        JSON_HEAD "\r\n{\"usage\":{\"total_tokens\":-4}}",
        JSON_HEAD "\r\n{\"usage\":{\"total_tokens\":2.5}}",
        JSON_HEAD "\r\n{\"usage\":{\"total_tokens\":\"400\"}}",
        JSON_HEAD "\r\n{\"usage\":{\"total_tokens\":400}",    /* cut short */
        JSON_HEAD "\r\n{\"usage\":{\"total_tokens\":1e300}}", /* absurd */
        "HTTP/1.1 204 No Content\r\n\r\n",
    };
    for (size_t i = 0; i < sizeof none / sizeof *none; i++)
        if (cost_split(SL_COST_JSON, path, none[i], &c))
            fail_msg("read %llu from %s", (unsigned long long)c, none[i]);
}

static void a_body_past_the_bound_or_too_deep_gives_none(void **unused)
{
    (void)unused;
    size_t pad = SL_COSTREAD_MAX;
    char *text = malloc(pad + 200);
    int n = sprintf(text, JSON_HEAD "\r\n{\"usage\":{\"total_tokens\":9},\"pad\":\"");
    memset(text + n, 'x', pad);
    strcpy(text + n + pad, "\"}");
    uint64_t c;
    assert_false(cost_of(SL_COST_JSON, "usage.total_tokens", text, strlen(text), 0, &c));
    assert_false(cost_of(SL_COST_JSON, "usage.total_tokens", text, strlen(text), 4096, &c));
    /* the same, short enough: read */
    strcpy(text + n + 100, "\"}");
    assert_true(cost_of(SL_COST_JSON, "usage.total_tokens", text, strlen(text), 0, &c));
    assert_int_equal(c, 9);
    /* nested past SL_COSTREAD_DEPTH: not parsed (jansson recurses) */
    n = sprintf(text, "{\"usage\":{\"total_tokens\":9},\"deep\":");
    for (int i = 0; i < 100; i++)
        text[n++] = '[';
    for (int i = 0; i < 100; i++)
        text[n++] = ']';
    text[n++] = '}';
    assert_false(sl_costread_json("usage.total_tokens", text, (size_t)n, &c));
    assert_true(sl_costread_json("usage.total_tokens", text, 28, &c) == false); /* cut: no */
    free(text);
}

static void an_event_stream_gives_the_last_event_with_the_path(void **unused)
{
    (void)unused;
    uint64_t c;
    /* OpenAI's shape: chunks without usage, then one with it, then [DONE] */
    assert_true(cost_split(SL_COST_JSON, "usage.total_tokens",
                           SSE_HEAD
                           "20\r\ndata: {\"choices\":[{\"d\":\"Hi\"}]}\n\n\r\n"
                           "33\r\ndata: {\"choices\":[],\"usage\":{\"total_tokens\":400}}\n\n\r\n"
                           "e\r\ndata: [DONE]\n\n\r\n0\r\n\r\n",
                           &c));
    assert_int_equal(c, 400);
    /* CR LF and CR line ends, a comment, data on two lines, no last blank line */
    assert_true(
        cost_split(SL_COST_JSON, "u.t",
                   "HTTP/1.1 200 OK\r\ncontent-type: Text/Event-Stream; charset=utf-8\r\n\r\n"
                   ": ping\r\n\r\ndata: {\"u\":\r\ndata: {\"t\":5}}\r\r"
                   "event: x\ndata:{\"u\":{\"t\":6}}",
                   &c));
    assert_int_equal(c, 6);
    /* no event has it */
    assert_false(cost_split(SL_COST_JSON, "usage.total_tokens",
                            SSE_HEAD "e\r\ndata: [DONE]\n\n\r\n0\r\n\r\n", &c));
}

static void a_header_gives_its_integer(void **unused)
{
    (void)unused;
    uint64_t c;
    assert_true(cost_split(SL_COST_HEADER, "x-tokens",
                           "HTTP/1.1 200 OK\r\nX-Tokens:  250 \r\nContent-Length: 2\r\n\r\nok",
                           &c));
    assert_int_equal(c, 250);
    assert_false(cost_split(SL_COST_HEADER, "x-tokens",
                            "HTTP/1.1 200 OK\r\nX-Tokens: 2.5\r\nContent-Length: 0\r\n\r\n", &c));
    assert_false(cost_split(SL_COST_HEADER, "x-tokens",
                            "HTTP/1.1 200 OK\r\nX-Other: 3\r\nContent-Length: 0\r\n\r\n", &c));
}

/* ---- a connection's calls and answers ---- */

/* An outbound world: rule "api" to 127.0.0.1 keyed by X-User, its request
 * budget `req` an hour (burst req), its token budget 1,000 a minute
 * (burst 1,000) read from json:usage.total_tokens, action reject. */
static struct req_world *world(uint64_t req)
{
    struct req_world *w = calloc(1, sizeof *w);
    struct sl_rule *r = req_world_rule(w, req, req, SL_ACT_REJECT);
    assert_int_equal(sl_limit_init(&r->req_limit, SL_ALG_GCRA, req, HOUR, req), 0);
    r->req_per = SL_REQ_PER_HEADER;
    strcpy(r->req_per_name, "X-User");
    struct sl_cost_rule *cr = &r->tokens;
    if (!cr) fail_msg("core/rule.h has no token budget field (build/tok/rule.diff)");
    cr->from = SL_COST_JSON;
    strcpy(cr->name, "usage.total_tokens");
    cr->limit = thousand_a_minute();
    req_world_start(w);
    req_world_outbound(w);
    return w;
}

/* An inbound world (the program answers: its writes are the answers),
 * else as world() below. */
static struct req_world *world_in(uint64_t req)
{
    struct req_world *w = calloc(1, sizeof *w);
    struct sl_rule *r = req_world_rule(w, req, req, SL_ACT_REJECT);
    assert_int_equal(sl_limit_init(&r->req_limit, SL_ALG_GCRA, req, HOUR, req), 0);
    r->req_per = SL_REQ_PER_HEADER;
    strcpy(r->req_per_name, "X-User");
    struct sl_cost_rule *cr = &r->tokens;
    if (!cr) fail_msg("core/rule.h has no token budget field (build/tok/rule.diff)");
    cr->from = SL_COST_JSON;
    strcpy(cr->name, "usage.total_tokens");
    cr->limit = thousand_a_minute();
    req_world_start(w);
    return w;
}

static void world_free(struct req_world *w)
{
    req_world_stop(w);
    free(w);
}

#define CALL(user)                                                                                 \
    "POST /v1/chat HTTP/1.1\r\nHost: a\r\nX-User: " user "\r\nContent-Length: 2\r\n\r\n{}"
#define ANSWER(n)                                                                                  \
    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "                        \
    "30\r\n\r\n{\"usage\":{\"total_tokens\":" n "}}"

/* One call written by the program: true when it may go. */
static bool call(struct req_world *w, const char *head, uint64_t now)
{
    struct sl_req_verdict v;
    size_t len = strlen(head), n = sl_req_admit(w->c, head, len, now, &v);
    if (n == len) sl_req_passed(w->c, head, n);
    return n == len;
}

/* The program read the answer `s` at `now` (T0: the calls' own time). */
static void answer_at(struct req_world *w, const char *s, uint64_t now)
{
    sl_req_responses_at(w->c, s, strlen(s), now);
}

static void answer(struct req_world *w, const char *s)
{
    answer_at(w, s, T0);
}

static uint64_t counter(struct req_world *w, const char *entry, enum sl_counter c)
{
    uint64_t id;
    char name[SL_NAME_MAX];
    for (int e = 0; sl_table_rule_info(w->table, e, &id, name, sizeof name); e++)
        if (strcmp(name, entry) == 0) return sl_table_counter(w->table, e, c);
    fail_msg("no table entry %s", entry);
    return 0;
}

static void three_answers_of_400_put_the_key_in_debt(void **unused)
{
    (void)unused;
    struct req_world *w = world(100);
    assert_true(sl_req_replies(w->c));
    for (int i = 0; i < 3; i++) {
        if (!call(w, CALL("alice"), T0)) fail_msg("call %d refused", i + 1);
        answer(w, ANSWER("400"));
    }
    assert_int_equal(counter(w, "api:cost", SL_C_COST_TOKENS), 1200);
    assert_int_equal(counter(w, "api:cost", SL_C_COST_CALLS), 3);
    assert_int_equal(counter(w, "api:cost", SL_C_COST_UNREAD), 0);
    assert_false(call(w, CALL("alice"), T0)); /* 200 in debt */
    assert_int_equal(counter(w, "api:cost", SL_C_COST_REFUSED), 1);
    world_free(w);

    /* another key has its own budget; the indebted key pays in 12 s */
    w = world(100);
    for (int i = 0; i < 3; i++) {
        assert_true(call(w, CALL("alice"), T0));
        answer(w, ANSWER("400"));
    }
    assert_true(call(w, CALL("bob"), T0));
    answer(w, ANSWER("400"));
    assert_true(call(w, CALL("alice"), T0 + 12 * SEC));
    answer_at(w, ANSWER("100"), T0 + 12 * SEC);
    assert_int_equal(counter(w, "api:cost", SL_C_COST_TOKENS), 1700);
    world_free(w);
}

static void a_call_either_budget_refuses_spends_neither(void **unused)
{
    (void)unused;
    /* 4 calls an hour: 3 pass and go into token debt; the 4th is refused
     * by the tokens and takes no request token: 12 s later one is left */
    struct req_world *w = world(4);
    for (int i = 0; i < 3; i++) {
        assert_true(call(w, CALL("alice"), T0));
        answer(w, ANSWER("400"));
    }
    sl_req_conn_fini(w->c); /* a refusal ends a connection: a new one each time */
    struct sl_addr peer = req_world_localhost(80);
    assert_true(sl_req_conn_init(w->c, &w->rt, SL_OUT, NULL, &peer, T0));
    assert_false(call(w, CALL("alice"), T0));
    sl_req_conn_fini(w->c);
    assert_true(sl_req_conn_init(w->c, &w->rt, SL_OUT, NULL, &peer, T0));
    assert_true(call(w, CALL("alice"), T0 + 12 * SEC)); /* the 4th request token */
    answer_at(w, ANSWER("  0"), T0 + 12 * SEC);
    /* the request budget now refuses; the token budget is whole again by
     * then and stays so: the refused call charged nothing */
    sl_req_conn_fini(w->c);
    assert_true(sl_req_conn_init(w->c, &w->rt, SL_OUT, NULL, &peer, T0));
    assert_false(call(w, CALL("alice"), T0 + 10 * MIN));
    assert_int_equal(counter(w, "api:req", SL_C_LIMITED), 2);
    assert_int_equal(counter(w, "api:cost", SL_C_COST_REFUSED), 1);
    sl_req_conn_fini(w->c);
    assert_true(sl_req_conn_init(w->c, &w->rt, SL_OUT, NULL, &peer, T0));
    assert_int_equal(counter(w, "api:cost", SL_C_COST_TOKENS), 1200);
    assert_int_equal(counter(w, "api:cost", SL_C_COST_CALLS), 4);
    world_free(w);
}

static void an_answer_without_a_cost_is_charged_by_doubt(void **unused)
{
    (void)unused;
    struct req_world *w = world(1000);
    w->cfg.rules[0].cost = 300; /* the rule's cost: what an unread answer is charged */
    assert_true(call(w, CALL("alice"), T0));
    answer(w, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}");
    assert_true(call(w, CALL("alice"), T0)); /* its answer never comes: charged at the end */
    sl_req_conn_fini(w->c);
    struct sl_addr peer = req_world_localhost(80);
    assert_true(sl_req_conn_init(w->c, &w->rt, SL_OUT, NULL, &peer, T0));
    assert_int_equal(counter(w, "api:cost", SL_C_COST_TOKENS), 600);
    assert_int_equal(counter(w, "api:cost", SL_C_COST_UNREAD), 2);
    assert_int_equal(counter(w, "api:cost", SL_C_COST_DEFAULTS), 600);
    world_free(w);
}

static void an_inbound_rule_charges_what_the_program_answers(void **unused)
{
    (void)unused;
    struct req_world *w = world_in(100);
    assert_true(sl_req_answers(w->c));
    for (int i = 0; i < 3; i++) {
        assert_true(call(w, CALL("alice"), T0));
        answer(w, ANSWER("400")); /* the program writes it */
    }
    assert_false(call(w, CALL("alice"), T0));
    assert_int_equal(counter(w, "api:cost", SL_C_COST_TOKENS), 1200);
    world_free(w);
}

/* HTTP/2: the answers are paired by stream (core/http/h2resp.h). Four
 * calls in one write all pass (nothing is charged before an answer, as
 * with pipelined HTTP/1); then stream 1's JSON is read (150), stream 3's,
 * whose body runs beside it, is charged by doubt (the rule's cost, 400),
 * stream 5's, in a PADDED DATA frame, is read (7), and stream 7's answer,
 * a head that ends its stream, has no body: doubt (400). Before: every
 * HTTP/2 call was charged 400 at once and the fourth was refused. */
static void http2_answers_charge_their_json_one_at_a_time(void **unused)
{
    (void)unused;
    struct req_world *w = world(10000);
    w->cfg.rules[0].cost = 400;
    nghttp2_hd_deflater *d;
    assert_int_equal(nghttp2_hd_deflate_new(&d, 4096), 0);
    static struct h2out o;
    memcpy(o.buf, H2_PREFACE, sizeof H2_PREFACE - 1);
    o.len = sizeof H2_PREFACE - 1;
    h2frame(&o, 4, 0, 0, "", 0); /* SETTINGS */
    nghttp2_nv nv[] = {H2NV(":method", "POST"), H2NV(":scheme", "http"), H2NV(":path", "/v1"),
                       H2NV(":authority", "a"), H2NV("x-user", "alice")};
    uint8_t blk[512];
    for (uint32_t i = 0; i < 4; i++) {
        ssize_t n = nghttp2_hd_deflate_hd(d, blk, sizeof blk, nv, 5);
        assert_true(n > 2);
        h2frame(&o, 1, 0x5, 2 * i + 1, blk, (size_t)n);
    }
    nghttp2_hd_deflate_del(d);
    struct sl_req_verdict v;
    assert_int_equal(sl_req_admit(w->c, o.buf, o.len, T0, &v), o.len);
    assert_int_equal(counter(w, "api:cost", SL_C_COST_CALLS), 0);

    static struct h2out a;
    a.len = 0;
    nghttp2_hd_deflater *e;
    assert_int_equal(nghttp2_hd_deflate_new(&e, 4096), 0);
    nghttp2_nv head[] = {H2NV(":status", "200"), H2NV("content-type", "application/json")};
    h2frame(&a, 4, 0, 0, "", 0);
    for (uint32_t s = 1; s <= 7; s += 2) {
        ssize_t n = nghttp2_hd_deflate_hd(e, blk, sizeof blk, head, 2);
        assert_true(n > 0);
        h2frame(&a, 1, s == 7 ? 0x5 : 0x4, s, blk, (size_t)n);
        if (s == 3) { /* stream 1's body, then 3's */
            const char b1[] = "{\"usage\":{\"total_tokens\":150}}";
            const char b3[] = "{\"usage\":{\"total_tokens\":99}}";
            h2frame(&a, 0, 0x1, 1, b1, sizeof b1 - 1);
            h2frame(&a, 0, 0x1, 3, b3, sizeof b3 - 1);
        }
        if (s == 5) {
            const char b5[] = "\x03{\"usage\":{\"total_tokens\":7}}\0\0\0";
            h2frame(&a, 0, 0x9, 5, b5, sizeof b5 - 1); /* PADDED, END_STREAM */
        }
    }
    nghttp2_hd_deflate_del(e);
    for (size_t i = 0; i < a.len; i++) /* split anywhere: a byte a read */
        sl_req_responses_at(w->c, a.buf + i, 1, T0);
    assert_int_equal(counter(w, "api:cost", SL_C_COST_CALLS), 4);
    assert_int_equal(counter(w, "api:cost", SL_C_COST_TOKENS), 150 + 400 + 7 + 400);
    assert_int_equal(counter(w, "api:cost", SL_C_COST_UNREAD), 2);
    world_free(w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_options_load_and_print_back),
        cmocka_unit_test(the_options_are_refused_alone_or_malformed),
        cmocka_unit_test(calls_pass_until_the_budget_is_in_debt),
        cmocka_unit_test(the_debt_is_at_most_one_burst),
        cmocka_unit_test(a_look_in_the_table_takes_nothing_and_keys_stay_apart),
        cmocka_unit_test(a_json_body_gives_its_number_however_framed),
        cmocka_unit_test(a_json_body_without_a_whole_number_gives_none),
        cmocka_unit_test(a_body_past_the_bound_or_too_deep_gives_none),
        cmocka_unit_test(an_event_stream_gives_the_last_event_with_the_path),
        cmocka_unit_test(a_header_gives_its_integer),
        cmocka_unit_test(three_answers_of_400_put_the_key_in_debt),
        cmocka_unit_test(a_call_either_budget_refuses_spends_neither),
        cmocka_unit_test(an_answer_without_a_cost_is_charged_by_doubt),
        cmocka_unit_test(an_inbound_rule_charges_what_the_program_answers),
        cmocka_unit_test(http2_answers_charge_their_json_one_at_a_time),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
