/* SPDX-License-Identifier: BSD-2-Clause */
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
 * The first bytes of a stream (and of the message after an upgrade
 * request) are held (consumed, not parsed) while they match the HTTP/2
 * connection preface; when they stop matching, the held bytes are exactly
 * the preface's first bytes, so they are parsed from the constant string.
 *
 * The rule of doubt (http1.h). Beside http-parser, a small line reader
 * follows every head byte by byte (rd_byte: request line shape, header
 * lines, the blank line). When http-parser refuses a head, the reader
 * takes over where it stopped and feeds the same field callbacks, so the
 * head is still reported with what could be read (an odd head). From
 * then on the stream is read by the reader alone, the conservative
 * reading: a line shaped like a request line (a token, a target, and
 * "HTTP/d.d" read as loosely as http-parser reads it, or nothing for a 0.9
 * GET: the union of what nginx, llhttp, python's http.server and
 * http-parser accept) starts a head, the head ends at its blank line, and
 * bodies are never skipped (a request hidden in a body that some server
 * runs is counted; one that no server runs costs a token: the safe side).
 * Where such a head gave Content-Length, a head may also begin where the
 * body ends (resync), even mid-line, as servers that frame by it read.
 * Lines that are not request-shaped are skipped and pass. Under the reader
 * a head is held only from the end of its request line (servers act on
 * nothing before the blank line), so a body that merely contains text
 * never waits for more bytes. When a resync point falls inside a line
 * that began as a request line, both readings are counted: servers that
 * end the body at the line run the line, those framing by Content-Length
 * a head from the resync point; the line read so far is reported as an
 * odd head (SL_H1_ODD_CUT) and the reading goes on from the resync point.
 *
 * Chunked bodies (issue 31). http-parser frames them more leniently than
 * the servers behind sluice, and differently: it skips a chunk extension
 * up to a CR, where nginx and python end the chunk-size line at a bare LF
 * ("2c;\n": the request nginx reads next is chunk data to http-parser),
 * and it takes any byte after a CR for its LF and any two bytes after
 * chunk data for their CRLF. So beside it, ck_track follows the framing
 * bytes of a chunked body strictly (the data is counted, not read): a
 * chunk-size line is HEX[;ext]CRLF with a token-ish extension (tchar, "=",
 * ";", DQUOTE, SP, HTAB), data is followed by CRLF, a trailer line is a
 * token, a colon and text (VCHAR, SP, HTAB) up to CRLF, the body ends with
 * CRLF. On that ground nginx, llhttp, python and http-parser frame alike
 * (tests/fuzz/fuzz_chunked.c holds it to models of nginx and python). At
 * the first byte off it (or one http-parser refuses, or an end where
 * http-parser sees none) they may part: the body is odd (sl_h1_odd_body),
 * http-parser is dropped, and the conservative reading takes the stream
 * from that byte, at a line start, for good: every head a server may find
 * in what follows is counted, none is skipped as data.
 */
#include "http1.h"

#include "../log.h"
#include "../mem.h"
#include "reqkey.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char h2_preface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
#define H2_PREFACE_LEN (sizeof h2_preface - 1)

enum target { T_NONE, T_HOST, T_KEY, T_IDEM, T_COOKIE, T_LENGTH };

/* What only the slow readers need, allocated while they run (s->head
 * points at its first member): the head's bounded copies and the name of
 * the header being read. */
struct slow {
    struct sl_h1_head head;
    char field[SL_H1_NAME_MAX];
    char ck_line[24]; /* the chunked body's framing line being read (ck_keep) */
    uint8_t ck_len;
};

static char *field_of(const struct sl_h1 *s)
{
    return ((struct slow *)s->head)->field;
}

#define FNV_OFFSET 0xcbf29ce484222325ull
#define FNV_PRIME  0x100000001b3ull

static void text_reset(char *buf, struct sl_h1_text *t)
{
    buf[0] = '\0';
    *t = (struct sl_h1_text){.hash = FNV_OFFSET};
}

static uint64_t fnv(uint64_t h, const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        h = (h ^ (uint8_t)p[i]) * FNV_PRIME;
    return h;
}

/* The hash is computed only once a value is cut (the common value fits
 * and costs nothing): then over what was kept, and every byte after. */
static void text_append(char *buf, size_t cap, struct sl_h1_text *t, const char *at, size_t n)
{
    size_t room = cap - 1 - t->len;
    t->present = true;
    if (t->truncated) {
        t->hash = fnv(t->hash, at, n);
        return;
    }
    if (n > room) {
        t->hash = fnv(fnv(FNV_OFFSET, buf, t->len), at, n);
        n = room;
        t->truncated = true;
    }
    memcpy(buf + t->len, at, n);
    t->len += n;
    buf[t->len] = '\0';
}

void sl_h1_text_append(char *buf, size_t cap, struct sl_h1_text *t, const char *at, size_t n)
{
    text_append(buf, cap, t, at, n);
}

void sl_h1_text_seal(char *buf, size_t cap, struct sl_h1_text *t)
{
    if (!t->truncated || cap < 18) return;
    snprintf(buf + cap - 18, 18, "#%016llx", (unsigned long long)t->hash);
    t->len = cap - 1;
}

void sl_h1_text_set(char *buf, size_t cap, struct sl_h1_text *t, const char *at, size_t n)
{
    text_reset(buf, t);
    text_append(buf, cap, t, at, n);
}

const char *sl_h1_odd_reason(enum sl_h1_odd why)
{
    switch (why) {
    case SL_H1_ODD_SYNTAX:
        return "a head http-parser refuses";
    case SL_H1_ODD_LONG:
        return "a head over 16 KiB";
    case SL_H1_ODD_GET_BODY:
        return "a GET or HEAD with a body";
    case SL_H1_ODD_PREFACE:
        return "a broken HTTP/2 preface";
    case SL_H1_ODD_CHUNKED:
        return "a chunked body servers frame differently";
    case SL_H1_ODD_CUT:
        return "a request line where a body may end";
    case SL_H1_ODD_NONE:
        break;
    }
    return "none";
}

/* A method name into head.method (both are SL_H1_METHOD_MAX): memcpy, as
 * snprintf("%s") alone cost ~560 instructions a request. */
static void copy_method(char *dst, const char *src)
{
    size_t n = strnlen(src, SL_H1_METHOD_MAX - 1);
    memcpy(dst, src, n);
    dst[n] = '\0';
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

/* A Content-Length the line reader saw (0: none usable). */
static void length_seen(struct sl_h1 *s, uint64_t len)
{
    if (len == 0) return;
    if (s->nlens++ == 0) s->len_first = len;
    s->len_last = len;
}

/* The value of the line's target as far as it was read, trimmed. */
static void target_trim(struct sl_h1 *s)
{
    struct sl_h1_head *h = s->head;
    if (s->target == T_HOST)
        trim(h->host, &h->host_info);
    else if (s->target == T_KEY)
        trim(h->key, &h->key_info);
    else if (s->target == T_IDEM)
        trim(h->idem, &h->idem_info);
    else if (s->target == T_COOKIE)
        trim(h->cookie, &h->cookie_info);
}

/* The end of one header line's value: the Cookie line is searched now. */
static void value_done(struct sl_h1 *s)
{
    target_trim(s);
    if (s->target == T_LENGTH) length_seen(s, s->rd_len_bad ? 0 : s->rd_len);
    s->rd_len = 0;
    s->rd_len_bad = false;
    s->target = T_NONE;
    s->in_value = false;
    s->field_len = 0;
    s->field_long = false;
}

static enum target target_of(const struct sl_h1 *s)
{
    if (s->field_long) return T_NONE;
    const char *f = field_of(s);
    size_t n = s->field_len;
    /* The key's every line, under every name servers fold with it
     * (X-API-Key, X_API_KEY: core/http/reqkey.h), joined by ", " as node
     * and PHP join them: each is a copy. Of other repeated headers the
     * first wins (host, idempotency key). */
    if (s->key_kind == SL_H1_KEY_HEADER &&
        sl_req_header_name_eq(f, n, s->key_name, s->key_name_len))
        return T_KEY;
    if ((s->want_cookie || s->key_kind == SL_H1_KEY_COOKIE) && name_is(f, n, "cookie"))
        return T_COOKIE;
    if (s->rd_cb && name_is(f, n, "content-length")) return T_LENGTH; /* the line reader's */
    if (name_is(f, n, "host")) return s->head->host_info.present ? T_NONE : T_HOST;
    if (name_is(f, n, "idempotency-key")) return s->head->idem_info.present ? T_NONE : T_IDEM;
    return T_NONE;
}

static void fields_begin(struct sl_h1 *s)
{
    struct sl_h1_head *h = s->head;
    text_reset(h->url, &h->url_info);
    text_reset(h->host, &h->host_info);
    text_reset(h->key, &h->key_info);
    text_reset(h->idem, &h->idem_info);
    text_reset(h->cookie, &h->cookie_info);
    h->path_off = h->path_len = h->query_off = h->query_len = 0;
    s->key_lines = 0;
    s->nlens = 0;
    s->rd_len = 0;
    s->rd_len_bad = false;
    s->field_len = 0;
    s->field_long = false;
    s->in_value = false;
    s->target = T_NONE;
}

static int on_message_begin(http_parser *p)
{
    fields_begin(scanner(p));
    return 0;
}

/* The complete segments of a full origin-form path, resolved in place as
 * the server will ("/./", "/../", "//"); the last, unfinished segment is
 * kept as sent. Escapes are left alone (the route match decodes them
 * once), so resolving now or later gives the same path. */
static void url_compact(char *u, struct sl_h1_text *t)
{
    size_t len = t->len;
    if (len == 0 || u[0] != '/' || memchr(u, '?', len) || memchr(u, '#', len)) return;
    size_t last = len;
    while (last > 0 && u[last - 1] != '/')
        last--;
    size_t o = 0;
    for (size_t i = 0; i < last;) { /* u[i] == '/' */
        size_t j = i + 1;
        while (j < last && u[j] != '/')
            j++;
        size_t sl = j - i - 1;
        if (sl == 0 || (sl == 1 && u[i + 1] == '.')) {
            i = j;
            continue;
        }
        if (sl == 2 && u[i + 1] == '.' && u[i + 2] == '.') {
            while (o > 0 && u[o - 1] != '/')
                o--;
            if (o > 0) o--;
            i = j;
            continue;
        }
        u[o++] = '/';
        memmove(u + o, u + i + 1, sl);
        o += sl;
        i = j;
    }
    u[o++] = '/';
    memmove(u + o, u + last, len - last);
    t->len = o + (len - last);
    u[t->len] = '\0';
}

static void url_append(struct sl_h1 *s, const char *at, size_t n)
{
    struct sl_h1_head *h = s->head;
    while (n > 0 && !h->url_info.truncated) {
        size_t room = sizeof h->url - 1 - h->url_info.len;
        if (room == 0) {
            url_compact(h->url, &h->url_info);
            room = sizeof h->url - 1 - h->url_info.len;
            if (room == 0) break; /* nothing to resolve: cut */
        }
        size_t take = n < room ? n : room;
        text_append(h->url, sizeof h->url, &h->url_info, at, take);
        at += take;
        n -= take;
    }
    if (n > 0) text_append(h->url, sizeof h->url, &h->url_info, at, n);
}

static int on_url(http_parser *p, const char *at, size_t n)
{
    url_append(scanner(p), at, n);
    return 0;
}

static int on_header_field(http_parser *p, const char *at, size_t n)
{
    struct sl_h1 *s = scanner(p);
    if (s->in_value) value_done(s);
    if (s->field_len + n >= SL_H1_NAME_MAX) {
        s->field_long = true;
        return 0;
    }
    memcpy(field_of(s) + s->field_len, at, n);
    s->field_len += n;
    return 0;
}

static int on_header_value(http_parser *p, const char *at, size_t n)
{
    struct sl_h1 *s = scanner(p);
    struct sl_h1_head *h = s->head;
    if (!s->in_value) {
        s->in_value = true;
        s->target = target_of(s);
        s->cookie_more = false;
    }
    switch ((enum target)s->target) {
    case T_HOST:
        text_append(h->host, sizeof h->host, &h->host_info, at, n);
        break;
    case T_KEY:
        if (!s->cookie_more) { /* a line of the key begins */
            if (s->key_lines < UINT8_MAX) s->key_lines++;
            if (h->key_info.present) text_append(h->key, sizeof h->key, &h->key_info, ", ", 2);
        }
        s->cookie_more = true;
        text_append(h->key, sizeof h->key, &h->key_info, at, n);
        break;
    case T_IDEM:
        text_append(h->idem, sizeof h->idem, &h->idem_info, at, n);
        break;
    case T_COOKIE:
        if (!s->cookie_more && h->cookie_info.len) /* a second Cookie line */
            text_append(h->cookie, sizeof h->cookie, &h->cookie_info, "; ", 2);
        s->cookie_more = true;
        text_append(h->cookie, sizeof h->cookie, &h->cookie_info, at, n);
        break;
    case T_LENGTH:
        for (size_t i = 0; i < n; i++) {
            if (at[i] >= '0' && at[i] <= '9' && s->rd_len < (1ull << 40))
                s->rd_len = s->rd_len * 10 + (uint64_t)(at[i] - '0');
            else if (at[i] != ' ' && at[i] != '\t')
                s->rd_len_bad = true;
        }
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
    struct sl_h1_head *h = s->head;
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
            /* RFC 9112 3.2.2, and nginx: the target's host wins over Host */
            if (pu.field_set & (1 << UF_HOST))
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

static void keys_done(struct sl_h1 *s);

/* What both readers do when a head's fields are complete. */
static void head_fields_done(struct sl_h1 *s)
{
    if (s->in_value) value_done(s);
    split_url(s);
    keys_done(s);
}

/* The key from the query, the cookies, Host or Idempotency-Key, and the
 * cut values sealed: once the URL and the header fields are in. */
static void keys_done(struct sl_h1 *s)
{
    struct sl_h1_head *h = s->head;
    if (s->key_kind == SL_H1_KEY_QUERY) sl_h1_query_key(h, s->key_name, s->key_name_len);
    if (s->key_kind == SL_H1_KEY_COOKIE && !h->key_info.present && !h->cookie_info.truncated) {
        const char *v;
        size_t n;
        if (sl_h1_param(h->cookie, h->cookie_info.len, ';', s->key_name, s->key_name_len, &v, &n))
            sl_h1_text_set(h->key, sizeof h->key, &h->key_info, v, n);
    }
    /* per=header:Host or header:Idempotency-Key: the same value. */
    if (s->key_kind == SL_H1_KEY_HEADER && !h->key_info.present) {
        if (name_is(s->key_name, s->key_name_len, "host") && h->host_info.present)
            sl_h1_text_set(h->key, sizeof h->key, &h->key_info, h->host, h->host_info.len);
        else if (name_is(s->key_name, s->key_name_len, "idempotency-key") && h->idem_info.present)
            sl_h1_text_set(h->key, sizeof h->key, &h->key_info, h->idem, h->idem_info.len);
    }
    /* copies cut off (two lines, or a list, longer than the buffer): the
     * last ones are not there to charge, so the key is missing (the rule
     * of doubt: per_missing) rather than a hash an attacker varies */
    if (s->key_kind == SL_H1_KEY_HEADER && h->key_info.truncated &&
        (s->key_lines > 1 || memchr(h->key, ',', h->key_info.len)))
        text_reset(h->key, &h->key_info);
    sl_h1_text_seal(h->key, sizeof h->key, &h->key_info);
    sl_h1_text_seal(h->idem, sizeof h->idem, &h->idem_info);
}

static int on_headers_complete(http_parser *p)
{
    struct sl_h1 *s = scanner(p);
    struct sl_h1_head *h = s->head;
    head_fields_done(s);
    copy_method(h->method, http_method_str(p->method));
    h->http_major = (uint8_t)p->http_major;
    h->http_minor = (uint8_t)p->http_minor;
    h->chunked = (p->flags & F_CHUNKED) != 0;
    h->has_length = (p->flags & F_CONTENTLENGTH) != 0;
    h->content_length = h->has_length ? p->content_length : 0;
    h->body = h->chunked || h->content_length > 0;
    h->keep_alive = http_should_keep_alive(p) != 0;
    h->upgrade = p->upgrade != 0;
    h->odd = SL_H1_ODD_NONE;
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
    s->fresh = true;
#ifdef SL_H1_SLOW_ONLY /* a build for benchmarks: http-parser alone, as before the fast path */
    s->slow_only = true;
#endif
    s->key_kind = kind;
    size_t n = name ? strlen(name) : 0;
    if (kind == SL_H1_KEY_NONE || n == 0 || n >= sizeof s->key_name) {
        s->key_kind = SL_H1_KEY_NONE; /* never found: every head reports the key missing */
        return;
    }
    memcpy(s->key_name, name, n);
    s->key_name_len = n;
    /* the header name is matched here once, lowercased, for every head
     * the fast path reads; a name it could never see leaves every head
     * to http-parser */
    if (!sl_h1fast_key_init(&s->fast_key, kind == SL_H1_KEY_HEADER ? name : NULL, n,
                            kind == SL_H1_KEY_COOKIE))
        s->slow_only = true;
}

/* ---- the conservative reading: one byte at a time ---- */

enum rd_state {
    R_BOL,    /* a line begins: a request line, or not */
    R_METHOD, /* a token */
    R_SP1,    /* spaces after it */
    R_TARGET, /* the request target */
    R_SP2,    /* spaces after it */
    R_VER,    /* "HTTP/" (loosely) */
    R_VMAJ,   /* digits */
    R_VMIN,   /* digits after the dot */
    R_VEND,   /* spaces, CR, then LF */
    R_SKIP,   /* a line that is not a request line: to its LF */
    R_HBOL,   /* a header line begins, or the blank line */
    R_HCR,    /* a CR at the start of a header line */
    R_HNAME,  /* a field name */
    R_HVALWS, /* spaces before the value */
    R_HVAL,   /* the value */
    R_HFOLD,  /* a line that starts with a space: skipped */
};

enum rd_event { RD_NONE, RD_LINE, RD_LINE09, RD_NOT_REQUEST, RD_HEAD_END };

/* RFC 9110 tchar: what nginx, llhttp and python take in a method (a union). */
static bool tchar(unsigned char c)
{
    if (c >= '0' && c <= '9') return true;
    if ((c | 0x20) >= 'a' && (c | 0x20) <= 'z') return true;
    return c && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

/* A versionless request line with this method is a head to some server:
 * GET (nginx, python) or any method http-parser knows (it reads such a
 * line as HTTP/0.9 whatever the method). Rare: kept out of line, as
 * inlined it made rd_byte, run on every head byte, 4 instructions a byte
 * dearer. */
__attribute__((noinline, cold)) static bool method_09(const char *m)
{
    if (strcmp(m, "GET") == 0) return true;
    for (int i = 0; i < 64; i++) {
        const char *k = http_method_str((enum http_method)i);
        if (strcmp(k, "<unknown>") == 0) break;
        if (strcmp(k, m) == 0) return true;
    }
    return false;
}

static enum rd_event not_request(struct sl_h1 *s, unsigned char c)
{
    s->rd = c == '\n' ? R_BOL : R_SKIP;
    return RD_NOT_REQUEST;
}

/* A header line ended: its field (and value, maybe empty) are complete. */
static void rd_line_end(struct sl_h1 *s)
{
    if (!s->rd_cb) return;
    if (!s->in_value && s->field_len == 0 && !s->field_long) return;
    if (!s->in_value) {
        s->in_value = true;
        s->target = target_of(s);
    }
    value_done(s);
}

static enum rd_event rd_byte(struct sl_h1 *s, unsigned char c)
{
    char ch = (char)c;
    switch ((enum rd_state)s->rd) {
    case R_BOL:
        if (c == '\r' || c == '\n') return RD_NONE;
        s->rd_n = 0;
        s->rd_09 = false;
        s->rd = R_METHOD;
        /* fall through */
    case R_METHOD:
        if (tchar(c)) {
            if (s->rd_n < SL_H1_METHOD_MAX - 1) {
                s->rd_method[s->rd_n++] = ch;
                s->rd_method[s->rd_n] = '\0';
            }
            return RD_NONE;
        }
        if (c == ' ' && s->rd_n > 0) {
            s->rd = R_SP1;
            return RD_NONE;
        }
        return not_request(s, c);
    case R_SP1:
        if (c == ' ') return RD_NONE;
        /* no target and no version: node's server takes "CONNECT " LF
         * (an empty authority, HTTP/0.9) for a request; as HTTP/0.9,
         * below, for any method a server may know */
        if (c == '\r' || c == '\n') break;
        if (c == '\t') return not_request(s, c);
        s->rd = R_TARGET;
        /* fall through */
    case R_TARGET:
        if (c == ' ') {
            s->rd = R_SP2;
            return RD_NONE;
        }
        if (c == '\r' || c == '\n') break; /* no version: HTTP/0.9, below */
        if (s->rd_cb) url_append(s, &ch, 1);
        return RD_NONE;
    case R_SP2:
        if (c == ' ') return RD_NONE;
        if (c == '\r' || c == '\n') break;
        if (c != 'H') return not_request(s, c);
        s->rd = R_VER;
        s->rd_n = 1;
        return RD_NONE;
    case R_VER: /* "HTTP/", or H and any four (what http-parser takes when not strict) */
        if (c == '\r' || c == '\n') {
            /* http-parser takes a line's end among the four too, and
             * reads on; servers that end lines at LF refuse the line. A
             * head to the one (of a method it knows), a line end to the
             * others: counted now, and what follows read as lines */
            if (!method_09(s->rd_method)) return not_request(s, c);
            s->rd = c == '\n' ? R_BOL : R_SKIP;
            return RD_LINE09;
        }
        if (++s->rd_n == 5) {
            s->rd = R_VMAJ;
            s->rd_n = 0;
            s->rd_major = s->rd_minor = 0;
        }
        return RD_NONE;
    case R_VMAJ:
        if (c >= '0' && c <= '9' && s->rd_n < 3) {
            s->rd_major = (uint8_t)(s->rd_major * 10 + (c - '0'));
            s->rd_n++;
            return RD_NONE;
        }
        if (c == '.' && s->rd_n > 0) {
            s->rd = R_VMIN;
            s->rd_n = 0;
            return RD_NONE;
        }
        return not_request(s, c);
    case R_VMIN:
        if (c >= '0' && c <= '9' && s->rd_n < 3) {
            s->rd_minor = (uint8_t)(s->rd_minor * 10 + (c - '0'));
            s->rd_n++;
            return RD_NONE;
        }
        if (s->rd_n == 0) return not_request(s, c);
        s->rd = R_VEND;
        /* fall through */
    case R_VEND:
        if (c == ' ' || c == '\r') return RD_NONE;
        if (c != '\n') return not_request(s, c);
        s->rd = s->rd_09 ? R_BOL : R_HBOL;
        return s->rd_09 ? RD_LINE09 : RD_LINE;
    case R_SKIP:
        if (c == '\n') s->rd = R_BOL;
        return RD_NONE;
    case R_HCR:
        if (c == '\n') {
            s->rd = R_BOL;
            return RD_HEAD_END;
        }
        s->rd = R_HNAME;
        /* a bare CR then a name: the name's */
        /* fall through */
    case R_HBOL:
        if (s->rd == R_HBOL) {
            if (c == '\r') {
                s->rd = R_HCR;
                return RD_NONE;
            }
            if (c == '\n') {
                s->rd = R_BOL;
                return RD_HEAD_END;
            }
            if (c == ' ' || c == '\t') {
                s->rd = R_HFOLD;
                return RD_NONE;
            }
            s->rd = R_HNAME;
        }
        /* fall through */
    case R_HNAME:
        if (c == ':') {
            s->rd = R_HVALWS;
            return RD_NONE;
        }
        if (c == '\n') { /* a line without a colon: no field */
            if (s->rd_cb) s->field_len = 0, s->field_long = false;
            s->rd = R_HBOL;
            return RD_NONE;
        }
        if (s->rd_cb && c != '\r') on_header_field(&s->parser, &ch, 1);
        return RD_NONE;
    case R_HVALWS:
        if (c == ' ' || c == '\t' || c == '\r') return RD_NONE;
        if (c == '\n') {
            rd_line_end(s);
            s->rd = R_HBOL;
            return RD_NONE;
        }
        s->rd = R_HVAL;
        /* fall through */
    case R_HVAL:
        if (c == '\n') {
            rd_line_end(s);
            s->rd = R_HBOL;
            return RD_NONE;
        }
        if (s->rd_cb && c != '\r') on_header_value(&s->parser, &ch, 1);
        return RD_NONE;
    case R_HFOLD:
        if (c == '\n') s->rd = R_HBOL;
        return RD_NONE;
    }
    /* the request line ended without a version: HTTP/0.9, which nginx and
     * python take for GET, http-parser for any method it knows */
    if (!method_09(s->rd_method)) return not_request(s, c);
    if (c == '\r') {
        s->rd_09 = true;
        s->rd = R_VEND;
        return RD_NONE;
    }
    s->rd = R_BOL;
    return RD_LINE09;
}

/* The reader follows head bytes http-parser took (no fields: it has them).
 * Inside a value (or a line being skipped) only the LF matters. */
static void rd_track(struct sl_h1 *s, const char *buf, size_t n)
{
    for (size_t i = 0; i < n;) {
        /* the bytes these states ignore without callbacks, skipped fast */
        switch ((enum rd_state)s->rd) {
        case R_HVAL:
        case R_SKIP:
        case R_HFOLD: {
            const char *lf = memchr(buf + i, '\n', n - i);
            if (!lf) return;
            i = (size_t)(lf - buf);
            break;
        }
        case R_HNAME:
            while (i < n && buf[i] != ':' && buf[i] != '\n')
                i++;
            break;
        case R_TARGET:
            while (i < n && buf[i] != ' ' && buf[i] != '\r' && buf[i] != '\n')
                i++;
            break;
        default:
            break;
        }
        if (i < n) (void)rd_byte(s, (unsigned char)buf[i++]);
    }
}

/* A head read (wholly or partly) by the conservative reading is reported. */
static void odd_report(struct sl_h1 *s)
{
    struct sl_h1_head *h = s->head;
    head_fields_done(s);
    copy_method(h->method, s->rd_method);
    h->http_major = s->rd_09 ? 0 : s->rd_major;
    h->http_minor = s->rd_09 ? 9 : s->rd_minor;
    h->chunked = h->has_length = h->body = h->upgrade = false;
    h->content_length = 0;
    h->keep_alive = true;
    h->odd = s->odd;
    h->start = s->head_start;
    h->end = s->pos;
    s->odd = SL_H1_ODD_NONE;
    s->reported = true;
    /* servers that frame the body by Content-Length look for the next
     * head where it ends, which need not be a line start */
    s->resync[0] = s->nlens ? s->pos + s->len_first : 0;
    s->resync[1] = s->nlens > 1 ? s->pos + s->len_last : 0;
    s->nlens = 0;
}

/* The conservative reading ends a head: reported, the stream idle. */
static void odd_end(struct sl_h1 *s, enum sl_h1_event *ev)
{
    s->state = SL_H1_IDLE;
    odd_report(s);
    *ev = SL_H1_HEAD;
}

/* The reader alone, from pos: returns bytes consumed, *ev set on a head
 * or on passthrough (a first line that is not a request line). */
static size_t doubt_feed(struct sl_h1 *s, const char *buf, size_t len, enum sl_h1_event *ev)
{
    s->rd_cb = true;
    for (size_t i = 0; i < len; i++) {
        if (s->rd == R_SKIP && s->state != SL_H1_IN_HEAD) {
            /* a line that is not a request line: on to its LF at memchr's
             * pace (WebSocket frames after an upgrade are such lines), but
             * not past a place where a body ends */
            size_t lim = len;
            for (int k = 0; k < 2; k++)
                if (s->resync[k] >= s->pos && s->resync[k] - s->pos < lim - i)
                    lim = i + (size_t)(s->resync[k] - s->pos);
            const char *lf = memchr(buf + i, '\n', lim - i);
            size_t stop = lf ? (size_t)(lf - buf) : lim;
            s->pos += stop - i;
            i = stop;
            if (i == len) break;
        }
        unsigned char c = (unsigned char)buf[i];
        if ((s->pos == s->resync[0] || s->pos == s->resync[1]) && s->state == SL_H1_IDLE &&
            !s->rd_skip) {
            if (s->rd != R_BOL && s->rd != R_SKIP && s->pos > s->line_start) {
                /* a request line in progress is cut where a body may end:
                 * servers that end the body at the line run that line,
                 * those that frame by Content-Length a head from here;
                 * both are counted, the line read so far as a head */
                uint64_t keep[2] = {s->resync[0], s->resync[1]};
                s->head_start = s->line_start;
                s->odd = SL_H1_ODD_CUT;
                s->rd = R_BOL;
                odd_end(s, ev);
                s->resync[0] = keep[0];
                s->resync[1] = keep[1];
                return i;
            }
            s->rd = R_BOL;
        }
        if (s->state == SL_H1_IDLE && !s->rd_skip && s->rd == R_BOL && c != '\r' && c != '\n') {
            s->line_start = s->pos;
            fields_begin(s);
        }
        enum rd_event e = rd_byte(s, c);
        s->pos++;
        switch (e) {
        case RD_NONE:
            break;
        case RD_LINE:
            if (s->state == SL_H1_IDLE && !s->rd_skip) {
                s->state = SL_H1_IN_HEAD;
                s->head_start = s->line_start;
            }
            break;
        case RD_LINE09:
            if (s->rd_skip) break;
            if (s->state == SL_H1_IDLE) s->head_start = s->line_start;
            odd_end(s, ev);
            return i + 1;
        case RD_NOT_REQUEST:
            s->rd_skip = false;
            if (s->state != SL_H1_IN_HEAD) break;
            s->state = SL_H1_IDLE;
            s->odd = SL_H1_ODD_NONE;
            if (!s->reported && s->head_start == 0) { /* not HTTP from its first bytes */
                s->state = SL_H1_PASS;
                s->pos += len - i - 1;
                *ev = SL_H1_PASSTHROUGH;
                return len;
            }
            break;
        case RD_HEAD_END:
            if (s->rd_skip) {
                s->rd_skip = false;
                break;
            }
            if (s->state != SL_H1_IN_HEAD) break;
            odd_end(s, ev);
            return i + 1;
        }
        if (s->state == SL_H1_IN_HEAD && s->pos - s->head_start > SL_H1_HEAD_MAX) {
            /* decided now: the rest of the head passes, it is not a new one */
            if (s->odd == SL_H1_ODD_NONE) s->odd = SL_H1_ODD_LONG;
            s->rd_skip = true;
            odd_end(s, ev);
            return i + 1;
        }
    }
    return len;
}

/* From now on the stream is read by the conservative reading. */
static void doubt_begin(struct sl_h1 *s)
{
    s->doubt = true;
    s->rd_cb = true;
}

/* ---- chunked bodies on the servers' common ground (see the top) ---- */

enum ck_state {
    CK_NONE,     /* not in a chunked body */
    CK_SIZE0,    /* a chunk-size line begins: a hex digit */
    CK_SIZE,     /* more hex digits, ";" or CR */
    CK_EXT,      /* the extension, to its CR */
    CK_SIZE_LF,  /* the LF of the chunk-size line */
    CK_DATA,     /* ck_left bytes of chunk data */
    CK_DATA_CR,  /* the CRLF after the data */
    CK_DATA_LF,  /* its LF */
    CK_TRAILER,  /* a trailer line begins, or the body's last CRLF */
    CK_TNAME,    /* a trailer's name, to its colon */
    CK_TLINE,    /* a trailer's value, to its CR */
    CK_TLINE_LF, /* its LF */
    CK_END_LF,   /* the LF that ends the body */
};

static int hex_of(unsigned char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    c |= 0x20;
    return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* What a chunk extension holds on the common ground: no byte any server
 * ends a line on (or refuses) can be among them. */
static bool ext_byte(unsigned char c)
{
    return tchar(c) || c == ';' || c == '=' || c == '"' || c == ' ' || c == '\t';
}

/* A framing byte into the line kept for the log (its first bytes; when
 * full, the last place takes the newest, so the odd byte is shown). */
static void ck_keep(struct sl_h1 *s, unsigned char c)
{
    struct slow *w = (struct slow *)s->head;
    if (w->ck_len == sizeof w->ck_line) w->ck_len--;
    w->ck_line[w->ck_len++] = (char)c;
}

static void ck_line_begin(struct sl_h1 *s, enum ck_state next)
{
    ((struct slow *)s->head)->ck_len = 0;
    s->ck = next;
}

/* One framing byte: false when it is off the common ground. */
static bool ck_byte(struct sl_h1 *s, unsigned char c)
{
    ck_keep(s, c);
    int h = hex_of(c);
    switch ((enum ck_state)s->ck) {
    case CK_SIZE0:
        if (h < 0) return false;
        s->ck_left = (uint64_t)h;
        s->ck = CK_SIZE;
        return true;
    case CK_SIZE:
        if (h >= 0) {
            if (s->ck_left >> 56) return false; /* servers refuse sizes long before */
            s->ck_left = s->ck_left * 16 + (uint64_t)h;
            return true;
        }
        s->ck = c == ';' ? CK_EXT : CK_SIZE_LF;
        return c == ';' || c == '\r';
    case CK_EXT:
        if (c == '\r') s->ck = CK_SIZE_LF;
        return c == '\r' || ext_byte(c);
    case CK_SIZE_LF:
        if (c != '\n') return false;
        if (s->ck_left)
            s->ck = CK_DATA;
        else
            ck_line_begin(s, CK_TRAILER);
        return true;
    case CK_DATA_CR:
        s->ck = CK_DATA_LF;
        return c == '\r';
    case CK_DATA_LF:
        ck_line_begin(s, CK_SIZE0);
        return c == '\n';
    case CK_TRAILER:
        if (c == '\r') {
            s->ck = CK_END_LF;
            return true;
        }
        s->ck = CK_TNAME;
        return tchar(c);
    case CK_TNAME:
        if (c == ':') s->ck = CK_TLINE;
        return c == ':' || tchar(c);
    case CK_TLINE:
        if (c == '\r') s->ck = CK_TLINE_LF;
        return c == '\r' || c == '\t' || (c >= 0x20 && c < 0x7f);
    case CK_TLINE_LF:
        ck_line_begin(s, CK_TRAILER);
        return c == '\n';
    case CK_END_LF:
        s->ck = CK_NONE;
        return c == '\n';
    case CK_NONE:
    case CK_DATA:
        break;
    }
    return true;
}

/* Follows n body bytes http-parser took: how many are on the common
 * ground (n: all; less: the index of the first that is not, or of the
 * first past the body's end). */
static size_t ck_track(struct sl_h1 *s, const char *buf, size_t n)
{
    size_t i = 0;
    while (i < n) {
        if (s->ck == CK_NONE) return i; /* http-parser reads on: not the end it saw */
        if (s->ck == CK_DATA) {         /* counted, not read */
            size_t take = s->ck_left < n - i ? (size_t)s->ck_left : n - i;
            s->ck_left -= take;
            i += take;
            if (s->ck_left == 0) ck_line_begin(s, CK_DATA_CR);
            continue;
        }
        if (!ck_byte(s, (unsigned char)buf[i])) return i;
        i++;
    }
    return n;
}

/* The body left the common ground at pos (the odd byte c, -1 when not
 * at hand): the conservative reading takes the stream from that byte, at
 * a line start, for good. */
static void ck_odd(struct sl_h1 *s, int c)
{
    if (c >= 0 && s->ck != CK_NONE) ck_keep(s, (unsigned char)c);
    if (s->ck == CK_NONE) ((struct slow *)s->head)->ck_len = 0;
    s->odd_body = s->pos;
    s->ck = CK_NONE;
    doubt_begin(s);
    s->state = SL_H1_IDLE;
    s->rd = R_BOL;
    s->rd_skip = false;
    s->resync[0] = s->resync[1] = 0;
}

const char *sl_h1_odd_body_line(const struct sl_h1 *s, size_t *len)
{
    const struct slow *w = (const struct slow *)s->head;
    *len = w && s->odd_body ? w->ck_len : 0;
    return *len ? w->ck_line : NULL;
}

/* Runs the parser over buf; returns what it consumed. The flags set by
 * the callbacks and the parser's error say what happened; on an error
 * the conservative reading takes over (true). */
static size_t run(struct sl_h1 *s, const char *buf, size_t len, bool *failed)
{
    s->parser.data = s;
    s->fresh = false; /* until a kept-alive message ends (ended()) */
    size_t n = http_parser_execute(&s->parser, &settings, buf, len);
    enum http_errno e = HTTP_PARSER_ERRNO(&s->parser);
    *failed = false;
    if (e == HPE_PAUSED) {
        http_parser_pause(&s->parser, 0);
    } else if (e != HPE_OK) {
        *failed = true;
        if (n > len) n = len;
    }
    return n;
}

/* http-parser gave up at pos: inside a head the head is odd (the reader
 * carries on with it), inside a body the next line is looked at. */
static void parser_failed(struct sl_h1 *s)
{
    doubt_begin(s);
    if (s->state == SL_H1_IN_HEAD) {
        s->odd = SL_H1_ODD_SYNTAX;
        /* http-parser hands a field over in pieces at the end of each call,
         * and not the piece it failed in: the line it failed in is not used
         * (what follows must not depend on how the bytes were split) */
        if (s->rd == R_HVALWS || s->rd == R_HVAL) { /* the name is whole, the value not */
            s->in_value = true;
            target_trim(s); /* what was handed over of it stays, as a line's end leaves it */
            s->target = T_NONE;
        } else { /* a complete value is done; a name cut short is no name */
            if (s->in_value) value_done(s);
            s->field_len = 0;
            s->field_long = s->rd == R_HNAME;
        }
        if (s->parser.flags & F_CONTENTLENGTH) length_seen(s, s->parser.content_length);
    } else {
        s->state = SL_H1_IDLE;
        s->rd = R_BOL;
    }
}

/* Stream bytes from preface_at that match the HTTP/2 preface are held
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

/* After a head http-parser read: what the stream does next. */
static void after_head(struct sl_h1 *s)
{
    struct sl_h1_head *h = s->head;
    bool get = strcmp(h->method, "GET") == 0 || strcmp(h->method, "HEAD") == 0;
    if (h->upgrade) {
        /* only the peer's 101 makes a tunnel, and this direction never
         * sees it: scan on; an h2c upgrade's preface is looked for */
        http_parser_init(&s->parser, HTTP_REQUEST);
        s->fresh = true;
        s->state = SL_H1_IDLE;
        s->preface = 0;
        s->preface_at = s->pos;
    } else if (get && h->body && !s->trust_bodies) {
        /* servers differ (python ignores a GET's body and runs what is in
         * it): every head-shaped line of the body counts */
        h->odd = SL_H1_ODD_GET_BODY;
        doubt_begin(s);
        s->state = SL_H1_IDLE;
        s->rd = R_BOL;
        s->resync[0] = h->chunked ? 0 : s->pos + h->content_length; /* nginx's next head */
    }
}

/* A message http-parser read has ended: if it keeps the connection alive
 * the parser is back where a request begins (else it refuses what
 * follows, and only it knows how). */
static void ended(struct sl_h1 *s)
{
    s->fresh = http_should_keep_alive(&s->parser) != 0;
}

/* A value slice of the fast path into its head field, as text_reset,
 * text_append and value_done's trim leave it (a value that fits: copied
 * once; one that does not: cut and hashed the same way). */
static void fast_text(char *dst, size_t cap, struct sl_h1_text *t, const char *buf, size_t len,
                      struct sl_h1fast_slice v, bool trimmed)
{
    const char *src = buf + v.off;
    size_t n = v.len;
    if (v.present && n < cap) {
        while (trimmed && n > 0 && (src[n - 1] == ' ' || src[n - 1] == '\t'))
            n--;
        if (n <= 16 && cap > 16 && v.off + 16u <= len)
            memcpy(dst, src, 16); /* one 16-byte move (the buffer has them), cut by the NUL */
        else
            memcpy(dst, src, n);
        dst[n] = '\0';
        *t = (struct sl_h1_text){.len = n, .present = true, .hash = FNV_OFFSET};
        return;
    }
    text_reset(dst, t);
    if (!v.present) return;
    text_append(dst, cap, t, src, n);
    if (trimmed) trim(dst, t);
}

/* The fast path (core/http/h1fast.h): a complete common head at buf, read in
 * one pass (f), its parser left untouched (it is `fresh`, and a kept-alive
 * head leaves it so). The head is kept as slices of buf (s->fast_at); the
 * copy into struct sl_h1_head that http-parser's run would have made is
 * made only if asked for (fast_fill). Returns the head's length. */
static inline __attribute__((always_inline)) size_t
fast_take(struct sl_h1 *s, const struct sl_h1fast *f, const char *buf, size_t len)
{
    s->fast_at = f;
    /* the line reader as following the head would leave it (an odd head
     * without a version of its own reports the last one read) */
    memcpy(s->rd_method, f->method, 8);
    s->rd_major = 1;
    s->rd_minor = f->http_minor;
    s->rd_n = 1;
    s->rd_09 = false;
    s->nlens = 0;
    s->head_start = s->pos;
    s->pos += f->end;
    s->reported = true;
    s->rd = R_BOL;
    s->fast_body = f->content_length;
    s->state = f->content_length > 0 ? SL_H1_IN_BODY : SL_H1_IDLE;
    s->fast_heads++;
    s->fast_buf = buf;
    s->fast_len = len;
    s->fast_found = true;
    /* the copies of the last slow head are not needed any more: an idle
     * connection keeps no head buffers (the next slow head allocates) */
    if (s->head) {
        sl_free(s->head);
        s->head = NULL;
    }
    return f->end;
}

/* The fast path's read and take; 0 when declined. Inline in sl_h1_feed's
 * loop, which takes one per request; fast_head for the preface's rare
 * case. */
static inline __attribute__((always_inline)) size_t fast_head_in(struct sl_h1 *s, const char *buf,
                                                                 size_t len)
{
    const struct sl_h1fast *f = sl_h1fast_read(buf, len, &s->fast_key);
    return f ? fast_take(s, f, buf, len) : 0;
}

static size_t fast_head(struct sl_h1 *s, const char *buf, size_t len)
{
    return fast_head_in(s, buf, len);
}

/* The copies http-parser's run would leave for the fast head just read
 * (slices of s->fast_buf, which the caller still holds). */
static void fast_fill(struct sl_h1 *s)
{
    const char *buf = s->fast_buf;
    size_t len = s->fast_len;
    /* read again: another stream's read in this thread may have replaced
     * the thread-local result since; the same bytes give the same head
     * (a compare when the result is still there) */
    const struct sl_h1fast *f = sl_h1fast_read(buf, len, &s->fast_key);
    if (!f) f = s->fast_at; /* never: these bytes were read */
    struct sl_h1_head *h = s->head;
    /* what on_message_begin and head_fields_done leave, the URL split
     * by the fast path (an origin-form target, so no URL parser) */
    fast_text(h->url, sizeof h->url, &h->url_info, buf, len, f->url, false);
    fast_text(h->host, sizeof h->host, &h->host_info, buf, len, f->host, true);
    fast_text(h->key, sizeof h->key, &h->key_info, buf, len, f->key, true);
    fast_text(h->idem, sizeof h->idem, &h->idem_info, buf, len, f->idem, true);
    text_reset(h->cookie, &h->cookie_info);
    h->path_off = 0;
    h->path_len = f->path_len;
    h->query_off = f->query_off;
    h->query_len = f->query_len;
    s->key_lines = f->key.present; /* the fast path reads one line of the key */
    keys_done(s);
    s->nlens = 0;
    memcpy(h->method, f->method, 8); /* NUL-padded: one move */
    h->http_major = 1;
    h->http_minor = f->http_minor;
    h->chunked = false;
    h->has_length = f->has_length;
    h->content_length = f->content_length;
    h->body = f->content_length > 0;
    h->keep_alive = true;
    h->upgrade = false;
    h->odd = SL_H1_ODD_NONE;
    h->start = s->head_start;
    h->end = s->pos;
}

/* The head buffers, allocated when a head is first read by http-parser or
 * the conservative reading (the fast path needs none). */
static bool head_room(struct sl_h1 *s)
{
    return s->head || (s->head = sl_alloc(sizeof(struct slow))) != NULL;
}

const struct sl_h1_head *sl_h1_head(struct sl_h1 *s)
{
    if (s->fast_found) {
        if (!head_room(s)) return NULL;
        fast_fill(s);
        s->fast_found = false;
    }
    return s->head;
}

void sl_h1_fini(struct sl_h1 *s)
{
    sl_free(s->head);
    s->head = NULL;
    s->fast_found = false;
}

/* No memory for a head's buffers: the rest of the stream passes unscanned
 * (fail open, as the shim does when it has no room for a stash), said once
 * (sl_req_no_memory's words: never silent). */
static size_t no_room(struct sl_h1 *s, size_t done, size_t len, enum sl_h1_event *ev)
{
    sl_log_no_memory("a request head's copies");
    s->state = SL_H1_PASS;
    s->pos += len - done;
    *ev = SL_H1_PASSTHROUGH;
    return len;
}

/* Whether the bytes at the position may still be the HTTP/2 preface. */
static inline bool in_preface(const struct sl_h1 *s)
{
    return s->preface < H2_PREFACE_LEN && s->pos == s->preface_at + s->preface;
}

/* Whether sl_h1_feed would try the fast path at once, before any other
 * byte (sl_h1_feed_again's and sl_h1_peek's question). */
static inline bool fast_first(const struct sl_h1 *s)
{
    return s->state == SL_H1_IDLE && s->fresh && !s->slow_only && !s->doubt && !in_preface(s);
}

size_t sl_h1_feed_again(struct sl_h1 *s, const char *buf, size_t len, uint64_t serial)
{
    if (!fast_first(s) || s->head) return 0;
    const struct sl_h1fast *f = sl_h1fast_again(buf, len, &s->fast_key, serial);
    if (!f || f->end != len || f->content_length) return 0;
    /* the rest of fast_head's state is the same head's, left as it is */
    s->head_start = s->pos;
    s->pos += len;
    s->fast_heads++;
    s->fast_at = f;
    s->fast_buf = buf;
    s->fast_len = len;
    s->fast_found = true;
    return len;
}

const struct sl_h1fast *sl_h1_peek(const struct sl_h1 *s, const char *buf, size_t len)
{
    return fast_first(s) ? sl_h1fast_read(buf, len, &s->fast_key) : NULL;
}

size_t sl_h1_take(struct sl_h1 *s, const struct sl_h1fast *f, const char *buf, size_t len)
{
    return fast_take(s, f, buf, len);
}

size_t sl_h1_feed(struct sl_h1 *s, const void *data, size_t len, enum sl_h1_event *ev)
{
    const char *buf = data;
    size_t done = 0;
    bool failed;
    *ev = SL_H1_MORE;
    s->fast_found = false; /* its slices were into the buffer of the last feed */
    if (s->state != SL_H1_PASS && !s->doubt && in_preface(s)) {
        bool h2;
        done = hold_preface(s, buf, len, &h2);
        if (h2) {
            s->state = SL_H1_PASS;
            *ev = SL_H1_H2;
            return done;
        }
        if (s->state == SL_H1_IDLE) {
            s->state = SL_H1_IN_HEAD;
            s->head_start = s->preface_at;
            s->rd = R_BOL;
        }
        if (done == len) return done;
        size_t held = s->preface;
        s->preface = UINT8_MAX; /* diverged: never held again */
        if (held > 0 && held == done && s->fresh && !s->slow_only) {
            /* "P" of POST, PUT, PATCH: every held byte is in this buffer,
             * so the head can still be read from its start */
            s->pos -= done;
            size_t n = fast_head(s, buf, len);
            if (n) {
                *ev = SL_H1_HEAD;
                return n;
            }
            s->pos += done;
        }
        if (held > 0) {
            if (!head_room(s)) return no_room(s, done, len, ev);
            rd_track(s, h2_preface, held);
            s->head_done = s->message_done = false;
            if (run(s, h2_preface, held, &failed) != held || failed || s->head_done) {
                /* "PRI * HTTP/2.0" and then not the preface: counted once */
                doubt_begin(s);
                s->odd = SL_H1_ODD_PREFACE;
                s->rd = R_BOL;
                odd_end(s, ev);
                return done;
            }
        }
    }
    while (done < len) {
        if (s->state == SL_H1_PASS) {
            s->pos += len - done;
            *ev = SL_H1_PASSTHROUGH;
            return len;
        }
        if (s->doubt) {
            if (!head_room(s)) return no_room(s, done, len, ev);
            done += doubt_feed(s, buf + done, len - done, ev);
            if (*ev != SL_H1_MORE) return done;
            continue;
        }
        if (s->state == SL_H1_IN_BODY && s->fast_body) { /* a fast head's body */
            size_t take = s->fast_body < len - done ? (size_t)s->fast_body : len - done;
            s->fast_body -= take;
            s->pos += take;
            done += take;
            if (s->fast_body == 0) {
                s->body_end = s->pos;
                s->state = SL_H1_IDLE;
            }
            continue;
        }
        if (s->fresh && !s->slow_only &&
            (s->state == SL_H1_IDLE || (s->state == SL_H1_IN_HEAD && s->pos == s->head_start))) {
            size_t n = fast_head_in(s, buf + done, len - done);
            if (n) {
                *ev = SL_H1_HEAD;
                return done + n;
            }
        }
        if (!head_room(s)) return no_room(s, done, len, ev);
        if (s->state == SL_H1_IDLE) {
            s->state = SL_H1_IN_HEAD;
            s->head_start = s->pos;
            s->rd = R_BOL;
        }
        bool in_head = s->state == SL_H1_IN_HEAD;
        size_t want = len - done;
        if (in_head && want > s->head_start + SL_H1_HEAD_MAX + 1 - s->pos)
            want = (size_t)(s->head_start + SL_H1_HEAD_MAX + 1 - s->pos);
        s->head_done = s->message_done = false;
        size_t n = run(s, buf + done, want, &failed);
        if (in_head) rd_track(s, buf + done, n);
        if (!in_head && s->ck != CK_NONE) {
            /* the body's framing bytes on the servers' common ground, and
             * the byte http-parser refused (off it, whatever it is) */
            size_t k = ck_track(s, buf + done, n);
            if (k < n || failed || (s->ck == CK_NONE) != s->message_done) {
                int c = k == n && failed && done + n < len ? (unsigned char)buf[done + n] : -1;
                done += k;
                s->pos += k;
                ck_odd(s, c);
                continue;
            }
        }
        done += n;
        s->pos += n;
        if (failed) {
            parser_failed(s);
            continue;
        }
        if (s->head_done) {
            /* The head's final LF (always in this buffer): fed now, so the
             * head ends at pos. */
            n = done < len ? run(s, buf + done, 1, &failed) : 0;
            rd_track(s, buf + done, n);
            done += n;
            s->pos += n;
            s->state = s->message_done ? SL_H1_IDLE : SL_H1_IN_BODY;
            if (s->message_done) ended(s);
            s->head->start = s->head_start;
            s->head->end = s->pos;
            s->reported = true;
            after_head(s);
            /* a chunked body is followed on the common ground (ck_track) */
            if (s->state == SL_H1_IN_BODY && !s->doubt && s->head->chunked)
                ck_line_begin(s, CK_SIZE0);
            *ev = SL_H1_HEAD;
            return done;
        }
        if (s->message_done) {
            if (s->state == SL_H1_IN_BODY) s->body_end = s->pos;
            s->state = SL_H1_IDLE;
            s->ck = CK_NONE;
            ended(s);
        } else if (s->state == SL_H1_IN_HEAD && s->pos - s->head_start > SL_H1_HEAD_MAX) {
            /* decided now (a longer head would never fit a peek): the rest
             * of it passes, read by the conservative reading */
            doubt_begin(s);
            s->odd = SL_H1_ODD_LONG;
            s->state = SL_H1_IDLE;
            s->rd_skip = true;
            odd_report(s);
            *ev = SL_H1_HEAD;
            return done;
        }
    }
    return done;
}
