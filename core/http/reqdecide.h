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
 * A rule with req_conns takes one of its key's places in flight (the
 * table's connection records, shared by every process and given back
 * when a holder dies); all taken, its action applies (a delay waits for
 * a place, polling, within max_delay).
 *
 * A rule with count_status takes nothing from a request: it refuses one
 * (by its action) while the key's bucket has nothing left, and the
 * response, when its status is one of the list, takes the request's cost
 * (core/limit/answer.h; the decision says which buckets).
 *
 * A rule with a token budget (cost_rate, core/limit/cost.h) looks at it
 * first, taking nothing: a key in debt is refused (by the rule's action)
 * before its request budget is asked, so a call either budget refuses
 * spends neither; the response's cost is charged when it is known
 * (core/http/request.c; the decision says which budgets).
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
    int8_t solo; /* the one matching rule when it is plain (reqdecide.c: plain_rule), else -1 */
    bool reply_waits; /* no 429 can be given on the connection (sl_req_reply_waits): a
                         `reply` rule's request waits within max_delay, as under delay */
    /* the single rule (sl_req_rules_solo): keyed by the connection's
     * header; each of its decisions logged */
    bool solo_by_header, solo_verbose;
    uint64_t match;      /* bit i: config rule i is a request rule matching the connection */
    int64_t wall_offset; /* wall clock minus monotonic clock, ns (quota windows) */
    char header[SL_REQ_NAME_MAX]; /* the header whose value sl_req_head.header holds */
    uint64_t by_header;           /* bit i: rule i is keyed by that header (matched once, here) */
    int8_t entry[SL_MAX_RULES];   /* the table entry counting rule i's requests */
    /* rule i's token budget entry ("<rule>:cost"), SL_MAX_RULES of them, in
     * memory of the caller's (a connection with a token budget); NULL:
     * entry[i] serves */
    int8_t *cost_entry;
    /* what the single rule's every request would ask again, asked once
     * (sl_req_rules_solo): the rule, the hold it allows (its max_delay
     * when its requests wait, else 0), and solo_by_header and
     * solo_verbose above */
    const struct sl_rule *solo_rule;
    uint64_t solo_slack;
};

#define SL_REQ_ANSWERS 4 /* count_status buckets one response is charged to */

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
    struct sl_key learn_k; /* the key itself: a redis rule's hold (core/fleet/redis.h) */
    char learn_key[7];
    /* allowed: the buckets of rules with count_status that looked at the
     * request (their rule and key's table hash): the response's status is
     * charged to them (core/http/request.c). Past SL_REQ_ANSWERS of them,
     * the first ones. */
    int nanswers;
    int8_t answer_rule[SL_REQ_ANSWERS];
    uint64_t answer_hash[SL_REQ_ANSWERS];
    /* allowed: the token budgets that looked at the request (rule, and
     * the table hash of the key's budget, core/limit/cost.h): the
     * response's cost is charged to them. Past SL_REQ_ANSWERS, the first. */
    int ncosts;
    int8_t cost_rule[SL_REQ_ANSWERS];
    uint64_t cost_hash[SL_REQ_ANSWERS];
    /* allowed: the places in flight the request took (req_conns: the
     * table's connection records), to give back at the end of its
     * response (core/http/request.c); past SL_REQ_ANSWERS, none taken */
    int ninflight;
    int32_t inflight_rec[SL_REQ_ANSWERS];
    /* allowed with wait_ns: a rule with req_conns and action delay found
     * every place taken: the request waits for one (place_key, in rule
     * place_rule's entry; -1: none), polling every wait_ns, up to the
     * rule's max_delay (request.c) */
    int place_rule;
    struct sl_key place_key;
};

/* Fills the rest of x for a connection whose rt, peer and match are set:
 * registers the rules' request entries in the table (see reqdecide.c). */
void sl_req_rules_entries(struct sl_req_rules *x);

/* Places in flight (req_conns): the key of a request's place from its
 * bucket's key, and one place taken for rule `rule` (table entry e):
 * a record (>= 0), -1 all taken, -2 none to record it (fail open). */
void sl_req_place_key(struct sl_key *k, const struct sl_key *bucket);
int32_t sl_req_place_take(struct sl_runtime *rt, int rule, int e, const struct sl_key *k,
                          uint64_t now);

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

/* A head decided by the single rule from its key's value alone: a
 * connection whose one matching rule is plain (sl_req_rules.solo) hands a
 * fast head's key value here (request.c scan), and the table decides as
 * for the lane (sl_req_decide_again): one call makes the key's hash, takes
 * the table's verdict and counts a request that passes, with no struct
 * sl_req_head or decision made. Any other verdict is settled by
 * sl_req_settle_again from the head made then. The key and its hash are
 * sl_req_decide's for the same head (reqdecide.c: solo_key_value). */
enum sl_req_solo {
    SL_REQ_SOLO_NO,     /* nothing: the general path decides the head (no single
                           rule, a key header missing, or a list of values) */
    SL_REQ_SOLO_PASSED, /* it passes now, counted (sl_req_decide_again's true) */
    SL_REQ_SOLO_SETTLE, /* *v is the table's verdict, already taken: sl_req_settle_again
                           says what it means (a denial, a hold, a verbose log line) */
};

/* The single rule's facts (sl_req_rules' solo_*) from solo, rt and
 * reply_waits: after any of them changes (sl_req_rules_entries calls it). */
void sl_req_rules_solo(struct sl_req_rules *x);

/* A head with no Idempotency-Key whose key header's value is val[0..len)
 * (val NULL: none), decided by the single rule as sl_req_decide would:
 * *hash is its key's table hash (sl_req_decision.key_hash) unless NO. */
enum sl_req_solo sl_req_solo_decide(const struct sl_req_rules *x, const char *val, size_t len,
                                    uint64_t now, uint64_t *hash, struct sl_verdict *v);

#endif
