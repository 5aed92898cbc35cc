/* SPDX-License-Identifier: BSD-2-Clause */
/* h1fast_vec32.h - the AVX2 classifiers of the head scan (32-byte
 * vectors: h1fast_body.h), then the scan itself: included by
 * h1fast_avx2.c, whose scan the generic path calls with a `lines` hook,
 * and by h1fast.c, whose reader compiles the scan with the AVX2 compare
 * of the thread's shapes inlined in it (no call between the request
 * line and the header lines). A header line's first 32 bytes are one vector, a request target too.
 *
 * Name bytes are told by two table lookups (vpshufb), as simdjson
 * classifies: by a byte's low nibble, the set of high nibbles that make a
 * name byte with it (a bit per high nibble 0..7), and by its high nibble,
 * that nibble's bit; a name byte has the two in common. A byte >= 0x80
 * looks up 0 (vpshufb's rule for an index with its top bit set). */
#ifndef SL_H1FAST_VEC32_H
#define SL_H1FAST_VEC32_H

#include "h1fast_scan.h"

#if defined(SL_H1FAST_X86)
#include <immintrin.h>

#define H1_TARGET  __attribute__((target("avx2,bmi")))
#define H1_FN      static inline __attribute__((always_inline)) H1_TARGET
#define H1_TZ32(x) _tzcnt_u64((uint32_t)(x)) /* 64-bit: no extension after it */

/* The constants, in memory: loads an instruction may take as an operand,
 * never rebuilt after a call (which may clobber every vector register). */
#define R4(x)  x, x, x, x
#define R32(x) R4(x), R4(x), R4(x), R4(x), R4(x), R4(x), R4(x), R4(x)
/* by low nibble: the high nibbles 0..7 that make a name byte with it (0:
 * '0' 'P' 'p'; 1-9: digits and letters; a: 'J' 'Z' 'j' 'z'; b, c, e: two
 * letters; d: '-' 'M' 'm'; f: 'O' '_' 'o'; as signed bytes); by high
 * nibble: its bit */
#define LO -0x58, -8, -8, -8, -8, -8, -8, -8, -8, -8, -0x10, 0x50, 0x50, 0x54, 0x50, 0x70
#define HI 1, 2, 4, 8, 16, 32, 64, -128, 0, 0, 0, 0, 0, 0, 0, 0
enum { K_ONE, K_STOP, K_NIBBLE, K_LO, K_HI, K_SP, K_HASH, K_QUERY, K_ZERO, K_N };
static const int8_t konst[K_N][32] __attribute__((aligned(32))) = {
    [K_ONE] = {R32(1)},    [K_STOP] = {R32(0x21)}, [K_NIBBLE] = {R32(0x0f)},
    [K_LO] = {LO, LO},     [K_HI] = {HI, HI},      [K_SP] = {R32(' ')},
    [K_HASH] = {R32('#')}, [K_QUERY] = {R32('?')}, [K_ZERO] = {R32(0)},
};
#undef LO
#undef HI
#undef R32
#undef R4

/* The constants in registers for a whole scan (blk_init): hidden from
 * the compiler behind an empty asm, which it would otherwise rebuild in
 * every block (two or three instructions each). */
struct blk_k {
    __m256i v[K_N];
};

H1_FN __m256i konst_at(const int8_t (*t)[32], int i)
{
    __m256i v = _mm256_load_si256((const __m256i *)(const void *)t[i]);
    __asm__("" : "+x"(v));
    return v;
}

H1_FN void blk_init(struct blk_k *c)
{
    const int8_t(*t)[32] = konst;
    __asm__("" : "+r"(t)); /* loads, not values rebuilt from immediates */
    *c = (struct blk_k){{konst_at(t, K_ONE), konst_at(t, K_STOP), konst_at(t, K_NIBBLE),
                         konst_at(t, K_LO), konst_at(t, K_HI), konst_at(t, K_SP),
                         konst_at(t, K_HASH), konst_at(t, K_QUERY), konst_at(t, K_ZERO)}};
}

#define K(i) (kc->v[i])

/* The bytes of b below 0x20, DEL and >= 0x80 (as h1fast_sse2.c's stops16). */
H1_FN __m256i stops32(__m256i b, const struct blk_k *kc)
{
    return _mm256_subs_epi8(_mm256_add_epi8(b, K(K_ONE)), K(K_STOP));
}

/* 0xff for each byte of b that is not a name byte. */
H1_FN __m256i not_names32(__m256i b, const struct blk_k *kc)
{
    __m256i hi = _mm256_and_si256(_mm256_srli_epi16(b, 4), K(K_NIBBLE));
    __m256i both =
        _mm256_and_si256(_mm256_shuffle_epi8(K(K_LO), b), _mm256_shuffle_epi8(K(K_HI), hi));
    return _mm256_cmpeq_epi8(both, K(K_ZERO));
}

/* The 32 bytes at p: stops in the return, bytes that are not name bytes
 * in *nn. */
H1_FN uint32_t ln_classify(const char *p, uint32_t *nn, const struct blk_k *kc)
{
    __m256i b = _mm256_loadu_si256((const __m256i *)(const void *)p);
    *nn = (uint32_t)_mm256_movemask_epi8(not_names32(b, kc));
    return (uint32_t)_mm256_movemask_epi8(stops32(b, kc));
}

/* Exact in every bit of *nn (here as ln_classify). */
H1_FN uint32_t ln_classify_all(const char *p, uint32_t *nn, const struct blk_k *kc)
{
    return ln_classify(p, nn, kc);
}

H1_FN __m256i target_ends32(__m256i b, const struct blk_k *kc)
{
    return _mm256_or_si256(stops32(b, kc), _mm256_or_si256(_mm256_cmpeq_epi8(b, K(K_SP)),
                                                           _mm256_cmpeq_epi8(b, K(K_HASH))));
}

/* The 32 bytes at p: those that end a request target (space, '#', stops)
 * in the return, its '?' bytes in *q. */
H1_FN uint32_t tg_classify(const char *p, uint32_t *q, const struct blk_k *kc)
{
    __m256i b = _mm256_loadu_si256((const __m256i *)(const void *)p);
    *q = (uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(b, K(K_QUERY)));
    return (uint32_t)_mm256_movemask_epi8(target_ends32(b, kc));
}

#include "h1fast_body.h"
#endif /* SL_H1FAST_X86 */

#endif
