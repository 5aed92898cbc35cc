/* SPDX-License-Identifier: BSD-2-Clause */
/* change.c - what a reload may change: see sl_conf_unfit in conf.h. */
#include <string.h>

#include "conf.h"

const char *sl_conf_unfit(const struct sl_config *old, const struct sl_config *cfg)
{
    if (cfg->table_slots != old->table_slots) return "table_slots changes only with a restart";
    if (strcmp(cfg->shared, old->shared) != 0) return "shared changes only with a restart";
    if (cfg->on_full != old->on_full) return "on_full changes only with a restart";
    if (cfg->gossip.enabled || old->gossip.enabled || cfg->redis.enabled || old->redis.enabled)
        return "a gossip or redis section changes only with a restart";
    if (cfg->nrules < old->nrules) return "rules can be added at the end, not removed";
    for (int i = 0; i < old->nrules; i++)
        if (cfg->rules[i].id != old->rules[i].id || cfg->rules[i].dir != old->rules[i].dir ||
            cfg->rules[i].request != old->rules[i].request)
            return "the rules must keep their names, directions and order (new ones go at the end)";
    return NULL;
}
