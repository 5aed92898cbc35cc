/* SPDX-License-Identifier: BSD-2-Clause */
/* fuzz_bodydigest.c - libFuzzer target for the body digest's framing
 * (core/http/bodydigest.c: chunked bodies, HTTP/2 DATA frames).
 *
 * The first input byte picks the framing (Content-Length, chunked, HTTP/2)
 * and a length; the rest are the bytes after the head. A body whole in
 * the bytes is whole, with the same digest, in any longer run of them
 * (bytes after the body never change it), and not whole in any shorter
 * one cut inside its framing. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../core/http/bodydigest.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    struct sl_body_frame h;
    memset(&h, 0, sizeof h);
    uint8_t pick = data[0];
    const uint8_t *p = data + 1;
    size_t n = size - 1;
    h.http_major = (pick & 3) == 2 ? 2 : 1;
    h.chunked = (pick & 3) == 1;
    h.has_length = (pick & 3) == 0;
    h.content_length = pick >> 2;
    h.body = h.chunked || h.content_length || (pick & 3) == 2;
    uint8_t whole[SL_BODY_DIGEST_LEN], part[SL_BODY_DIGEST_LEN];
    bool ok = sl_body_digest(&h, 1, p, n, whole);
    /* the shortest prefix that is whole has the same digest */
    for (size_t k = 0; k <= n; k++) {
        if (!sl_body_digest(&h, 1, p, k, part)) continue;
        if (!ok || memcmp(part, whole, sizeof part)) abort();
        break;
    }
    return 0;
}
