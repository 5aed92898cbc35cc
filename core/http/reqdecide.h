/* SPDX-License-Identifier: BSD-2-Clause */
/* reqdecide.h - what the request rules decide about one request.
 *
 * Every request rule that matched the connection and matches the request
 * (method, Host, route) applies, in order: each takes `cost` tokens from
 * its key's bucket (req_rate/req_burst, or the key's plan) and counts
 * against its quota. The request passes only if all of them let it; when
 * a later rule denies, what earlier rules took is given back, so a denied
 * request costs nothing. A rule in dry run counts and logs what it would
 * have denied and enforces nothing. A rule whose action is delay may hold
 * the request up to max_delay (its turn is booked now, first come first
 * served); beyond that it denies.
 *
 * Idempotency-Key: a retry of the same request (method and target) with
 * the same key from the same client within SL_IDEM_WINDOW_NS of the
 * charged attempt is not charged again, at most SL_IDEM_FREE times
 * (core/http/idem.h): memory stays bounded (a mark is a table slot, reusable
 * once idle) and a client cannot turn one key into free requests of other
 * kinds, nor into unlimited retries.
 */
#ifndef SL_REQDECIDE_H
#define SL_REQDECIDE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "idem.h"
#include "../limit/key.h"
#include "../limit/limit.h"
#include "../policy/policy.h"
#include "reqhead.h"
#include "reply.h"
#include "../rule.h"

/* What a connection's requests are judged by; filled once per connection. */
struct sl_req_rules {
    struct sl_runtime *rt;
    struct sl_addr peer; /* inbound: the client; outbound: the destination */
    uint64_t match;      /* bit i: config rule i is a request rule matching the connection */
    int64_t wall_offset; /* wall clock minus monotonic clock, ns (quota windows) */
    char header[SL_REQ_NAME_MAX]; /* the header whose value sl_req_head.header holds */
    uint64_t by_header;           /* bit i: rule i is keyed by that header (matched once, here) */
    int8_t entry[SL_MAX_RULES];   /* the table entry counting rule i's requests */
    int8_t solo; /* the one matching rule when it is plain (reqdecide.c: plain_rule), else -1 */
};

struct sl_req_decision {
    bool allowed;
    uint64_t wait_ns;              /* allowed: how long it must be held first (delay) */
    int rule;                      /* denied: the denying rule; -1 otherwise */
    struct sl_verdict v;           /* denied: its verdict (not set when allowed) */
    struct sl_reply_policy policy; /* denied: what the RateLimit fields describe (idem) */
    uint64_t key_hash;             /* decided by the single rule alone (solo): its key's
                                      table hash; 0 otherwise */
    /* allowed, by the general path: the first rule with `learn` that took
     * from its bucket (-1: none), its key's table hash, the bucket's burst
     * less the request's cost in ns (sl_table_hold) and the key's short
     * hash for the log. A rule with `learn` is never the single rule. */
    int learn_rule;
    uint64_t learn_hash, learn_gap_ns;
    char learn_key[7];
};

/* Fills the rest of x for a connection whose rt, peer and match are set:
 * registers the rules' request entries in the table (see reqdecide.c). */
void sl_req_rules_entries(struct sl_req_rules *x);

void sl_req_decide(const struct sl_req_rules *x, const struct sl_req_head *h, uint64_t now,
                   struct sl_req_decision *d);

/* The same head again (core/http/request.c's lane), whose last decision
 * was the single rule's with key hash `hash` (sl_req_decision.key_hash):
 * the table decides. True: it passes now, counted (nothing to log). False:
 * *v is the table's verdict, already taken, and sl_req_settle_again must
 * say what it means (a denial, a hold, a verbose log line). */
bool sl_req_decide_again(const struct sl_req_rules *x, uint64_t hash, uint64_t now,
                         struct sl_verdict *v);
void sl_req_settle_again(const struct sl_req_rules *x, const struct sl_req_head *h,
                         const struct sl_verdict *v, uint64_t now, struct sl_req_decision *d);

#endif
