/* SPDX-License-Identifier: BSD-2-Clause */
/* tokens.h - a rule's token budget as configured (cost_from, cost_rate,
 * cost_burst), types only: core/rule.h holds one per rule, conf/costs.c
 * fills it, core/limit/cost.h keeps the budget and core/http/costread.h
 * reads the cost from the answers. */
#ifndef SL_TOKENS_H
#define SL_TOKENS_H

#include "verdict.h" /* struct sl_limit */

#define SL_COST_NAME_MAX 64 /* a header's name or a JSON path, with its NUL */

enum sl_cost_from {
    SL_COST_NONE,   /* no token budget */
    SL_COST_HEADER, /* cost_from = header:NAME, a decimal integer */
    SL_COST_JSON,   /* cost_from = json:a.b.c, a number in the JSON body (or an SSE event) */
};

struct sl_cost_rule {
    enum sl_cost_from from;
    char name[SL_COST_NAME_MAX]; /* the header's name, or the dotted path */
    struct sl_limit limit;       /* cost_rate / cost_burst: tokens per period, GCRA */
    char rate_text[32];          /* as written: "1000/m" */
};

#endif
