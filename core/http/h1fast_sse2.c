/* SPDX-License-Identifier: BSD-2-Clause */
/* h1fast_sse2.c - the head scan (h1fast_body.h) with SSE2, which every
 * x86-64 has: a header line's first 32 bytes as two 16-byte vectors (the
 * second one's name bytes only when the name runs past the first), a
 * request target as two. */
#include "h1fast_scan.h"

#if defined(SL_H1FAST_X86)
#include <emmintrin.h>

#define H1_TARGET
#define H1_FN      static inline __attribute__((always_inline))
#define H1_TZ32(x) ((unsigned)__builtin_ctz(x))

/* The bytes of b below 0x20, DEL and >= 0x80: signed, b + 1 is below 0x21
 * for exactly these (0x7f wraps to -128, 0x80..0xff to -127..0), so
 * b + 1 - 0x21, saturated, is negative for exactly these. */
H1_FN __m128i stops16(__m128i b)
{
    return _mm_subs_epi8(_mm_add_epi8(b, _mm_set1_epi8(1)), _mm_set1_epi8(0x21));
}

/* The name bytes of b (letters, digits, '-', '_'): signed compares on
 * biased bytes, each class exact on every byte value. */
H1_FN __m128i names16(__m128i b)
{
    __m128i f = _mm_or_si128(b, _mm_set1_epi8(0x20));
    __m128i alpha = _mm_cmplt_epi8(_mm_add_epi8(f, _mm_set1_epi8((char)(0x80 - 'a'))),
                                   _mm_set1_epi8((char)(0x80 - 0x100 + 26)));
    __m128i digit = _mm_cmplt_epi8(_mm_add_epi8(b, _mm_set1_epi8((char)(0x80 - '0'))),
                                   _mm_set1_epi8((char)(0x80 - 0x100 + 10)));
    return _mm_or_si128(
        _mm_or_si128(alpha, digit),
        _mm_or_si128(_mm_cmpeq_epi8(b, _mm_set1_epi8('-')), _mm_cmpeq_epi8(b, _mm_set1_epi8('_'))));
}

H1_FN uint64_t bits(__m128i v, unsigned at)
{
    return (uint64_t)(uint32_t)_mm_movemask_epi8(v) << at;
}

/* No constants to keep. */
struct blk_k {
    char none;
};

H1_FN void blk_init(struct blk_k *c)
{
    c->none = 0;
}

/* The 32 bytes at p: stops in the return, bytes that are not name bytes
 * in *nn. */
H1_FN uint32_t ln_classify_all(const char *p, uint32_t *nn, const struct blk_k *kc)
{
    __m128i a = _mm_loadu_si128((const __m128i *)(const void *)p);
    __m128i b = _mm_loadu_si128((const __m128i *)(const void *)(p + 16));
    *nn = ~((uint32_t)bits(names16(a), 0) | (uint32_t)bits(names16(b), 16));
    return (uint32_t)bits(stops16(a), 0) | (uint32_t)bits(stops16(b), 16);
}

/* The same, but *nn exact only to its lowest bit: a name that ends in the
 * first 16 bytes (most do) costs one class of 16 bytes, not two. */
H1_FN uint32_t ln_classify(const char *p, uint32_t *nn, const struct blk_k *kc)
{
    __m128i a = _mm_loadu_si128((const __m128i *)(const void *)p);
    __m128i b = _mm_loadu_si128((const __m128i *)(const void *)(p + 16));
    uint32_t lo = ~(uint32_t)bits(names16(a), 0) & 0xffff;
    *nn = lo ? lo : ~((uint32_t)bits(names16(b), 16) | 0xffff);
    return (uint32_t)bits(stops16(a), 0) | (uint32_t)bits(stops16(b), 16);
}

/* The 32 bytes at p: those that end a request target (space, '#', stops)
 * in the return, its '?' bytes in *q. */
H1_FN uint32_t tg_classify(const char *p, uint32_t *q, const struct blk_k *kc)
{
    uint32_t ends = 0, qm = 0;
    for (unsigned i = 0; i < 32; i += 16) {
        __m128i b = _mm_loadu_si128((const __m128i *)(const void *)(p + i));
        __m128i e = _mm_or_si128(stops16(b), _mm_or_si128(_mm_cmpeq_epi8(b, _mm_set1_epi8(' ')),
                                                          _mm_cmpeq_epi8(b, _mm_set1_epi8('#'))));
        ends |= (uint32_t)bits(e, i);
        qm |= (uint32_t)bits(_mm_cmpeq_epi8(b, _mm_set1_epi8('?')), i);
    }
    *q = qm;
    return ends;
}

#include "h1fast_body.h"

bool sl_h1fast_scan_sse2(const char *buf, size_t lim, const struct sl_h1fast_key *k,
                         struct sl_h1fast *out, sl_h1fast_lines_fn *lines)
{
    return scan_head(buf, lim, k, out, lines);
}
#endif
