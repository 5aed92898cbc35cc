/* SPDX-License-Identifier: BSD-2-Clause */
/* redis_int.h - the shared state of the Redis backend, for redis_state.c
 * (entries, decisions) and redis.c (the sender); every shared field says
 * who writes it.
 */
#ifndef SL_REDIS_INT_H
#define SL_REDIS_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "redis.h"
#include "redis_cluster.h" /* SL_REDIS_NODES_MAX */

#define SL_REDIS_PROBE   8   /* entries a key may live in */
#define SL_REDIS_KEY_MAX 152 /* "RULE:KEY" as it appears in Redis keys */
/* the sender's sockets: the server, two to sentinels, or 16 cluster
 * primaries and one asking for the slot map */
#define SL_REDIS_FDS 20

enum sl_redis_counter {
    SL_RC_SYNCS,     /* rounds that got every reply */
    SL_RC_CALLS,     /* EVALSHA replies read */
    SL_RC_FAILURES,  /* rounds or connects that failed or timed out */
    SL_RC_CONNECTS,  /* connections made (with the script loaded) */
    SL_RC_FALLBACK,  /* decisions made under on_backend_error */
    SL_RC_OVERFLOW,  /* keys that found no entry */
    SL_RC_BAD_REPLY, /* replies not of the script's shape */
    SL_RC_EARLY,     /* rounds sent before their tick (a key ran ahead) */
    SL_RC_FAILOVERS, /* the primary (Sentinel) or a slot's node (Cluster) changed */
    SL_RC_MOVED,     /* MOVED redirections (Cluster): the slot map is refreshed */
    SL_RC_ASK,       /* ASK redirections (Cluster, a slot migrating) followed */
    /* how old the fleet's counts are when a decision reads them (the s of
     * docs/redis.md's bound): over the complete rounds, the sum of the gaps
     * between their starts (each capped at timeout + 2 intervals, past
     * which decisions fall back) in us, of their squares in us^2, and of
     * the rounds' durations in us. gap_us2 / gap_us is the interval a
     * decision sees on average (a long gap weighs as long as it lasts);
     * round_us / syncs the mean round. */
    SL_RC_GAP_US,
    SL_RC_GAP_US2,
    SL_RC_ROUND_US,
    SL_RC_NCOUNTERS
};
extern const char *const sl_redis_counter_names[SL_RC_NCOUNTERS]; /* "syncs", ... */

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
    _Atomic uint32_t meta; /* rule index + 1 */
    uint32_t req;          /* counts requests, not connections */
    uint64_t period_ns;    /* W of the limit it counts against */
    _Atomic uint64_t own;
    _Atomic uint64_t rest;
    _Atomic uint64_t synced; /* own as the sender last sent it (early rounds) */
    _Atomic uint32_t node;   /* cluster: 1 + the primary the sender last sent it to; 0 none */
    _Atomic uint64_t missed; /* cluster: monotonic ns since its calls get no counts; 0 none */
    char name[SL_REDIS_KEY_MAX];
} __attribute__((aligned(64)));

struct sl_rhdr {
    /* written by the sender each loop, read by deciders */
    _Atomic uint64_t ok_at;     /* monotonic ns Redis last answered a round; 0 never */
    _Atomic uint64_t heartbeat; /* monotonic ns of the sender's last loop */
    _Atomic int64_t offset_ns;  /* realtime - monotonic */
    _Atomic int32_t sender_pid;
    _Atomic uint64_t elect_ns; /* last election attempt, CAS by deciders */
    _Atomic uint32_t urgent;   /* a key ran its early share ahead: sync now */
    _Atomic uint64_t counters[SL_RC_NCOUNTERS];
    /* the server(s) the sender syncs with, for `sluice metrics`: the
     * primary (single, sentinel) or the cluster's primaries, with the
     * calls each answered; addr_seq is odd while the sender rewrites them */
    _Atomic uint32_t addr_seq;
    uint32_t nnodes;
    struct sl_rnode_view {
        char addr[64];
        _Atomic uint64_t calls; /* script calls it answered */
        _Atomic uint64_t ok_at; /* cluster: monotonic ns it last answered all its calls */
    } nodes[SL_REDIS_NODES_MAX];
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

    /* the sender: process-local, meaningful in the process that runs it */
    pthread_t thread;
    _Atomic int running;
    int fds[SL_REDIS_FDS]; /* the sender's sockets, -1 none: a forked child closes them */
};

/* Publishes the servers the sender syncs with (redis.c, redis_cluster.c). */
void sl_redis_set_nodes(struct sl_redis_state *s, const char (*addrs)[64], uint32_t n);

/* A complete round from start to end (monotonic ns), the last one's
 * start in *last_ok: adds its gap and duration to the timing counters
 * (SL_RC_GAP_US, SL_RC_GAP_US2, SL_RC_ROUND_US). Sender thread only. */
void sl_redis_round_timing(struct sl_redis_state *s, uint64_t *last_ok, uint64_t start,
                           uint64_t end);

/* Maps the state (redis_state.c); the sender is not started. */
struct sl_redis_state *sl_redis_map(const struct sl_config *cfg, char *err, size_t errlen);
/* Unmaps a state no sender runs for (a program's lives as long as it). */
void sl_redis_unmap(struct sl_redis_state *s);

/* Wall-clock ns at monotonic now (windows are numbered on it). */
uint64_t sl_redis_wall(const struct sl_redis_state *s, uint64_t now);

/* The sender (redis.c): started by sl_redis_open and again by a decision
 * when the heartbeat is stale (the sender's process died). */
int sl_redis_start(struct sl_redis_state *s, char *err, size_t errlen);
void sl_redis_check(struct sl_redis_state *s, uint64_t now);

static inline void sl_redis_count(struct sl_redis_state *s, enum sl_redis_counter k, uint64_t n)
{
    atomic_fetch_add_explicit(&s->hdr->counters[k], n, memory_order_relaxed);
}

/* What one reply of the script says (redis_reply.c). */
struct sl_redis_counts {
    int64_t allowed, curr, prev, own_curr, own_prev;
};

/* Reads a reply of core/fleet/redis.lua (a hiredis redisReply): 0, or -1 when it
 * is not an array of five non-negative integers. */
int sl_redis_reply_counts(const void *reply, struct sl_redis_counts *out);

#endif
