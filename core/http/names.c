/* SPDX-License-Identifier: BSD-2-Clause */
/* names.c - the destination name in a ClientHello or a request head: see
 * names.h. */
#include "names.h"

#include <stdint.h>
#include <string.h>
#include <strings.h>

static bool name_char(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '_' || c == '.';
}

/* Copies p[0..n) to out when it is a plain host name. */
static bool copy_name(const unsigned char *p, size_t n, char *out, size_t outlen)
{
    if (n == 0 || n >= outlen) return false;
    for (size_t i = 0; i < n; i++)
        if (!name_char(p[i])) return false;
    memcpy(out, p, n);
    out[n] = 0;
    return true;
}

/* A bounded reader: every take fails once the bytes run out. */
struct rd {
    const unsigned char *p;
    size_t n;
};

static bool skip(struct rd *r, size_t k)
{
    if (k > r->n) return false;
    r->p += k;
    r->n -= k;
    return true;
}

static bool u8(struct rd *r, size_t *v)
{
    if (r->n < 1) return false;
    *v = r->p[0];
    return skip(r, 1);
}

static bool u16(struct rd *r, size_t *v)
{
    if (r->n < 2) return false;
    *v = (size_t)r->p[0] << 8 | r->p[1];
    return skip(r, 2);
}

/* Narrows r to its next k bytes (a vector), moving outer past them. */
static bool sub(struct rd *outer, size_t k, struct rd *r)
{
    r->p = outer->p;
    r->n = k;
    return skip(outer, k);
}

bool sl_name_sni(const void *buf, size_t len, char *out, size_t outlen)
{
    struct rd rec = {buf, len}, hs, body, exts, ext, list;
    size_t v, k, type;
    /* record: handshake (22), version, length; only its own bytes count */
    if (!u8(&rec, &v) || v != 22 || !skip(&rec, 2) || !u16(&rec, &k)) return false;
    if (k < rec.n) rec.n = k;
    /* handshake: client_hello (1), 24-bit length */
    if (!u8(&rec, &v) || v != 1 || rec.n < 3) return false;
    k = (size_t)rec.p[0] << 16 | (size_t)rec.p[1] << 8 | rec.p[2];
    skip(&rec, 3);
    hs = rec;
    if (k < hs.n) hs.n = k;
    /* version, random, session id, cipher suites, compression methods */
    if (!skip(&hs, 2 + 32) || !u8(&hs, &k) || !skip(&hs, k) || !u16(&hs, &k) || !skip(&hs, k) ||
        !u8(&hs, &k) || !skip(&hs, k) || !u16(&hs, &k) || !sub(&hs, k, &exts))
        return false;
    while (u16(&exts, &type) && u16(&exts, &k) && sub(&exts, k, &ext)) {
        if (type != 0) continue; /* server_name */
        if (!u16(&ext, &k) || !sub(&ext, k, &list)) return false;
        while (u8(&list, &type) && u16(&list, &k) && sub(&list, k, &body))
            if (type == 0) return copy_name(body.p, body.n, out, outlen); /* host_name */
        return false;
    }
    return false;
}

bool sl_name_host(const void *buf, size_t len, char *out, size_t outlen)
{
    const unsigned char *p = buf, *end = p + len;
    const unsigned char *nl = memchr(p, '\n', len); /* past the request line */
    while (nl && nl + 1 < end) {
        const unsigned char *line = nl + 1;
        nl = memchr(line, '\n', (size_t)(end - line));
        size_t n = (size_t)((nl ? nl : end) - line);
        if (n == 0 || (n == 1 && line[0] == '\r')) return false; /* the end of the head */
        if (n < 5 || strncasecmp((const char *)line, "host:", 5) != 0) continue;
        const unsigned char *v = line + 5, *e = line + n;
        while (v < e && (*v == ' ' || *v == '\t'))
            v++;
        const unsigned char *stop = v;
        while (stop < e && name_char(*stop))
            stop++;
        /* what may follow the name: a port, white space, the line's end */
        if (stop < e && *stop != ':' && *stop != ' ' && *stop != '\t' && *stop != '\r')
            return false;
        return nl != NULL && copy_name(v, (size_t)(stop - v), out, outlen);
    }
    return false;
}
