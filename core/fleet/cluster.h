/* SPDX-License-Identifier: BSD-2-Clause */
/* cluster.h - limits that several hosts share through gossip.
 *
 * A rule with scope = cluster is decided from local memory only: this
 * host's own counts plus the latest counts heard from each live peer. The
 * gossip itself (who sends, how often, how packets are authenticated and
 * merged) lives behind this interface.
 */
#ifndef SL_CLUSTER_H
#define SL_CLUSTER_H

#include <stddef.h>
#include <stdint.h>

#include "../limit/key.h"
#include "../limit/limit.h"
#include "../rule.h"

struct sl_cluster;

/* Opens the cluster state of a config whose gossip section is enabled
 * and starts this host's gossip sender, or leaves it to the process that
 * holds it (cluster_open.c). Returns NULL with a message in err on failure. */
struct sl_cluster *sl_cluster_open(const struct sl_config *cfg, char *err, size_t errlen);

/* Stops the sender if it runs in this process, and unmaps the state (any
 * state: opened, created or attached). */
void sl_cluster_close(struct sl_cluster *c);

/* Decides one request of a cluster-scoped rule (index `rule` in cfg). */
void sl_cluster_decide(struct sl_cluster *c, int rule, const struct sl_rule *r,
                       const struct sl_key *k, uint64_t now, uint64_t cost, struct sl_verdict *v);

/* Gives back a request sl_cluster_decide let through. */
void sl_cluster_refund(struct sl_cluster *c, int rule, const struct sl_rule *r,
                       const struct sl_key *k, uint64_t now, uint64_t cost);

#endif
