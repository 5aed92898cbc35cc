/* SPDX-License-Identifier: BSD-2-Clause */
/* h2resp.c - HTTP/2 response heads for learn (see h2resp.h): frames by
 * hand, header blocks through libnghttp2's streaming HPACK inflater, as
 * h2.c reads requests. The inflater takes any piece of a block and stops
 * at each field it emits; the block's last piece is an empty one with
 * in_final set, after the frame that carries END_HEADERS. */
#include "h2resp.h"

#include <nghttp2/nghttp2.h>
#include <string.h>

#include "h2frame.h"
#include "h2mem.h"

enum { DATA = 0, HEADERS = 1, RST_STREAM = 3, PUSH_PROMISE = 5, GOAWAY = 7, CONT = 9 };
enum { END_STREAM = 0x1, END_HEADERS = 0x4, PADDED = 0x8, PRIO = 0x20 };

void sl_h2resp_init(struct sl_h2resp *r,
                    void (*on_head)(void *arg, uint32_t stream, const struct sl_learn_resp *f),
                    void *arg)
{
    memset(r, 0, sizeof *r);
    r->on_head = on_head;
    r->arg = arg;
}

void sl_h2resp_pair(struct sl_h2resp *r, const struct sl_h2resp_pairs *pairs)
{
    r->pairs = pairs;
}

void sl_h2resp_fini(struct sl_h2resp *r)
{
    if (r->inflater) nghttp2_hd_inflate_del(r->inflater);
    r->inflater = NULL;
}

bool sl_h2resp_lost(const struct sl_h2resp *r)
{
    return r->lost;
}

void sl_h2resp_lose(struct sl_h2resp *r)
{
    r->lost = true;
}

/* A field of the open block: the first says whether it is a final
 * response head (`:status` first, RFC 9113 8.3: pseudo-fields lead). */
static void on_field(struct sl_h2resp *r, const nghttp2_nv *nv)
{
    if (r->block_first) {
        r->block_first = false;
        r->block_resp = false;
        if (nv->namelen == 7 && !memcmp(nv->name, ":status", 7) && nv->valuelen == 3 &&
            nv->value[0] >= '2' && nv->value[0] <= '9' && nv->value[1] >= '0' &&
            nv->value[1] <= '9' && nv->value[2] >= '0' && nv->value[2] <= '9') {
            int status =
                (nv->value[0] - '0') * 100 + (nv->value[1] - '0') * 10 + nv->value[2] - '0';
            sl_learn_resp_init(&r->fields, status);
            r->block_resp = true;
        }
        return;
    }
    if (!r->block_resp || !nv->namelen || nv->name[0] == ':') return;
    sl_learn_header(&r->fields, (const char *)nv->name, nv->namelen, (const char *)nv->value,
                    nv->valuelen);
    if (r->pairs && r->pairs->field)
        r->pairs->field(r->arg, r->block_stream, (const char *)nv->name, nv->namelen,
                        (const char *)nv->value, nv->valuelen);
}

/* Feeds a piece of the open block (final: its end, n == 0). */
static void inflate(struct sl_h2resp *r, const uint8_t *in, size_t n, bool final)
{
    for (;;) {
        nghttp2_nv nv;
        int flags = 0;
        ssize_t k = nghttp2_hd_inflate_hd2(r->inflater, &nv, &flags, in, n, final);
        if (k < 0) {
            sl_h2resp_lose(r);
            return;
        }
        in += k;
        n -= (size_t)k;
        if (flags & NGHTTP2_HD_INFLATE_EMIT) on_field(r, &nv);
        if (flags & NGHTTP2_HD_INFLATE_FINAL) {
            nghttp2_hd_inflate_end_headers(r->inflater);
            return;
        }
        if (!(flags & NGHTTP2_HD_INFLATE_EMIT) && n == 0) {
            if (final) sl_h2resp_lose(r); /* the block ended inside a field */
            return;
        }
    }
}

/* A frame header is whole: what its payload is. */
static void frame_begins(struct sl_h2resp *r)
{
    struct sl_h2frame f = sl_h2frame_parse(r->hdr);
    r->left = f.length;
    r->type = f.type;
    r->flags = f.flags;
    r->stream = f.stream;
    r->front = 0;
    r->pad = 0;
    r->want_padlen = false;
    r->goaway_len = 0;
    if (r->in_block) {
        if (r->type != CONT || r->stream != r->block_stream) sl_h2resp_lose(r);
        return;
    }
    if (r->type == CONT) {
        sl_h2resp_lose(r);
        return;
    }
    if (r->type == DATA) { /* its payload is read when pairs want bodies */
        r->want_padlen = (r->flags & PADDED) != 0;
        if (r->left < (uint32_t)r->want_padlen) sl_h2resp_lose(r);
        return;
    }
    if (r->type != HEADERS && r->type != PUSH_PROMISE) return;
    if (r->stream == 0) {
        sl_h2resp_lose(r);
        return;
    }
    if (!r->inflater &&
        (nghttp2_hd_inflate_new2(&r->inflater, sl_h2_mem()) != 0 ||
         nghttp2_hd_inflate_change_table_size(r->inflater, SL_H2RESP_TABLE_MAX) != 0)) {
        sl_h2resp_lose(r);
        return;
    }
    r->in_block = true;
    r->block_stream = r->stream;
    r->block_first = r->type == HEADERS; /* a pushed request is no response */
    r->block_resp = false;
    r->block_end = r->type == HEADERS && (r->flags & END_STREAM);
    r->want_padlen = (r->flags & PADDED) != 0;
    if (r->type == HEADERS && (r->flags & PRIO)) r->front = 5;
    if (r->type == PUSH_PROMISE) r->front = 4; /* the promised stream id */
    if (r->left < (uint32_t)r->want_padlen + r->front) sl_h2resp_lose(r);
}

static bool block_frame(const struct sl_h2resp *r)
{
    return r->type == HEADERS || r->type == PUSH_PROMISE || r->type == CONT;
}

/* A DATA frame whose payload is handed over (sl_h2resp_pairs.data). */
static bool data_frame(const struct sl_h2resp *r)
{
    return r->type == DATA && r->stream && r->pairs && r->pairs->data;
}

/* A frame other than a header block's is read: the end of a stream, or
 * the streams a GOAWAY gives up. */
static void other_ends(struct sl_h2resp *r)
{
    const struct sl_h2resp_pairs *p = r->pairs;
    if (!p || r->stream == 0) {
        if (p && p->goaway && r->type == GOAWAY && r->goaway_len == 4)
            p->goaway(r->arg, ((uint32_t)r->goaway[0] << 24 | (uint32_t)r->goaway[1] << 16 |
                               (uint32_t)r->goaway[2] << 8 | r->goaway[3]) &
                                  0x7fffffffu);
        return;
    }
    if (p->end && ((r->type == DATA && (r->flags & END_STREAM)) || r->type == RST_STREAM))
        p->end(r->arg, r->stream);
}

/* The frame's payload is read: a block that ends here is decided. */
static void frame_ends(struct sl_h2resp *r)
{
    r->hdr_len = 0;
    if (!block_frame(r)) {
        other_ends(r);
        return;
    }
    if (!(r->flags & END_HEADERS)) return;
    r->in_block = false;
    inflate(r, (const uint8_t *)"", 0, true);
    if (r->lost) return;
    if (r->block_resp && r->fields.any && r->on_head)
        r->on_head(r->arg, r->block_stream, &r->fields);
    if (r->block_resp && r->pairs && r->pairs->status)
        r->pairs->status(r->arg, r->block_stream, r->fields.status);
    r->block_resp = false;
    if (r->block_end && r->pairs && r->pairs->end) r->pairs->end(r->arg, r->block_stream);
}

void sl_h2resp_feed(struct sl_h2resp *r, const void *buf, size_t n)
{
    const uint8_t *p = buf, *end = p + n;
    while (!r->lost && p < end) {
        if (r->hdr_len < sizeof r->hdr) {
            size_t k = sizeof r->hdr - r->hdr_len;
            if (k > (size_t)(end - p)) k = (size_t)(end - p);
            memcpy(r->hdr + r->hdr_len, p, k);
            r->hdr_len = (uint8_t)(r->hdr_len + k);
            p += k;
            if (r->hdr_len < sizeof r->hdr) return;
            frame_begins(r);
            if (!r->lost && r->left == 0) frame_ends(r);
            continue;
        }
        size_t avail = (size_t)(end - p);
        if (!block_frame(r) && !data_frame(r)) { /* skipped (a GOAWAY's last id kept) */
            size_t k = avail < r->left ? avail : r->left;
            for (size_t i = 0; r->type == GOAWAY && i < k && r->goaway_len < 4; i++)
                r->goaway[r->goaway_len++] = p[i];
            p += k;
            r->left -= (uint32_t)k;
        } else if (r->want_padlen) {
            r->pad = *p++;
            r->left--;
            r->want_padlen = false;
            if (r->pad > r->left - r->front)
                sl_h2resp_lose(r); /* padding longer than the payload */
        } else if (r->front) {
            size_t k = avail < r->front ? avail : r->front;
            p += k;
            r->front = (uint8_t)(r->front - k);
            r->left -= (uint32_t)k;
        } else if (r->left > r->pad) { /* the fragment, or the body's bytes */
            size_t k = r->left - r->pad;
            if (k > avail) k = avail;
            if (r->type == DATA)
                r->pairs->data(r->arg, r->stream, p, k);
            else
                inflate(r, p, k, false);
            p += k;
            r->left -= (uint32_t)k;
        } else { /* the padding */
            size_t k = avail < r->left ? avail : r->left;
            p += k;
            r->left -= (uint32_t)k;
        }
        if (!r->lost && r->left == 0) frame_ends(r);
    }
}
