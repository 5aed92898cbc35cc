/* SPDX-License-Identifier: BSD-2-Clause */
/* cluster_int.h - the cluster state's insides, for the gossip sender,
 * `sluice cluster-stats`, the unit tests and the benchmark.
 *
 * sl_cluster_open (cluster.h) is sl_cluster_create on the named shared
 * mapping plus the election of this host's one gossip sender. Tests create
 * anonymous states with no sender and pass datagrams between them by hand,
 * with their own clock.
 */
#ifndef SL_CLUSTER_INT_H
#define SL_CLUSTER_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cluster.h"
#include "wire.h"

#define SL_CLUSTER_ORIGINS      (1 + SL_MAX_PEERS) /* origin 0 is this node, i is peers[i-1] */
#define SL_CLUSTER_PROBE        16
#define SL_CLUSTER_TS_WINDOW_MS 10000 /* a datagram's timestamp may be this far from ours */

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

/* Creates the state for cfg: anonymous (shm_name NULL) or the named
 * mapping /dev/shm/<shm_name>, created or reopened. No sender. */
struct sl_cluster *sl_cluster_create(const struct sl_config *cfg, const char *shm_name, char *err,
                                     size_t errlen);

/* Opens an existing named state read-only, for stats. */
struct sl_cluster *sl_cluster_attach(const char *shm_name, char *err, size_t errlen);

void sl_cluster_close(struct sl_cluster *c);

/* The name of the shared mapping for a `listen` address. */
void sl_cluster_shm_name(const char *listen, char *buf, size_t len);

/* Windows are counted on the realtime clock so that hosts agree on them:
 * wall = now (CLOCK_MONOTONIC) + offset. The sender refreshes the offset;
 * tests set it (0: the injected clock is the wall clock). */
void sl_cluster_set_offset(struct sl_cluster *c, int64_t offset_ns);

/* Checks and merges one datagram at `now`. Returns SL_WIRE_OK or why it
 * was dropped (and counted). */
enum sl_wire_status sl_cluster_receive(struct sl_cluster *c, const uint8_t *buf, size_t len,
                                       uint64_t now);

/* Builds this node's datagrams: records whose own count changed since the
 * last build, or all live ones when `full`; at least one datagram (a
 * heartbeat) per call. Each goes to emit(). Returns how many. */
typedef void (*sl_cluster_emit_fn)(void *arg, const uint8_t *pkt, size_t len);
size_t sl_cluster_build(struct sl_cluster *c, uint64_t now, bool full, sl_cluster_emit_fn emit,
                        void *arg);

/* Takes the urgent word (a key ran its early share ahead of what was
 * sent; cluster.c): true when the caller should build now. */
bool sl_cluster_take_urgent(struct sl_cluster *c);

/* The fleet estimate a decision would see now, in requests (rounded
 * down), and this node's own part. */
void sl_cluster_estimate(struct sl_cluster *c, int rule, const struct sl_rule *r,
                         const struct sl_key *k, uint64_t now, uint64_t *own, uint64_t *fleet);

/* The limit in force for a rule now (alone_share when no peer is alive). */
uint64_t sl_cluster_limit_now(struct sl_cluster *c, const struct sl_rule *r, uint64_t now);

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

/* Node identity on the wire: a hash of the `listen` text as peers write it. */
uint64_t sl_cluster_node_id(const char *addr);

/* Gossip sender (gossip.c). Tries to become this host's sender: binds the
 * listen address (the bind is the lock: one holder per address) and starts
 * the thread. Returns 0 when started, 1 when another process holds the
 * address, -1 with a message on error. */
int sl_gossip_start(struct sl_cluster *c, char *err, size_t errlen);
void sl_gossip_stop(struct sl_cluster *c);
/* Called on the decision path: re-elects a sender if the current one has
 * been silent for long (at most one attempt per second per host). */
void sl_gossip_check(struct sl_cluster *c, uint64_t now);
/* Called by a decision that set the urgent word: when this process runs
 * the sender, wakes it with an empty datagram to itself (non-blocking, one
 * system call, errno kept); elsewhere the sender sees the word by itself. */
void sl_gossip_wake(struct sl_cluster *c);

#endif
