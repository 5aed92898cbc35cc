/* SPDX-License-Identifier: BSD-2-Clause */
/* h2.c - HTTP/2 request scanner: frame boundaries by hand (a 9-byte header
 * and a length, RFC 9113 section 4.1), header blocks through libnghttp2's
 * HPACK inflater (see h2.h).
 *
 * The inflater is streaming: nghttp2_hd_inflate_hd2 takes any piece of a
 * block and returns how much it consumed, stopping at each header it
 * emits; the last piece is passed with in_final set (here: an empty piece
 * when the frame carrying END_HEADERS ends), then end_headers readies it
 * for the next block. Padding and priority bytes of HEADERS are skipped
 * before the fragment reaches it.
 *
 * nghttp2 allocates through an nghttp2_mem over core/mem.h (h2mem.h), so
 * the host's allocator never sees the table.
 */
#include "h2.h"

#include <nghttp2/nghttp2.h>
#include <string.h>
#include <strings.h>

#include "h2frame.h"
#include "h2mem.h"
#include "hpack_pre.h"
#include "../mem.h"
#include "reqkey.h"

static const char preface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
#define PREFACE_LEN (sizeof preface - 1)

enum { DATA, HEADERS, PRIORITY, RST_STREAM, SETTINGS, PUSH_PROMISE, PING, GOAWAY, WINDOW, CONT };
enum { END_STREAM = 0x1, END_HEADERS = 0x4, PADDED = 0x8, PRIO = 0x20 };

void sl_h2_init(struct sl_h2 *s, enum sl_h1_key_kind kind, const char *name, uint64_t pos,
                bool preface_seen)
{
    memset(s, 0, sizeof *s);
    s->pos = pos;
    s->state = SL_H2_IDLE;
    s->preface = preface_seen ? PREFACE_LEN : 0;
    size_t n = name ? strlen(name) : 0;
    if (kind != SL_H1_KEY_NONE && n > 0 && n < sizeof s->key_name) {
        s->key_kind = kind;
        memcpy(s->key_name, name, n);
        s->key_name_len = n;
    }
}

void sl_h2_fini(struct sl_h2 *s)
{
    if (s->inflater) nghttp2_hd_inflate_del(s->inflater);
    s->inflater = NULL;
    sl_free(s->hold);
    s->hold = NULL;
    s->hold_len = s->hold_cap = 0;
}

const struct sl_h1_head *sl_h2_head(const struct sl_h2 *s)
{
    return &s->head;
}

static void pass(struct sl_h2 *s)
{
    s->state = SL_H2_PASS;
}

/* The HPACK state is lost: frames are still counted (see h2.h). */
static void blind(struct sl_h2 *s)
{
    s->blind = true;
}

static bool name_is(const uint8_t *name, size_t len, const char *want)
{
    return strlen(want) == len && strncasecmp((const char *)name, want, len) == 0;
}

static void set_once(char *buf, size_t cap, struct sl_h1_text *t, const nghttp2_nv *nv)
{
    if (!t->present) sl_h1_text_set(buf, cap, t, (const char *)nv->value, nv->valuelen);
}

static void on_header(struct sl_h2 *s, const nghttp2_nv *nv)
{
    struct sl_h1_head *h = &s->head;
    const uint8_t *n = nv->name;
    size_t len = nv->namelen;
    if (name_is(n, len, ":method")) {
        size_t m = nv->valuelen < sizeof h->method - 1 ? nv->valuelen : sizeof h->method - 1;
        memcpy(h->method, nv->value, m);
        h->method[m] = '\0';
    } else if (name_is(n, len, ":path")) {
        set_once(h->url, sizeof h->url, &h->url_info, nv);
    } else if (name_is(n, len, ":authority") || name_is(n, len, "host")) {
        set_once(h->host, sizeof h->host, &h->host_info, nv);
    } else if (name_is(n, len, "idempotency-key")) {
        set_once(h->idem, sizeof h->idem, &h->idem_info, nv);
    }
    if (s->want_cookie && name_is(n, len, "cookie")) { /* crumbs join with "; " (RFC 9113) */
        if (h->cookie_info.len)
            sl_h1_text_append(h->cookie, sizeof h->cookie, &h->cookie_info, "; ", 2);
        sl_h1_text_append(h->cookie, sizeof h->cookie, &h->cookie_info, (const char *)nv->value,
                          nv->valuelen);
    }
    /* every field of the key, under the names servers fold with it, joined
     * by ", " (its copies, core/http/reqkey.h); copies cut off: missing */
    if (s->key_kind == SL_H1_KEY_HEADER &&
        sl_req_header_name_eq((const char *)n, len, s->key_name, s->key_name_len)) {
        if (h->key_info.present) {
            s->key_cut |= h->key_info.truncated;
            sl_h1_text_append(h->key, sizeof h->key, &h->key_info, ", ", 2);
        }
        sl_h1_text_append(h->key, sizeof h->key, &h->key_info, (const char *)nv->value,
                          nv->valuelen);
    }
    if (s->key_kind == SL_H1_KEY_COOKIE && name_is(n, len, "cookie") && !h->key_info.present) {
        const char *v;
        size_t vl;
        if (sl_h1_param((const char *)nv->value, nv->valuelen, ';', s->key_name, s->key_name_len,
                        &v, &vl))
            sl_h1_text_set(h->key, sizeof h->key, &h->key_info, v, vl);
    }
}

static void head_begin(struct sl_h2 *s)
{
    struct sl_h1_head *h = &s->head;
    memset(h, 0, offsetof(struct sl_h1_head, method));
    h->method[0] = h->url[0] = h->host[0] = h->key[0] = h->idem[0] = '\0';
    h->url_info = h->host_info = h->key_info = h->idem_info = (struct sl_h1_text){0};
    s->key_cut = false;
    h->cookie[0] = '\0';
    h->cookie_info = (struct sl_h1_text){0};
    h->odd = SL_H1_ODD_NONE;
    h->http_major = 2;
    h->http_minor = 0;
    h->chunked = h->has_length = h->upgrade = h->body = false;
    h->content_length = 0;
    h->keep_alive = true;
}

static void head_end(struct sl_h2 *s)
{
    struct sl_h1_head *h = &s->head;
    size_t end = strcspn(h->url, "?#");
    h->path_off = 0;
    h->path_len = end;
    h->query_off = h->query_len = 0;
    if (end < h->url_info.len && h->url[end] == '?') {
        h->query_off = end + 1;
        h->query_len = strcspn(h->url + end + 1, "#");
    }
    if (s->key_kind == SL_H1_KEY_QUERY) sl_h1_query_key(h, s->key_name, s->key_name_len);
    if (s->key_kind == SL_H1_KEY_HEADER && h->key_info.truncated &&
        (s->key_cut || memchr(h->key, ',', h->key_info.len)))
        h->key_info = (struct sl_h1_text){0}, h->key[0] = '\0';
    s->key_cut = false;
    sl_h1_text_seal(h->key, sizeof h->key, &h->key_info);
    sl_h1_text_seal(h->idem, sizeof h->idem, &h->idem_info);
    if (s->big) h->odd = SL_H1_ODD_LONG;
    if (s->blind) h->odd = SL_H1_ODD_SYNTAX;
    h->start = s->head_start;
    h->end = s->pos;
}

/* Feeds a piece of the open header block (final: the block's end). */
static void inflate(struct sl_h2 *s, const uint8_t *in, size_t n, bool final)
{
    if (s->blind) return;
    for (;;) {
        nghttp2_nv nv;
        int flags = 0;
        ssize_t r = nghttp2_hd_inflate_hd2(s->inflater, &nv, &flags, in, n, final);
        if (r < 0) {
            blind(s);
            return;
        }
        in += r;
        n -= (size_t)r;
        if ((flags & NGHTTP2_HD_INFLATE_EMIT) && s->block_request) on_header(s, &nv);
        if (flags & NGHTTP2_HD_INFLATE_FINAL) {
            nghttp2_hd_inflate_end_headers(s->inflater);
            return;
        }
        if (n == 0 && !(flags & NGHTTP2_HD_INFLATE_EMIT) && !final) return;
        if (n == 0 && r == 0 && !(flags & NGHTTP2_HD_INFLATE_EMIT)) {
            blind(s); /* final, nothing consumed, nothing emitted: a truncated block */
            return;
        }
    }
}

/* A dynamic table size update from the pre-pass. The inflater takes one
 * only before a block's first field, where nginx takes it anywhere: after
 * a field, the block so far is ended in the inflater (the pre-pass says a
 * representation ends here), and the update opens the next one. */
static void apply_update(struct sl_h2 *s, uint32_t size)
{
    static const uint8_t none[1];
    if (s->fed) {
        inflate(s, none, 0, true);
        s->fed = false;
    }
    uint8_t enc[8]; /* 001xxxxx and 7-bit groups (RFC 7541 section 5.1) */
    size_t n = 0;
    if (size < 31) {
        enc[n++] = (uint8_t)(0x20 | size);
    } else {
        enc[n++] = 0x3f;
        for (size -= 31; size >= 128; size >>= 7)
            enc[n++] = (uint8_t)(0x80 | (size & 0x7f));
        enc[n++] = (uint8_t)size;
    }
    if (!s->blind) inflate(s, enc, n, false);
}

/* A whole Huffman string, its length prefix first: fed as nginx reads it,
 * without the bytes of padding alone (core/http/hpack_pre.h). */
static void huff_string(struct sl_h2 *s, const uint8_t *b, size_t n)
{
    size_t len = s->hpre.huff_len;
    const uint8_t *str = b + (n - len);
    size_t keep = sl_hpre_huff_len(str, len);
    if (keep == len) {
        inflate(s, b, n, false);
        return;
    }
    uint8_t enc[4] = {0x80}; /* H, then the length in a 7-bit prefix (RFC 7541 5.1) */
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
    inflate(s, enc, e, false);
    inflate(s, str, keep, false);
}

/* The held bytes, as they came. */
static void hold_flush(struct sl_h2 *s)
{
    if (s->hold_len) inflate(s, s->hold, s->hold_len, false);
    s->hold_len = 0;
}

static bool hold_add(struct sl_h2 *s, const uint8_t *in, size_t k)
{
    size_t need = s->hold_len + k;
    if (need > s->hold_cap) {
        size_t cap = s->hold_cap ? s->hold_cap : 256;
        while (cap < need)
            cap *= 2;
        if (cap > SL_H2_HOLD_MAX + 8) cap = SL_H2_HOLD_MAX + 8; /* 5 bytes of length at most */
        uint8_t *p = sl_realloc(s->hold, cap);
        if (!p) return false;
        s->hold = p;
        s->hold_cap = (uint32_t)cap;
    }
    memcpy(s->hold + s->hold_len, in, k);
    s->hold_len += (uint32_t)k;
    return true;
}

/* A run of a Huffman string: held until it ends (in place when it ends in
 * this piece and nothing is held). One too long to hold (nghttp2 refuses
 * it) or that finds no memory is fed as it comes. */
static void huff_piece(struct sl_h2 *s, const uint8_t *in, size_t k)
{
    const struct sl_hpre *p = &s->hpre;
    bool end = p->huff_end;
    if (!s->hold_pass && p->huff_known && p->huff_len > SL_H2_HOLD_MAX) s->hold_pass = true;
    if (!s->hold_pass) {
        if (end && s->hold_len == 0) {
            huff_string(s, in, k);
            return;
        }
        if (hold_add(s, in, k)) {
            if (end) {
                huff_string(s, s->hold, s->hold_len);
                s->hold_len = 0;
            }
            return;
        }
        s->hold_pass = true;
    }
    hold_flush(s);
    inflate(s, in, k, false);
    if (end) s->hold_pass = false;
}

/* A piece of the open header block: field bytes to the inflater, size
 * updates applied and Huffman strings read where and as nginx does
 * (core/http/hpack_pre.h). */
static void block_piece(struct sl_h2 *s, const uint8_t *in, size_t n)
{
    while (n > 0 && !s->blind) {
        enum sl_hpre_run run;
        size_t k = sl_hpre_feed(&s->hpre, in, n, &run);
        if (run == SL_HPRE_FIELD) {   /* up to a malformed integer too: the same fields */
            inflate(s, in, k, false); /* however the block is split */
            s->fed = true;
        } else if (run == SL_HPRE_HUFF) {
            huff_piece(s, in, k);
            s->fed = true;
        } else if (s->hpre.update) {
            apply_update(s, s->hpre.size);
        }
        if (s->hpre.bad) {
            blind(s);
            return;
        }
        in += k;
        n -= k;
    }
}

static bool is_block_frame(const struct sl_h2 *s)
{
    return s->type == HEADERS || s->type == CONT;
}

/* The 9-byte frame header is complete. */
static void frame_begin(struct sl_h2 *s)
{
    struct sl_h2frame f = sl_h2frame_parse(s->hdr);
    s->remaining = f.length;
    s->type = f.type;
    s->flags = f.flags;
    s->stream = f.stream;
    s->skip_front = 0;
    s->pad = 0;
    s->want_padlen = false;
    s->rst = s->type == RST_STREAM && f.length == 4 && s->stream != 0 && !s->in_block;
    if (s->in_block) {
        if (s->type != CONT || s->stream != s->block_stream) {
            pass(s);
            return;
        }
    } else if (s->type == CONT) {
        {
            pass(s);
            return;
        }
    } else if (s->type == HEADERS) {
        if (s->stream == 0) {
            pass(s);
            return;
        }
        if (!s->inflater && !s->blind) {
            if (nghttp2_hd_inflate_new2(&s->inflater, sl_h2_mem()) != 0)
                blind(s);
            else if (nghttp2_hd_inflate_change_table_size(s->inflater, SL_H2_TABLE_MAX) != 0)
                blind(s);
        }
        s->in_block = true;
        s->block_bytes = 0;
        s->big = false;
        s->fed = false;
        s->hold_len = 0;
        s->hold_pass = false;
        sl_hpre_begin(&s->hpre);
        s->block_request = (s->stream & 1) && s->stream > s->last_stream;
        s->block_stream = s->stream;
        if (s->block_request) {
            head_begin(s);
            s->head.body = !(s->flags & END_STREAM);
        } else {
            s->state = SL_H2_IDLE;
        }
        s->want_padlen = (s->flags & PADDED) != 0;
        s->skip_front = (s->flags & PRIO) ? 5 : 0;
        if (s->remaining < s->want_padlen + s->skip_front) {
            pass(s);
            return;
        }
    }
    if (!is_block_frame(s)) {
        s->state = SL_H2_IDLE;
        return;
    }
    s->block_bytes += s->remaining;
    /* its request is reported at this frame's end; the rest of the block
     * is still inflated, so the dynamic table stays in step */
    if (s->block_bytes > SL_H2_BLOCK_MAX) s->big = true;
}

/* Payload bytes of the current frame; consumes them all. */
static void payload(struct sl_h2 *s, const uint8_t *p, size_t n)
{
    if (!is_block_frame(s)) {
        s->remaining -= (uint32_t)n;
        return;
    }
    while (n > 0 && s->state != SL_H2_PASS) {
        if (s->want_padlen) {
            s->pad = *p;
            s->want_padlen = false;
            if (s->pad > s->remaining - 1 - s->skip_front) {
                pass(s);
                return;
            }
        } else if (s->skip_front > 0) {
            s->skip_front--;
        } else if (s->remaining > s->pad) {
            size_t frag = s->remaining - s->pad;
            if (frag > n) frag = n;
            if (!s->blind) block_piece(s, p, frag);
            s->remaining -= (uint32_t)frag;
            p += frag;
            n -= frag;
            continue;
        }
        s->remaining--;
        p++;
        n--;
    }
}

/* The current frame's payload is complete: true when a request ended. */
static bool frame_end(struct sl_h2 *s)
{
    s->hdr_got = 0;
    if (!is_block_frame(s)) return false;
    bool end = (s->flags & END_HEADERS) != 0;
    /* a block over the bound is decided now (its rest is not a request) */
    bool early = s->block_request && s->block_bytes > SL_H2_BLOCK_MAX;
    if (!end && !early) return false;
    if (end) {
        static const uint8_t none[1];
        hold_flush(s); /* a string cut short: the inflater refuses it, as nginx does */
        inflate(s, none, 0, true);
        s->in_block = false;
    }
    if (s->state == SL_H2_PASS) return false;
    s->state = SL_H2_IDLE;
    if (!s->block_request) return false;
    s->block_request = false;
    s->last_stream = s->block_stream;
    head_end(s);
    return true;
}

size_t sl_h2_feed(struct sl_h2 *s, const void *data, size_t len, enum sl_h2_event *ev)
{
    const uint8_t *p = data;
    size_t done = 0;
    *ev = SL_H2_MORE;
    while (done < len) {
        if (s->state == SL_H2_PASS) {
            s->pos += len - done;
            *ev = SL_H2_PASSTHROUGH;
            return len;
        }
        if (s->preface < PREFACE_LEN) {
            if (p[done] != (uint8_t)preface[s->preface]) {
                pass(s);
                continue;
            }
            s->preface++;
            done++;
            s->pos++;
            continue;
        }
        if (s->hdr_got < sizeof s->hdr) {
            if (s->hdr_got == 0) {
                s->frame_start = s->pos;
                if (!s->in_block) {
                    s->state = SL_H2_IN_HEAD; /* this frame may open a request */
                    s->head_start = s->pos;
                }
            }
            s->hdr[s->hdr_got++] = p[done++];
            s->pos++;
            if (s->hdr_got < sizeof s->hdr) continue;
            frame_begin(s);
        } else {
            size_t n = len - done < s->remaining ? len - done : s->remaining;
            payload(s, p + done, n);
            done += n;
            s->pos += n;
        }
        if (s->state != SL_H2_PASS && s->remaining == 0 && s->hdr_got == sizeof s->hdr && s->rst) {
            s->hdr_got = 0;
            s->rst = false;
            s->reset_stream = s->stream;
            *ev = SL_H2_RESET;
            return done;
        }
        if (s->state != SL_H2_PASS && s->remaining == 0 && frame_end(s)) {
            *ev = SL_H2_REQUEST;
            return done;
        }
    }
    return done;
}
