/* SPDX-License-Identifier: BSD-2-Clause */
/* metrics_source.h - what `sluice metrics` reads (metrics_source.c): the
 * program's table, found again after a restart, and what its rules, plans
 * and fleet backends say. Its Prometheus text (metrics.c) and its
 * live page's JSON (live.c) both read it; it calls neither. */
#ifndef SL_CLI_METRICS_SOURCE_H
#define SL_CLI_METRICS_SOURCE_H

#include <stdbool.h>
#include <string.h>

#include "../core/fleet/fleet_stats.h"
#include "locate.h"
#include "top.h"

struct sl_metrics_source {
    struct sl_place place;
    char label[128];
    const char *config; /* finds the program again after a restart */
    int pid;
    const struct sl_config *cfg; /* NULL: directions unknown */
    struct sl_top_view top;      /* the live page's window of denials */
    unsigned long long top_ino;  /* the table the view was read from */
};

/* Opens the source's table, finding the program again after a restart. */
struct sl_table *sl_metrics_open(struct sl_metrics_source *s, char *err, size_t errlen);

/* "in", "out", or "" when the configuration is unknown. */
const char *sl_metrics_direction(const struct sl_metrics_source *s, const char *rule);

/* The gossip node's state, attached read-only (sl_cluster_unmap it), when
 * the configuration has a gossip section and the node runs; else NULL. */
struct sl_cluster *sl_metrics_gossip(const struct sl_config *cfg);

/* The Redis sender's shared header, when the program has one. */
bool sl_metrics_redis(const struct sl_metrics_source *s, struct sl_rhdr *h);

/* The next plan entry of rule entry `rule` after *i (start at -1) with
 * its figures as of now (core/limit/table_plans.h); false after the last. */
struct sl_plan_use;
bool sl_metrics_next_plan(const struct sl_table *t, int rule, int *i, struct sl_plan_use *u);
/* "day", "month" (a quota window's name). */
const char *sl_metrics_window(enum sl_quota_window w);

/* A table rule's name as the table keeps it: a request rule's ends in
 * ":req", which this strips (true), leaving the rule's own name. */
/* A rule's token budget entry ("NAME:cost", core/http/reqdecide.c): true,
 * and rule cut to the rule's name. */
static inline bool sl_metrics_cost_name(char *rule)
{
    size_t n = strlen(rule);
    if (n <= 5 || strcmp(rule + n - 5, ":cost") != 0) return false;
    rule[n - 5] = 0;
    return true;
}

static inline bool sl_metrics_req_name(char *rule)
{
    size_t n = strlen(rule);
    if (n <= 4 || strcmp(rule + n - 4, ":req") != 0) return false;
    rule[n - 4] = 0;
    return true;
}

#endif
