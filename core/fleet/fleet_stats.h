/* SPDX-License-Identifier: BSD-2-Clause */
/* fleet_stats.h - what a reader outside the program (`sluice
 * cluster-stats`, `sluice metrics`, `sluice stats`) may see of the fleet
 * backends' state, without their insides: the gossip state attached
 * read-only with its counters and peers (cluster_map.c, cluster_stats.c),
 * and the layout of the Redis sender's shared header, which the program
 * keeps in a memory file the reader copies (redis_state.c writes it).
 * cluster_int.h and redis_int.h include it; a reader includes only this.
 */
#ifndef SL_FLEET_STATS_H
#define SL_FLEET_STATS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "wire.h" /* enum sl_wire_status, sl_wire_status_names: the drop reasons */

/* ---- gossip (scope = cluster) --------------------------------------------- */

struct sl_cluster;

enum sl_cluster_counter {
    SL_CC_TX_PACKETS,       /* datagrams sent (one per peer) */
    SL_CC_TX_BYTES,         /* their bytes */
    SL_CC_TX_ERRORS,        /* sendto failures */
    SL_CC_TX_TEST_DROPPED,  /* dropped by SLUICE_TEST_GOSSIP_DROP */
    SL_CC_RX_PACKETS,       /* datagrams accepted */
    SL_CC_RX_BYTES,         /* their bytes */
    SL_CC_RX_RECORDS,       /* records merged */
    SL_CC_REC_UNKNOWN_RULE, /* records of a rule we do not have (configs differ) */
    SL_CC_REC_OLD,          /* records for a window too far from ours */
    SL_CC_REMOTE_OVERFLOW,  /* remote records that found no entry (full table) */
    SL_CC_LOCAL_OVERFLOW,   /* local decisions that found no entry */
    SL_CC_REUSED,           /* idle entries given to a new key */
    SL_CC_TX_EARLY,         /* sends before the tick: a key passed its early share */
    SL_CC_NCOUNTERS
};

extern const char *const sl_cluster_counter_names[SL_CC_NCOUNTERS];

struct sl_cluster_peer_info {
    char name[128];   /* as written in peers */
    bool heard;       /* ever heard since the state was created */
    bool alive;       /* heard within peer_timeout */
    uint64_t age_ns;  /* since its last accepted datagram */
    uint64_t packets; /* accepted datagrams from it */
};

/* The name of the shared mapping for a `listen` address. */
void sl_cluster_shm_name(const char *listen, char *buf, size_t len);

/* Opens an existing named state read-only, for stats. */
struct sl_cluster *sl_cluster_attach(const char *shm_name, char *err, size_t errlen);

/* Unmaps a state no sender runs for (an attached one). */
void sl_cluster_unmap(struct sl_cluster *c);

uint64_t sl_cluster_counter(const struct sl_cluster *c, enum sl_cluster_counter k);
uint64_t sl_cluster_drops(const struct sl_cluster *c, enum sl_wire_status why);
int sl_cluster_npeers(const struct sl_cluster *c);
void sl_cluster_peer(const struct sl_cluster *c, int i, uint64_t now,
                     struct sl_cluster_peer_info *out);
const char *sl_cluster_self(const struct sl_cluster *c);
uint32_t sl_cluster_slots(const struct sl_cluster *c);
uint32_t sl_cluster_used(const struct sl_cluster *c);
/* Age of the sender's last loop, and its pid (0: none yet). */
uint64_t sl_cluster_sender_age(const struct sl_cluster *c, uint64_t now, int *pid);

/* ---- Redis (scope = redis) ------------------------------------------------- */

#define SL_REDIS_NODES_MAX 16 /* cluster primaries synced with */

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

/* The head of the Redis backend's shared mapping (a memory file named
 * "sluice-redis", readable through /proc/PID/fd). */
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

#endif
