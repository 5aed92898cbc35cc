/* SPDX-License-Identifier: BSD-2-Clause */
/* log.h - messages to stderr or syslog, rate-limited.
 *
 * However hard the host program is flooded, sluice writes at most a burst
 * of 10 lines and then 5 a second; the lines it held back are counted and
 * the count is reported on the next line it writes. Never touches errno.
 *
 * Lines carry no control characters: whatever the message holds (request
 * paths, methods, header values, names from the network or a file) is
 * escaped by sl_log_escape before it is written, so a client cannot forge
 * a second line or a terminal escape in the host program's log.
 */
#ifndef SL_LOG_H
#define SL_LOG_H

#include <stddef.h>
#include <stdint.h>

#include "rule.h"

void sl_log_setup(enum sl_log_target target, enum sl_log_level level);
void sl_log(enum sl_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A change of state (a backend lost or found again): written even when the
 * limiter holds other lines back, since the caller says it only once per
 * change and changes are rate-limited by their own backoff. */
void sl_log_state(enum sl_log_level level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Copies src[0..len) into dst (cap bytes, NUL-terminated) with every byte
 * below 0x20, 0x7f and above, and the backslash escaped (\n, \r, \t, \\,
 * \xNN), never cutting an escape in two; returns the length written. */
size_t sl_log_escape(char *dst, size_t cap, const char *src, size_t len);

/* The clock the limiter uses; tests replace it. */
void sl_log_set_clock(uint64_t (*now)(void));
uint64_t sl_log_suppressed(void);

/* sluice's own heap is exhausted, so what needed `what` passes unlimited
 * (fail open: sluice never stalls a host for its own lack of memory):
 * said once per process, at warning level, so it is never silent. */
void sl_log_no_memory(const char *what);

#endif
