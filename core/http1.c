/* http1.c - request heads over libhttp-parser: see http1.h.
 *
 * The parser is paused when a head completes and when a message ends, so
 * sl_h1_feed can say where each head begins and returns to the caller
 * right after one completes. Between messages the parser skips stray CRLF
 * itself; they count as part of the next head.
 */
#include <string.h>
#include <strings.h>

#include "http1.h"

enum target { T_NONE, T_HOST, T_COOKIE, T_IDEM, T_HEADER };

static struct sl_h1_value *target_value(struct sl_h1 *h, enum target t)
{
    switch (t) {
    case T_HOST:
        return &h->host;
    case T_COOKIE:
        return &h->cookie;
    case T_IDEM:
        return &h->idem;
    case T_HEADER:
        return &h->header;
    default:
        return NULL;
    }
}

static void append(char *dst, uint16_t *len, size_t cap, const char *at, size_t n)
{
    size_t room = cap - 1 - *len;
    if (n > room) n = room;
    memcpy(dst + *len, at, n);
    *len = (uint16_t)(*len + n);
    dst[*len] = 0;
}

static int on_message_begin(http_parser *p)
{
    struct sl_h1 *h = p->data;
    h->state = SL_H1_HEAD;
    h->method[0] = 0;
    h->url_len = 0;
    h->url[0] = 0;
    h->field_len = 0;
    h->field[0] = 0;
    h->in_value = false;
    h->value = NULL;
    h->host.seen = h->cookie.seen = h->idem.seen = h->header.seen = false;
    h->host.len = h->cookie.len = h->idem.len = h->header.len = 0;
    return 0;
}

static int on_url(http_parser *p, const char *at, size_t n)
{
    struct sl_h1 *h = p->data;
    append(h->url, &h->url_len, sizeof h->url, at, n);
    return 0;
}

static int on_header_field(http_parser *p, const char *at, size_t n)
{
    struct sl_h1 *h = p->data;
    if (h->in_value) { /* a new field begins */
        h->in_value = false;
        h->field_len = 0;
        h->field[0] = 0;
    }
    append(h->field, &h->field_len, sizeof h->field, at, n);
    return 0;
}

static enum target classify(const struct sl_h1 *h)
{
    if (strcasecmp(h->field, "host") == 0) return T_HOST;
    if (strcasecmp(h->field, "cookie") == 0) return T_COOKIE;
    if (strcasecmp(h->field, "idempotency-key") == 0) return T_IDEM;
    if (h->want[0] && strcasecmp(h->field, h->want) == 0) return T_HEADER;
    return T_NONE;
}

static int on_header_value(http_parser *p, const char *at, size_t n)
{
    struct sl_h1 *h = p->data;
    if (!h->in_value) { /* the field's name is complete: where does its value go? */
        h->in_value = true;
        struct sl_h1_value *v = target_value(h, classify(h));
        /* the first of repeated headers counts; the rest are ignored */
        h->value = v && !v->seen ? v : NULL;
        if (h->value) {
            h->value->seen = true;
            h->value->len = 0;
            h->value->text[0] = 0;
        }
    }
    if (h->value) append(h->value->text, &h->value->len, sizeof h->value->text, at, n);
    return 0;
}

static int on_headers_complete(http_parser *p)
{
    struct sl_h1 *h = p->data;
    const char *m = http_method_str((enum http_method)p->method);
    size_t ml = strlen(m);
    if (ml >= sizeof h->method) ml = sizeof h->method - 1;
    memcpy(h->method, m, ml);
    h->method[ml] = 0;
    h->complete = true;
    http_parser_pause(p, 1);
    return 0;
}

static int on_message_complete(http_parser *p)
{
    struct sl_h1 *h = p->data;
    h->state = SL_H1_IDLE;
    http_parser_pause(p, 1);
    return 0;
}

static const http_parser_settings settings = {
    .on_message_begin = on_message_begin,
    .on_url = on_url,
    .on_header_field = on_header_field,
    .on_header_value = on_header_value,
    .on_headers_complete = on_headers_complete,
    .on_message_complete = on_message_complete,
};

void sl_h1_init(struct sl_h1 *h, const char *header)
{
    memset(h, 0, sizeof *h);
    http_parser_init(&h->parser, HTTP_REQUEST);
    h->parser.data = h;
    h->state = SL_H1_IDLE;
    if (header) {
        size_t n = strlen(header);
        if (n >= sizeof h->want) n = sizeof h->want - 1;
        memcpy(h->want, header, n);
        h->want[n] = 0;
    }
}

void sl_h1_copy(struct sl_h1 *dst, const struct sl_h1 *src)
{
    memcpy(dst, src, sizeof *dst);
    dst->parser.data = dst;
    if (src->value)
        dst->value =
            (struct sl_h1_value *)((char *)dst + ((const char *)src->value - (const char *)src));
}

static void set(const char **p, size_t *n, const struct sl_h1_value *v)
{
    *p = v->seen ? v->text : NULL;
    *n = v->seen ? v->len : 0;
}

static void report(const struct sl_h1 *h, struct sl_h1_head *o)
{
    memset(o, 0, sizeof *o);
    o->start = h->head_start;
    o->end = h->head_end;
    o->method = h->method;
    o->method_len = strlen(h->method);
    const char *u = h->url, *end = h->url + h->url_len;
    /* absolute form (a proxy's request): the path begins after the authority */
    if (h->url_len > 7 &&
        (strncasecmp(u, "http://", 7) == 0 || strncasecmp(u, "https://", 8) == 0)) {
        const char *s = memchr(u + 7, '/', (size_t)(end - u - 7));
        u = s ? s : end;
    }
    const char *q = memchr(u, '?', (size_t)(end - u));
    o->path = u;
    o->path_len = (size_t)((q ? q : end) - u);
    if (q) {
        o->query = q + 1;
        o->query_len = (size_t)(end - q - 1);
    }
    set(&o->host, &o->host_len, &h->host);
    set(&o->cookie, &o->cookie_len, &h->cookie);
    set(&o->idem, &o->idem_len, &h->idem);
    set(&o->header, &o->header_len, &h->header);
}

size_t sl_h1_feed(struct sl_h1 *h, const char *buf, size_t len, struct sl_h1_head *head, bool *got)
{
    size_t done = 0;
    *got = false;
    while (done < len && h->state != SL_H1_PASSTHROUGH) {
        uint64_t base = h->pos;
        size_t want = len - done;
        /* a head may not grow past SL_H1_HEAD_MAX: feed no more than that */
        if (h->state == SL_H1_HEAD || h->state == SL_H1_IDLE) {
            uint64_t used = base - h->head_start;
            if (used >= SL_H1_HEAD_MAX) {
                h->state = SL_H1_PASSTHROUGH;
                break;
            }
            if (want > SL_H1_HEAD_MAX - used) want = (size_t)(SL_H1_HEAD_MAX - used);
        }
        h->complete = false;
        size_t n = http_parser_execute(&h->parser, &settings, buf + done, want);
        enum http_errno err = HTTP_PARSER_ERRNO(&h->parser);
        done += n;
        h->pos += n;
        if (err == HPE_PAUSED) {
            http_parser_pause(&h->parser, 0);
            if (h->complete) {
                h->head_end = h->pos + 1; /* the parser stops before the head's last LF */
                if (h->parser.upgrade || h->parser.method == HTTP_CONNECT) {
                    /* reported, then nothing after it is HTTP/1 */
                    h->head_end = h->pos;
                    report(h, head);
                    h->state = SL_H1_PASSTHROUGH;
                    *got = true;
                    return done;
                }
                h->state = SL_H1_BODY;
                report(h, head);
                *got = true;
                return done;
            }
            if (h->state == SL_H1_IDLE) h->head_start = h->pos; /* a message ended */
            continue;
        }
        if (err != HPE_OK) {
            h->state = SL_H1_PASSTHROUGH;
            break;
        }
        if (n < want) { /* stopped without a pause or error: an upgrade the parser left */
            h->state = SL_H1_PASSTHROUGH;
            break;
        }
    }
    if (h->state == SL_H1_PASSTHROUGH) {
        h->pos += len - done;
        return len;
    }
    return done;
}
