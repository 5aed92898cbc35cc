/* reply.h - what an inbound `reply` rule writes before it closes.
 *
 * The built-in answer is an HTTP/1.1 429 with Retry-After and the IETF
 * RateLimit-Limit/Remaining/Reset fields plus their X-RateLimit-* twins,
 * every value in whole seconds rounded up, computed from the verdict. It is
 * built on the stack: no allocation on the denial path.
 */
#ifndef SL_REPLY_H
#define SL_REPLY_H

#include <stddef.h>
#include <stdint.h>

#include "limit.h"

#define SL_REPLY_MAX 640

/* Seconds, rounded up; Retry-After is never 0 for a denial. */
uint64_t sl_reply_seconds(uint64_t ns);

/* Writes the built-in 429 into buf (at least SL_REPLY_MAX bytes); returns its length. */
size_t sl_reply_429(char *buf, size_t len, const struct sl_verdict *v);

#endif
