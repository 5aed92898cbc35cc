/* SPDX-License-Identifier: BSD-2-Clause */
/* live.h - the live page of `sluice metrics --listen` (live.c): the page
 * at / and /stats.json, which it reads every second. */
#ifndef SL_CLI_LIVE_H
#define SL_CLI_LIVE_H

#include <stddef.h>
#include <stdio.h>

#include "metrics_source.h"

extern const char sl_live_page[];

/* Writes the JSON snapshot of the source's table (and of its gossip node
 * and Redis sender); -1 with a message in err when the table cannot be
 * opened. */
int sl_live_json(FILE *out, struct sl_metrics_source *s, char *err, size_t errlen);

#endif
