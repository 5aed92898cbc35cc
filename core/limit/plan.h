/* SPDX-License-Identifier: BSD-2-Clause */
/* plan.h - plans: key values (API keys, tenants) mapped to named limits.
 *
 * A request rule with `plans` looks up each request's key value here; a
 * value with a plan is limited by the plan's req_rate/req_burst and quota
 * instead of the rule's own, an unknown value by the rule's. Key values
 * are secrets: they are kept only as 128-bit SipHash digests under a
 * random key drawn when the set is built (so neither memory nor a core
 * dump holds them, and nobody can aim values at one digest), looked up by
 * binary search. A set is built once (conf/), sealed, then only read.
 */
#ifndef SL_PLAN_H
#define SL_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "limit.h"
#include "../rule.h"

#define SL_MAX_PLANS 64

struct sl_plan {
    char name[SL_NAME_MAX];
    struct sl_limit req_limit; /* count 0: none (the rule's own rate does not apply) */
    char req_rate_text[32];
    uint64_t quota; /* 0: none */
    enum sl_quota_window quota_window;
    char quota_text[32];
    uint64_t id; /* sl_name_hash(name), set by sl_plans_add: finds the plan's
                    counters in the table (sl_table_plan) */
};

struct sl_plans;

struct sl_plans *sl_plans_new(void);
void sl_plans_free(struct sl_plans *p);

/* Adds a plan; returns its index, or -1 (too many plans, or a name
 * already taken). */
int sl_plans_add(struct sl_plans *p, const struct sl_plan *plan);
/* Gives key value v[0..len) the plan at index `plan`; `tag` (> 0, a
 * line number) names it if the value turns out to be given twice. Returns
 * 0, or -1 on a bad index or allocation failure. */
int sl_plans_add_key(struct sl_plans *p, int plan, const char *v, size_t len, uint32_t tag);
/* Ends building: lookups may start. Returns 0, or the smallest tag of a
 * value given a second time (each value has one plan: the set must not
 * be used then). */
uint32_t sl_plans_seal(struct sl_plans *p);

/* The plan of key value v, or NULL. */
const struct sl_plan *sl_plans_find(const struct sl_plans *p, const char *v, size_t len);

int sl_plans_count(const struct sl_plans *p);
const struct sl_plan *sl_plans_get(const struct sl_plans *p, int i);
/* How many key values plan i has (for `sluice check`). */
uint32_t sl_plans_keys(const struct sl_plans *p, int i);

#endif
