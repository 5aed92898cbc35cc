/* SPDX-License-Identifier: BSD-2-Clause */
/* redis_int.h - the shared state of the Redis backend, for redis_state.c
 * (entries, decisions) and the sender (redis.c, redis_round.c); every
 * shared field says who writes it. The head of the mapping, struct
 * sl_rhdr, is fleet_stats.h's: `sluice metrics` reads it too.
 */
#ifndef SL_REDIS_INT_H
#define SL_REDIS_INT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "fleet_stats.h" /* struct sl_rhdr, the counters */
#include "redis.h"
#include "sender.h"

#define SL_REDIS_PROBE   8   /* entries a key may live in */
#define SL_REDIS_KEY_MAX 152 /* "RULE:KEY" as it appears in Redis keys */
/* the sender's sockets: the server, two to sentinels, or 16 cluster
 * primaries and one asking for the slot map */
#define SL_REDIS_FDS 20

/* One key: its name in Redis and two window words (window.h): what this
 * program admitted (own: CAS by every decider) and what the rest of the
 * fleet did as Redis last said (rest: stored by the sender only, read by
 * deciders). tag: 0 never used, 1 being set up, else the key's hash,
 * published with release after meta, req, period_ns and name, which the
 * decider that claims the entry writes and nobody changes while the tag
 * stands. The sender reads them after loading the tag with acquire and
 * checks the tag again when the reply comes: an entry reused meanwhile
 * (its key idle two windows) may have one round's call sent under a torn
 * name, whose reply is dropped and whose key expires unused. */
struct sl_rentry {
    _Atomic uint64_t tag;
    _Atomic uint32_t meta;      /* rule index + 1 */
    uint32_t req;               /* counts requests, not connections */
    _Atomic uint64_t period_ns; /* W of the limit it counts against (read by probers: atomic) */
    _Atomic uint64_t own;
    _Atomic uint64_t rest;
    _Atomic uint64_t synced; /* own as the sender last sent it (early rounds) */
    _Atomic uint32_t node;   /* cluster: 1 + the primary the sender last sent it to; 0 none */
    _Atomic uint64_t missed; /* cluster: monotonic ns since its calls get no counts; 0 none */
    /* a learned hold (rules with learn, core/http/learn.h): UNIX ms before
     * which no call of the key passes, this program's or the fleet's as
     * Redis said (max by CAS: sl_redis_hold, the sender); 0 none */
    _Atomic uint64_t held;
    char name[SL_REDIS_KEY_MAX];
} __attribute__((aligned(64)));

struct sl_redis_state {
    const struct sl_config *cfg;
    struct sl_rhdr *hdr;
    struct sl_rentry *ovf;  /* per rule: connections [0, SL_MAX_RULES), requests after */
    struct sl_rentry *ents; /* mask + 1 */
    uint32_t mask;
    size_t bytes;
    uint64_t secret[4];
    uint64_t stale_ns; /* Redis unheard this long: on_backend_error */

    /* the sender: process-local, meaningful in the process that runs it;
     * started, elected and forked by sender.c, its thread redis.c's */
    struct sl_sender snd;  /* empty (never elects) until sl_redis_sender fills it */
    _Atomic int running;   /* the thread runs in this process (sender.h) */
    int fds[SL_REDIS_FDS]; /* the sender's sockets, -1 none: a forked child closes them */
};

/* Publishes the servers the sender syncs with (redis.c, redis_round.c). */
void sl_redis_set_nodes(struct sl_redis_state *s, const char (*addrs)[64], uint32_t n);

/* A complete round from start to end (monotonic ns), the last one's
 * start in *last_ok: adds its gap and duration to the timing counters
 * (SL_RC_GAP_US, SL_RC_GAP_US2, SL_RC_ROUND_US). Sender thread only. */
void sl_redis_round_timing(struct sl_redis_state *s, uint64_t *last_ok, uint64_t start,
                           uint64_t end);

/* Maps the state (redis_state.c); no sender (sl_redis_open gives it one). */
struct sl_redis_state *sl_redis_map(const struct sl_config *cfg, char *err, size_t errlen);
/* Unmaps a state no sender runs for (a program's lives as long as it;
 * sl_redis_close stops one first). */
void sl_redis_unmap(struct sl_redis_state *s);

/* Wall-clock ns at monotonic now (windows are numbered on it). */
uint64_t sl_redis_wall(const struct sl_redis_state *s, uint64_t now);

static inline void sl_redis_count(struct sl_redis_state *s, enum sl_redis_counter k, uint64_t n)
{
    atomic_fetch_add_explicit(&s->hdr->counters[k], n, memory_order_relaxed);
}

/* What one reply of the script says (redis_reply.c). */
struct sl_redis_counts {
    int64_t allowed, curr, prev, own_curr, own_prev;
    int64_t hold_ms; /* the learned hold Redis keeps (a sixth element), 0 none */
};

/* Raises e->held to at least ms (CAS); true when it moved. */
static inline bool sl_redis_raise_hold(struct sl_rentry *e, uint64_t ms)
{
    uint64_t h = atomic_load_explicit(&e->held, memory_order_relaxed);
    while (ms > h)
        if (atomic_compare_exchange_weak_explicit(&e->held, &h, ms, memory_order_relaxed,
                                                  memory_order_relaxed))
            return true;
    return false;
}

/* Reads a reply of core/fleet/redis.lua (a hiredis redisReply): 0, or -1 when it
 * is not an array of five (or six) non-negative integers. */
int sl_redis_reply_counts(const void *reply, struct sl_redis_counts *out);

#endif
