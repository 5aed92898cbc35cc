/* SPDX-License-Identifier: BSD-2-Clause */
/* reqwrite.c - an outbound write decided in one call (see reqwrite.h). */
#include "reqwrite.h"

#include <errno.h>

#include "../policy/policy.h"

/* The errno a write refused by rule `rule` fails with. */
static int refusal(const struct sl_req_conn *c, int rule)
{
    const struct sl_rule *r = &sl_req_conn_runtime(c)->cfg->rules[rule];
    return r->err ? r->err : ECONNREFUSED;
}

static void write_now(struct sl_req_conn *c, const void *buf, size_t n, struct sl_req_write *w)
{
    sl_req_passed(c, buf, n);
    *w = (struct sl_req_write){.what = SL_REQ_WRITE, .n = n};
}

/* At a request an outbound `reply` rule swallows: its bytes, once its 429
 * could be queued in order; until then a short wait; never, when the
 * answers before it can no longer be counted. */
static void swallow(struct sl_req_conn *c, const void *buf, size_t len, uint64_t now, int rule,
                    struct sl_req_write *w)
{
    const char *p;
    size_t queued = sl_req_inject_peek(c, &p);
    size_t n = sl_req_swallow(c, buf, len, now);
    int err = refusal(c, rule);
    if (n > 0 || len == 0)
        *w = (struct sl_req_write){
            .what = SL_REQ_SKIP, .n = n, .announce = sl_req_inject_peek(c, &p) > queued};
    else if (sl_req_swallow_lost(c))
        *w = (struct sl_req_write){.what = SL_REQ_FAIL, .err = err};
    else
        *w = (struct sl_req_write){.what = SL_REQ_WAIT, .err = err};
}

void sl_req_write(struct sl_req_conn *c, struct sl_runtime *rt, const void *buf, size_t len,
                  uint64_t now, unsigned flags, struct sl_req_write *w)
{
    if (rt && rt != sl_req_conn_runtime(c)) sl_req_conn_rebind(c, rt);
    if (sl_req_done(c)) return write_now(c, buf, len, w);
    struct sl_req_verdict v;
    size_t ok = sl_req_admit(c, buf, len, now, &v);
    /* an incomplete head goes as it is written: it is decided at its end */
    if (ok == len || v.status == SL_REQ_NEED_MORE || v.status == SL_REQ_PASS)
        return write_now(c, buf, len, w);
    /* the bytes before a head that stops: a swallowed request's part
     * around it is written even when whole (its bytes are never sent) */
    if (ok > 0 && (!(flags & SL_REQ_WRITE_WHOLE) || v.status == SL_REQ_SWALLOW))
        return write_now(c, buf, ok, w);
    if (v.status == SL_REQ_SWALLOW && ok == 0 && !(flags & SL_REQ_WRITE_NO_SKIP))
        return swallow(c, buf, len, now, v.rule, w);
    /* a denial over memory BIOs waits at the socket write (its time is
     * not now: shim/reqout.c cipher_turn) */
    uint64_t wait = v.status == SL_REQ_DENY && !(flags & SL_REQ_WRITE_NO_SKIP)
                        ? sl_req_refusal_wait(c, now)
                        : 0;
    if (wait) {
        *w = (struct sl_req_write){.what = SL_REQ_WAIT, .wait_ns = wait};
        return;
    }
    if (v.status == SL_REQ_DENY || v.status == SL_REQ_SWALLOW) {
        *w = (struct sl_req_write){.what = SL_REQ_FAIL, .err = refusal(c, v.rule)};
        return;
    }
    *w = (struct sl_req_write){.what = SL_REQ_WAIT, .wait_ns = v.wait_ns};
}

void sl_req_unwritten(struct sl_req_conn *c, size_t unsent)
{
    sl_req_unpassed(c, unsent);
}
