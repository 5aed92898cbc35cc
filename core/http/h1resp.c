/* SPDX-License-Identifier: BSD-2-Clause */
/* h1resp.c - complete HTTP/1 responses (see h1resp.h). */
#include "h1resp.h"

#include <string.h>

static struct sl_h1resp *of(http_parser *p)
{
    return (struct sl_h1resp *)p->data;
}

static bool bit(const uint64_t *set, uint64_t i)
{
    i %= SL_H1RESP_RING;
    return (set[i / 64] >> (i % 64)) & 1;
}

static void put(uint64_t *set, uint64_t i, bool on)
{
    i %= SL_H1RESP_RING;
    if (on)
        set[i / 64] |= 1ull << (i % 64);
    else
        set[i / 64] &= ~(1ull << (i % 64));
}

static int on_headers_complete(http_parser *p)
{
    struct sl_h1resp *r = of(p);
    if (p->status_code >= 100 && p->status_code < 200) return 0; /* interim: no body */
    if (r->done < r->sent && bit(r->connect, r->done) && p->status_code < 300) {
        r->lost = true; /* a tunnel: bytes from here on are not HTTP */
        return 1;
    }
    /* 1: the response has no body (http_parser's F_SKIPBODY) */
    return r->done < r->sent && bit(r->head, r->done) ? 1 : 0;
}

static int on_message_complete(http_parser *p)
{
    struct sl_h1resp *r = of(p);
    if (p->status_code == 101) r->lost = true;
    if (p->status_code >= 100 && p->status_code < 200) return 0;
    r->done++;
    return 0;
}

static const http_parser_settings settings = {
    .on_headers_complete = on_headers_complete,
    .on_message_complete = on_message_complete,
};

void sl_h1resp_init(struct sl_h1resp *r)
{
    memset(r, 0, sizeof *r);
    http_parser_init(&r->parser, HTTP_RESPONSE);
}

void sl_h1resp_sent(struct sl_h1resp *r, const char *method)
{
    if (r->sent - r->done >= SL_H1RESP_RING) r->lost = true; /* its method would be forgotten */
    put(r->head, r->sent, strcmp(method, "HEAD") == 0);
    put(r->connect, r->sent, strcmp(method, "CONNECT") == 0);
    r->sent++;
}

void sl_h1resp_feed(struct sl_h1resp *r, const void *buf, size_t n)
{
    if (r->lost || n == 0) return;
    r->parser.data = r;
    size_t used = http_parser_execute(&r->parser, &settings, buf, n);
    if (HTTP_PARSER_ERRNO(&r->parser) != HPE_OK || used != n) r->lost = true;
    /* a response the server sent before any request (or a second one to
     * the same request) is not one the program is owed */
    if (r->done > r->sent) r->lost = true;
}

void sl_h1resp_eof(struct sl_h1resp *r)
{
    if (r->lost) return;
    r->parser.data = r;
    http_parser_execute(&r->parser, &settings, NULL, 0);
}

uint64_t sl_h1resp_outstanding(const struct sl_h1resp *r)
{
    return r->lost ? UINT64_MAX : r->sent - r->done;
}
