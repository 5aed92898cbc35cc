/* SPDX-License-Identifier: BSD-2-Clause */
/* fuzz_h2.c - libFuzzer target for the HTTP/2 request scanner.
 *
 * The first input byte picks the key kind and a split seed; the rest are
 * frames (the connection preface is put in front, so every input reaches
 * the frame scanner and the HPACK inflater). The stream is scanned whole
 * and in pieces: both scans must report the same requests, read alike
 * (path, key, host, method, odd): Huffman strings held across pieces
 * (core/http/h2.c) change nothing. Seeds reach each class of block
 * nghttp2 refuses (over-long Huffman padding, which nginx reads, and
 * what both refuse) and the requests after it. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../core/http/h2.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_REQ 32

struct scan {
    int count;
    uint64_t start[MAX_REQ], end[MAX_REQ];
    char url[MAX_REQ][64];
    char key[MAX_REQ][64];
    char host[MAX_REQ][64];
    char method[MAX_REQ][16];
    int odd[MAX_REQ];
    int resets; /* the client's RST_STREAMs: where each ends, and its stream */
    uint64_t reset_end[MAX_REQ];
    uint32_t reset[MAX_REQ];
    enum sl_h2_state state;
};

static void feed(struct sl_h2 *s, struct scan *r, const uint8_t *buf, size_t len)
{
    size_t off = 0;
    while (off < len) {
        enum sl_h2_event ev;
        size_t n = sl_h2_feed(s, buf + off, len - off, &ev);
        if (n > len - off || (ev == SL_H2_MORE && n != len - off)) abort();
        off += n;
        if (ev == SL_H2_RESET) {
            if (sl_h2_reset_stream(s) == 0) abort();
            if (r->resets < MAX_REQ) {
                r->reset_end[r->resets] = sl_h2_pos(s);
                r->reset[r->resets] = sl_h2_reset_stream(s);
            }
            r->resets++;
        }
        if (ev == SL_H2_REQUEST) {
            const struct sl_h1_head *h = sl_h2_head(s);
            if (h->start >= h->end || h->end != sl_h2_pos(s)) abort();
            if (h->url[h->url_info.len] || h->key[h->key_info.len]) abort();
            if (r->count < MAX_REQ) {
                r->start[r->count] = h->start;
                r->end[r->count] = h->end;
                memcpy(r->url[r->count], h->url, 63);
                memcpy(r->key[r->count], h->key, 63);
                memcpy(r->host[r->count], h->host, 63);
                memcpy(r->method[r->count], h->method, 15);
                r->odd[r->count] = h->odd;
            }
            r->count++;
        }
    }
}

static void scan(struct scan *r, int kind, const uint8_t *buf, size_t len, unsigned seed)
{
    static const char *names[] = {NULL, "x-api-key", "key", "sid"};
    static const char preface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
    struct sl_h2 s;
    sl_h2_init(&s, (enum sl_h1_key_kind)kind, names[kind], 0, false);
    memset(r, 0, sizeof *r);
    feed(&s, r, (const uint8_t *)preface, 24);
    size_t off = 0;
    while (off < len) {
        size_t piece = seed ? 1 + (seed = seed * 1103515245 + 12345) % 17 : len - off;
        if (piece > len - off) piece = len - off;
        feed(&s, r, buf + off, piece);
        off += piece;
    }
    r->state = sl_h2_state(&s);
    sl_h2_fini(&s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct scan whole, split;
    if (size < 1) return 0;
    int kind = data[0] & 3;
    scan(&whole, kind, data + 1, size - 1, 0);
    scan(&split, kind, data + 1, size - 1, data[0] | 1u);
    if (whole.count != split.count || whole.state != split.state || whole.resets != split.resets)
        abort();
    for (int i = 0; i < whole.resets && i < MAX_REQ; i++)
        if (whole.reset_end[i] != split.reset_end[i] || whole.reset[i] != split.reset[i]) abort();
    for (int i = 0; i < whole.count && i < MAX_REQ; i++)
        if (whole.start[i] != split.start[i] || whole.end[i] != split.end[i] ||
            strcmp(whole.url[i], split.url[i]) != 0 || strcmp(whole.key[i], split.key[i]) != 0 ||
            strcmp(whole.host[i], split.host[i]) != 0 ||
            strcmp(whole.method[i], split.method[i]) != 0 || whole.odd[i] != split.odd[i])
            abort();
    return 0;
}
