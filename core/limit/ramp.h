/* SPDX-License-Identifier: BSD-2-Clause */
/* ramp.h - a request rate that steps from one value to another over time,
 * for retiring an old API gradually ("100/s, then 90/s a day later, ...
 * down to 10/s").
 *
 * The rule's own rate until `from` (UTC, unix seconds); then every `every`
 * ns it moves one step of (to - start) / steps along a straight line,
 * reaching `to` at from + steps x every and staying there.
 * The burst follows the rate's N unless the rule gives one. Pure: the wall
 * time is a parameter.
 */
#ifndef SL_RAMP_H
#define SL_RAMP_H

#include <stdbool.h>
#include <stdint.h>

#include "limit.h"

/* The step in force at wall time `wall_ns` (unix ns): 0 .. steps. */
uint32_t sl_ramp_step(const struct sl_ramp *r, int64_t wall_ns);

/* The limit in force at step k of start's ramp. */
void sl_ramp_limit(const struct sl_limit *start, const struct sl_ramp *r, uint32_t k,
                   struct sl_limit *out);

#endif
