/* SPDX-License-Identifier: BSD-2-Clause */
/* redis_cluster.h - Redis Cluster for the Redis sender: CRC16 slots with
 * hash tags, the slot map from CLUSTER SLOTS, MOVED / ASK replies, and one
 * link per primary. Used on the sender thread only (redis.c).
 */
#ifndef SL_REDIS_CLUSTER_H
#define SL_REDIS_CLUSTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fleet_stats.h" /* SL_REDIS_NODES_MAX: cluster primaries synced with */
#include "redis_link.h"
#include "../rule.h"

#define SL_SLOTS   16384
#define SL_NO_NODE 0xff

/* The slot map: which primary serves each slot (SL_NO_NODE: none known). */
struct sl_rslots {
    uint8_t node[SL_SLOTS];
    char addr[SL_REDIS_NODES_MAX][64];
    uint32_t nnodes;
};

/* CRC16-CCITT (XMODEM: polynomial 0x1021, initial 0), Redis Cluster's. */
uint16_t sl_crc16(const void *buf, size_t len);

/* The slot of a key: of the part between the first '{' and the next '}'
 * when that is not empty (the hash tag), else of the whole key. */
unsigned sl_rcluster_slot(const char *key, size_t len);

/* Reads a CLUSTER SLOTS reply (each entry: first slot, last slot, the
 * primary as [ip, port, ...], then replicas) into m: 0, or -1 when it is
 * not that shape or names more primaries than SL_REDIS_NODES_MAX. Ranges
 * whose primary has no numeric address stay SL_NO_NODE. */
int sl_rcluster_parse_slots(const void *reply, struct sl_rslots *m);

/* Reads a redirection, an error reply "MOVED SLOT IP:PORT" or "ASK SLOT
 * IP:PORT": 1 for MOVED, 2 for ASK, with the slot and the address; 0 when
 * it is neither. */
int sl_rcluster_parse_redirect(const void *reply, unsigned *slot, char *addr, size_t len);

/* The cluster as the sender keeps it. */
struct sl_rcluster {
    const struct sl_redis *rc;
    struct sl_rslots map;
    struct sl_rlink links[SL_REDIS_NODES_MAX]; /* links[i]: map.addr[i] */
    uint64_t retry_at[SL_REDIS_NODES_MAX];     /* a node that failed: not before */
    bool ready[SL_REDIS_NODES_MAX];            /* connected, AUTH and script done */
    uint8_t rounds[SL_REDIS_NODES_MAX];        /* complete exchanges since (2: counts) */
    bool stale;                                /* refresh the map before the next round */
    uint64_t refresh_at;                       /* not before (a refresh failed) */
    int *mirrors;                              /* SL_REDIS_NODES_MAX fds for the fork handler */
    int *ask_mirror;                           /* ... and one for CLUSTER SLOTS */
    _Atomic uint64_t *beat;                    /* the sender's heartbeat (redis_link.h) */
    struct sl_rslots scratch;                  /* the map being read */
    char why[160];
};

/* mirrors: SL_REDIS_NODES_MAX + 1 places to publish sockets for the fork handler. */
void sl_rcluster_init(struct sl_rcluster *k, const struct sl_redis *rc, int *mirrors,
                      _Atomic uint64_t *beat);

/* Asks the known primaries, then the seed nodes, for CLUSTER SLOTS, each
 * within the timeout, and moves the links to the new map (a link to a
 * primary that stays a primary is kept). The number of primaries that
 * were not primaries in the last map (a replica promoted), or -1 with why. */
int sl_rcluster_refresh(struct sl_rcluster *k);

/* The node index of an address in the map, -1 when it is not a primary
 * there. */
int sl_rcluster_find(const struct sl_rcluster *k, const char *addr);

void sl_rcluster_free(struct sl_rcluster *k);

#endif
