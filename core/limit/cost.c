/* SPDX-License-Identifier: BSD-2-Clause */
/* cost.c - token budgets (see cost.h). */
#include "cost.h"

#include "limit_gcra.h"

void sl_cost_key(struct sl_key *k, const struct sl_key *bucket)
{
    *k = *bucket;
    k->extra |= SL_COST_KEY;
}

/* The furthest a TAT may be: a debt of SL_COST_DEBT_BURSTS bursts. */
static uint64_t furthest(const struct sl_limit *l, uint64_t now)
{
    return now + (1 + SL_COST_DEBT_BURSTS) * l->burst_ns;
}

void sl_cost_look(uint64_t tat, const struct sl_limit *l, uint64_t now, uint64_t slack_ns,
                  struct sl_verdict *v)
{
    if (tat > furthest(l, now)) tat = furthest(l, now);           /* a clock read before ours */
    uint64_t paid_at = tat > l->burst_ns ? tat - l->burst_ns : 0; /* the debt paid */
    *v = (struct sl_verdict){.limit = l->burst, .reset_ns = tat > now ? tat - now : 0};
    if (paid_at <= now + slack_ns) {
        v->allowed = true;
        v->wait_ns = paid_at > now ? paid_at - now : 0;
        uint64_t base = tat > now ? tat : now, room = now + l->burst_ns - base;
        v->remaining = sl_gcra_requests_in(l, room);
        return;
    }
    v->retry_ns = paid_at - now;
}

uint64_t sl_cost_charged(uint64_t tat, const struct sl_limit *l, uint64_t now, uint64_t tokens)
{
    uint64_t next = (tat > now ? tat : now) + (tokens ? sl_gcra_cost_ns(l, tokens) : 0);
    return next < furthest(l, now) ? next : furthest(l, now);
}

struct look_op {
    const struct sl_limit *l;
    uint64_t now, slack;
    struct sl_verdict *v;
};

/* A look: the word is written back as it was. */
static uint64_t look_step(uint64_t old, void *arg)
{
    struct look_op *op = arg;
    sl_cost_look(old, op->l, op->now, op->slack, op->v);
    return old;
}

void sl_cost_peek(struct sl_table *t, int e, uint64_t h, const struct sl_limit *l, uint64_t now,
                  uint64_t slack_ns, struct sl_verdict *v)
{
    struct look_op op = {.l = l, .now = now, .slack = slack_ns, .v = v};
    if (sl_table_apply_h(t, e, h, l, now, look_step, &op)) return;
    sl_table_count(t, e, SL_C_OVERFLOW, 1);
    *v = (struct sl_verdict){.allowed = true, .limit = l->burst};
}

struct charge_op {
    const struct sl_limit *l;
    uint64_t now, tokens;
};

static uint64_t charge_step(uint64_t old, void *arg)
{
    const struct charge_op *op = arg;
    return sl_cost_charged(old, op->l, op->now, op->tokens);
}

bool sl_cost_charge(struct sl_table *t, int e, uint64_t h, const struct sl_limit *l, uint64_t now,
                    uint64_t tokens)
{
    struct charge_op op = {.l = l, .now = now, .tokens = tokens};
    return sl_table_apply_h(t, e, h, l, now, charge_step, &op);
}
