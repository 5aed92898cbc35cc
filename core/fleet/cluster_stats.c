/* SPDX-License-Identifier: BSD-2-Clause */
/* cluster_stats.c - reading the cluster state without changing it: the
 * counters, the peers as this host sees them, the entries in use and the
 * sender's heartbeat, for `sluice cluster-stats` and the tests. */
#include <stdio.h>

#include "cluster_t.h"

uint64_t sl_cluster_counter(const struct sl_cluster *c, enum sl_cluster_counter k)
{
    return atomic_load_explicit(&c->hdr->counters[k], memory_order_relaxed);
}

uint64_t sl_cluster_drops(const struct sl_cluster *c, enum sl_wire_status why)
{
    return atomic_load_explicit(&c->hdr->drops[why], memory_order_relaxed);
}

int sl_cluster_npeers(const struct sl_cluster *c)
{
    return c->norig - 1;
}

void sl_cluster_peer(const struct sl_cluster *c, int i, uint64_t now,
                     struct sl_cluster_peer_info *out)
{
    const struct sl_cpeer *p = &c->hdr->peer[1 + i];
    uint64_t h = atomic_load_explicit(&p->last_heard, memory_order_acquire);
    snprintf(out->name, sizeof out->name, "%s", c->hdr->peers[i]);
    out->heard = h != 0;
    out->age_ns = h && now > h ? now - h : 0;
    out->alive = sl_cluster_peer_alive(c, 1 + i, now);
    out->packets = atomic_load_explicit(&p->packets, memory_order_relaxed);
}

const char *sl_cluster_self(const struct sl_cluster *c)
{
    return c->hdr->self;
}

uint32_t sl_cluster_slots(const struct sl_cluster *c)
{
    return c->mask + 1;
}

uint32_t sl_cluster_used(const struct sl_cluster *c)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i <= c->mask; i++)
        n += atomic_load_explicit(&c->ents[i].tag, memory_order_relaxed) > 1;
    return n;
}

uint64_t sl_cluster_sender_age(const struct sl_cluster *c, uint64_t now, int *pid)
{
    uint64_t h = atomic_load_explicit(&c->hdr->heartbeat, memory_order_relaxed);
    *pid = atomic_load_explicit(&c->hdr->sender_pid, memory_order_relaxed);
    return h && now > h ? now - h : 0;
}
