/* SPDX-License-Identifier: BSD-2-Clause */
/* metrics_source.c - what `sluice metrics` reads of a running program: its
 * shared table (found again by its configuration when the program
 * restarted and made a new one), the direction of each rule from the
 * configuration, the plans' quota use, the gossip node's state in shared
 * memory (core/fleet/cluster_stats.c) and the Redis sender's header from
 * the program's memory file (redis_view.c). The bottom of the metrics
 * files: the Prometheus text (metrics.c) and the live page's JSON
 * (live.c) read it, the HTTP server (metrics_http.c) serves them.
 */
#include "metrics_source.h"

#include <string.h>
#include <time.h>

#include "../conf/conf.h"
#include "../core/limit/table.h"
#include "../core/limit/table_plans.h"
#include "redis_view.h"

struct sl_table *sl_metrics_open(struct sl_metrics_source *s, char *err, size_t errlen)
{
    struct sl_table *t = sl_place_open(&s->place, false, err, errlen);
    if (!t && s->config && !*s->place.shared &&
        sl_locate(s->config, NULL, 0, &s->place, 1, err, errlen)) /* restarted: a new table */
        t = sl_place_open(&s->place, false, err, errlen);
    return t;
}

const char *sl_metrics_direction(const struct sl_metrics_source *s, const char *rule)
{
    if (!s->cfg) return "";
    for (int i = 0; i < s->cfg->nrules; i++)
        if (strcmp(s->cfg->rules[i].name, rule) == 0)
            return s->cfg->rules[i].dir == SL_IN ? "in" : "out";
    return "";
}

struct sl_cluster *sl_metrics_gossip(const struct sl_config *cfg)
{
    if (!cfg || !cfg->gossip.enabled) return NULL;
    char name[200], err[256];
    sl_cluster_shm_name(cfg->gossip.listen, name, sizeof name);
    return sl_cluster_attach(name, err, sizeof err);
}

/* The Redis sender's view (core/fleet/redis.c), from the memory file the
 * program keeps it in: how long since Redis last answered a whole round,
 * and its counters. Nothing without a redis section or a running program. */
bool sl_metrics_redis(const struct sl_metrics_source *s, struct sl_rhdr *h)
{
    int pid = s->place.npids ? s->place.pids[0] : 0;
    if (!s->cfg || !s->cfg->redis.enabled || pid <= 0) return false;
    return sl_redis_view(pid, h);
}

const char *sl_metrics_window(enum sl_quota_window w)
{
    return w == SL_QUOTA_MONTH ? "month" : w == SL_QUOTA_DAY ? "day" : "";
}

bool sl_metrics_next_plan(const struct sl_table *t, int rule, int *i, struct sl_plan_use *u)
{
    uint64_t wall_s = (uint64_t)time(NULL);
    while (++*i < sl_table_plan_entries())
        if (sl_table_plan_use(t, *i, wall_s, u) && u->rule == rule) return true;
    return false;
}
