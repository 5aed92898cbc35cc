/* cluster.c - placeholder until gossip lands: cluster rules are refused. */
#include "cluster.h"

#include <stdio.h>

struct sl_cluster *sl_cluster_open(const struct sl_config *cfg, char *err, size_t errlen)
{
    snprintf(err, errlen, "cluster limits are not available in this build");
    return NULL;
}

void sl_cluster_decide(struct sl_cluster *c, int rule, const struct sl_rule *r,
                       const struct sl_key *k, uint64_t now, uint64_t cost, struct sl_verdict *v)
{
    *v = (struct sl_verdict){.allowed = true};
}

void sl_cluster_refund(struct sl_cluster *c, int rule, const struct sl_rule *r,
                       const struct sl_key *k, uint64_t now, uint64_t cost)
{
}
