/* SPDX-License-Identifier: BSD-2-Clause */
/* fuzz_answers.c - an inbound connection under rules that read the
 * program's responses (issue 35: count_status, req_conns): the input's
 * bytes are the client's requests, shown in pieces, and between the
 * pieces the program writes responses (401, 200, an interim 100, a
 * bodiless 204, a byte of garbage, or bytes it cannot show) split where
 * the input says. Checks: admit never grants more than it was shown;
 * a request's place in flight is never lost: once the connection ends,
 * no place of the key is held (a leak would refuse the key for ever). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../core/log.h"
#include "../../core/http/request.h"
#include "../../core/limit/table.h"
#include "../unit/reqrule.h"
#include "feed.h"

#define ENTRY_MARK 0x7265712e72756c65ull /* core/http/reqdecide.c: a rule's request entry */

static struct sl_config cfg;
static struct sl_table *table;
static struct sl_runtime rt;
static struct sl_key place; /* the key of the places in flight: the rule's */
static int entry;

static void setup(void)
{
    sl_log_setup(SL_LOG_NONE, SL_LOG_ERROR);
    struct sl_rule *r = req_rule_add(&cfg, "fuzz", SL_IN, SL_ACT_REPLY);
    r->per = SL_PER_RULE;
    sl_limit_init(&r->req_limit, SL_ALG_GCRA, 1000, 1000000000ull, 3);
    r->count_status[r->ncount_status++] = 401;
    r->req_conns = 3;
    struct sl_rule *k = req_rule_add(&cfg, "fuzz-key", SL_IN, SL_ACT_REPLY);
    k->req_per = SL_REQ_PER_HEADER;
    strcpy(k->req_per_name, "X-Key");
    strcpy(k->routes[k->nroutes++], "/a");
    sl_limit_init(&k->req_limit, SL_ALG_GCRA, 1000, 1000000000ull, 1000);
    k->count_status[k->ncount_status++] = 200;
    char err[256];
    table = sl_table_open(1024, NULL, SL_FULL_SHARED, err, sizeof err);
    if (!table || sl_runtime_init(&rt, &cfg, table, err, sizeof err) != 0) abort();
    struct sl_addr peer = {.v4 = true};
    sl_key_make(&place, r, &peer);
    place.extra |= SL_REQ_KEY_BUCKET | SL_REQ_KEY_INFLIGHT;
    entry = sl_table_rule(table, r->id ^ ENTRY_MARK, "fuzz:req");
    if (entry < 0) abort();
}

static const char *const responses[] = {
    "HTTP/1.1 401 No\r\nContent-Length: 2\r\n\r\nno",
    "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n",
    "HTTP/1.1 100 Continue\r\n\r\n",
    "HTTP/1.1 204 No Content\r\n\r\n",
    "HTTP/1.1 304 Not Modified\r\nContent-Length: 9\r\n\r\n",
    "\x01",
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!table) setup();
    struct feed f;
    if (!feed_start(&f, data, size)) return 0;
    struct sl_req_conn *c = malloc(sl_req_conn_size());
    struct sl_addr peer = {.v4 = true};
    if (!sl_req_conn_init(c, &rt, SL_IN, NULL, &peer, 1)) abort();
    if (!sl_req_answers(c)) abort();
    uint64_t now = 1000000000000ull;
    for (int round = 0; round < 4096 && f.passed < f.len; round++) {
        struct sl_req_verdict v;
        size_t n = feed_admit(&f, c, now, &v);
        if (v.status == SL_REQ_DENY) break; /* the connection ends at a denial */
        sl_req_passed(c, f.s + f.passed, n);
        f.passed += n;
        /* the program answers, or not yet */
        uint8_t steer = f.steer;
        const char *resp = responses[(steer >> 3) % (sizeof responses / sizeof *responses)];
        size_t rlen = strlen(resp), cut = (size_t)(steer >> 5) % (rlen + 1);
        if (steer & 4) {
            sl_req_responses_at(c, resp, cut, now);
            sl_req_responses_at(c, resp + cut, rlen - cut, now);
        }
        if ((steer & 0xf7) == 0x13) sl_req_responses_unread(c);
        now += (uint64_t)(steer & 3) * 1000000ull;
        if (f.shown == f.len && n == 0) break;
    }
    sl_req_conn_fini(c);
    free(c);
    if (sl_table_conns(table, entry, &place, &cfg.rules[0].req_limit, now) != 0) abort();
    return 0;
}
