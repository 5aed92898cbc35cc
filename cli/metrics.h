/* SPDX-License-Identifier: BSD-2-Clause */
/* metrics.h - the Prometheus text of `sluice metrics` (metrics.c). */
#ifndef SL_CLI_METRICS_H
#define SL_CLI_METRICS_H

#include <stddef.h>
#include <stdio.h>

#include "metrics_source.h"

/* Writes the exposition of the source's table (and of its gossip node and
 * Redis sender); -1 with a message in err when the table cannot be opened. */
int sl_metrics_text(FILE *out, struct sl_metrics_source *s, char *err, size_t errlen);

#endif
