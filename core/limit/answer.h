/* SPDX-License-Identifier: BSD-2-Clause */
/* answer.h - a budget given back by answers (count_status,
 * core/http/reqdecide.h): a request takes its cost from the key's GCRA
 * bucket in the shared table at its head, as under any request rule, and
 * its answer gives the cost back unless its status is one of the counted
 * ones.
 *
 * Taking at the head is what makes the limit hold against a client that
 * sends many failures at once (pipelined in one write, or over many
 * connections): each waits for its place in the budget before the
 * server sees it, where a look without taking would let every request
 * in flight pass before any answer was counted. An answer sluice never
 * reads (a response it cannot parse, bytes spliced from a pipe, an
 * HTTP/2 stream) keeps its charge: the rule of doubt.
 */
#ifndef SL_ANSWER_H
#define SL_ANSWER_H

#include <stdbool.h>
#include <stdint.h>

#include "limit.h"
#include "table.h"

/* An answer whose status is not counted: gives back the `cost` its
 * request took from the key's bucket (hash h, limit l) when it came.
 * False: the key is no longer in the table (nothing to give back). */
bool sl_answer_refund(struct sl_table *t, int rule, uint64_t h, const struct sl_limit *l,
                      uint64_t now, uint64_t cost);

#endif
