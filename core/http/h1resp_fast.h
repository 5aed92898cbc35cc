/* SPDX-License-Identifier: BSD-2-Clause */
/* h1resp_fast.h - a one-pass reader of the common HTTP/1 response head.
 *
 * The fast path of core/http/h1resp.c (issue 35: http-parser read every
 * response a server wrote at ~25 instructions a byte, most of what
 * `count_status` cost per request). Given the bytes at the start of a
 * response, it either reads the whole head (up to and including its
 * blank line) and returns its status and Content-Length, or declines.
 * It accepts only what http-parser 2.9.4 reads the same way and leaves
 * in its state between messages: "HTTP/1.1 DDD reason" with a status
 * from 200 to 599, CRLF line ends, token header names, values of
 * printable ASCII and tabs, one Content-Length of 1 to 18 plain digits
 * (the body is then that many bytes, whatever the status), Connection
 * only as "keep-alive". Anything else (1xx, HTTP/1.0, obs-fold, an empty
 * value, control or high bytes, Transfer-Encoding, Upgrade,
 * Proxy-Connection, no or a repeated Content-Length, a head not complete
 * in the buffer or over SL_H1RESP_FAST_MAX bytes) declines, and h1resp.c
 * runs http-parser, the reference: tests/fuzz/fuzz_h1resp.c holds both
 * to the same result.
 *
 * No allocation, no state.
 */
#ifndef SL_H1RESP_FAST_H
#define SL_H1RESP_FAST_H

#include <stddef.h>
#include <stdint.h>

/* A longer head is left to http-parser. */
#define SL_H1RESP_FAST_MAX 8192

struct sl_h1resp_head {
    int status;      /* 200 to 599 */
    uint64_t length; /* Content-Length: the body's bytes */
};

/* The head at p (n bytes available): its length in bytes, *h filled; 0
 * when it is not one this reader takes (see above). */
size_t sl_h1resp_fast_head(const char *p, size_t n, struct sl_h1resp_head *h);

#endif
