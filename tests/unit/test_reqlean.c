/* SPDX-License-Identifier: BSD-2-Clause */
/* test_reqlean.c - the lean decision of request.c's scan (a fast head
 * decided by the single plain rule from its key's slice, core/http/reqdecide.h sl_req_solo_decide)
 * against the general loop: twin connections on twin tables, one under a
 * plain rule (the lean path), one under the same rule made not plain by a
 * method list naming every method the stream uses (reqdecide.c's general
 * loop, which never takes the lean path or the lane). Both read the same
 * stream as the gate reads it; the same bytes must pass, with the same
 * verdicts, the same 429s and the same counters. Time injected. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../core/log.h"
#include "../../core/http/request.h"
#include "../../core/limit/table.h"
#include "reqworld.h"
#include "testutil.h"

/* A world whose rule is keyed by X-API-Key; `general`: the rule names
 * every method the streams use, so it is decided by the general loop. */
static struct req_world *world(uint64_t count, uint64_t burst, enum sl_action action, bool general,
                               bool answers)
{
    struct req_world *w = calloc(1, sizeof *w);
    struct sl_rule *r = req_world_rule(w, count, burst, action);
    r->req_per = SL_REQ_PER_HEADER;
    strcpy(r->req_per_name, "X-API-Key");
    if (general) {
        static const char *const all[] = {"GET", "POST", "HEAD", "PUT"};
        for (int i = 0; i < 4; i++)
            strcpy(r->methods[r->nmethods++], all[i]);
    }
    if (answers) { /* a 429 from the program keeps the request's cost, any other gives it back */
        r->count_status[0] = 429;
        r->ncount_status = 1;
    }
    req_world_start(w);
    return w;
}

static void world_free(struct req_world *w)
{
    req_world_stop(w);
    free(w);
}

static uint64_t counter(const struct req_world *w, enum sl_counter c)
{
    uint64_t id, sum = 0;
    char name[64];
    for (int r = 0; sl_table_rule_info(w->table, r, &id, name, sizeof name); r++)
        sum += sl_table_counter(w->table, r, c);
    return sum;
}

enum { NHEADS = 600, MAXREADS = 2 * NHEADS };

/* A stream of heads from a seeded generator: keys that vary (one missing,
 * one a list, an Idempotency-Key now and then), a trace id unique to
 * each head, POSTs with bodies, HEADs; cut into reads of one head, two
 * heads, or a head in two parts. one_route: every head has one target and
 * one of two keys of one length, so a head often differs from one before
 * only in its values (its trace id, its key: read from the thread's
 * memory of a head, and by the lane). */
struct stream {
    char s[NHEADS * 200];
    size_t len;
    size_t head_end[NHEADS], body_end[NHEADS];
    bool head_method[NHEADS]; /* a HEAD request: its response has no body */
    int nheads;
    size_t cuts[MAXREADS];
    int nreads;
};

static void make_stream(struct stream *st, uint64_t seed, bool one_route)
{
    static const char *const keys[] = {"alpha", "beta", "gamma", "delta", NULL, "a, b"};
    st->len = 0;
    st->nreads = 0;
    for (int i = 0; i < NHEADS; i++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        unsigned r = (unsigned)(seed >> 33);
        /* one route: a client's key most of the time, another of its length */
        const char *key = one_route ? (r % 4 ? keys[0] : keys[2]) : keys[r % 6];
        unsigned kind = (r >> 4) % 10; /* 0-5 GET, 6-7 POST, 8 HEAD, 9 POST with Idempotency-Key */
        const char *method = kind < 6 ? "GET" : kind == 8 ? "HEAD" : "POST";
        char *p = st->s + st->len;
        int n = sprintf(p, "%s /v1/things/%u?page=%u HTTP/1.1\r\nHost: api.example\r\n", method,
                        one_route ? 1 : r % 97, one_route ? 1 : r % 7);
        if (key) n += sprintf(p + n, "X-API-Key: %s\r\n", key);
        n += sprintf(p + n, "traceparent: 00-%016llx-01\r\n", (unsigned long long)seed);
        if (kind == 9) n += sprintf(p + n, "Idempotency-Key: idem-%u\r\n", r % 3);
        bool body = kind == 6 || kind == 7 || kind == 9;
        if (body) n += sprintf(p + n, "Content-Length: 9\r\n");
        n += sprintf(p + n, "\r\n");
        st->head_end[i] = st->len + (size_t)n;
        if (body) n += sprintf(p + n, "{\"a\":12}\n");
        st->body_end[i] = st->len + (size_t)n;
        st->head_method[i] = kind == 8;
        st->len += (size_t)n;
        unsigned cut = (r >> 12) % 8;
        if (cut == 0 && st->nreads > 0 && i > 0) { /* this head joins the last read */
            st->cuts[st->nreads - 1] = st->len;
        } else if (cut == 1) { /* a head in two reads */
            st->cuts[st->nreads++] = st->len - (size_t)n + (size_t)n / 2;
            st->cuts[st->nreads++] = st->len;
        } else {
            st->cuts[st->nreads++] = st->len;
        }
    }
    st->nheads = NHEADS;
}

/* What one connection made of a stream: per read, the bytes passed and the
 * verdict of a short read; the 429s' text, joined. */
struct outcome {
    size_t passed[MAXREADS];
    enum sl_req_status status[MAXREADS];
    char replies[4096];
    size_t nreplies;
};

/* The program's response to head i (answers): 429 one time in three,
 * else 200; a HEAD's has no body. */
static int respond(struct req_world *w, const struct stream *st, int i, uint64_t now)
{
    char resp[96];
    int status = i % 3 == 0 ? 429 : 200;
    int n = snprintf(resp, sizeof resp, "HTTP/1.1 %d X\r\nContent-Length: 2\r\n\r\n%s", status,
                     st->head_method[i] ? "" : "ok");
    sl_req_responses_at(w->c, resp, (size_t)n, now);
    return status;
}

/* The stream read as the gate reads (sl_req_admit_all, else sl_req_admit
 * and what it lets pass), read i at T0 + i * step; with answers, each
 * request whose bytes passed is answered at once. Stops at a denial. */
static void read_stream(struct req_world *w, const struct stream *st, uint64_t step_ns,
                        bool answers, struct outcome *o)
{
    size_t p = 0;
    int answered = 0;
    o->nreplies = 0;
    for (int i = 0; i < st->nreads; i++) {
        uint64_t now = T0 + (uint64_t)i * step_ns;
        size_t end = st->cuts[i] > p ? st->cuts[i] : p;
        struct sl_req_verdict v = {.status = SL_REQ_PASS};
        size_t n;
        if (sl_req_admit_all(w->c, st->s + p, end - p, now)) {
            n = end - p;
        } else {
            n = sl_req_admit(w->c, st->s + p, end - p, now, &v);
            sl_req_passed(w->c, st->s + p, n);
        }
        o->passed[i] = n;
        o->status[i] = n < end - p ? v.status : SL_REQ_PASS;
        p += n;
        while (answers && answered < st->nheads && st->body_end[answered] <= p)
            respond(w, st, answered++, now);
        if (o->status[i] == SL_REQ_DENY) {
            if (v.action == SL_ACT_REPLY && o->nreplies + v.reply_len < sizeof o->replies) {
                memcpy(o->replies + o->nreplies, v.reply, v.reply_len);
                o->nreplies += v.reply_len;
            }
            for (int k = i + 1; k < st->nreads; k++) {
                o->passed[k] = 0;
                o->status[k] = SL_REQ_DENY;
            }
            return;
        }
    }
}

static void same_outcome(const struct stream *st, const struct outcome *x, const struct outcome *y,
                         const char *what)
{
    for (int i = 0; i < st->nreads; i++) {
        if (x->passed[i] != y->passed[i] || x->status[i] != y->status[i])
            print_message("%s read %d: %zu/%d vs %zu/%d\n", what, i, x->passed[i],
                          (int)x->status[i], y->passed[i], (int)y->status[i]);
        assert_int_equal(x->passed[i], y->passed[i]);
        assert_int_equal(x->status[i], y->status[i]);
    }
    assert_int_equal(x->nreplies, y->nreplies);
    assert_memory_equal(x->replies, y->replies, x->nreplies);
}

/* Over rates where heads pass, wait and are refused, for each action:
 * the lean path passes, holds and refuses what the general loop does,
 * with the same counters. */
static void the_lean_path_decides_as_the_general_loop(void **unused)
{
    (void)unused;
    const struct {
        uint64_t count, burst, step_us;
        enum sl_action action;
    } cases[] = {
        {100, 20, 300, SL_ACT_REPLY},           /* passes, then a key is refused */
        {40, 4, 9000, SL_ACT_DELAY},            /* waits now and then */
        {10, 2, 10000, SL_ACT_DELAY},           /* waits longer: most reads held */
        {100, 20, 300, SL_ACT_REJECT},          /* refused by a reset */
        {1000000, 1000000, 1000, SL_ACT_REPLY}, /* never limited: every head passes */
    };
    static struct stream st;
    static struct outcome ox, oy;
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        for (uint64_t seed = 1; seed <= 4; seed++) {
            bool one_route = seed == 4;
            make_stream(&st, seed * 7919 + c, one_route);
            struct req_world *x =
                world(cases[c].count, cases[c].burst, cases[c].action, false, false);
            struct req_world *y =
                world(cases[c].count, cases[c].burst, cases[c].action, true, false);
            uint64_t lane0 = sl_req_lane_heads(), whole0 = sl_req_whole_heads();
            read_stream(x, &st, cases[c].step_us * 1000, false, &ox);
            uint64_t lane1 = sl_req_lane_heads(), whole1 = sl_req_whole_heads();
            read_stream(y, &st, cases[c].step_us * 1000, false, &oy);
            char what[64];
            snprintf(what, sizeof what, "case %zu seed %llu", c, (unsigned long long)seed);
            same_outcome(&st, &ox, &oy, what);
            for (int k = 0; k < SL_NCOUNTERS; k++)
                assert_int_equal(counter(x, (enum sl_counter)k), counter(y, (enum sl_counter)k));
            int held = 0, refused = -1;
            for (int i = 0; i < st.nreads; i++) {
                held += ox.status[i] == SL_REQ_HOLD;
                if (refused < 0 && ox.status[i] == SL_REQ_DENY) refused = i;
            }
            print_message("%s%s: %llu allowed, %d reads held, refused at read %d of %d, %llu by "
                          "the lane, %llu read whole\n",
                          what, one_route ? " one route" : "",
                          (unsigned long long)counter(x, SL_C_ALLOWED), held, refused, st.nreads,
                          (unsigned long long)(lane1 - lane0),
                          (unsigned long long)(whole1 - whole0));
            /* the general loop never takes the lane, nor a read whole */
            assert_int_equal(sl_req_lane_heads(), lane1);
            assert_int_equal(sl_req_whole_heads(), whole1);
            /* a read of one request (a head, a POST and its body) is decided
             * before the scanner moves, passed or not (whole()); never
             * limited, all read: about 2 reads in 5 (of 6 keys, a list and
             * none are the general path's; a head in two reads, two heads in
             * one, an Idempotency-Key are scan()'s) */
            assert_true(whole1 > whole0);
            if (c == 4) assert_true(whole1 - whole0 > (uint64_t)st.nreads / 4);
            if (!one_route) /* the heads vary (a target each): no lane, each decided whole */
                assert_int_equal(lane1, lane0);
            else if (c == 4) /* never limited, all read: heads differing in values, by the lane */
                assert_true(lane1 - lane0 > 0);
            if (c == 4) /* never limited: every request was counted, by both */
                assert_int_equal(counter(x, SL_C_ALLOWED), (uint64_t)st.nheads);
            world_free(x);
            world_free(y);
        }
    }
}

/* With count_status, a request the lean path passes leaves its answer as
 * act() would: a 429 from the program keeps the request's cost, any other
 * status gives it back; the same bytes pass and are refused as under the
 * general loop, with the same counters. */
static void the_lean_path_leaves_answers_as_the_general_loop(void **unused)
{
    (void)unused;
    const struct {
        uint64_t count, burst, step_us;
        enum sl_action action;
    } cases[] = {
        {20, 3, 5000, SL_ACT_REPLY},
        {20, 3, 5000, SL_ACT_DELAY},
        {5, 2, 20000, SL_ACT_REJECT},
    };
    static struct stream st;
    static struct outcome ox, oy;
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        make_stream(&st, 4242 + c, c % 2 == 1);
        struct req_world *x = world(cases[c].count, cases[c].burst, cases[c].action, false, true);
        struct req_world *y = world(cases[c].count, cases[c].burst, cases[c].action, true, true);
        read_stream(x, &st, cases[c].step_us * 1000, true, &ox);
        read_stream(y, &st, cases[c].step_us * 1000, true, &oy);
        char what[64];
        snprintf(what, sizeof what, "answers case %zu", c);
        same_outcome(&st, &ox, &oy, what);
        for (int k = 0; k < SL_NCOUNTERS; k++)
            assert_int_equal(counter(x, (enum sl_counter)k), counter(y, (enum sl_counter)k));
        world_free(x);
        world_free(y);
    }
}

/* Answers given back matter: under a rate every head would exhaust, the
 * 200s give their cost back and more heads pass than the burst. */
static void answers_given_back_let_more_heads_pass(void **unused)
{
    (void)unused;
    static struct stream st;
    static struct outcome o;
    make_stream(&st, 99, false);
    struct req_world *w = world(1, 5, SL_ACT_REPLY, false, true);
    read_stream(w, &st, 1000, true, &o); /* 1 ms apart: 1 a second would pass 5 or 6 */
    assert_true(counter(w, SL_C_ALLOWED) > 20);
    world_free(w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_lean_path_decides_as_the_general_loop),
        cmocka_unit_test(the_lean_path_leaves_answers_as_the_general_loop),
        cmocka_unit_test(answers_given_back_let_more_heads_pass),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
