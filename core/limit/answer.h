/* SPDX-License-Identifier: BSD-2-Clause */
/* answer.h - a budget taken by answers (count_status, core/http/reqdecide.h):
 * the key's GCRA bucket in the shared table is looked at when a request
 * comes, without taking from it, and taken from when the response comes
 * with one of the counted statuses.
 *
 * Requests in flight together all pass the look before any of their
 * answers is counted; each answer is then charged, even past the bucket's
 * end, so that many at once do not go free: the bucket is left at most
 * full (empty of tokens) rather than in debt, which is where a decision
 * would clamp it anyway (limit_gcra.h: a TAT past the horizon).
 */
#ifndef SL_ANSWER_H
#define SL_ANSWER_H

#include <stdbool.h>
#include <stdint.h>

#include "limit.h"
#include "table.h"

/* Whether a request of `cost` would pass the key's bucket (hash h, limit
 * l) at `now` within slack_ns, as sl_table_decide would say (*v filled
 * the same way), taking nothing. A key the table cannot hold passes
 * (counted as overflow): fail open. */
void sl_answer_peek(struct sl_table *t, int rule, uint64_t h, const struct sl_limit *l,
                    uint64_t now, uint64_t cost, uint64_t slack_ns, struct sl_verdict *v);

/* An answer with a counted status: takes `cost` from the key's bucket, to
 * at most empty. False: the table had no room for the key. */
bool sl_answer_charge(struct sl_table *t, int rule, uint64_t h, const struct sl_limit *l,
                      uint64_t now, uint64_t cost);

/* The step itself, on the bucket's word (tests). */
uint64_t sl_answer_charged(uint64_t old, const struct sl_limit *l, uint64_t now, uint64_t cost);

#endif
