/* SPDX-License-Identifier: BSD-2-Clause */
/* redis_sender.h - what the Redis sender's files share: redis.c (the
 * thread, Sentinel), redis_round.c (one round of script calls, to one
 * server or to the primaries of a cluster) and redis_hello.c (a link made
 * ready for rounds); and what redis_open.c hands the sender layer. Sender
 * thread only, but for sl_redis_sender. Top to bottom: redis.c calls
 * redis_round.c, both call redis_hello.c, all of them the links and the
 * state (redis_state.c); nothing calls back up. */
#ifndef SL_REDIS_SENDER_H
#define SL_REDIS_SENDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "redis_cluster.h"
#include "redis_int.h"
#include "redis_link.h"
#include "redis_sentinel.h"

#define BACKOFF_MIN 100000000ull  /* 100 ms */
#define BACKOFF_MAX 2000000000ull /* 2 s */
#define ROUND_MAX   65536         /* keys synced per round */
#define HOT_POLL_NS 1000000ull    /* how often a hot sender looks at the urgent word */

/* One call of a round: which entry, as it was, for which window. */
struct sl_rcall {
    struct sl_rentry *e;
    uint64_t tag, window;
    uint64_t oc, op; /* this program's counts sent: this window, the previous one */
    uint32_t next;   /* the next call on the same link (its replies' order) */
    uint8_t node;    /* cluster: the primary it went to */
    bool ask;        /* cluster: ASK sent it to `node`; sent again with ASKING */
    bool learn;      /* a rule with learn: the call carries the key's hold (KEYS[3]) */
    uint64_t held;   /* the hold sent (UNIX ms, 0 none) */
};

struct sl_rconn {
    struct sl_redis_state *s;
    struct sl_rlink link; /* the server (single) or the primary (sentinel) */
    struct sl_rsentinel sentinel;
    char sha[41];
    char node[64];
    struct sl_rcall *calls;
    size_t ncalls;
    uint64_t fallback_at; /* SL_RC_FALLBACK when Redis went away */
    bool sentinel_mode;
    uint32_t rounds_ok;          /* complete rounds on this connection (single, sentinel) */
    struct sl_rcluster *cluster; /* cluster mode; then link is unused */
    size_t nasks;                /* this round's calls redirected by ASK */
    bool incomplete;             /* this round missed a node or a slot */
};

/* Connects l and makes it ready for rounds (redis_hello.c): AUTH, ROLE
 * behind Sentinel, SCRIPT LOAD. 0, or -1 with l->why. */
int sl_rsend_hello(struct sl_rconn *c, struct sl_rlink *l);

/* One round (redis_round.c): every live key's call, to the server or to
 * each key's cluster primary; 0 when every call was answered. */
int sl_rsend_round(struct sl_rconn *c, uint64_t now);

/* Fills s->snd (sender.h) with the Redis sender (redis.c): the header's
 * heartbeat, elect_ns and sender_pid words, stale after 3 intervals, the
 * timeout and 200 ms; the thread; its sockets s->fds. No prepare (any
 * process may sync for the program) and no wake (a hot thread looks at
 * the urgent word every millisecond). */
void sl_redis_sender(struct sl_redis_state *s);

#endif
