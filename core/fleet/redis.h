/* SPDX-License-Identifier: BSD-2-Clause */
/* redis.h - limits a fleet shares through a Redis server, decided locally.
 *
 * A rule with scope = redis is decided from this program's memory only:
 * its own counts plus the rest of the fleet's, as Redis last reported
 * them. A sender thread (redis.c) writes the counts to Redis and reads the
 * totals back every `interval` with one pipelined Lua script per key; the
 * program's calls never wait for Redis. docs/redis.md has the algorithm,
 * the error bound and the key layout.
 */
#ifndef SL_REDIS_H
#define SL_REDIS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../limit/key.h"
#include "../limit/limit.h"
#include "../rule.h"

struct sl_redis_state;

/* Maps the state of a config whose redis section is enabled (shared with
 * the processes the program forks) and starts the sender. NULL with a
 * message in err on failure. */
struct sl_redis_state *sl_redis_open(const struct sl_config *cfg, char *err, size_t errlen);

/* Stops the sender if it runs in this process, and unmaps the state
 * (redis_open.c). A program's state lives as long as the program. */
void sl_redis_close(struct sl_redis_state *s);

/* What a key is, for its name in Redis: the limit it counts against (the
 * rule's rate, req_rate, or a plan's), and for a request key by value
 * (header:, query:, cookie:) that value; NULL for keys by address. */
struct sl_redis_what {
    const struct sl_limit *limit;
    const char *value;
    size_t value_len;
};

/* Decides `cost` events of a redis-scoped rule (index `rule` in cfg) for
 * key k: a connection key (key.c) or a request key (reqkey.c). */
void sl_redis_decide(struct sl_redis_state *s, int rule, const struct sl_rule *r,
                     const struct sl_redis_what *w, const struct sl_key *k, uint64_t now,
                     uint64_t cost, struct sl_verdict *v);

/* Gives back what sl_redis_decide let through. */
void sl_redis_refund(struct sl_redis_state *s, int rule, const struct sl_rule *r,
                     const struct sl_redis_what *w, const struct sl_key *k, uint64_t now,
                     uint64_t cost);

/* A learned hold (core/http/learn.h) of a redis-scoped request rule with
 * `learn`: key k's calls pass no sooner than monotonic `until`, in every
 * process of this program at once and, from the sender's next round
 * (urgent: within about a millisecond), on every host whose entry for the
 * key is live (kept in Redis as PREFIX{RULE:req:KEY}:hold, redis.lua).
 * Only ever later: true when this call moved it. False when the key has
 * no entry here (its request was decided elsewhere). */
bool sl_redis_hold(struct sl_redis_state *s, int rule, const struct sl_rule *r,
                   const struct sl_key *k, uint64_t now, uint64_t until);

#endif
