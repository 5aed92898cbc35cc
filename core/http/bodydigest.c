/* SPDX-License-Identifier: BSD-2-Clause */
/* bodydigest.c - a request body's digest (see bodydigest.h).
 *
 * Chunked framing (RFC 9112 section 7.1): a hex size, optional extensions,
 * CRLF, that many bytes, CRLF; a size of 0 ends the body, then trailer
 * lines up to an empty line. HTTP/2 frames (RFC 9113 section 4.1): a
 * 9-byte header (24-bit length, type, flags, stream); frames of other
 * streams are skipped.
 */
#include "bodydigest.h"

#include <sodium.h>

#define CHUNK_MAX ((uint64_t)1 << 40) /* a size past this is not framed here */

/* The line at p[*at..n) up to its CRLF: its length, *at past the CRLF;
 * -1 when no CRLF is in the bytes. */
static long line(const uint8_t *p, size_t n, size_t *at)
{
    for (size_t i = *at; i + 1 < n; i++) {
        if (p[i] == '\r' && p[i + 1] == '\n') {
            long len = (long)(i - *at);
            *at = i + 2;
            return len;
        }
    }
    return -1;
}

static bool chunked(crypto_generichash_state *st, const uint8_t *p, size_t n)
{
    size_t at = 0;
    for (;;) {
        size_t start = at;
        long len = line(p, n, &at);
        if (len <= 0) return false;
        uint64_t size = 0;
        long i = 0;
        for (; i < len; i++) {
            uint8_t c = p[start + (size_t)i];
            int d = c >= '0' && c <= '9'   ? c - '0'
                    : c >= 'a' && c <= 'f' ? c - 'a' + 10
                    : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                           : -1;
            if (d < 0) break;
            size = size * 16 + (uint64_t)d;
            if (size > CHUNK_MAX) return false;
        }
        if (i == 0 || (i < len && p[start + (size_t)i] != ';' && p[start + (size_t)i] != ' ' &&
                       p[start + (size_t)i] != '\t'))
            return false;
        if (size == 0) { /* trailers up to an empty line */
            for (;;) {
                long t = line(p, n, &at);
                if (t < 0) return false;
                if (t == 0) return true;
            }
        }
        if (n - at < size + 2) return false;
        crypto_generichash_update(st, p + at, (unsigned long long)size);
        at += (size_t)size;
        if (p[at] != '\r' || p[at + 1] != '\n') return false;
        at += 2;
    }
}

static bool h2_data(crypto_generichash_state *st, uint32_t stream, const uint8_t *p, size_t n)
{
    size_t at = 0;
    while (n - at >= 9) {
        const uint8_t *h = p + at;
        size_t len = (size_t)h[0] << 16 | (size_t)h[1] << 8 | h[2];
        uint8_t type = h[3], flags = h[4];
        uint32_t id = ((uint32_t)h[5] << 24 | (uint32_t)h[6] << 16 | (uint32_t)h[7] << 8 | h[8]) &
                      0x7fffffffu;
        if (n - at - 9 < len) return false;
        const uint8_t *pl = h + 9;
        at += 9 + len;
        if (id != stream || (type != 0 && type != 1)) continue;
        if (type == 0) { /* DATA */
            size_t pad = 0, off = 0;
            if (flags & 0x8) {
                if (len < 1 || pl[0] > len - 1) return false;
                pad = pl[0];
                off = 1;
            }
            crypto_generichash_update(st, pl + off, len - off - pad);
        }
        if (flags & 0x1) return true; /* END_STREAM: on DATA, or on trailers */
    }
    return false;
}

bool sl_body_digest(const struct sl_body_frame *h, uint32_t stream, const uint8_t *p, size_t n,
                    uint8_t out[SL_BODY_DIGEST_LEN])
{
    crypto_generichash_state st;
    crypto_generichash_init(&st, NULL, 0, SL_BODY_DIGEST_LEN);
    bool whole = true;
    if (h->http_major == 2) {
        if (h->body) whole = h2_data(&st, stream, p, n);
    } else if (h->chunked) {
        whole = chunked(&st, p, n);
    } else if (h->has_length && h->content_length) {
        whole = n >= h->content_length;
        if (whole) crypto_generichash_update(&st, p, h->content_length);
    }
    crypto_generichash_final(&st, out, SL_BODY_DIGEST_LEN);
    return whole;
}
