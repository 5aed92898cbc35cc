/* SPDX-License-Identifier: BSD-2-Clause */
/* redis_sender.h - what the Redis sender's two files share: redis.c (the
 * thread, connecting, Sentinel) and redis_round.c (one round of script
 * calls, to one server or to the primaries of a cluster). Sender thread
 * only. */
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

/* Connects l and makes it ready for rounds (redis.c): AUTH, ROLE behind
 * Sentinel, SCRIPT LOAD. 0, or -1 with l->why. */
int sl_rsend_hello(struct sl_rconn *c, struct sl_rlink *l);

/* One round (redis_round.c): every live key's call, to the server or to
 * each key's cluster primary; 0 when every call was answered. */
int sl_rsend_round(struct sl_rconn *c, uint64_t now);

#endif
