/* SPDX-License-Identifier: BSD-2-Clause */
/* hpack_pre.c - HPACK size update pre-pass (see hpack_pre.h).
 *
 * A representation opens with a byte whose top bits give its kind and the
 * width of the integer prefix that follows (RFC 7541 section 6): 1xxxxxxx
 * indexed field (7 bits); 01xxxxxx literal with indexing (6); 001xxxxx
 * size update (5); 0001xxxx and 0000xxxx literals not indexed (4). A
 * literal whose index is 0 carries its name as a string, then its value;
 * otherwise the value only. A string is a length (7-bit prefix, the top
 * bit saying Huffman) and that many bytes. An integer whose prefix is all
 * ones continues in 7-bit groups, low first, while the top bit is set.
 *
 * Huffman strings are walked symbol by symbol only when their last byte is
 * 0xff (otherwise the padding is under 8 bits or not all ones, and nginx
 * and nghttp2 agree). The code is canonical (RFC 7541 Appendix B: codes of
 * one length are consecutive, in symbol order, shorter codes first), so a
 * code's end is found from the number of codes of each length alone, as
 * zlib's puff.c decodes: at each bit, the code read so far is a whole
 * symbol when it falls below the first code of its length plus their
 * count. The symbols themselves are never needed.
 */
#include "hpack_pre.h"

enum { ST_OP, ST_INT, ST_SLEN, ST_STR };
enum { A_INDEXED, A_LITERAL, A_UPDATE, A_SLEN };

void sl_hpre_begin(struct sl_hpre *p)
{
    *p = (struct sl_hpre){.st = ST_OP};
}

static void next_string(struct sl_hpre *p)
{
    p->huff_end = p->huff;
    p->huff = false;
    p->strings--;
    p->st = p->strings ? ST_SLEN : ST_OP;
}

/* The integer in p->val is complete. */
static void int_done(struct sl_hpre *p)
{
    switch (p->after) {
    case A_INDEXED:
        p->st = ST_OP;
        break;
    case A_UPDATE:
        p->size = p->val;
        p->update = true;
        p->st = ST_OP;
        break;
    case A_LITERAL:
        p->strings = p->val == 0 ? 2 : 1;
        p->st = ST_SLEN;
        break;
    default: /* A_SLEN */
        p->huff_len = p->val;
        p->huff_known = p->huff;
        p->left = p->val;
        p->st = ST_STR;
        if (p->left == 0) next_string(p);
        break;
    }
}

/* The first byte of an integer with a `bits`-wide prefix. */
static void int_first(struct sl_hpre *p, uint8_t b, unsigned bits, uint8_t after)
{
    uint32_t max = (1u << bits) - 1;
    p->after = after;
    p->val = b & max;
    p->shift = 0;
    if (p->val < max)
        int_done(p);
    else
        p->st = ST_INT;
}

/* A continuation byte of an integer. */
static void int_more(struct sl_hpre *p, uint8_t b)
{
    /* as nghttp2 reads them (decode_length): a byte at every shift up to
     * SL_HPRE_INT_MAX while the value fits 32 bits, so a small value with
     * zero bytes after it is taken as the most lenient server takes it */
    uint32_t add = b & 0x7f;
    if (p->shift > SL_HPRE_INT_MAX || add > UINT32_MAX >> p->shift ||
        UINT32_MAX - (add << p->shift) < p->val) {
        p->bad = true;
        return;
    }
    p->val += add << p->shift;
    p->shift += 7;
    if (!(b & 0x80)) int_done(p);
}

static bool is_update(uint8_t b)
{
    return (b & 0xe0) == 0x20;
}

/* The kind of run byte b falls in, read in state p. */
static enum sl_hpre_run run_at(const struct sl_hpre *p, uint8_t b)
{
    switch (p->st) {
    case ST_OP:
        return is_update(b) ? SL_HPRE_UPDATE : SL_HPRE_FIELD;
    case ST_SLEN:
        return (b & 0x80) ? SL_HPRE_HUFF : SL_HPRE_FIELD;
    case ST_INT:
        if (p->after == A_UPDATE) return SL_HPRE_UPDATE;
        return p->after == A_SLEN && p->huff ? SL_HPRE_HUFF : SL_HPRE_FIELD;
    default:
        return p->huff ? SL_HPRE_HUFF : SL_HPRE_FIELD;
    }
}

size_t sl_hpre_feed(struct sl_hpre *p, const uint8_t *in, size_t n, enum sl_hpre_run *run)
{
    p->update = p->huff_end = false;
    *run = SL_HPRE_FIELD;
    if (p->bad) return n;
    enum sl_hpre_run kind = run_at(p, in[0]);
    *run = kind;
    size_t i = 0;
    while (i < n && !p->bad) {
        uint8_t b = in[i];
        switch (p->st) {
        case ST_OP:
            if (run_at(p, b) != kind) return i; /* the run ends before another kind */
            if (b & 0x80)
                int_first(p, b, 7, A_INDEXED);
            else if (b & 0x40)
                int_first(p, b, 6, A_LITERAL);
            else if (kind == SL_HPRE_UPDATE)
                int_first(p, b, 5, A_UPDATE);
            else
                int_first(p, b, 4, A_LITERAL);
            i++;
            break;
        case ST_INT:
            int_more(p, b);
            i++;
            break;
        case ST_SLEN:
            if (run_at(p, b) != kind) return i;
            p->huff = (b & 0x80) != 0;
            p->huff_known = false;
            int_first(p, b, 7, A_SLEN);
            i++;
            break;
        default: { /* ST_STR: skipped whole */
            size_t k = n - i < p->left ? n - i : p->left;
            p->left -= (uint32_t)k;
            i += k;
            if (p->left == 0) next_string(p);
            break;
        }
        }
        /* one update, one Huffman string per run: the caller acts on it */
        if (p->update || p->huff_end) return i;
    }
    return i;
}

/* Codes of each length, 5 to 30 bits (RFC 7541 Appendix B; 257 in all,
 * EOS the last 30-bit one). */
static const uint8_t huff_count[31] = {
    [5] = 10,  [6] = 26,  [7] = 32, [8] = 6,   [10] = 5,  [11] = 3,  [12] = 2,
    [13] = 6,  [14] = 2,  [15] = 3, [19] = 3,  [20] = 8,  [21] = 13, [22] = 26,
    [23] = 29, [24] = 12, [25] = 4, [26] = 15, [27] = 19, [28] = 29, [30] = 4,
};

size_t sl_hpre_huff_len(const uint8_t *s, size_t len)
{
    if (len == 0 || s[len - 1] != 0xff) return len; /* under 8 bits of padding, or not ones */
    size_t end = 0;                                 /* bits up to the last symbol's end */
    uint32_t code = 0, first = 0; /* the code read so far, the first code of its length */
    unsigned bits = 0;            /* of the code being read */
    for (size_t at = 0; at < len * 8; at++) {
        code |= (uint32_t)(s[at >> 3] >> (7 - (at & 7))) & 1;
        bits++;
        uint32_t count = huff_count[bits];
        if (code - first < count) { /* a whole symbol (code >= first always holds) */
            if (bits == 30 && code - first == count - 1) return len; /* EOS: refused */
            end = at + 1;
            code = first = 0;
            bits = 0;
            continue;
        }
        first = (first + count) << 1;
        code <<= 1;
    }
    /* the bits past `end` (code >> 1, shifted for a next bit that never
     * came) are the padding: nghttp2 takes up to 7, nginx up to 29 ones */
    if (bits < 8 || code >> 1 != (1u << bits) - 1) return len;
    return (end + 7) / 8;
}
