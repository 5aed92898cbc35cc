/* SPDX-License-Identifier: BSD-2-Clause */
/* cluster_util.h - building cluster configs and in-process fleets for the
 * cluster tests and the cluster benchmark (until conf/ reads `gossip`,
 * configs are made by hand here). A "node" is an anonymous cluster state
 * with no sender thread; datagrams travel by hand, so loss, duplication,
 * reordering and time are all under the test's control.
 */
#ifndef SL_CLUSTER_UTIL_H
#define SL_CLUSTER_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../core/fleet/cluster_int.h"
#include "../../core/fleet/cluster_t.h"
#include "../../core/limit/key.h"
#include "../../core/limit/limit.h"

#define CU_MAX_NODES 9
#define CU_MAX_PKTS  4096

/* Node i listens on 127.0.0.(2+i):(17946+i). */
static inline void cu_addr(char *out, size_t len, int i)
{
    snprintf(out, len, "127.0.0.%d:%d", 2 + (i & 0xff), 17946 + (i & 0xff));
}

/* A config for node `self` of `n`, one inbound cluster rule "fleet" of
 * count per period_ns (sliding window), per peer. */
static inline struct sl_config *cu_config(int self, int n, uint64_t count, uint64_t period_ns,
                                          uint64_t interval_ns, uint32_t table_slots)
{
    struct sl_config *c = calloc(1, sizeof *c);
    c->table_slots = table_slots;
    c->on_full = SL_FULL_SHARED;
    c->nrules = 1;
    struct sl_rule *r = &c->rules[0];
    snprintf(r->name, sizeof r->name, "fleet");
    r->id = sl_name_hash(r->name);
    r->dir = SL_IN;
    r->scope = SL_SCOPE_CLUSTER;
    r->per = SL_PER_PEER;
    r->prefix4 = 32;
    r->prefix6 = 64;
    if (sl_limit_init(&r->limit, SL_ALG_SLIDING, count, period_ns, 0) != 0) abort();
    struct sl_gossip *g = &c->gossip;
    g->enabled = true;
    cu_addr(g->listen, sizeof g->listen, self);
    for (int i = 0; i < n; i++)
        if (i != self) cu_addr(g->peers[g->npeers++], sizeof g->peers[0], i);
    g->interval_ns = interval_ns;
    g->peer_timeout_ns = 10 * interval_ns;
    g->alone_share_pct = 34;
    for (int i = 0; i < 32; i++)
        g->key[i] = (uint8_t)(i * 7 + 1);
    return c;
}

static inline struct sl_key cu_key(const struct sl_config *cfg, uint64_t client)
{
    struct sl_key k = {
        .rule = cfg->rules[0].id, .hi = 0, .lo = 0xffff00000000ull | client, .extra = 128};
    return k;
}

/* Datagrams captured from sl_cluster_build. */
struct cu_pkts {
    int n;
    size_t len[CU_MAX_PKTS];
    uint8_t *data[CU_MAX_PKTS];
};

static inline void cu_capture(void *arg, const uint8_t *pkt, size_t len)
{
    struct cu_pkts *p = arg;
    if (p->n >= CU_MAX_PKTS) return;
    p->data[p->n] = malloc(len);
    memcpy(p->data[p->n], pkt, len);
    p->len[p->n++] = len;
}

static inline void cu_pkts_free(struct cu_pkts *p)
{
    for (int i = 0; i < p->n; i++)
        free(p->data[i]);
    p->n = 0;
}

#endif
