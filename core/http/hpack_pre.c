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
    p->val += (uint32_t)(b & 0x7f) << p->shift;
    p->shift += 7;
    if (!(b & 0x80))
        int_done(p);
    else if (p->shift >= SL_HPRE_INT_MAX)
        p->bad = true;
}

static bool is_update(uint8_t b)
{
    return (b & 0xe0) == 0x20;
}

size_t sl_hpre_feed(struct sl_hpre *p, const uint8_t *in, size_t n, enum sl_hpre_run *run)
{
    p->update = false;
    *run = SL_HPRE_FIELD;
    if (p->bad) return n;
    bool upd = p->st == ST_OP ? is_update(in[0]) : p->st == ST_INT && p->after == A_UPDATE;
    if (upd) *run = SL_HPRE_UPDATE;
    size_t i = 0;
    while (i < n && !p->bad) {
        uint8_t b = in[i];
        switch (p->st) {
        case ST_OP:
            if (is_update(b) != upd) return i; /* the run ends before another kind */
            if (b & 0x80)
                int_first(p, b, 7, A_INDEXED);
            else if (b & 0x40)
                int_first(p, b, 6, A_LITERAL);
            else if (upd)
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
        if (p->update) return i; /* one update per run: the caller applies it */
    }
    return i;
}
