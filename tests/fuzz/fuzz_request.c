/* SPDX-License-Identifier: BSD-2-Clause */
/* fuzz_request.c - a connection's bytes through sl_req_admit, shown in
 * pieces whose sizes and timing come from the input, with a request rule
 * keyed by a header, routes, a quota and delay. Checks: admit never grants
 * more than it was shown, never passes a byte past a denied head, and
 * a denial stays at the same offset. Half the inputs (the first byte's low
 * bit) run as an outbound connection under a `reply` rule instead: a
 * swallowed request's bytes are consumed by sl_req_swallow (never more
 * than shown), the input's own bytes are read back as responses, and the
 * queued 429s are read. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../core/log.h"
#include "../../core/http/request.h"
#include "../../core/limit/table.h"
#include "../unit/reqrule.h"
#include "feed.h"

static struct sl_config cfg;
static struct sl_table *table;
static struct sl_runtime rt;

static void setup(void)
{
    sl_log_setup(SL_LOG_NONE, SL_LOG_ERROR);
    struct sl_rule *r = req_rule_add(&cfg, "fuzz", SL_IN, SL_ACT_DELAY);
    r->prefix4 = 32;
    r->prefix6 = 64;
    r->max_delay_ns = 1000000000ull;
    r->req_per = SL_REQ_PER_HEADER;
    strcpy(r->req_per_name, "X-Key");
    strcpy(r->routes[r->nroutes++], "/a");
    strcpy(r->routes[r->nroutes++], "/b/*");
    r->quota = 50;
    r->quota_window = SL_QUOTA_DAY;
    sl_limit_init(&r->req_limit, SL_ALG_GCRA, 100, 1000000000ull, 5);
    struct sl_rule *o = req_rule_add(&cfg, "fuzz-out", SL_OUT, SL_ACT_REPLY);
    o->per = SL_PER_RULE;
    o->nto = 1; /* ::/0: every destination */
    sl_limit_init(&o->req_limit, SL_ALG_GCRA, 10, 1000000000ull, 2);
    char err[256];
    table = sl_table_open(1024, NULL, SL_FULL_SHARED, err, sizeof err);
    if (!table || sl_runtime_init(&rt, &cfg, table, err, sizeof err) != 0) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!table) setup();
    struct feed f; /* the first byte steers piece sizes and time steps */
    if (!feed_start(&f, data, size)) return 0;
    struct sl_req_conn *c = malloc(sl_req_conn_size());
    struct sl_addr peer = {.v4 = true};
    bool out = data[0] & 1;
    if (!sl_req_conn_init(c, &rt, out ? SL_OUT : SL_IN, NULL, &peer, 1)) abort();
    uint64_t now = 1000000000000ull;
    bool denied = false;
    size_t stop = 0; /* after a denial: the stream offset nothing passes beyond */
    for (int round = 0; round < 4096 && f.passed < f.len; round++) {
        struct sl_req_verdict v;
        size_t n = feed_admit(&f, c, now, &v);
        uint8_t steer = f.steer;
        if (denied && f.passed + n > stop) abort();
        if (v.status == SL_REQ_DENY) {
            if (!denied) stop = f.passed + n;
            if (f.passed + n != stop) abort(); /* a denial stays where it was */
            denied = true;
            if (v.action == SL_ACT_REPLY && (!v.reply || !v.reply_len)) abort();
        }
        if (v.status == SL_REQ_HOLD && v.wait_ns == 0) abort();
        if (out) {
            if (v.status == SL_REQ_SWALLOW && n == 0) {
                size_t k = sl_req_swallow(c, f.s + f.passed, f.shown - f.passed, now);
                if (k > f.shown - f.passed) abort();
                f.passed += k;
            }
            const char *q;
            size_t queued = sl_req_inject_peek(c, &q);
            if (queued > 16 * 1024) abort();
            if (queued && memcmp(q, "HTTP/1.1 429 ", 13) != 0) abort();
            if (steer & 4) sl_req_inject_take(c, queued); /* read, or not yet */
            sl_req_responses(c, f.s + f.passed / 2,
                             (size_t)(steer & 15) % (f.len - f.passed / 2 + 1));
            if (n == 0) continue;
        }
        sl_req_passed(c, f.s + f.passed, n / 2 + (n & 1)); /* short reads too */
        f.passed += n / 2 + (n & 1);
        now += (uint64_t)(steer & 3) * 50000000ull;
        if (f.shown == f.len && n == 0 && v.status != SL_REQ_HOLD) break;
    }
    sl_req_conn_fini(c);
    free(c);
    return 0;
}
