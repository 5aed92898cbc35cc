/* SPDX-License-Identifier: BSD-2-Clause */
/* h2_frames.h - HTTP/2 frames written by hand for the unit tests
 * (test_h2.c, test_request.c); header blocks come from nghttp2's deflater. */
#ifndef SL_TEST_H2_FRAMES_H
#define SL_TEST_H2_FRAMES_H

#include <nghttp2/nghttp2.h>
#include <stdint.h>
#include <string.h>

#define H2_PREFACE "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"

struct h2out {
    uint8_t buf[8192];
    size_t len;
};

/* Appends one frame: the 9-byte header, then the payload. */
static inline void h2frame(struct h2out *o, uint8_t type, uint8_t flags, uint32_t stream,
                           const void *payload, size_t len)
{
    uint8_t h[9] = {(uint8_t)(len >> 16),
                    (uint8_t)(len >> 8),
                    (uint8_t)len,
                    type,
                    flags,
                    (uint8_t)(stream >> 24),
                    (uint8_t)(stream >> 16),
                    (uint8_t)(stream >> 8),
                    (uint8_t)stream};
    memcpy(o->buf + o->len, h, 9);
    memcpy(o->buf + o->len + 9, payload, len);
    o->len += 9 + len;
}

#define H2NV(n, v)                                                                                 \
    {                                                                                              \
        (uint8_t *)(n), (uint8_t *)(v), sizeof(n) - 1, sizeof(v) - 1, NGHTTP2_NV_FLAG_NONE         \
    }

#endif
