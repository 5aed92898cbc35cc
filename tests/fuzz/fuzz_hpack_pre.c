/* SPDX-License-Identifier: BSD-2-Clause */
/* fuzz_hpack_pre.c - libFuzzer target for the HPACK pre-pass
 * (core/http/hpack_pre.c).
 *
 * The first input byte seeds the splits; the rest is one header block.
 * 1. Fed whole and in pieces, the pre-pass finds the same field bytes, the
 *    same size updates at the same places and the same Huffman strings,
 *    fed as core/http/h2.c feeds them (padding nginx reads past dropped).
 * 2. Against nghttp2's inflater as the reference: when it takes the block
 *    as sent, the pre-pass must agree on where representations end (the
 *    block ends on a boundary, nothing refused, no padding dropped), and
 *    the block rebuilt as core/http/h2.c feeds it (each update opening a
 *    block of its own) must decode to the same header fields; so must the
 *    same block with one or two bytes of padding too many (0xff) after
 *    every Huffman string, which nginx reads and nghttp2 refuses.
 * 3. Padding dropped is 1 to 3 bytes of 0xff, the string left is one
 *    nghttp2 takes, and with a byte more it would not take it (the least
 *    dropped). Inputs reach every class of refusal (seeds: an index past
 *    the table or 0, an integer too long, a size update over the maximum,
 *    a string over 65536 bytes, EOS, a 0 bit or 30 ones of padding, a
 *    block cut short). */
#include <nghttp2/nghttp2.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../core/http/hpack_pre.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define TABLE_MAX 65536

static const uint8_t none[1];

#define MAX_HUFF 512

struct trace {
    uint8_t fields[8192];
    size_t nfields;
    uint32_t upd[512], upd_at[512]; /* value, field bytes before it */
    size_t nupd;
    uint32_t huff_at[MAX_HUFF], huff_pre[MAX_HUFF], huff_len[MAX_HUFF], huff_keep[MAX_HUFF];
    size_t nhuff; /* Huffman strings: where, length prefix bytes, length, bytes fed */
    bool boundary, bad;
};

static void put(struct trace *t, const uint8_t *b, size_t n)
{
    if (n > sizeof t->fields - t->nfields) abort();
    memcpy(t->fields + t->nfields, b, n);
    t->nfields += n;
}

/* A whole Huffman string (length prefix first) as h2.c feeds it. */
static void huff_string(struct trace *t, const uint8_t *b, size_t n, uint32_t len, size_t at)
{
    size_t keep = sl_hpre_huff_len(b + (n - len), len);
    if (keep > len) abort();
    if (t->nhuff < MAX_HUFF) {
        t->huff_at[t->nhuff] = (uint32_t)at;
        t->huff_pre[t->nhuff] = (uint32_t)(n - len);
        t->huff_len[t->nhuff] = len;
        t->huff_keep[t->nhuff] = (uint32_t)keep;
    }
    t->nhuff++;
    if (keep == len) {
        put(t, b, n);
        return;
    }
    uint8_t enc[8] = {0x80};
    size_t e = 1;
    if (keep < 127) {
        enc[0] |= (uint8_t)keep;
    } else {
        enc[0] |= 0x7f;
        size_t v = keep - 127;
        for (; v >= 128; v >>= 7)
            enc[e++] = (uint8_t)(0x80 | (v & 0x7f));
        enc[e++] = (uint8_t)v;
    }
    put(t, enc, e);
    put(t, b + (n - len), keep);
}

static void prepass(struct trace *t, const uint8_t *in, size_t n, uint8_t seed)
{
    static uint8_t hold[8192];
    size_t held = 0, hold_at = 0;
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
                put(t, in + off, k);
            } else if (run == SL_HPRE_HUFF) {
                if (held == 0) hold_at = off;
                memcpy(hold + held, in + off, k);
                held += k;
                if (p.huff_end) {
                    if (!p.huff_known || p.huff_len > held) abort();
                    huff_string(t, hold, held, p.huff_len, hold_at);
                    held = 0;
                }
            } else if (p.update && t->nupd < 512) {
                t->upd[t->nupd] = p.size;
                t->upd_at[t->nupd++] = (uint32_t)t->nfields;
            }
            off += k;
            m -= k;
        }
    }
    put(t, hold, held); /* a string cut short: as it came */
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

/* Decodes the block the trace rebuilds as h2.c feeds it (each size
 * update opening a block of its own); false when the inflater refuses. */
static bool rebuilt(const struct trace *t, uint64_t *got)
{
    nghttp2_hd_inflater *d = inflater();
    size_t at = 0;
    bool fed = false, ok = true;
    for (size_t u = 0; u <= t->nupd && ok; u++) {
        size_t to = u < t->nupd ? t->upd_at[u] : t->nfields;
        if (to > at) {
            ok = inflate(d, t->fields + at, to - at, false, got);
            fed = true;
            at = to;
        }
        if (u == t->nupd || !ok) break;
        if (fed) ok = inflate(d, none, 0, true, got);
        fed = false;
        uint8_t enc[8];
        size_t e = 0;
        uint32_t v = t->upd[u];
        if (v < 31) {
            enc[e++] = (uint8_t)(0x20 | v);
        } else {
            enc[e++] = 0x3f;
            for (v -= 31; v >= 128; v >>= 7)
                enc[e++] = (uint8_t)(0x80 | (v & 0x7f));
            enc[e++] = (uint8_t)v;
        }
        if (ok) ok = inflate(d, enc, e, false, got);
    }
    if (ok) ok = inflate(d, none, 0, true, got);
    nghttp2_hd_inflate_del(d);
    return ok;
}

/* Whether nghttp2 takes the Huffman string s[0..n) as a header value. */
static bool takes_huff(const uint8_t *s, size_t n)
{
    uint8_t blk[132];
    memcpy(blk,
           "\x00\x01"
           "a",
           3);
    blk[3] = (uint8_t)(0x80 | n);
    memcpy(blk + 4, s, n);
    nghttp2_hd_inflater *d = inflater();
    uint64_t h = 0;
    bool ok = inflate(d, blk, n + 4, true, &h);
    nghttp2_hd_inflate_del(d);
    return ok;
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
        whole.bad != split.bad || whole.nhuff != split.nhuff ||
        memcmp(whole.huff_keep, split.huff_keep, sizeof whole.huff_keep))
        abort();
    if (whole.nupd >= 512) return 0;

    /* 3. what is dropped is padding alone, and no more than that */
    for (size_t h = 0; h < whole.nhuff && h < MAX_HUFF; h++) {
        const uint8_t *str = blk + whole.huff_at[h] + whole.huff_pre[h];
        uint32_t len = whole.huff_len[h], keep = whole.huff_keep[h];
        if (keep == len) continue;
        if (len - keep > 3) abort();
        for (uint32_t i = keep; i < len; i++)
            if (str[i] != 0xff) abort();
        if (len < 127 && (!takes_huff(str, keep) || takes_huff(str, keep + 1))) abort();
    }

    nghttp2_hd_inflater *ref = inflater();
    uint64_t want = 14695981039346656037u;
    bool ok = inflate(ref, blk, n, true, &want);
    nghttp2_hd_inflate_del(ref);
    if (!ok) return 0;
    if (!whole.boundary || whole.bad) abort();
    for (size_t h = 0; h < whole.nhuff && h < MAX_HUFF; h++)
        if (whole.huff_keep[h] != whole.huff_len[h]) abort(); /* nghttp2 took it: 7 bits at most */

    uint64_t got = 14695981039346656037u;
    if (!rebuilt(&whole, &got) || got != want) abort();

    /* the same block, every Huffman string one or two bytes of 0xff longer
     * (at most 7 + 16 ones: nginx reads it): the same fields */
    if (whole.nhuff == 0 || whole.nhuff > MAX_HUFF) return 0;
    static uint8_t var[8192];
    size_t vn = 0, from = 0, extra = 1 + (seed >> 7);
    for (size_t h = 0; h < whole.nhuff; h++) {
        uint32_t len = whole.huff_len[h] + (uint32_t)extra;
        memcpy(var + vn, blk + from, whole.huff_at[h] - from);
        vn += whole.huff_at[h] - from;
        if (len < 127) {
            var[vn++] = (uint8_t)(0x80 | len);
        } else {
            var[vn++] = 0xff;
            uint32_t v = len - 127;
            for (; v >= 128; v >>= 7)
                var[vn++] = (uint8_t)(0x80 | (v & 0x7f));
            var[vn++] = (uint8_t)v;
        }
        from = whole.huff_at[h] + whole.huff_pre[h];
        memcpy(var + vn, blk + from, whole.huff_len[h]);
        vn += whole.huff_len[h];
        memset(var + vn, 0xff, extra);
        vn += extra;
        from += whole.huff_len[h];
    }
    memcpy(var + vn, blk + from, n - from);
    vn += n - from;
    static struct trace padded;
    prepass(&padded, var, vn, (uint8_t)(seed % 5 + 1));
    got = 14695981039346656037u;
    if (!rebuilt(&padded, &got) || got != want) abort();
    return 0;
}
