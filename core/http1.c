/* http1.c - the request-head scanner over libhttp-parser (see http1.h).
 *
 * http_parser 2.9.4 calls back with pieces of the URL, header names and
 * values as they arrive, so every value is accumulated into a bounded
 * buffer of the head being read. To report each head before the bytes
 * after it are scanned, the callbacks pause the parser at the end of the
 * head (on_headers_complete) and at the end of each message
 * (on_message_complete): http_parser_execute then returns exactly how
 * far it got, which gives the stream offsets without any pointer
 * arithmetic across calls. A paused parser is resumed with
 * http_parser_pause(p, 0).
 *
 * After on_headers_complete the parser has not yet consumed the head's
 * final LF; that byte is fed at once (it is always in the same buffer),
 * so a reported head always ends at sl_h1_pos().
 *
 * The first bytes of a stream are held (consumed, not parsed) while they
 * match the HTTP/2 connection preface; when they stop matching, the held
 * bytes are exactly the preface's first bytes, so they are parsed from
 * the constant string.
 */
#include "http1.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

static const char h2_preface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
#define H2_PREFACE_LEN (sizeof h2_preface - 1)

enum target { T_NONE, T_HOST, T_KEY, T_IDEM, T_COOKIE };

static void text_reset(char *buf, struct sl_h1_text *t)
{
    buf[0] = '\0';
    *t = (struct sl_h1_text){0};
}

static void text_append(char *buf, size_t cap, struct sl_h1_text *t, const char *at, size_t n)
{
    size_t room = cap - 1 - t->len;
    t->present = true;
    if (n > room) {
        n = room;
        t->truncated = true;
    }
    memcpy(buf + t->len, at, n);
    t->len += n;
    buf[t->len] = '\0';
}

void sl_h1_text_set(char *buf, size_t cap, struct sl_h1_text *t, const char *at, size_t n)
{
    text_reset(buf, t);
    text_append(buf, cap, t, at, n);
}

static struct sl_h1 *scanner(http_parser *p)
{
    return p->data;
}

static bool name_is(const char *name, size_t len, const char *want)
{
    return strlen(want) == len && strncasecmp(name, want, len) == 0;
}

void sl_h1_query_key(struct sl_h1_head *h, const char *name, size_t name_len)
{
    const char *v;
    size_t n;
    if (!h->url_info.truncated &&
        sl_h1_param(h->url + h->query_off, h->query_len, '&', name, name_len, &v, &n))
        sl_h1_text_set(h->key, sizeof h->key, &h->key_info, v, n);
}

bool sl_h1_param(const char *s, size_t len, char sep, const char *name, size_t name_len,
                 const char **val, size_t *val_len)
{
    size_t i = 0;
    while (i < len) {
        while (i < len && sep == ';' && (s[i] == ' ' || s[i] == '\t'))
            i++;
        size_t start = i;
        while (i < len && s[i] != sep)
            i++;
        size_t end = i++;
        const char *eq = memchr(s + start, '=', end - start);
        size_t nlen = eq ? (size_t)(eq - (s + start)) : end - start;
        if (nlen == name_len && memcmp(s + start, name, nlen) == 0) {
            *val = eq ? eq + 1 : s + end;
            *val_len = eq ? (size_t)(s + end - (eq + 1)) : 0;
            return true;
        }
    }
    return false;
}

/* Trailing spaces are not part of a field value (RFC 9110, 5.5). */
static void trim(char *buf, struct sl_h1_text *t)
{
    while (t->len > 0 && (buf[t->len - 1] == ' ' || buf[t->len - 1] == '\t'))
        buf[--t->len] = '\0';
}

/* The end of one header line's value: the Cookie line is searched now. */
static void value_done(struct sl_h1 *s)
{
    struct sl_h1_head *h = &s->head;
    if (s->target == T_HOST)
        trim(h->host, &h->host_info);
    else if (s->target == T_KEY)
        trim(h->key, &h->key_info);
    else if (s->target == T_IDEM)
        trim(h->idem, &h->idem_info);
    if (s->target == T_COOKIE && !s->head.key_info.present && !s->cookie_info.truncated) {
        const char *v;
        size_t n;
        if (sl_h1_param(s->cookie, s->cookie_info.len, ';', s->key_name, s->key_name_len, &v, &n))
            sl_h1_text_set(s->head.key, sizeof s->head.key, &s->head.key_info, v, n);
    }
    text_reset(s->cookie, &s->cookie_info);
    s->target = T_NONE;
    s->in_value = false;
    s->field_len = 0;
    s->field_long = false;
}

static enum target target_of(const struct sl_h1 *s)
{
    if (s->field_long) return T_NONE;
    const char *f = s->field;
    size_t n = s->field_len;
    /* The first of repeated headers wins (host, key, idempotency key). */
    if (s->key_kind == SL_H1_KEY_HEADER && n == s->key_name_len &&
        strncasecmp(f, s->key_name, n) == 0)
        return s->head.key_info.present ? T_NONE : T_KEY;
    if (s->key_kind == SL_H1_KEY_COOKIE && name_is(f, n, "cookie")) return T_COOKIE;
    if (name_is(f, n, "host")) return s->head.host_info.present ? T_NONE : T_HOST;
    if (name_is(f, n, "idempotency-key")) return s->head.idem_info.present ? T_NONE : T_IDEM;
    return T_NONE;
}

static int on_message_begin(http_parser *p)
{
    struct sl_h1 *s = scanner(p);
    struct sl_h1_head *h = &s->head;
    text_reset(h->url, &h->url_info);
    text_reset(h->host, &h->host_info);
    text_reset(h->key, &h->key_info);
    text_reset(h->idem, &h->idem_info);
    text_reset(s->cookie, &s->cookie_info);
    h->path_off = h->path_len = h->query_off = h->query_len = 0;
    s->field_len = 0;
    s->field_long = false;
    s->in_value = false;
    s->target = T_NONE;
    return 0;
}

static int on_url(http_parser *p, const char *at, size_t n)
{
    struct sl_h1 *s = scanner(p);
    text_append(s->head.url, sizeof s->head.url, &s->head.url_info, at, n);
    return 0;
}

static int on_header_field(http_parser *p, const char *at, size_t n)
{
    struct sl_h1 *s = scanner(p);
    if (s->in_value) value_done(s);
    if (s->field_len + n >= sizeof s->field) {
        s->field_long = true;
        return 0;
    }
    memcpy(s->field + s->field_len, at, n);
    s->field_len += n;
    return 0;
}

static int on_header_value(http_parser *p, const char *at, size_t n)
{
    struct sl_h1 *s = scanner(p);
    struct sl_h1_head *h = &s->head;
    if (!s->in_value) {
        s->in_value = true;
        s->target = target_of(s);
    }
    switch ((enum target)s->target) {
    case T_HOST:
        text_append(h->host, sizeof h->host, &h->host_info, at, n);
        break;
    case T_KEY:
        text_append(h->key, sizeof h->key, &h->key_info, at, n);
        break;
    case T_IDEM:
        text_append(h->idem, sizeof h->idem, &h->idem_info, at, n);
        break;
    case T_COOKIE:
        text_append(s->cookie, sizeof s->cookie, &s->cookie_info, at, n);
        break;
    case T_NONE:
        break;
    }
    return 0;
}

/* Path and query inside the URL; absolute-form ("http://host/p?q") gives
 * its host too when no Host header came. */
static void split_url(struct sl_h1 *s)
{
    struct sl_h1_head *h = &s->head;
    const char *u = h->url;
    size_t n = h->url_info.len;
    if (n > 0 && u[0] != '/' && u[0] != '*') {
        struct http_parser_url pu;
        http_parser_url_init(&pu);
        if (http_parser_parse_url(u, n, s->parser.method == HTTP_CONNECT, &pu) == 0) {
            if (pu.field_set & (1 << UF_PATH)) {
                h->path_off = pu.field_data[UF_PATH].off;
                h->path_len = pu.field_data[UF_PATH].len;
            }
            if (pu.field_set & (1 << UF_QUERY)) {
                h->query_off = pu.field_data[UF_QUERY].off;
                h->query_len = pu.field_data[UF_QUERY].len;
            }
            if ((pu.field_set & (1 << UF_HOST)) && !h->host_info.present)
                sl_h1_text_set(h->host, sizeof h->host, &h->host_info,
                               u + pu.field_data[UF_HOST].off, pu.field_data[UF_HOST].len);
            return;
        }
    }
    size_t end = strcspn(u, "?#");
    h->path_off = 0;
    h->path_len = end;
    if (end < n && u[end] == '?') {
        h->query_off = end + 1;
        h->query_len = strcspn(u + end + 1, "#");
    }
}

static int on_headers_complete(http_parser *p)
{
    struct sl_h1 *s = scanner(p);
    struct sl_h1_head *h = &s->head;
    if (s->in_value) value_done(s);
    split_url(s);
    snprintf(h->method, sizeof h->method, "%s", http_method_str(p->method));
    h->http_major = (uint8_t)p->http_major;
    h->http_minor = (uint8_t)p->http_minor;
    h->chunked = (p->flags & F_CHUNKED) != 0;
    h->has_length = (p->flags & F_CONTENTLENGTH) != 0;
    h->content_length = h->has_length ? p->content_length : 0;
    h->body = h->chunked || h->content_length > 0;
    h->keep_alive = http_should_keep_alive(p) != 0;
    h->upgrade = p->upgrade != 0;
    if (s->key_kind == SL_H1_KEY_QUERY) sl_h1_query_key(h, s->key_name, s->key_name_len);
    /* per=header:Host or header:Idempotency-Key: the same value. */
    if (s->key_kind == SL_H1_KEY_HEADER && !h->key_info.present) {
        if (name_is(s->key_name, s->key_name_len, "host") && h->host_info.present)
            sl_h1_text_set(h->key, sizeof h->key, &h->key_info, h->host, h->host_info.len);
        else if (name_is(s->key_name, s->key_name_len, "idempotency-key") && h->idem_info.present)
            sl_h1_text_set(h->key, sizeof h->key, &h->key_info, h->idem, h->idem_info.len);
    }
    s->head_done = true;
    http_parser_pause(p, 1);
    return 0;
}

static int on_message_complete(http_parser *p)
{
    scanner(p)->message_done = true;
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

void sl_h1_init(struct sl_h1 *s, enum sl_h1_key_kind kind, const char *name)
{
    memset(s, 0, sizeof *s);
    http_parser_init(&s->parser, HTTP_REQUEST);
    s->state = SL_H1_IDLE;
    s->key_kind = kind;
    size_t n = name ? strlen(name) : 0;
    if (kind == SL_H1_KEY_NONE || n == 0 || n >= sizeof s->key_name) {
        s->key_kind = SL_H1_KEY_NONE; /* never found: every head reports the key missing */
        return;
    }
    memcpy(s->key_name, name, n);
    s->key_name_len = n;
}

const struct sl_h1_head *sl_h1_head(const struct sl_h1 *s)
{
    return &s->head;
}

/* Runs the parser over buf; returns what it consumed. The flags set by
 * the callbacks and the parser's error say what happened. */
static size_t run(struct sl_h1 *s, const char *buf, size_t len)
{
    s->parser.data = s;
    size_t n = http_parser_execute(&s->parser, &settings, buf, len);
    enum http_errno e = HTTP_PARSER_ERRNO(&s->parser);
    if (e == HPE_PAUSED)
        http_parser_pause(&s->parser, 0);
    else if (e != HPE_OK)
        s->state = SL_H1_PASS;
    return n;
}

/* Stream bytes at offsets below 24 that match the HTTP/2 preface are held
 * back; returns how many of buf were taken that way, or sets *h2. */
static size_t hold_preface(struct sl_h1 *s, const char *buf, size_t len, bool *h2)
{
    size_t n = 0;
    while (n < len && s->preface < H2_PREFACE_LEN && buf[n] == h2_preface[s->preface]) {
        n++;
        s->preface++;
    }
    s->pos += n;
    *h2 = s->preface == H2_PREFACE_LEN;
    return n;
}

size_t sl_h1_feed(struct sl_h1 *s, const void *data, size_t len, enum sl_h1_event *ev)
{
    const char *buf = data;
    size_t done = 0;
    *ev = SL_H1_MORE;
    if (s->pos < H2_PREFACE_LEN && s->pos == s->preface && s->state != SL_H1_PASS) {
        bool h2;
        done = hold_preface(s, buf, len, &h2);
        if (h2) {
            s->state = SL_H1_PASS;
            *ev = SL_H1_H2;
            return done;
        }
        s->state = SL_H1_IN_HEAD;
        s->head_start = 0;
        if (done == len) return done;
        size_t held = s->preface;
        s->preface = UINT8_MAX; /* diverged: never held again */
        if (held > 0 && run(s, h2_preface, held) != held) s->state = SL_H1_PASS;
    }
    while (done < len) {
        if (s->state == SL_H1_PASS) {
            s->pos += len - done;
            *ev = SL_H1_PASSTHROUGH;
            return len;
        }
        if (s->state == SL_H1_IDLE) {
            s->state = SL_H1_IN_HEAD;
            s->head_start = s->pos;
        }
        s->head_done = s->message_done = false;
        size_t n = run(s, buf + done, len - done);
        done += n;
        s->pos += n;
        if (s->head_done && s->state != SL_H1_PASS) {
            /* The head's final LF (always in this buffer): fed now, so the
             * head ends at pos. */
            n = done < len ? run(s, buf + done, 1) : 0;
            done += n;
            s->pos += n;
            s->state = s->message_done ? SL_H1_IDLE : SL_H1_IN_BODY;
            if (s->head.upgrade) s->state = SL_H1_PASS;
            s->head.start = s->head_start;
            s->head.end = s->pos;
            if (s->head.end - s->head.start > SL_H1_HEAD_MAX) {
                s->state = SL_H1_PASS;
                continue;
            }
            *ev = SL_H1_HEAD;
            return done;
        }
        if (s->message_done && s->state != SL_H1_PASS) {
            if (s->state == SL_H1_IN_BODY) s->body_end = s->pos;
            s->state = SL_H1_IDLE;
        } else if (s->state == SL_H1_IN_HEAD && s->pos - s->head_start > SL_H1_HEAD_MAX)
            s->state = SL_H1_PASS;
    }
    return done;
}
