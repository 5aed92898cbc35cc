/* SPDX-License-Identifier: BSD-2-Clause */
/* reply.h - what an inbound `reply` rule writes before it closes, and
 * what an outbound one hands the client in place of the vendor's answer.
 *
 * The built-in answer is an HTTP/1.1 429 with Retry-After and the IETF
 * RateLimit-Limit/Remaining/Reset fields plus their X-RateLimit-* twins,
 * every value in whole seconds rounded up, computed from the verdict. For
 * request rules it also carries the structured fields of
 * draft-ietf-httpapi-ratelimit-headers-10 (RateLimit-Policy, RateLimit),
 * which name the rule. It is built on the stack: no allocation on the
 * denial path.
 */
#ifndef SL_REPLY_H
#define SL_REPLY_H

#include <stddef.h>
#include <stdint.h>

#include "../limit/limit.h"

#define SL_REPLY_MAX 1024

/* The policy the draft-10 fields describe:
 *   RateLimit-Policy: "name";q=quota;w=window_s
 *   RateLimit: "name";r=remaining;t=reset */
struct sl_reply_policy {
    const char *name;  /* the rule's name; '"' and '\' are escaped, other
                          bytes outside printable ASCII become '_' */
    uint64_t quota;    /* q: what the policy allows per window */
    uint64_t window_s; /* w: the window in seconds; 0 is written as 1 */
};

/* Seconds, rounded up; Retry-After is never 0 for a denial. */
uint64_t sl_reply_seconds(uint64_t ns);

/* Writes the built-in 429 into buf (at least SL_REPLY_MAX bytes); returns its length. */
size_t sl_reply_429(char *buf, size_t len, const struct sl_verdict *v);

/* The same with the draft-10 fields of policy p (NULL: none, as sl_reply_429). */
size_t sl_reply_429_policy(char *buf, size_t len, const struct sl_verdict *v,
                           const struct sl_reply_policy *p);

/* Outbound `reply`: the same without `Connection: close`, since the
 * connection goes on (the client reads it as the vendor's answer and
 * keeps the connection for its next request). */
size_t sl_reply_429_keep(char *buf, size_t len, const struct sl_verdict *v,
                         const struct sl_reply_policy *p);

#endif
