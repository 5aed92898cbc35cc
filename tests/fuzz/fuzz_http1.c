/* SPDX-License-Identifier: BSD-2-Clause */
/* fuzz_http1.c - libFuzzer target for the HTTP/1 request-head scanner.
 *
 * The first input byte picks the key kind and a split seed; the rest is
 * the stream. It is scanned whole and in pieces, and the two scans must
 * report the same heads (offsets, method, URL, Host, key, Idempotency-Key)
 * and end in the same state: a differential check on every input (an odd
 * head, read by the rule of doubt, only its offsets and reason). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../core/http/http1.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_HEADS 64

struct scan {
    int heads;
    uint64_t sum; /* a digest of every head reported after the first MAX_HEADS */
    struct sl_h1_head head[MAX_HEADS];
    enum sl_h1_state state;
};

static void check_head(const struct sl_h1 *s, const struct sl_h1_head *h)
{
    /* a head is decided by SL_H1_HEAD_MAX + 1 bytes (+ its final LF) */
    if (h->start > h->end || h->end != sl_h1_pos(s) || h->end - h->start > SL_H1_HEAD_MAX + 2)
        abort();
    if (h->path_off + h->path_len > h->url_info.len ||
        h->query_off + h->query_len > h->url_info.len)
        abort();
    /* Values are len bytes (a NUL among them is kept), NUL-terminated. */
    if (h->key[h->key_info.len] || h->host[h->host_info.len] || h->idem[h->idem_info.len] ||
        h->url[h->url_info.len])
        abort();
}

static void scan(struct scan *r, int kind, const uint8_t *buf, size_t len, unsigned seed)
{
    static const char *names[] = {NULL, "x-api-key", "key", "sid"};
    static struct sl_h1 s;
    sl_h1_fini(&s);
    sl_h1_init(&s, (enum sl_h1_key_kind)kind, names[kind]);
    r->heads = 0;
    r->sum = 0;
    size_t off = 0;
    while (off < len) {
        size_t piece = seed ? 1 + (seed = seed * 1103515245 + 12345) % 13 : len - off;
        if (piece > len - off) piece = len - off;
        enum sl_h1_event ev;
        size_t n = sl_h1_feed(&s, buf + off, piece, &ev);
        if (n > piece || (ev == SL_H1_MORE && n != piece)) abort();
        off += n;
        if (sl_h1_pos(&s) != off) abort();
        if (ev == SL_H1_HEAD) {
            const struct sl_h1_head *h = sl_h1_head(&s);
            check_head(&s, h);
            if (r->heads < MAX_HEADS)
                r->head[r->heads] = *h;
            else
                r->sum = r->sum * 31 + h->end;
            r->heads++;
        }
        if (ev == SL_H1_H2) break;
    }
    r->state = sl_h1_state(&s);
}

static bool same_text(const char *a, const struct sl_h1_text *ta, const char *b,
                      const struct sl_h1_text *tb)
{
    return ta->len == tb->len && ta->present == tb->present && ta->truncated == tb->truncated &&
           memcmp(a, b, ta->len) == 0;
}

static bool same(const struct sl_h1_head *a, const struct sl_h1_head *b)
{
    /* an odd head's fields are what could be read before http-parser gave
     * up, which depends on how the bytes were split: only its place and
     * its reason must agree */
    if (a->odd || b->odd) return a->start == b->start && a->end == b->end && a->odd == b->odd;
    return a->start == b->start && a->end == b->end && strcmp(a->method, b->method) == 0 &&
           same_text(a->url, &a->url_info, b->url, &b->url_info) &&
           same_text(a->host, &a->host_info, b->host, &b->host_info) &&
           same_text(a->key, &a->key_info, b->key, &b->key_info) &&
           same_text(a->idem, &a->idem_info, b->idem, &b->idem_info) &&
           a->path_off == b->path_off && a->path_len == b->path_len &&
           a->query_len == b->query_len && a->chunked == b->chunked &&
           a->content_length == b->content_length && a->upgrade == b->upgrade &&
           a->keep_alive == b->keep_alive;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct scan whole, split;
    if (size < 1) return 0;
    int kind = data[0] & 3;
    unsigned seed = data[0] | 1u;
    scan(&whole, kind, data + 1, size - 1, 0);
    scan(&split, kind, data + 1, size - 1, seed);
    if (whole.heads != split.heads || whole.state != split.state || whole.sum != split.sum) abort();
    for (int i = 0; i < whole.heads && i < MAX_HEADS; i++)
        if (!same(&whole.head[i], &split.head[i])) abort();
    return 0;
}
