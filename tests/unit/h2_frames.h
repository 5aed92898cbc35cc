/* SPDX-License-Identifier: BSD-2-Clause */
/* h2_frames.h - HTTP/2 frames written by hand for the unit tests
 * (test_h2.c, test_request.c, test_reqwrite.c); header blocks come from
 * nghttp2's deflater. Include after <cmocka.h>. */
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

/* Preface, SETTINGS, then GETs on streams 1, 3, 5 (the second's block in
 * HEADERS + CONTINUATION); starts[i]: where request i's first frame is. */
static inline void h2_client(struct h2out *o, size_t *starts)
{
    nghttp2_hd_deflater *d;
    assert_int_equal(nghttp2_hd_deflate_new(&d, 4096), 0);
    static const char preface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
    memcpy(o->buf, preface, sizeof preface - 1);
    o->len = sizeof preface - 1;
    h2frame(o, 4, 0, 0, "", 0); /* SETTINGS */
    nghttp2_nv nv[] = {H2NV(":method", "GET"), H2NV(":scheme", "http"), H2NV(":path", "/x"),
                       H2NV(":authority", "a"), H2NV("x-api-key", "k")};
    for (uint32_t i = 0; i < 3; i++) {
        uint8_t blk[512];
        ssize_t n = nghttp2_hd_deflate_hd(d, blk, sizeof blk, nv, 5);
        assert_true(n > 2);
        starts[i] = o->len;
        if (i == 1) { /* END_STREAM, then END_HEADERS on the CONTINUATION */
            h2frame(o, 1, 0x1, 2 * i + 1, blk, 2);
            h2frame(o, 9, 0x4, 2 * i + 1, blk + 2, (size_t)n - 2);
        } else {
            h2frame(o, 1, 0x5, 2 * i + 1, blk, (size_t)n);
        }
    }
    nghttp2_hd_deflate_del(d);
}

#endif
