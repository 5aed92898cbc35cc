/* SPDX-License-Identifier: BSD-2-Clause */
/* connect.c - the verdict of an outbound connect: see connect.h. */
#include "connect.h"

#include "../log.h"

/* Counted and logged as the connect's refusal; the errno to fail with. */
static int refused(struct sl_runtime *rt, const struct sl_addr *dst, const struct sl_decision *d)
{
    const struct sl_rule *r = &rt->cfg->rules[d->rule];
    sl_table_count(rt->table, rt->table_rule[d->rule], SL_C_LIMITED, 1);
    char text[64];
    sl_addr_format(dst->a, text, sizeof text);
    sl_log(SL_LOG_INFO, "rule \"%s\": limited connect to %s port %u (%s)", r->name, text, dst->port,
           d->conns_full ? "all connections in use" : "rate");
    return r->err;
}

enum sl_connect_step sl_decide_connect(struct sl_runtime *rt, const struct sl_addr *dst,
                                       uint64_t start, uint64_t until, uint64_t now,
                                       struct sl_decision *d, int *err)
{
    /* A first ask may book a turn as far as each rule's max_delay; one
     * asked again, only before the time it was given. */
    uint64_t budget = until ? (until > now ? until - now : 0) : UINT64_MAX - (now - start);
    sl_decide_out(rt, dst, now, budget, d);
    if (d->outcome == SL_PASS) return d->wait_ns ? SL_CONNECT_TURN : SL_CONNECT_GO;
    const struct sl_rule *r = &rt->cfg->rules[d->rule];
    /* A GCRA rule that denied could book no turn within max_delay; a window
     * or a connections-at-once place has none to book: asked again. */
    bool can_wait = r->action == SL_ACT_DELAY && (r->limit.alg != SL_ALG_GCRA || d->conns_full);
    uint64_t last = until ? until : start + r->max_delay_ns;
    if (!can_wait || last < now || d->v.retry_ns > last - now) {
        *err = refused(rt, dst, d);
        return SL_CONNECT_DENY;
    }
    d->redecide_until = last;
    return SL_CONNECT_RETRY;
}
