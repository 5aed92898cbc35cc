/* SPDX-License-Identifier: BSD-2-Clause */
/* learned.h - what `learn` rules learned, as `sluice stats`, `sluice
 * metrics` and the live page show it (learned.c): the table's entries
 * (core/limit/table_learned.h) of one rule, those in force first. */
#ifndef SL_CLI_LEARNED_H
#define SL_CLI_LEARNED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "../core/limit/table_learned.h"

#define SL_LEARNED_ENDED_SHOWN 3 /* of those that ended, the latest few are shown */

struct sl_learned_view {
    size_t n;
    struct sl_learned_hold v[SL_TABLE_LEARNED];
};

/* The table's entries at monotonic time now, sorted: by rule entry, then
 * those in force (longest to go first), then those ended (latest first). */
void sl_learned_read(const struct sl_table *t, uint64_t now, struct sl_learned_view *out);

/* Whether entry h is shown at now: in force, or among the first
 * SL_LEARNED_ENDED_SHOWN of its rule that ended (i: its index in the
 * sorted view). */
bool sl_learned_shown(const struct sl_learned_view *w, size_t i, uint64_t now);

/* A monotonic time as UTC wall time, "2026-11-27T10:42:07.512Z". */
void sl_learned_wall(uint64_t mono_ns, int64_t wall_offset_ns, char *out, size_t len);

#endif
