/* SPDX-License-Identifier: BSD-2-Clause */
/* table_plans.h - quota use per plan, kept in the shared table.
 *
 * For each request rule (its table entry) and plan (core/limit/plan.h), the
 * table counts the requests admitted against the plan's quota, those the
 * quota refused, and the keys of the plan that reached 80, 90 and 100 %
 * of it: ever (counters, for Prometheus) and in the current quota window
 * (what `sluice stats` and the live page show as "used" and "keys near
 * their quota"). Plans are told by name, never by a key: no key value, nor
 * a hash of one, is kept here. Room for SL_TABLE_PLANS (rule, plan) pairs,
 * given out on first use; past that a plan is not counted (fail open).
 */
#ifndef SL_TABLE_PLANS_H
#define SL_TABLE_PLANS_H

#include <stdbool.h>
#include <stdint.h>

#include "../rule.h"
#include "table.h"

/* The counters of plan `name` (sl_name_hash(name) = id) under rule entry
 * `rule`, made on first use, its quota per key and window recorded for
 * readers. Returns the plan's entry, or -1 when the region is full. */
int sl_table_plan(struct sl_table *t, int rule, uint64_t id, const char *name, uint64_t quota,
                  enum sl_quota_window window);

/* A request of `cost` was admitted against the plan's quota, taking its
 * key's use to `used` of `limit` in the window ending at wall second
 * `window_end_s`. A request counted against a window older than the
 * latest one counted (the last ones of a window, while requests queued
 * for the next one under action = delay already count there) adds to the
 * counters ever, not to the current window's. */
void sl_table_plan_admit(struct sl_table *t, int plan, uint64_t used, uint64_t cost, uint64_t limit,
                         uint64_t window_end_s);
/* A request the plan's quota refused. */
void sl_table_plan_refuse(struct sl_table *t, int plan);

struct sl_plan_use {
    int rule; /* the rule entry (sl_table_rule_info) */
    char name[SL_NAME_MAX];
    uint64_t quota; /* per key and window */
    enum sl_quota_window window;
    uint64_t admitted, refused, reached[3]; /* ever */
    uint64_t window_end_s;                  /* 0: no request counted yet */
    uint64_t used, keys[3];                 /* in the window holding wall_s */
};

/* Plan entry i as of wall second wall_s (its window's figures are 0 once
 * that window has ended); false when entry i is not in use. Entries are
 * 0..SL_TABLE_PLANS-1, in no particular order. */
bool sl_table_plan_use(const struct sl_table *t, int i, uint64_t wall_s, struct sl_plan_use *out);
int sl_table_plan_entries(void);

#endif
