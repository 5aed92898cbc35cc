/* SPDX-License-Identifier: BSD-2-Clause */
/* answer.c - a budget taken by answers (see answer.h). */
#include "answer.h"

#include "limit_gcra.h"

struct peek_op {
    const struct sl_limit *l;
    uint64_t now, cost, slack;
    struct sl_verdict *v;
};

/* The decision's own step, whose next state is thrown away: the word
 * stays as it was (the compare-and-swap writes it back unchanged). */
static uint64_t peek_step(uint64_t old, void *arg)
{
    struct peek_op *op = arg;
    uint64_t next;
    sl_gcra_step(op->l, old, op->now, op->cost, op->slack, &next, op->v);
    return old;
}

void sl_answer_peek(struct sl_table *t, int rule, uint64_t h, const struct sl_limit *l,
                    uint64_t now, uint64_t cost, uint64_t slack_ns, struct sl_verdict *v)
{
    struct peek_op op = {.l = l, .now = now, .cost = cost, .slack = slack_ns, .v = v};
    if (sl_table_apply_h(t, rule, h, l, now, peek_step, &op)) return;
    sl_table_count(t, rule, SL_C_OVERFLOW, 1);
    *v = (struct sl_verdict){.allowed = true, .limit = l->burst};
}

uint64_t sl_answer_charged(uint64_t old, const struct sl_limit *l, uint64_t now, uint64_t cost)
{
    uint64_t tat = old & ~SL_GCRA_HELD, full = now + l->burst_ns;
    if ((old & SL_GCRA_HELD) && tat >= full) return old; /* a hold later than empty stays */
    uint64_t next = (tat > now ? tat : now) + sl_gcra_cost_ns(l, cost);
    return next < full ? next : full;
}

struct charge_op {
    const struct sl_limit *l;
    uint64_t now, cost;
};

static uint64_t charge_step(uint64_t old, void *arg)
{
    const struct charge_op *op = arg;
    return sl_answer_charged(old, op->l, op->now, op->cost);
}

bool sl_answer_charge(struct sl_table *t, int rule, uint64_t h, const struct sl_limit *l,
                      uint64_t now, uint64_t cost)
{
    struct charge_op op = {.l = l, .now = now, .cost = cost};
    return sl_table_apply_h(t, rule, h, l, now, charge_step, &op);
}
