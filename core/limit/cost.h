/* SPDX-License-Identifier: BSD-2-Clause */
/* cost.h - token budgets: a second GCRA budget per key of a request rule
 * (cost_rate, cost_burst), spent by what the answers say a call cost
 * (cost_from, core/http/costread.h) rather than by the request itself.
 *
 * The budget's word is a GCRA theoretical arrival time (TAT, monotonic
 * ns): the key has (now + burst_ns - TAT) / interval tokens left. A cost
 * is known only once the answer has come, so a call is admitted while
 * the budget is not in debt (TAT <= now + burst_ns: zero or more tokens
 * left), whatever it will cost, and its answer's cost is charged then,
 * which may take the budget past empty: into debt. With 1,000 tokens a
 * minute, a burst of 1,000 and answers of 400, calls 1 to 3 pass (the
 * third leaves a debt of 200) and the fourth waits until the debt is
 * paid, 12 s later.
 *
 * The debt is bounded: a charge never moves the TAT past now + 2 x
 * burst_ns, a debt of at most one burst (cost_burst tokens), so a key
 * that ran up a huge answer is refused for at most one burst's refill
 * time (a minute at 1000/m burst 1000), and a clock read later than a
 * charge's cannot leave it in debt longer than that either.
 *
 * The word lives in the shared table, under the rule's cost entry and
 * the request bucket's key tagged SL_COST_KEY (sl_cost_key): apart from
 * the request budget of the same key, so a request rule keeps both.
 */
#ifndef SL_COST_H
#define SL_COST_H

#include <stdbool.h>
#include <stdint.h>

#include "key.h"
#include "limit.h"
#include "table.h"

/* A key's `extra` tag for its token budget (key.h's SL_REQ_KEY_* use bits
 * 57 to 61; a port and prefix length fit in the low 24). */
#define SL_COST_KEY (1ull << 56)

/* The debt a budget may run, in bursts (see above). */
#define SL_COST_DEBT_BURSTS 1

/* What `sluice stats` shows of a rule's token budget: counters of the
 * rule's cost entry (the table's own, named for what they count here). */
#define SL_C_COST_CALLS    SL_C_ALLOWED /* answers whose cost was charged */
#define SL_C_COST_REFUSED  SL_C_LIMITED /* calls refused because the budget was in debt */
#define SL_C_COST_TOKENS   SL_C_LEARNED /* tokens charged (the sum of the answers' costs) */
#define SL_C_COST_UNREAD   SL_C_ERRORS  /* answers whose cost could not be read: charged `cost` */
#define SL_C_COST_DEFAULTS SL_C_ODD     /* tokens charged by the rule of doubt, of COST_TOKENS */

/* The key of a token budget from the key of the request bucket. */
void sl_cost_key(struct sl_key *k, const struct sl_key *bucket);

/* Whether a call may go at `now`: the budget whose word is `tat` is not
 * in debt, or will not be within slack_ns (v->wait_ns: how long first).
 * v->remaining: tokens left (0 in debt); v->retry_ns when refused. */
void sl_cost_look(uint64_t tat, const struct sl_limit *l, uint64_t now, uint64_t slack_ns,
                  struct sl_verdict *v);

/* The word after an answer of `tokens` is charged (debt bounded). */
uint64_t sl_cost_charged(uint64_t tat, const struct sl_limit *l, uint64_t now, uint64_t tokens);

/* sl_cost_look on the key's word in the table (entry e, key hash h),
 * taking nothing. A key the table cannot hold passes (fail open, counted
 * as overflow). */
void sl_cost_peek(struct sl_table *t, int e, uint64_t h, const struct sl_limit *l, uint64_t now,
                  uint64_t slack_ns, struct sl_verdict *v);

/* Charges an answer's tokens to the key's word. False: no room for it. */
bool sl_cost_charge(struct sl_table *t, int e, uint64_t h, const struct sl_limit *l, uint64_t now,
                    uint64_t tokens);

#endif
