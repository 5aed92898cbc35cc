/* SPDX-License-Identifier: BSD-2-Clause */
/* h1fast_plain.c - the head scan (h1fast_body.h) in plain C, a byte at a
 * time: for CPUs without the vector units h1fast_sse2.c and
 * h1fast_avx2.c use, and as their reference in the tests (fuzz_h1fast
 * and test_h1fast run every path). */
#include "h1fast_scan.h"

#define H1_TARGET
#define H1_FN      static inline __attribute__((always_inline))
#define H1_TZ32(x) ((unsigned)__builtin_ctz(x))

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
H1_FN uint32_t ln_classify(const char *p, uint32_t *nn, const struct blk_k *kc)
{
    uint32_t st = 0, not_name = 0;
    for (unsigned i = 0; i < 32; i++) {
        uint8_t c = (uint8_t)p[i];
        st |= (uint32_t)(c < 0x20 || c >= 0x7f) << i;
        not_name |= (uint32_t)(sl_h1fast_name_chr[c] == 0) << i;
    }
    *nn = not_name;
    return st;
}

/* Exact in every bit of *nn (here as ln_classify). */
H1_FN uint32_t ln_classify_all(const char *p, uint32_t *nn, const struct blk_k *kc)
{
    return ln_classify(p, nn, kc);
}

/* The 32 bytes at p: those that end a request target (space, '#', stops)
 * in the return, its '?' bytes in *q. */
H1_FN uint32_t tg_classify(const char *p, uint32_t *q, const struct blk_k *kc)
{
    uint32_t ends = 0, qm = 0;
    for (unsigned i = 0; i < 32; i++) {
        uint8_t c = (uint8_t)p[i];
        ends |= (uint32_t)(c == ' ' || c == '#' || c < 0x20 || c >= 0x7f) << i;
        qm |= (uint32_t)(c == '?') << i;
    }
    *q = qm;
    return ends;
}

#include "h1fast_body.h"

bool sl_h1fast_scan_plain(const char *buf, size_t lim, const struct sl_h1fast_key *k,
                          struct sl_h1fast *out, sl_h1fast_lines_fn *lines)
{
    return scan_head(buf, lim, k, out, lines);
}
