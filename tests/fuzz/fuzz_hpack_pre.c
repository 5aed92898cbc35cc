/* SPDX-License-Identifier: BSD-2-Clause */
/* fuzz_hpack_pre.c - libFuzzer target for the HPACK size update pre-pass
 * (core/http/hpack_pre.c).
 *
 * The first input byte seeds the splits; the rest is one header block.
 * 1. Fed whole and in pieces, the pre-pass finds the same field bytes and
 *    the same size updates at the same places.
 * 2. Against nghttp2's inflater as the reference: when it takes the block
 *    as sent, the pre-pass must agree on where representations end (the
 *    block ends on a boundary, nothing refused), and the block rebuilt as
 *    core/http/h2.c feeds it (each update opening a block of its own) must
 *    decode to the same header fields. */
#include <nghttp2/nghttp2.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../core/http/hpack_pre.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define TABLE_MAX 65536

static const uint8_t none[1];

struct trace {
    uint8_t fields[4096];
    size_t nfields;
    uint32_t upd[512], upd_at[512]; /* value, field bytes before it */
    size_t nupd;
    bool boundary, bad;
};

static void prepass(struct trace *t, const uint8_t *in, size_t n, uint8_t seed)
{
    struct sl_hpre p;
    sl_hpre_begin(&p);
    memset(t, 0, sizeof *t);
    size_t piece = seed ? seed : n;
    for (size_t off = 0; off < n;) {
        size_t m = n - off < piece ? n - off : piece;
        while (m > 0) {
            enum sl_hpre_run run;
            size_t k = sl_hpre_feed(&p, in + off, m, &run);
            if (k == 0 || k > m) abort();
            if (run == SL_HPRE_FIELD) {
                memcpy(t->fields + t->nfields, in + off, k);
                t->nfields += k;
            } else if (p.update && t->nupd < 512) {
                t->upd[t->nupd] = p.size;
                t->upd_at[t->nupd++] = (uint32_t)t->nfields;
            }
            off += k;
            m -= k;
        }
    }
    t->boundary = sl_hpre_at_boundary(&p);
    t->bad = p.bad;
}

/* Inflates pieces of a block; false when the inflater refuses. */
static bool inflate(nghttp2_hd_inflater *d, const uint8_t *in, size_t n, bool final, uint64_t *h)
{
    for (;;) {
        nghttp2_nv nv;
        int flags = 0;
        ssize_t r = nghttp2_hd_inflate_hd2(d, &nv, &flags, in, n, final);
        if (r < 0) return false;
        in += r;
        n -= (size_t)r;
        if (flags & NGHTTP2_HD_INFLATE_EMIT) {
            for (size_t i = 0; i < nv.namelen; i++)
                *h = (*h ^ nv.name[i]) * 1099511628211u;
            *h = (*h ^ 0x100) * 1099511628211u;
            for (size_t i = 0; i < nv.valuelen; i++)
                *h = (*h ^ nv.value[i]) * 1099511628211u;
            *h = (*h ^ 0x101) * 1099511628211u;
        }
        if (flags & NGHTTP2_HD_INFLATE_FINAL) {
            nghttp2_hd_inflate_end_headers(d);
            return true;
        }
        if (n == 0 && !(flags & NGHTTP2_HD_INFLATE_EMIT) && !final) return true;
        if (n == 0 && r == 0 && !(flags & NGHTTP2_HD_INFLATE_EMIT)) return false;
    }
}

static nghttp2_hd_inflater *inflater(void)
{
    nghttp2_hd_inflater *d;
    if (nghttp2_hd_inflate_new(&d) != 0) abort();
    if (nghttp2_hd_inflate_change_table_size(d, TABLE_MAX) != 0) abort();
    return d;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > 4000) return 0;
    uint8_t seed = data[0];
    const uint8_t *blk = data + 1;
    size_t n = size - 1;
    static struct trace whole, split;
    prepass(&whole, blk, n, 0);
    prepass(&split, blk, n, (uint8_t)(seed % 7 + 1));
    if (whole.nfields != split.nfields || memcmp(whole.fields, split.fields, whole.nfields) ||
        whole.nupd != split.nupd || memcmp(whole.upd, split.upd, whole.nupd * 4) ||
        memcmp(whole.upd_at, split.upd_at, whole.nupd * 4) || whole.boundary != split.boundary ||
        whole.bad != split.bad)
        abort();
    if (whole.nupd >= 512) return 0;

    nghttp2_hd_inflater *ref = inflater();
    uint64_t want = 14695981039346656037u;
    bool ok = inflate(ref, blk, n, true, &want);
    nghttp2_hd_inflate_del(ref);
    if (!ok) return 0;
    if (!whole.boundary || whole.bad) abort();

    nghttp2_hd_inflater *d = inflater();
    uint64_t got = 14695981039346656037u;
    size_t at = 0;
    bool fed = false;
    for (size_t u = 0; u <= whole.nupd && ok; u++) {
        size_t to = u < whole.nupd ? whole.upd_at[u] : whole.nfields;
        if (to > at) {
            ok = inflate(d, whole.fields + at, to - at, false, &got);
            fed = true;
            at = to;
        }
        if (u == whole.nupd || !ok) break;
        if (fed) ok = inflate(d, none, 0, true, &got);
        fed = false;
        uint8_t enc[8];
        size_t e = 0;
        uint32_t v = whole.upd[u];
        if (v < 31) {
            enc[e++] = (uint8_t)(0x20 | v);
        } else {
            enc[e++] = 0x3f;
            for (v -= 31; v >= 128; v >>= 7)
                enc[e++] = (uint8_t)(0x80 | (v & 0x7f));
            enc[e++] = (uint8_t)v;
        }
        if (ok) ok = inflate(d, enc, e, false, &got);
    }
    if (ok) ok = inflate(d, none, 0, true, &got);
    nghttp2_hd_inflate_del(d);
    if (!ok || got != want) abort();
    return 0;
}
