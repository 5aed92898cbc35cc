/* SPDX-License-Identifier: BSD-2-Clause */
/* redis_view.h - the Redis sender's state of a running program, for
 * `sluice metrics` and `sluice stats`: read from its memory file. */
#ifndef SL_REDIS_VIEW_H
#define SL_REDIS_VIEW_H

#include <stdbool.h>
#include <stdio.h>

#include "../core/fleet/fleet_stats.h"

/* Reads the header of pid's "sluice-redis" memory file; false without one.
 * The node list is read again while the sender rewrites it. */
bool sl_redis_view(int pid, struct sl_rhdr *h);

/* `sluice stats`: the servers synced with, their calls, and the counters. */
void sl_redis_view_print(FILE *out, const struct sl_rhdr *h);

#endif
