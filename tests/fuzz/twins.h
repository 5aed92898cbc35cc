/* SPDX-License-Identifier: BSD-2-Clause */
/* twins.h - what fuzz_lane.c and fuzz_lean.c share: twin connections on
 * twin tables (one secret: each table draws its own, and with two the twins
 * would place keys differently, so once inputs have filled a table they
 * would evict different keys and disagree for that alone) read one stream
 * of requests, a read at a time, beside another connection of the thread;
 * every read must pass the same bytes with the same verdict, and the
 * tables' counters must agree. Each target describes its own stream. */
#ifndef SL_FUZZ_TWINS_H
#define SL_FUZZ_TWINS_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../core/http/request.h"
#include "../../core/limit/table.h"
#include "../../core/limit/table_int.h"
#include "../../core/log.h"
#include "../unit/reqrule.h"

#define NRULES 5
#define NREADS 256

struct twin {
    struct sl_config cfg;
    struct sl_table *table;
    struct sl_runtime rt;
};

static struct twin twins[NRULES][2], other;

static void twin_start(struct twin *t, int kind, const char *name, bool general)
{
    static const enum sl_action actions[] = {SL_ACT_REPLY, SL_ACT_DELAY, SL_ACT_REJECT,
                                             SL_ACT_REJECT, SL_ACT_REPLY};
    struct sl_rule *r = req_rule_add(&t->cfg, name, SL_IN, actions[kind]);
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

/* Every kind of rule twice, on twin tables of one secret (the second
 * twin's rule made not plain when `general`), and the other connection's. */
static void twins_setup(const char *name, bool general)
{
    sl_log_setup(SL_LOG_NONE, SL_LOG_ERROR);
    for (int k = 0; k < NRULES; k++) {
        twin_start(&twins[k][0], k, name, false);
        twin_start(&twins[k][1], k, name, general);
        struct sl_table *a = twins[k][0].table, *b = twins[k][1].table;
        memcpy(b->hdr->secret, a->hdr->secret, sizeof a->secret);
        memcpy(b->secret, a->secret, sizeof a->secret);
    }
    twin_start(&other, 0, name, false);
}

/* The stream the input describes, and where each read ends. */
struct stream {
    char s[NREADS * 128];
    size_t len, cut[NREADS];
    uint64_t now[NREADS];
    bool other[NREADS];     /* the other connection reads first */
    uint8_t answer[NREADS]; /* after the read, the program answers: 0 no, 1 200, 2 401 */
    int n;
};

/* One connection's reads of the stream, as the gate reads (as_gate:
 * sl_req_admit_all, sl_req_admit when it says no) or by sl_req_admit
 * alone; what each passed, and its verdict when short. */
static void twin_read_all(struct twin *t, bool as_gate, const struct stream *st, size_t *passed,
                          int *status)
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
        if (as_gate && sl_req_admit_all(c, st->s + p, end - p, st->now[i])) {
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

/* Twins k read st (the first by sl_req_admit alone unless both_as_gate):
 * every read passes the same bytes with the same verdict, and the tables'
 * counters agree; else abort. */
static void twins_agree(int k, const struct stream *st, bool both_as_gate)
{
    static size_t px[NREADS], py[NREADS];
    static int sx[NREADS], sy[NREADS];
    twin_read_all(&twins[k][0], both_as_gate, st, px, sx);
    twin_read_all(&twins[k][1], true, st, py, sy);
    for (int i = 0; i < st->n; i++)
        if (px[i] != py[i] || sx[i] != sy[i]) abort();
    for (int e = 0; e < 4; e++) /* the rule's entries (its requests are one of them) */
        for (int c = 0; c < SL_NCOUNTERS; c++)
            if (sl_table_counter(twins[k][0].table, e, (enum sl_counter)c) !=
                sl_table_counter(twins[k][1].table, e, (enum sl_counter)c))
                abort();
}

#endif
