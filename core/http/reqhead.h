/* SPDX-License-Identifier: BSD-2-Clause */
/* reqhead.h - one request head as a scanner found it (slices of its
 * buffer), the common input of the request decision (reqdecide.c) and the
 * Idempotency-Key marks (idem.c), neither of which owns it.
 */
#ifndef SL_REQHEAD_H
#define SL_REQHEAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One request head, as the scanner found it. Pointers may be NULL when the
 * head had no such part. */
struct sl_req_head {
    const char *method, *path, *query, *host, *cookie, *idem;
    size_t method_len, path_len, query_len, host_len, cookie_len, idem_len;
    /* the value of the header named by sl_req_rules.header (NULL: absent) */
    const char *header;
    size_t header_len;
    /* the body's digest (core/http/bodydigest.h), read only with idem; NULL: the
     * body was not whole in the bytes at hand (no free retry) */
    const uint8_t *body_digest;
    bool path_cut; /* the path did not fit the scanner: every route matches it (the
                      rule of doubt: counted against each route rule, never escaping) */
    bool odd;      /* an odd head (or an HTTP/2 block nothing could decode): a method,
                      path or host sluice could not read matches every rule that looks
                      at it, so a route, method or host rule never passes what it
                      cannot read (the rule of doubt) */
};

#endif
