/* SPDX-License-Identifier: BSD-2-Clause */
/* cluster_int.h - the cluster state's insides, for the gossip sender,
 * the unit tests and the benchmark (a reader such as `sluice
 * cluster-stats` needs only fleet_stats.h, which this includes).
 *
 * sl_cluster_open (cluster.h, cluster_open.c) is sl_cluster_create on the
 * named shared mapping plus the election of this host's one gossip sender
 * (sender.h, gossip.h). Tests create anonymous states with no sender and
 * pass datagrams between them by hand, with their own clock.
 */
#ifndef SL_CLUSTER_INT_H
#define SL_CLUSTER_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cluster.h"
#include "fleet_stats.h"
#include "wire.h"

#define SL_CLUSTER_ORIGINS      (1 + SL_MAX_PEERS) /* origin 0 is this node, i is peers[i-1] */
#define SL_CLUSTER_PROBE        16
#define SL_CLUSTER_TS_WINDOW_MS 10000 /* a datagram's timestamp may be this far from ours */

/* Creates the state for cfg: anonymous (shm_name NULL) or the named
 * mapping /dev/shm/<shm_name>, created or reopened. No sender. */
struct sl_cluster *sl_cluster_create(const struct sl_config *cfg, const char *shm_name, char *err,
                                     size_t errlen);

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

/* Node identity on the wire: a hash of the `listen` text as peers write it. */
uint64_t sl_cluster_node_id(const char *addr);

#endif
