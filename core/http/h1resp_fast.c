/* SPDX-License-Identifier: BSD-2-Clause */
/* h1resp_fast.c - the common HTTP/1 response head in one pass (see
 * h1resp_fast.h).
 *
 * Every check is one http-parser 2.9.4 makes, built strict or not
 * (Debian's is not: there names may hold spaces, and a response that
 * says Connection: close leaves it ready for another), or a narrower
 * one, so a head taken here is one it reads with the same status and
 * body length and after which it would be back in its state between
 * messages (HTTP/1.1, Content-Length given, no Connection: close):
 * the status line's reason may hold any byte but CR and LF there, and
 * is taken here only as printable ASCII and tabs; names are its strict
 * tokens (RFC 9110's tchar), matched to its special names case-blind as
 * it does (c | 0x20, exact on tokens; a name that begins with
 * Transfer-Encoding is one for it); values its header characters less
 * the high bytes. Values are scanned sixteen bytes a step (SSE2) or
 * eight (SWAR): the first byte below 0x20 or from 0x7f up ends the run,
 * and is the CR of the line's end or a tab, or the head is declined.
 */
#include "h1resp_fast.h"

#include <stdbool.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

static const uint8_t tchar[256] = {
    ['!'] = 1, ['#'] = 1, ['$'] = 1, ['%'] = 1,         ['&'] = 1,         ['\''] = 1,
    ['*'] = 1, ['+'] = 1, ['-'] = 1, ['.'] = 1,         ['^'] = 1,         ['_'] = 1,
    ['`'] = 1, ['|'] = 1, ['~'] = 1, ['0' ... '9'] = 1, ['A' ... 'Z'] = 1, ['a' ... 'z'] = 1,
};

#define ONES  0x0101010101010101ull
#define HIGHS (ONES * 0x80)

/* The first byte in [p, end) below 0x20 or from 0x7f up; end if none.
 * Sixteen bytes a step with SSE2 (a signed compare with 0x20 takes the
 * high bytes too, as negative), then eight by SWAR: bytes below 0x20 by
 * the borrow of w - 0x20.. (a borrow only leaves a flagged byte, so it
 * marks nothing below the first), 0x7f by w + 1.. (its carry leaves only
 * 0xff, flagged itself), 0x80 and up by their high bit; the lowest mark
 * is the first such byte. */
static inline const char *first_odd(const char *p, const char *end)
{
#ifdef __SSE2__
    for (; end - p >= 16; p += 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)p);
        __m128i odd = _mm_or_si128(_mm_cmplt_epi8(v, _mm_set1_epi8(0x20)),
                                   _mm_cmpeq_epi8(v, _mm_set1_epi8(0x7f)));
        unsigned bits = (unsigned)_mm_movemask_epi8(odd);
        if (bits) return p + __builtin_ctz(bits);
    }
#endif
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    for (; end - p >= 8; p += 8) {
        uint64_t w;
        memcpy(&w, p, sizeof w);
        uint64_t m = (((w - ONES * 0x20) & ~w) | (w + ONES) | w) & HIGHS;
        if (m) return p + __builtin_ctzll(m) / 8;
    }
#endif
    for (; p < end; p++)
        if ((unsigned char)*p < 0x20 || (unsigned char)*p >= 0x7f) return p;
    return end;
}

/* The CR of the CRLF that ends the text from p (printable ASCII and
 * tabs), or NULL: another byte, or the end of the buffer, comes first. */
static inline const char *line_end(const char *p, const char *end)
{
    for (;;) {
        p = first_odd(p, end);
        if (p + 1 >= end) return NULL;
        if (*p == '\r') return p[1] == '\n' ? p : NULL;
        if (*p != '\t') return NULL;
        p++;
    }
}

static inline uint64_t word8(const char *p)
{
    uint64_t w;
    memcpy(&w, p, sizeof w);
    return w;
}

static inline uint32_t word4(const char *p)
{
    uint32_t w;
    memcpy(&w, p, sizeof w);
    return w;
}

/* The n bytes at p are `lower` (lowercase letters and '-', 4 bytes or
 * more), case-blind: a word at a time, the last one overlapping. */
static inline bool named(const char *p, size_t n, const char *lower, size_t len)
{
    if (n != len) return false;
    if (len < 8)
        return ((word4(p) | 0x20202020u) == word4(lower)) &
               ((word4(p + len - 4) | 0x20202020u) == word4(lower + len - 4));
    bool same = (word8(p + len - 8) | ONES * 0x20) == word8(lower + len - 8);
    for (size_t i = 0; i + 8 < len; i += 8)
        same &= (word8(p + i) | ONES * 0x20) == word8(lower + i);
    return same;
}

/* [p, end) as a Content-Length: 1 to 18 digits (no overflow, as
 * http-parser's own bound never meets). */
static inline bool length_of(const char *p, const char *end, uint64_t *v)
{
    if (end - p < 1 || end - p > 18) return false;
    uint64_t x = 0;
    for (; p < end; p++) {
        unsigned d = (unsigned char)*p - '0';
        if (d > 9) return false;
        x = x * 10 + d;
    }
    *v = x;
    return true;
}

size_t sl_h1resp_fast_head(const char *p, size_t n, struct sl_h1resp_head *h)
{
    /* a whole head ends with its last LF: what follows is not read, and
     * that LF stops every loop below (not a token, a blank or a value's
     * byte) without a bound to test */
    const char *lf = memrchr(p, '\n', n < SL_H1RESP_FAST_MAX ? n : SL_H1RESP_FAST_MAX);
    const char *end = lf ? lf + 1 : p;
    if (end - p < 17 || memcmp(p, "HTTP/1.1 ", 9) != 0 || p[12] != ' ') return 0;
    unsigned d0 = (unsigned char)p[9] - '0', d1 = (unsigned char)p[10] - '0',
             d2 = (unsigned char)p[11] - '0';
    if (d0 < 2 || d0 > 5 || d1 > 9 || d2 > 9) return 0; /* 1xx, and odd statuses, to the parser */
    h->status = (int)(d0 * 100 + d1 * 10 + d2);
    const char *q = line_end(p + 13, end);
    if (!q) return 0;
    bool length = false;
    for (q += 2;; q += 2) {
        if (q + 1 >= end) return 0;
        if (*q == '\r') return q[1] == '\n' && length ? (size_t)(q + 2 - p) : 0;
        const char *name = q;
        /* two a step: a token is not the LF, so the byte after it is
         * in the buffer */
        while (tchar[(unsigned char)q[0]] && tchar[(unsigned char)q[1]])
            q += 2;
        q += tchar[(unsigned char)*q];
        if (*q != ':' || q == name) return 0;
        size_t nlen = (size_t)(q - name);
        q += 1 + (q[1] == ' '); /* the usual one blank, then any more */
        while (*q == ' ' || *q == '\t')
            q++;
        const char *v = q;
        if (!(q = line_end(v, end)) || q == v) return 0; /* an empty value: to the parser */
        /* http-parser flags Transfer-Encoding once a name's first 17 bytes
         * are it, whatever follows ("Transfer-EncodingA" too) */
        if (nlen >= 17 && named(name, 17, "transfer-encoding", 17)) return 0;
        switch (nlen) {
        case 14:
            if (!named(name, nlen, "content-length", 14)) break;
            if (length || !length_of(v, q, &h->length)) return 0;
            length = true;
            break;
        case 10: /* HTTP/1.1 is kept alive: "keep-alive" changes nothing */
            if (named(name, nlen, "connection", 10) && !named(v, (size_t)(q - v), "keep-alive", 10))
                return 0;
            break;
        case 16:
            if (named(name, nlen, "proxy-connection", 16)) return 0;
            break;
        case 7:
            if (named(name, nlen, "upgrade", 7)) return 0;
            break;
        }
    }
}
