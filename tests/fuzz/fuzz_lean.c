/* SPDX-License-Identifier: BSD-2-Clause */
/* fuzz_lean.c - differential libFuzzer target: request.c's lean decision
 * (a fast head on a connection whose one rule is plain, decided from its
 * key's slice alone: core/http/reqdecide.h sl_req_solo_decide) against reqdecide.c's general
 * loop.
 *
 * The first input byte picks the rule (a header key under reply, delay or
 * reject; the peer's address under reject; a header key under reply with
 * count_status = 401, whose answers give back what their requests took:
 * after each read the program may answer, 200 or 401, the same answers to
 * both twins); each further byte is a read: a head of one of several keys,
 * with no key, with a list of keys, with an Idempotency-Key, a POST with a
 * body, two heads, or the input's own next bytes, perhaps cut in two reads,
 * after a time step, perhaps after another connection of the thread read a
 * head of its own. Twin connections on twin tables read the same stream as
 * the gate reads (sl_req_admit_all, sl_req_admit when it says no): one
 * under the plain rule (the lean path), one under the same rule with
 * `learn` set, which an inbound connection does not act on (request.c reads
 * responses' fields outbound only) but which makes the rule not plain, so
 * its requests go down the general loop. Every read must pass the same
 * bytes with the same verdict, and the tables' counters must agree. The
 * twins' tables hash with one secret (fuzz_lane.c says why). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../core/http/request.h"
#include "../../core/limit/table.h"
#include "../../core/limit/table_int.h"
#include "../../core/log.h"
#include "../unit/reqrule.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define NRULES 5
#define NREADS 256

struct twin {
    struct sl_config cfg;
    struct sl_table *table;
    struct sl_runtime rt;
};

static struct twin twins[NRULES][2], other;

static void start(struct twin *t, int kind, bool general)
{
    static const enum sl_action actions[] = {SL_ACT_REPLY, SL_ACT_DELAY, SL_ACT_REJECT,
                                             SL_ACT_REJECT, SL_ACT_REPLY};
    struct sl_rule *r = req_rule_add(&t->cfg, "lean", SL_IN, actions[kind]);
    r->prefix4 = 32;
    r->prefix6 = 64;
    r->max_delay_ns = 1000000000ull;
    if (kind != 3) {
        r->req_per = SL_REQ_PER_HEADER;
        strcpy(r->req_per_name, "X-Key");
    }
    if (kind == 4) {
        r->count_status[0] = 401;
        r->ncount_status = 1;
    }
    r->learn = general; /* not plain: the general loop (reqdecide.c: plain_rule) */
    sl_limit_init(&r->req_limit, SL_ALG_GCRA, kind == 1 ? 20 : 50, 1000000000ull, 3);
    char err[256];
    t->table = sl_table_open(4096, NULL, SL_FULL_SHARED, err, sizeof err);
    if (!t->table || sl_runtime_init(&t->rt, &t->cfg, t->table, err, sizeof err) != 0) abort();
}

static void setup(void)
{
    sl_log_setup(SL_LOG_NONE, SL_LOG_ERROR);
    for (int k = 0; k < NRULES; k++) {
        start(&twins[k][0], k, false);
        start(&twins[k][1], k, true);
        struct sl_table *a = twins[k][0].table, *b = twins[k][1].table;
        memcpy(b->hdr->secret, a->hdr->secret, sizeof a->secret);
        memcpy(b->secret, a->secret, sizeof a->secret);
    }
    start(&other, 0, false);
}

#define HEAD "GET /x HTTP/1.1\r\nHost: a\r\nX-Key: k\r\n\r\n"

/* The stream the input describes, and where each read ends. */
struct stream {
    char s[NREADS * 128];
    size_t len, cut[NREADS];
    uint64_t now[NREADS];
    bool other[NREADS];     /* the other connection reads first */
    uint8_t answer[NREADS]; /* after the read, the program answers: 0 no, 1 200, 2 401 */
    int n;
};

static void describe(struct stream *st, const uint8_t *d, size_t size)
{
    static const char *const pieces[] = {
        HEAD,
        "GET /x HTTP/1.1\r\nHost: a\r\nX-Key: j\r\n\r\n",
        "POST /p HTTP/1.1\r\nX-Key: k\r\nContent-Length: 3\r\n\r\nabc",
        HEAD HEAD,
        "GET /y?q=1 HTTP/1.1\r\nHost: a\r\n\r\n",
        "GET /x HTTP/1.1\r\nX-Key: a, b\r\n\r\n",
        "POST /i HTTP/1.1\r\nX-Key: k\r\nIdempotency-Key: 7\r\nContent-Length: 2\r\n\r\nhi",
        "HEAD /h HTTP/1.0\r\nX-Key: j\r\n\r\n",
    };
    static const uint64_t steps[] = {0, 1000000ull, 20000000ull, 200000000ull};
    uint64_t now = 1000000000000ull;
    st->len = 0;
    st->n = 0;
    for (size_t i = 0; i < size && st->n < NREADS - 1; i++) {
        uint8_t b = d[i];
        size_t at = st->len;
        unsigned pick = b & 15;
        if (pick < 3) { /* a key of many: heads that vary */
            st->len += (size_t)sprintf(st->s + at, "GET /v HTTP/1.1\r\nX-Key: k%u\r\n\r\n",
                                       (unsigned)(b >> 4) * 3 + pick);
        } else if (pick < 11) {
            st->len += (size_t)sprintf(st->s + at, "%s", pieces[pick - 3]);
        } else { /* the input's own next bytes */
            size_t n = (size_t)(b >> 4) * 4 + 1;
            if (n > size - i - 1) n = size - i - 1;
            memcpy(st->s + at, d + i + 1, n);
            st->len += n;
            i += n;
        }
        now += steps[(b >> 3) & 3];
        if ((b & 0x60) == 0x60 && st->len - at > 1) { /* cut in two reads */
            st->cut[st->n] = at + (st->len - at) / 2;
            st->now[st->n] = now;
            st->other[st->n++] = false;
        }
        st->cut[st->n] = st->len;
        st->now[st->n] = now;
        st->answer[st->n] = (uint8_t)((b + st->n) % 3);
        st->other[st->n++] = (b & 0x80) != 0;
    }
}

/* One connection's reads of the stream; what each passed, and its
 * verdict when short. */
static void read_all(struct twin *t, const struct stream *st, size_t *passed, int *status)
{
    struct sl_addr peer = {.v4 = true};
    struct sl_req_conn *c = malloc(sl_req_conn_size()), *o = malloc(sl_req_conn_size());
    if (!sl_req_conn_init(c, &t->rt, SL_IN, NULL, &peer, 1) ||
        !sl_req_conn_init(o, &other.rt, SL_IN, NULL, &peer, 2))
        abort();
    size_t p = 0;
    for (int i = 0; i < st->n; i++) {
        if (st->other[i]) { /* the thread's memory of the last head becomes another's */
            char h[64];
            int n = snprintf(h, sizeof h, "GET /o HTTP/1.1\r\nX-Key: o%d\r\n\r\n", i);
            if (!sl_req_admit_all(o, h, (size_t)n, st->now[i])) {
                struct sl_req_verdict v;
                sl_req_passed(o, h, sl_req_admit(o, h, (size_t)n, st->now[i], &v));
            }
        }
        size_t end = st->cut[i] > p ? st->cut[i] : p, n;
        struct sl_req_verdict v = {.status = SL_REQ_PASS};
        if (sl_req_admit_all(c, st->s + p, end - p, st->now[i])) {
            n = end - p;
        } else {
            n = sl_req_admit(c, st->s + p, end - p, st->now[i], &v);
            if (n > end - p) abort();
            sl_req_passed(c, st->s + p, n);
        }
        passed[i] = n;
        status[i] = n < end - p ? (int)v.status : -1;
        p += n;
        static const char *const answers[] = {
            "", "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
            "HTTP/1.1 401 Unauthorized\r\nContent-Length: 0\r\n\r\n"};
        if (st->answer[i])
            sl_req_responses_at(c, answers[st->answer[i]], strlen(answers[st->answer[i]]),
                                st->now[i]);
    }
    sl_req_conn_fini(c);
    sl_req_conn_fini(o);
    free(c);
    free(o);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct stream st;
    static size_t px[NREADS], py[NREADS];
    static int sx[NREADS], sy[NREADS];
    if (!other.table) setup();
    if (size < 2) return 0;
    int k = data[0] % NRULES;
    describe(&st, data + 1, size - 1);
    read_all(&twins[k][0], &st, px, sx);
    read_all(&twins[k][1], &st, py, sy);
    for (int i = 0; i < st.n; i++)
        if (px[i] != py[i] || sx[i] != sy[i]) abort();
    for (int e = 0; e < 4; e++) /* the rule's entries (its requests are one of them) */
        for (int c = 0; c < SL_NCOUNTERS; c++)
            if (sl_table_counter(twins[k][0].table, e, (enum sl_counter)c) !=
                sl_table_counter(twins[k][1].table, e, (enum sl_counter)c))
                abort();
    return 0;
}
