/* SPDX-License-Identifier: BSD-2-Clause */
/* reload.h - a configuration published by `sluice reload`, taken up by
 * every process of the program at its next decision (no signal: the
 * program owns its signals).
 *
 * The table's configuration generation is one atomic load per decision.
 * When it moved, the process reads the configuration file `sluice reload`
 * validated and published in the table (with the inline rules it started
 * with, if any) and, if the new one keeps what the
 * running process is built around (the table, its rules in the same order
 * under the same names, no gossip or redis section), publishes a new
 * runtime made from it. Keys are made from rule names, so every key keeps
 * its bucket: a client half-way through its burst stays there. The old
 * runtime is never freed (another thread may still be deciding with it; a
 * reload costs one configuration's memory). An unusable file changes
 * nothing and is reported once.
 */
#ifndef SL_RELOAD_H
#define SL_RELOAD_H

#include <stdint.h>

#include "../core/policy/policy.h"
#include "../core/limit/table.h"

/* init.c: what the process was configured from (copied). */
void sl_reload_remember(const char *file, const char *rules);

/* The runtime to decide with: rt, or a newer one. */
struct sl_runtime *sl_reload_slow(struct sl_runtime *rt, uint32_t gen);
static inline struct sl_runtime *sl_reload_check(struct sl_runtime *rt)
{
    uint32_t gen = sl_table_config_gen(rt->table);
    return gen == __atomic_load_n(&rt->config_gen, __ATOMIC_RELAXED) ? rt : sl_reload_slow(rt, gen);
}

#endif
