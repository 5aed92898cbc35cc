/* SPDX-License-Identifier: BSD-2-Clause */
/* costread.c - an answer's cost (see costread.h).
 *
 * Server-sent events (the WHATWG HTML standard, "Interpreting an event
 * stream"): lines end in LF, CR LF or CR; a `data:` line adds its value
 * (one leading space dropped) and a LF to the event's data; a blank line
 * ends the event. Only data lines are kept; an event whose data is not
 * JSON with the path (`[DONE]`, a chunk without usage) changes nothing,
 * so the cost is the last one an event carried.
 */
#include "costread.h"

#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "../mem.h"

/* The stdin libjansson's json_loadf names (Makefile: its archive is not
 * PIC, so it cannot refer to the C library's); never read. */
__attribute__((visibility("hidden"))) FILE *sl_jansson_stdin;

static void *json_alloc(size_t n)
{
    return sl_alloc(n);
}

/* jansson's allocator is sluice's; its hash seed is fixed, so that no
 * JSON object reads /dev/urandom (through the program's own open and
 * read) to make one: the text read is at most SL_COSTREAD_MAX bytes. */
static void json_setup(void)
{
    json_set_alloc_funcs(json_alloc, sl_free);
    json_object_seed(0x736c756963652e63u);
}

/* The deepest nesting of the JSON text, strings skipped; past `most` it
 * stops counting. jansson recurses once per level: a deep text would use
 * the program's stack. */
static unsigned depth_of(const char *at, size_t n, unsigned most)
{
    unsigned d = 0, deepest = 0;
    bool str = false;
    for (size_t i = 0; i < n; i++) {
        char c = at[i];
        if (str) {
            if (c == '\\')
                i++;
            else if (c == '"')
                str = false;
        } else if (c == '"') {
            str = true;
        } else if (c == '{' || c == '[') {
            if (++d > deepest && (deepest = d) > most) return deepest;
        } else if ((c == '}' || c == ']') && d) {
            d--;
        }
    }
    return deepest;
}

static bool number_of(const json_t *v, uint64_t *cost)
{
    if (json_is_integer(v)) {
        json_int_t i = json_integer_value(v);
        if (i < 0 || (uint64_t)i > SL_COSTREAD_MOST) return false;
        *cost = (uint64_t)i;
        return true;
    }
    if (!json_is_real(v)) return false;
    double d = json_real_value(v);
    if (!(d >= 0) || d > (double)SL_COSTREAD_MOST || d != floor(d)) return false;
    *cost = (uint64_t)d;
    return true;
}

bool sl_costread_json(const char *path, const char *at, size_t n, uint64_t *cost)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    if (n == 0 || depth_of(at, n, SL_COSTREAD_DEPTH) > SL_COSTREAD_DEPTH) return false;
    pthread_once(&once, json_setup);
    json_t *root = json_loadb(at, n, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
    if (!root) return false;
    const json_t *v = root;
    for (const char *p = path; v;) {
        const char *dot = strchr(p, '.');
        size_t len = dot ? (size_t)(dot - p) : strlen(p);
        if (json_is_object(v)) {
            v = json_object_getn(v, p, len);
        } else if (json_is_array(v) && len && len < 10 && strspn(p, "0123456789") >= len) {
            v = json_array_get(v, (size_t)strtoul(p, NULL, 10));
        } else {
            v = NULL;
        }
        if (!dot) break;
        p = dot + 1;
    }
    bool ok = v && number_of(v, cost);
    json_decref(root);
    return ok;
}

void sl_costread_init(struct sl_costread *r, enum sl_cost_from from, const char *name)
{
    memset(r, 0, sizeof *r);
    r->from = from;
    snprintf(r->name, sizeof r->name, "%s", name);
}

void sl_costread_begin(struct sl_costread *r)
{
    r->found = r->sse = r->over = r->after_cr = false;
    r->cost = 0;
    r->len = r->dlen = 0;
}

/* A decimal integer, blanks around it allowed. */
static bool header_number(const char *v, size_t n, uint64_t *cost)
{
    while (n && (*v == ' ' || *v == '\t'))
        v++, n--;
    while (n && (v[n - 1] == ' ' || v[n - 1] == '\t'))
        n--;
    if (!n || n > 13) return false; /* SL_COSTREAD_MOST has 13 digits */
    uint64_t x = 0;
    for (size_t i = 0; i < n; i++) {
        if (v[i] < '0' || v[i] > '9') return false;
        x = x * 10 + (uint64_t)(v[i] - '0');
    }
    if (x > SL_COSTREAD_MOST) return false;
    *cost = x;
    return true;
}

void sl_costread_header(struct sl_costread *r, const char *name, size_t nlen, const char *value,
                        size_t vlen)
{
    if (nlen == 12 && strncasecmp(name, "content-type", 12) == 0)
        r->sse = vlen >= 17 && strncasecmp(value, "text/event-stream", 17) == 0;
    if (r->from != SL_COST_HEADER || nlen != strlen(r->name) ||
        strncasecmp(name, r->name, nlen) != 0)
        return;
    uint64_t cost;
    r->found = header_number(value, vlen, &cost);
    r->cost = r->found ? cost : 0;
}

/* Appends n bytes to a buffer growing to SL_COSTREAD_MAX; false: past it
 * (or no memory). */
static bool grow_put(char **buf, size_t *len, size_t *cap, const char *at, size_t n)
{
    if (n == 0) return true;
    if (n > SL_COSTREAD_MAX - *len) return false;
    if (*len + n > *cap) {
        size_t want = *cap ? *cap : 1024;
        while (want < *len + n)
            want *= 2;
        if (want > SL_COSTREAD_MAX) want = SL_COSTREAD_MAX;
        char *p = sl_realloc(*buf, want);
        if (!p) return false;
        *buf = p;
        *cap = want;
    }
    memcpy(*buf + *len, at, n);
    *len += n;
    return true;
}

/* The event's data, read: its cost, if it has one, is the latest. */
static void event_end(struct sl_costread *r)
{
    uint64_t cost;
    if (!r->over && r->dlen && sl_costread_json(r->name, r->data, r->dlen, &cost)) {
        r->found = true;
        r->cost = cost;
    }
    r->dlen = 0;
    r->over = false;
}

/* One whole line of the stream (its end taken off). */
static void sse_line(struct sl_costread *r, const char *l, size_t n)
{
    if (n == 0) {
        event_end(r);
        return;
    }
    if (n < 5 || memcmp(l, "data:", 5) != 0) return; /* a comment, event:, id:, retry: */
    l += 5, n -= 5;
    if (n && *l == ' ') l++, n--;
    if (!grow_put(&r->data, &r->dlen, &r->dcap, l, n) ||
        !grow_put(&r->data, &r->dlen, &r->dcap, "\n", 1))
        r->over = true;
}

/* SSE bytes: lines are cut at LF, CR LF or CR; a CR at the end of a read
 * waits for the next byte (after_cr: the last line ended in a CR, an LF
 * right after it ends nothing). */
static void sse_body(struct sl_costread *r, const char *at, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        char c = at[i];
        if (c == '\n' && r->after_cr) { /* the LF of a CR LF */
            r->after_cr = false;
            continue;
        }
        r->after_cr = false;
        if (c == '\r' || c == '\n') {
            if (r->len == SIZE_MAX) /* a line too long: dropped whole */
                r->over = true;
            else
                sse_line(r, r->buf, r->len);
            r->len = 0;
            r->after_cr = c == '\r';
            continue;
        }
        if (r->len != SIZE_MAX && !grow_put(&r->buf, &r->len, &r->cap, &c, 1)) r->len = SIZE_MAX;
    }
}

void sl_costread_body(struct sl_costread *r, const char *at, size_t n)
{
    if (r->from != SL_COST_JSON || n == 0) return;
    if (r->sse) {
        sse_body(r, at, n);
        return;
    }
    if (!r->over && !grow_put(&r->buf, &r->len, &r->cap, at, n)) r->over = true;
}

static void drop_buffers(struct sl_costread *r)
{
    sl_free(r->buf);
    sl_free(r->data);
    r->buf = r->data = NULL;
    r->len = r->cap = r->dlen = r->dcap = 0;
}

bool sl_costread_end(struct sl_costread *r, uint64_t *cost)
{
    if (r->from == SL_COST_JSON && r->sse) {
        if (r->len && r->len != SIZE_MAX) sse_line(r, r->buf, r->len); /* no last line end */
        event_end(r);                                                  /* nor the last blank line */
    } else if (r->from == SL_COST_JSON) {
        uint64_t c;
        r->found = !r->over && sl_costread_json(r->name, r->buf, r->len, &c);
        r->cost = r->found ? c : 0;
    }
    drop_buffers(r);
    bool found = r->found;
    *cost = r->cost;
    sl_costread_begin(r);
    return found;
}

void sl_costread_fini(struct sl_costread *r)
{
    drop_buffers(r);
}
