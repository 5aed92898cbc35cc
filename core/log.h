/* log.h - messages to stderr or syslog, rate-limited.
 *
 * However hard the host program is flooded, sluice writes at most a burst
 * of 10 lines and then 5 a second; the lines it held back are counted and
 * the count is reported on the next line it writes. Never touches errno.
 */
#ifndef SL_LOG_H
#define SL_LOG_H

#include <stdint.h>

#include "rule.h"

void sl_log_setup(enum sl_log_target target, enum sl_log_level level);
void sl_log(enum sl_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A change of state (a backend lost or found again): written even when the
 * limiter holds other lines back, since the caller says it only once per
 * change and changes are rate-limited by their own backoff. */
void sl_log_state(enum sl_log_level level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* The clock the limiter uses; tests replace it. */
void sl_log_set_clock(uint64_t (*now)(void));
uint64_t sl_log_suppressed(void);

#endif
