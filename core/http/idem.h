/* SPDX-License-Identifier: BSD-2-Clause */
/* idem.h - Idempotency-Key marks: which retries a request rule lets
 * through without charging them.
 *
 * A mark is a table word keyed by the rule's bucket key (the client), the
 * Idempotency-Key value, the method, the request target as sent and the
 * body's digest (core/http/bodydigest.h), hashed under the table's secret: the
 * same key on another method, path or body is another mark and is charged
 * like any request (issue 18.5: one token used to buy three different
 * requests). A request without a digest (its body not whole when it was
 * decided) has no mark: the caller charges it.
 *
 * The word counts the attempts in the window the charged attempt opened,
 * laid out as a quota word (core/limit/quota.h, [end : 36][attempts : 28]), so
 * the table judges it idle once its window has ended (and, its limit
 * given as the largest, evicts it before any key). The charged attempt
 * opens the window; the next SL_IDEM_FREE attempts within it are free;
 * later ones are charged and open nothing until the window ends. A mark
 * the table evicts only makes the next retry pay.
 */
#ifndef SL_IDEM_H
#define SL_IDEM_H

#include <stdbool.h>
#include <stdint.h>

#include "../limit/key.h"
#include "../limit/limit.h"

#define SL_IDEM_WINDOW_NS (300 * SL_NS_PER_SEC)
#define SL_IDEM_FREE      2

struct sl_req_head;

/* The mark's key for request h (its Idempotency-Key, method, path, query
 * and body digest, not NULL): `bucket` is the rule's key for the client. */
void sl_idem_key(struct sl_key *k, const struct sl_key *bucket, const struct sl_req_head *h,
                 const uint64_t secret[4]);

/* One attempt at now against the mark `old`: returns the word to publish.
 * *free: a retry within the window, not charged; otherwise *opened is the
 * word's end when this attempt opened the window (0: it did not). */
uint64_t sl_idem_step(uint64_t old, uint64_t now, bool *free, uint64_t *opened);

/* Takes back the window a charged attempt opened (`opened`, from
 * sl_idem_step) when the request was then denied: its retries are not
 * free. */
uint64_t sl_idem_unmark(uint64_t old, uint64_t opened);

#endif
