/* SPDX-License-Identifier: BSD-2-Clause */
/* h1resp.c - complete HTTP/1 responses (see h1resp.h).
 *
 * The fast path stands beside http-parser without touching it: it starts
 * only where the parser rests between messages (its state as at init,
 * no error), takes a whole head that h1resp_fast.c reads and whose
 * request was neither HEAD nor CONNECT, skips the body by its length,
 * and leaves the parser where it was, as http-parser would have left
 * itself (back at rest, its header count zeroed). What the callbacks see
 * is what on_headers_complete and on_message_complete would have done.
 */
#include "h1resp.h"

#include <string.h>

#include "h1resp_fast.h"

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

static void append(char *buf, size_t cap, uint16_t *len, bool *longer, const char *at, size_t n)
{
    if (n > cap - *len) {
        *longer = true;
        n = cap - *len;
    }
    memcpy(buf + *len, at, n);
    *len = (uint16_t)(*len + n);
}

/* The header just read, to the learned fields. */
static void header_done(struct sl_h1resp *r)
{
    if (!r->in_value) return;
    r->in_value = false;
    if (!r->name_long)
        sl_learn_header(&r->fields, r->name, r->nlen, r->value, r->value_long ? 0 : r->vlen);
    /* a final response's (the status line is read before any field) */
    if (r->on_field && !r->name_long && r->parser.status_code >= 200 && r->done < r->sent)
        r->on_field(r->arg, r->done, r->name, r->nlen, r->value, r->value_long ? 0 : r->vlen);
    r->nlen = r->vlen = 0;
    r->name_long = r->value_long = false;
}

static int on_message_begin(http_parser *p)
{
    struct sl_h1resp *r = of(p);
    sl_learn_resp_init(&r->fields, 0);
    r->nlen = r->vlen = 0;
    r->in_value = r->name_long = r->value_long = false;
    return 0;
}

static int on_header_field(http_parser *p, const char *at, size_t n)
{
    struct sl_h1resp *r = of(p);
    header_done(r);
    append(r->name, sizeof r->name, &r->nlen, &r->name_long, at, n);
    return 0;
}

static int on_header_value(http_parser *p, const char *at, size_t n)
{
    struct sl_h1resp *r = of(p);
    r->in_value = true;
    append(r->value, sizeof r->value, &r->vlen, &r->value_long, at, n);
    return 0;
}

static int on_headers_complete(http_parser *p)
{
    struct sl_h1resp *r = of(p);
    if ((r->on_head || r->on_field) && p->status_code >= 200) {
        header_done(r);
        r->fields.status = p->status_code;
        if (r->fields.any && r->done < r->sent) r->on_head(r->arg, r->done, &r->fields);
    }
    if (r->on_status && p->status_code >= 200 && r->done < r->sent)
        r->on_status(r->arg, r->done, p->status_code);
    if (p->status_code >= 100 && p->status_code < 200) return 0; /* interim: no body */
    if (r->done < r->sent && bit(r->connect, r->done) && p->status_code < 300) {
        r->lost = true; /* a tunnel: bytes from here on are not HTTP */
        return 1;
    }
    /* 1: the response has no body (http_parser's F_SKIPBODY) */
    return r->done < r->sent && bit(r->head, r->done) ? 1 : 0;
}

static int on_body_bytes(http_parser *p, const char *at, size_t n)
{
    struct sl_h1resp *r = of(p);
    if (r->on_body && p->status_code >= 200 && r->done < r->sent)
        r->on_body(r->arg, r->done, at, n);
    return 0;
}

static int on_message_complete(http_parser *p)
{
    struct sl_h1resp *r = of(p);
    if (p->status_code == 101) r->lost = true;
    if (p->status_code >= 100 && p->status_code < 200) return 0;
    if (r->on_done && r->done < r->sent) r->on_done(r->arg, r->done);
    r->done++;
    return 0;
}

static const http_parser_settings settings = {
    .on_headers_complete = on_headers_complete,
    .on_message_complete = on_message_complete,
};

static const http_parser_settings settings_learn = {
    .on_message_begin = on_message_begin,
    .on_header_field = on_header_field,
    .on_header_value = on_header_value,
    .on_headers_complete = on_headers_complete,
    .on_body = on_body_bytes,
    .on_message_complete = on_message_complete,
};

void sl_h1resp_init(struct sl_h1resp *r)
{
    memset(r, 0, sizeof *r);
    http_parser_init(&r->parser, HTTP_RESPONSE);
    r->rest = (uint8_t)r->parser.state;
}

void sl_h1resp_learn(struct sl_h1resp *r,
                     void (*on_head)(void *arg, uint64_t index, const struct sl_learn_resp *f),
                     void *arg)
{
    r->on_head = on_head;
    r->arg = arg;
}

void sl_h1resp_statuses(struct sl_h1resp *r,
                        void (*on_status)(void *arg, uint64_t index, int status), void *arg)
{
    r->on_status = on_status;
    r->arg = arg;
}

void sl_h1resp_ends(struct sl_h1resp *r, void (*on_done)(void *arg, uint64_t index), void *arg)
{
    r->on_done = on_done;
    r->arg = arg;
}

void sl_h1resp_bodies(struct sl_h1resp *r,
                      void (*on_field)(void *arg, uint64_t index, const char *name, size_t nlen,
                                       const char *value, size_t vlen),
                      void (*on_body)(void *arg, uint64_t index, const char *at, size_t n),
                      void *arg)
{
    r->on_field = on_field;
    r->on_body = on_body;
    r->arg = arg;
}

void sl_h1resp_sent(struct sl_h1resp *r, const char *method)
{
    if (r->sent - r->done >= SL_H1RESP_RING) r->lost = true; /* its method would be forgotten */
    /* most methods differ from both at their first letter */
    put(r->head, r->sent, method[0] == 'H' && strcmp(method, "HEAD") == 0);
    put(r->connect, r->sent, method[0] == 'C' && strcmp(method, "CONNECT") == 0);
    r->sent++;
}

/* The end of a response the fast path read (on_message_complete's). */
static void fast_done(struct sl_h1resp *r)
{
    if (r->on_done) r->on_done(r->arg, r->done);
    r->done++;
}

/* Reads what the fast path can of the n bytes at p: the rest of a body
 * it is skipping, then whole common heads at the parser's rest and their
 * bodies. Returns how many bytes it read; the parser reads the rest. */
static size_t fast(struct sl_h1resp *r, const char *p, size_t n)
{
    size_t at = 0;
    for (;;) {
        if (r->body_left) {
            size_t k = r->body_left < n - at ? (size_t)r->body_left : n - at;
            r->body_left -= k;
            at += k;
            if (r->body_left) return at;
            fast_done(r);
        }
        struct sl_h1resp_head h;
        size_t len;
        /* only statuses and ends wanted; the parser at rest, its header
         * count as far from its bound as a fast head is long; a request
         * whose response has a body by its length */
        if (at == n || r->slow_only || r->on_head || r->on_field || r->parser.state != r->rest ||
            HTTP_PARSER_ERRNO(&r->parser) != HPE_OK ||
            r->parser.nread > HTTP_MAX_HEADER_SIZE - SL_H1RESP_FAST_MAX || r->done >= r->sent ||
            bit(r->head, r->done) || bit(r->connect, r->done) ||
            !(len = sl_h1resp_fast_head(p + at, n - at, &h)))
            return at;
        at += len;
        r->parser.nread = 0; /* as http-parser zeroes it at a head's end */
        if (r->on_status) r->on_status(r->arg, r->done, h.status);
        r->body_left = h.length;
        if (!h.length) fast_done(r);
    }
}

void sl_h1resp_feed(struct sl_h1resp *r, const void *buf, size_t n)
{
    if (r->lost || n == 0) return;
    if (r->stale) { /* as http-parser after its HPE_INVALID_EOF_STATE */
        r->lost = true;
        return;
    }
    size_t at = fast(r, buf, n);
    if (at == n) return;
    buf = (const char *)buf + at;
    n -= at;
    r->parser.data = r;
    size_t used = http_parser_execute(
        &r->parser, r->on_head || r->on_field ? &settings_learn : &settings, buf, n);
    if (HTTP_PARSER_ERRNO(&r->parser) != HPE_OK || used != n) r->lost = true;
    /* a response the server sent before any request (or a second one to
     * the same request) is not one the program is owed */
    if (r->done > r->sent) r->lost = true;
}

void sl_h1resp_lose(struct sl_h1resp *r)
{
    r->lost = true;
}

void sl_h1resp_eof(struct sl_h1resp *r)
{
    if (r->lost) return;
    if (r->body_left) { /* a body cut short: http-parser's HPE_INVALID_EOF_STATE */
        r->stale = true;
        return;
    }
    r->parser.data = r;
    http_parser_execute(&r->parser, r->on_head || r->on_field ? &settings_learn : &settings, NULL,
                        0);
}

uint64_t sl_h1resp_outstanding(const struct sl_h1resp *r)
{
    return r->lost ? UINT64_MAX : r->sent - r->done;
}
