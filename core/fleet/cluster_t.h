/* SPDX-License-Identifier: BSD-2-Clause */
/* cluster_t.h - types of the cluster state, and the calls a fleet backend
 * (gossip.c) makes into it; for cluster.c and backends only. Every shared
 * field says who writes it.
 */
#ifndef SL_CLUSTER_T_H
#define SL_CLUSTER_T_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "cluster_int.h"
#include "sender.h"

#define SL_CLUSTER_MAGIC   0x534c434c55535452ull /* "SLCLUSTR" */
#define SL_CLUSTER_VERSION 2

/* Per peer, one cache line. last_heard is written (release) by the sender
 * thread when a datagram from the peer is accepted and read (acquire) by
 * every decision; the replay fields are touched by the sender only. */
struct sl_cpeer {
    _Atomic uint64_t last_heard; /* CLOCK_MONOTONIC ns; 0: never */
    _Atomic uint64_t packets;
    uint64_t boot, maxseq, bitmap, last_ts_ms;
} __attribute__((aligned(64)));

struct sl_chdr {
    uint64_t magic;
    uint32_t version;
    uint32_t nslots;
    uint64_t fingerprint; /* of the layout and peer list: a mismatch recreates */
    _Atomic uint32_t ready;
    uint32_t npeers;
    _Atomic uint64_t peer_timeout_ns; /* of the last opener, for stats */
    char self[128];
    char peers[SL_MAX_PEERS][128];

    /* Written by the sender each loop, read by deciders. */
    _Atomic int64_t offset_ns __attribute__((aligned(64)));
    _Atomic uint64_t heartbeat; /* monotonic ns of the sender's last loop */
    _Atomic uint64_t rx_at;     /* monotonic ns up to which every datagram was read */
    _Atomic int32_t sender_pid;
    _Atomic uint64_t elect_ns; /* last election attempt, CAS by deciders */
    /* Set by a decider whose key has its early share unsent, cleared by
     * the sender when it sends early (sl_cluster_decide). */
    _Atomic uint32_t urgent;

    struct sl_cpeer peer[SL_CLUSTER_ORIGINS]; /* [0] unused: origin 0 is us */
    _Atomic uint64_t counters[SL_CC_NCOUNTERS] __attribute__((aligned(64)));
    _Atomic uint64_t drops[SL_WIRE_NSTATUS];
};

/* One key. tag: 0 (never used) or the key's hash, published with release
 * after meta. meta: rule index + 1, 0 while (re)initialised. w[0] is this
 * node's own count word, CAS by every decider; w[i>0] peer i's, CAS-joined
 * by the sender thread only (deciders read them). sent: the own word as
 * last sent, written by the sender thread only. */
struct sl_centry {
    _Atomic uint64_t tag;
    _Atomic uint32_t meta;
    uint32_t pad;
    _Atomic uint64_t sent;
    _Atomic uint64_t w[SL_CLUSTER_ORIGINS];
} __attribute__((aligned(64)));

struct sl_cluster {
    const struct sl_config *cfg;
    struct sl_chdr *hdr;
    struct sl_centry *ovf;  /* one per rule, for keys that found no entry */
    struct sl_centry *ents; /* nslots */
    uint32_t mask;
    size_t bytes;
    bool readonly;
    uint64_t secret[4]; /* key-hash secret, derived from the gossip key */
    uint8_t key[32];
    uint64_t self_id;
    uint64_t peer_id[SL_CLUSTER_ORIGINS];
    int norig; /* 1 + npeers */
    uint64_t peer_timeout_ns;
    uint64_t ovf_tag[SL_MAX_RULES];
    uint64_t alone[SL_MAX_RULES]; /* the rule's limit when no peer is alive */
    uint64_t early[SL_MAX_RULES]; /* unsent own admissions that trigger a send */

    /* The sender (process-local; only meaningful in the process that runs
     * it): started, elected and stopped by sender.c, its thread gossip.c's. */
    struct sl_sender snd; /* empty (never elects) until sl_gossip_sender fills it */
    _Atomic int running;  /* the thread runs in this process (sender.h) */
    int fd;               /* its socket, bound to listen; -1 none */
    uint64_t boot, seq;
    uint32_t drop_pct; /* SLUICE_TEST_GOSSIP_DROP */
    uint64_t rng;
    struct sockaddr_storage peer_sa[SL_MAX_PEERS];
    socklen_t peer_salen[SL_MAX_PEERS];
    struct sockaddr_storage self_sa; /* listen: the wake-up datagram's target */
    socklen_t self_salen;
};

/* ---- what a fleet backend uses ------------------------------------------
 *
 * The decision code (cluster.c) reads only each origin's window words and
 * whether the origin is alive; how the words travel between hosts is a
 * backend's business. gossip.c is one (signed UDP datagrams between
 * peers). Another, say Redis, fits beside it with these five calls and
 * nothing else: push this node's words found by sl_cluster_each_own,
 * fetch the others', sl_cluster_merge each one under its origin (an index
 * from sl_cluster_origin, by node id) and mark the origin sl_cluster_heard.
 * Merging is a join (cluster.c), so a backend may deliver a word late,
 * twice or out of order.
 */

/* One origin's counts of one key, as they travel. */
struct sl_cluster_rec {
    uint64_t hash;   /* the key's hash under the fleet's secret */
    uint32_t rule;   /* the rule's id (low 32 bits), the same on every host */
    uint32_t window; /* index of the window `curr` counts, on the realtime clock */
    uint32_t prev, curr;
};

/* Wall time (ns, the realtime clock) at monotonic `now`: windows are
 * numbered on it so that hosts agree. */
uint64_t sl_cluster_wall(const struct sl_cluster *c, uint64_t now);

/* The origin index (1..npeers) of a node id; 0 when it is not a peer. */
int sl_cluster_origin(const struct sl_cluster *c, uint64_t node);

/* Origin `origin` was heard from at `now`: it counts while alive. */
void sl_cluster_heard(struct sl_cluster *c, int origin, uint64_t now);

/* Joins what origin said into its word for the key (wn: sl_cluster_wall);
 * records of unknown rules, old windows or no free entry are counted and
 * dropped. */
void sl_cluster_merge(struct sl_cluster *c, int origin, const struct sl_cluster_rec *r,
                      uint64_t wn);

/* Calls fn for each of this node's words that changed since the last walk
 * (every live one when `full`). */
typedef void (*sl_cluster_own_fn)(void *arg, const struct sl_cluster_rec *r);
void sl_cluster_each_own(struct sl_cluster *c, uint64_t wn, bool full, sl_cluster_own_fn fn,
                         void *arg);

void sl_cluster_count(struct sl_cluster *c, enum sl_cluster_counter k, uint64_t n);

/* Whether origin o (1..npeers) counts at `now`: heard within peer_timeout
 * of the last time the sender had read every datagram. */
bool sl_cluster_peer_alive(const struct sl_cluster *c, int o, uint64_t now);

#endif
