/* SPDX-License-Identifier: BSD-2-Clause */
/* cluster_open.c - opening and closing the gossip backend: the top of
 * core/fleet's gossip files, which nothing below calls. Opening maps the
 * named state (cluster_map.c), hands the sender layer (sender.c) the gossip
 * thread (gossip.c), has forked children drop its socket, and tries to
 * start it in this process: the bind of the listen address decides which
 * process of the host sends; the others' decisions elect a new one when
 * its heartbeat goes stale (cluster.c calls sl_sender_check). Closing
 * stops the thread where it runs and unmaps.
 */
#include "cluster.h"

#include "cluster_t.h"
#include "gossip.h"
#include "sender.h"

struct sl_cluster *sl_cluster_open(const struct sl_config *cfg, char *err, size_t errlen)
{
    char name[200];
    sl_cluster_shm_name(cfg->gossip.listen, name, sizeof name);
    struct sl_cluster *c = sl_cluster_create(cfg, name, err, errlen);
    if (!c) return NULL;
    sl_gossip_sender(c);
    sl_sender_watch(&c->snd);
    err[0] = 0;
    if (sl_sender_start(&c->snd, err, errlen) < 0) {
        sl_cluster_close(c);
        return NULL;
    }
    return c;
}

void sl_cluster_close(struct sl_cluster *c)
{
    if (!c) return;
    sl_sender_stop(&c->snd);
    sl_cluster_unmap(c);
}
