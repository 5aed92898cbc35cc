/* SPDX-License-Identifier: BSD-2-Clause */
/* fuzz_h1fast.c - differential libFuzzer target: the HTTP/1 scanner with
 * its one-pass fast path (core/http/h1fast.c) against http-parser alone.
 *
 * The first input byte picks the key (none, one of several header names,
 * a query parameter, a cookie; "X_Api-Key" is one name with "x-api-key",
 * and heads with two lines of the key, under folded names, are seeds) and
 * whether cookies are wanted; the rest is
 * the stream. For every split of the stream into two reads (of a stream
 * over 512 bytes, 256 of them), both scanners
 * are fed the same reads and must return the same thing from every call
 * (event, bytes consumed, position, state, where the last body ended, the
 * incomplete head's start) and report identical heads, every field.
 *
 * The one-pass reader is compiled once per instruction set (AVX2, SSE2,
 * plain C: core/http/h1fast_scan.h): each split is read by the next of
 * the paths this CPU has, so every path meets every input; and the
 * stream's first head is read by each path alone (no thread memory),
 * which must all give the plain path's result, field by field. The
 * thread's memory of a head answers heads that differ from it only in
 * header values without a scan: the first head, remembered, is read
 * again with each of its bytes changed, each as the plain path reads it.
 * Its memory of header lines (shapes) answers heads whose lines differ
 * from a recent head's only in values, whatever their request line: the
 * first head's lines are read after a longer request line, each of their
 * bytes changed, each as the plain path reads it. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../core/http/h1fast.h"
#include "../../core/http/http1.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool same_text(const char *a, const struct sl_h1_text *ta, const char *b,
                      const struct sl_h1_text *tb)
{
    return ta->len == tb->len && ta->present == tb->present && ta->truncated == tb->truncated &&
           ta->hash == tb->hash && memcmp(a, b, ta->len + 1) == 0;
}

static bool same_head(const struct sl_h1_head *a, const struct sl_h1_head *b)
{
    return a->start == b->start && a->end == b->end && strcmp(a->method, b->method) == 0 &&
           same_text(a->url, &a->url_info, b->url, &b->url_info) &&
           same_text(a->host, &a->host_info, b->host, &b->host_info) &&
           same_text(a->key, &a->key_info, b->key, &b->key_info) &&
           same_text(a->idem, &a->idem_info, b->idem, &b->idem_info) &&
           same_text(a->cookie, &a->cookie_info, b->cookie, &b->cookie_info) &&
           a->path_off == b->path_off && a->path_len == b->path_len &&
           a->query_off == b->query_off && a->query_len == b->query_len &&
           a->http_major == b->http_major && a->http_minor == b->http_minor &&
           a->chunked == b->chunked && a->has_length == b->has_length &&
           a->content_length == b->content_length && a->body == b->body &&
           a->keep_alive == b->keep_alive && a->upgrade == b->upgrade && a->odd == b->odd;
}

static void init(struct sl_h1 *s, uint8_t sel, bool slow)
{
    static const char *headers[] = {"x-api-key", "Host", "Idempotency-Key", "content-length",
                                    "X_Api-Key", "a",    "Cookie",          "x api"};
    int kind = sel & 3;
    const char *name = kind == SL_H1_KEY_HEADER   ? headers[(sel >> 2) & 7]
                       : kind == SL_H1_KEY_QUERY  ? "key"
                       : kind == SL_H1_KEY_COOKIE ? "sid"
                                                  : NULL;
    sl_h1_init(s, (enum sl_h1_key_kind)kind, name);
    if (sel & 0x20) sl_h1_want_cookies(s);
    if (sel & 0x40) sl_h1_trust_bodies(s);
    if (slow) sl_h1_slow_only(s);
}

/* A fast head's value slice, as core/http/request.c reads it (no copy):
 * when present, the reference's whole copy of the value, trimmed (unless
 * the copy is of another field: a key named Host). */
static bool same_slice(const char *base, struct sl_h1fast_slice v, const char *t,
                       const struct sl_h1_text *tt)
{
    if (!v.present || !tt->present || tt->truncated) return true;
    return v.trimmed == tt->len && memcmp(base + v.off, t, tt->len) == 0;
}

static bool same_slices(const struct sl_h1fast *f, const char *base, const struct sl_h1_head *r)
{
    return same_slice(base, f->host, r->host, &r->host_info) &&
           same_slice(base, f->key, r->key, &r->key_info) &&
           same_slice(base, f->idem, r->idem, &r->idem_info);
}

/* One read, fed to both until each has taken all of it. */
static bool feed_both(struct sl_h1 *f, struct sl_h1 *r, const uint8_t *buf, size_t len)
{
    size_t off = 0;
    while (off < len) {
        enum sl_h1_event ef, er;
        size_t nf = sl_h1_feed(f, buf + off, len - off, &ef);
        size_t nr = sl_h1_feed(r, buf + off, len - off, &er);
        if (nf != nr || ef != er || sl_h1_pos(f) != sl_h1_pos(r) ||
            sl_h1_state(f) != sl_h1_state(r) || sl_h1_body_end(f) != sl_h1_body_end(r))
            abort();
        if (sl_h1_state(f) == SL_H1_IN_HEAD && sl_h1_head_start(f) != sl_h1_head_start(r)) abort();
        const char *base;
        const struct sl_h1fast *fh = ef == SL_H1_HEAD ? sl_h1_fast(f, &base) : NULL;
        if (fh && !same_slices(fh, base, sl_h1_head(r))) abort();
        if (ef == SL_H1_HEAD && !same_head(sl_h1_head(f), sl_h1_head(r))) abort();
        if (ef == SL_H1_H2) return false;
        off += nf;
    }
    return true;
}

static const enum sl_h1fast_path paths[] = {SL_H1FAST_AVX2, SL_H1FAST_SSE2, SL_H1FAST_PLAIN};

static bool same_at(struct sl_h1fast_slice a, struct sl_h1fast_slice b)
{
    return a.present == b.present &&
           (!a.present || (a.off == b.off && a.len == b.len && a.trimmed == b.trimmed));
}

/* Every path reads the head at buf as the plain one does. */
static void paths_alike(const uint8_t *buf, size_t len, const struct sl_h1fast_key *k)
{
    struct sl_h1fast ref, f;
    bool want = sl_h1fast_scan_path(SL_H1FAST_PLAIN, (const char *)buf, len, k, &ref);
    for (size_t i = 0; i < 2; i++) {
        bool got = sl_h1fast_scan_path(paths[i], (const char *)buf, len, k, &f);
        if (!sl_h1fast_use(paths[i])) continue; /* not on this CPU: declines */
        if (got != want) abort();
        if (got &&
            (strcmp(f.method, ref.method) != 0 || f.content_length != ref.content_length ||
             f.end != ref.end || f.http_minor != ref.http_minor || f.has_length != ref.has_length ||
             !same_at(f.url, ref.url) || !same_at(f.host, ref.host) || !same_at(f.key, ref.key) ||
             !same_at(f.idem, ref.idem) || f.path_len != ref.path_len ||
             f.query_off != ref.query_off || f.query_len != ref.query_len))
            abort();
    }
}

static bool same_fast(const struct sl_h1fast *f, const struct sl_h1fast *ref)
{
    return strcmp(f->method, ref->method) == 0 && f->content_length == ref->content_length &&
           f->end == ref->end && f->http_minor == ref->http_minor &&
           f->has_length == ref->has_length && same_at(f->url, ref->url) &&
           same_at(f->host, ref->host) && same_at(f->key, ref->key) &&
           same_at(f->idem, ref->idem) && f->path_len == ref->path_len &&
           f->query_off == ref->query_off && f->query_len == ref->query_len;
}

/* The head at buf, when the reader remembers it (h1fast.c), against each
 * head made of it by changing one byte (its low bit, its 0x20 bit, or to
 * a control byte): read through the thread's memory (the same result, or
 * one read as differing only in values, or a scan), each as the plain
 * path reads it alone; and asked of the memory alone, as the lane asks
 * it (sl_h1fast_again: the same result, or none). */
static void near_alike(const uint8_t *buf, size_t len, const struct sl_h1fast_key *k)
{
    struct sl_h1fast ref, want;
    if (!sl_h1fast_scan_path(SL_H1FAST_PLAIN, (const char *)buf, len, k, &ref) ||
        ref.end > SL_H1FAST_MEMO)
        return;
    static const uint8_t flips[] = {0x01, 0x20, 0x0a};
    char b[SL_H1FAST_MEMO];
    for (size_t p = 0; p < ref.end; p++)
        for (size_t i = 0; i < sizeof flips; i++) {
            sl_h1fast_forget();
            if (!sl_h1fast_read((const char *)buf, ref.end, k)) abort();
            /* read again: the memory's own, with its serial */
            uint64_t serial = sl_h1fast_serial(sl_h1fast_read((const char *)buf, ref.end, k));
            if (!serial) abort();
            memcpy(b, buf, ref.end);
            b[p] = (char)(i == 2 ? flips[i] : b[p] ^ flips[i]);
            bool got = sl_h1fast_scan_path(SL_H1FAST_PLAIN, b, ref.end, k, &want);
            const struct sl_h1fast *g = sl_h1fast_again(b, ref.end, k, serial);
            if (g && (!got || !same_fast(g, &want))) abort();
            const struct sl_h1fast *f = sl_h1fast_read(b, ref.end, k);
            if ((f != NULL) != got || (f && !same_fast(f, &want))) abort();
        }
}

/* The head at buf, kept by the reader as a shape (its header lines,
 * h1fast.c), against heads made of another request line (its target a
 * byte longer) and its lines, each line byte changed in turn (as in
 * near_alike), and unchanged, alone in the read or with what follows the
 * head in the input: read through the thread's memory (from the shape,
 * or by the scan), each as the plain path reads it alone. */
static void shapes_alike(const uint8_t *buf, size_t len, const struct sl_h1fast_key *k)
{
    struct sl_h1fast ref, want;
    if (!sl_h1fast_scan_path(SL_H1FAST_PLAIN, (const char *)buf, len, k, &ref) ||
        ref.end >= SL_H1FAST_MEMO)
        return;
    size_t t = ref.url.off, lines = (size_t)ref.url.off + ref.url.len + 11;
    size_t more = len - ref.end < SL_H1FAST_MEMO ? len - ref.end : SL_H1FAST_MEMO;
    static const uint8_t flips[] = {0x01, 0x20, 0x0a};
    char b[2 * SL_H1FAST_MEMO + 1];
    for (size_t p = lines; p <= ref.end; p++)
        for (size_t i = 0; i < sizeof flips; i++) {
            sl_h1fast_forget();
            if (!sl_h1fast_read((const char *)buf, ref.end, k)) abort();
            memcpy(b, buf, t + 1); /* the target's '/', then a byte more */
            b[t + 1] = 'x';
            memcpy(b + t + 2, buf + t + 1, ref.end - t - 1);
            if (p < ref.end) b[p + 1] = (char)(i == 2 ? flips[i] : b[p + 1] ^ flips[i]);
            /* every other one with the input's bytes after its head (a body,
             * the next head) in the read: lines that end before it does */
            size_t n = ref.end + 1 + (p % 2 ? more : 0);
            memcpy(b + ref.end + 1, buf + ref.end, n - ref.end - 1);
            bool got = sl_h1fast_scan_path(SL_H1FAST_PLAIN, b, n, k, &want);
            const struct sl_h1fast *f = sl_h1fast_read(b, n, k);
            if ((f != NULL) != got || (f && !same_fast(f, &want))) abort();
            if (p == ref.end) break; /* unchanged: once */
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct sl_h1 fast, ref;
    if (size < 1) return 0;
    const uint8_t *buf = data + 1;
    size_t len = size - 1;
    init(&fast, data[0], false);
    paths_alike(buf, len, &fast.fast_key);
    near_alike(buf, len, &fast.fast_key);
    shapes_alike(buf, len, &fast.fast_key);
    size_t turn = 0;
    /* every split of an input up to 512 bytes; of a longer one, 256
     * splits spread over it (the work is quadratic in the length) */
    size_t step = len <= 512 ? 1 : len / 256;
    for (size_t k = 0; k <= len; k += step) {
        while (!sl_h1fast_use(paths[turn++ % 3])) /* the plain path is everywhere */
            ;
        sl_h1_fini(&fast);
        sl_h1_fini(&ref);
        init(&fast, data[0], false);
        init(&ref, data[0], true);
        if (feed_both(&fast, &ref, buf, k)) feed_both(&fast, &ref, buf + k, len - k);
    }
    return 0;
}
