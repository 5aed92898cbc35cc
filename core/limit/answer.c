/* SPDX-License-Identifier: BSD-2-Clause */
/* answer.c - a budget given back by answers (see answer.h). */
#include "answer.h"

struct refund_op {
    const struct sl_limit *l;
    uint64_t now, cost;
};

static uint64_t refund_step(uint64_t old, void *arg)
{
    const struct refund_op *op = arg;
    return sl_limit_refund(op->l, old, op->now, op->cost);
}

bool sl_answer_refund(struct sl_table *t, int rule, uint64_t h, const struct sl_limit *l,
                      uint64_t now, uint64_t cost)
{
    struct refund_op op = {.l = l, .now = now, .cost = cost};
    return sl_table_apply_h(t, rule, h, l, now, refund_step, &op);
}
