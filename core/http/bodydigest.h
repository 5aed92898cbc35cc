/* SPDX-License-Identifier: BSD-2-Clause */
/* bodydigest.h - the digest of a request's body, for binding an
 * Idempotency-Key to it (core/http/idem.h).
 *
 * Computed when the request is decided, from the bytes that arrived with
 * its head (the read that completed the head: up to the request gate's
 * stash): HTTP/1 Content-Length bodies as sent, chunked bodies decoded
 * (so the chunking is not part of it), HTTP/2 the DATA payloads of the
 * request's stream (padding left out) up to END_STREAM. A body not whole
 * in those bytes has no digest: the request is then charged like any
 * other, never a free retry (the conservative reading). A request without
 * a body has the digest of the empty body. BLAKE2b-128, unkeyed (idem.c
 * keys the mark with the table's secret).
 */
#ifndef SL_BODYDIGEST_H
#define SL_BODYDIGEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SL_BODY_DIGEST_LEN 16

/* How a request's body is framed, as its head says (either reader of
 * HTTP/1 heads, or HTTP/2's). */
struct sl_body_frame {
    uint8_t http_major; /* 2: DATA frames of the stream */
    bool body;          /* a body follows (HTTP/2: the HEADERS frame lacked END_STREAM) */
    bool chunked;       /* Transfer-Encoding: chunked */
    bool has_length;    /* Content-Length given */
    uint64_t content_length;
};

/* The body of the request framed as h (HTTP/1, or HTTP/2 on stream
 * `stream`) from p[0..n), the bytes right after its head. Returns false
 * when the body is not whole there, or cannot be framed. */
bool sl_body_digest(const struct sl_body_frame *h, uint32_t stream, const uint8_t *p, size_t n,
                    uint8_t out[SL_BODY_DIGEST_LEN]);

#endif
