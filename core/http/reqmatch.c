/* SPDX-License-Identifier: BSD-2-Clause */
/* reqmatch.c - route, method and host matching (see reqmatch.h). */
#include "reqmatch.h"

#include <string.h>
#include <strings.h>

static int hex(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

static char lower(char c)
{
    return c >= 'A' && c <= 'Z' ? (char)(c + 32) : c;
}

bool sl_path_normalise(const char *path, size_t len, char *out, size_t outlen)
{
    if (outlen == 0) return false;
    if (len == 0 || path[0] != '/') {
        if (len >= outlen) return false;
        memcpy(out, path, len);
        out[len] = 0;
        return true;
    }
    size_t n = 0;
    for (size_t i = 0; i < len;) {
        char c = path[i];
        if (c == '%' && i + 2 < len + 0 && hex(path[i + 1]) >= 0 && hex(path[i + 2]) >= 0) {
            c = (char)(hex(path[i + 1]) << 4 | hex(path[i + 2]));
            i += 3;
        } else {
            i++;
        }
        if (c == 0) c = '_'; /* a decoded NUL must not end the string early */
        if (c == '/' && n > 0 && out[n - 1] == '/') continue;
        if (n + 1 >= outlen) {
            out[n] = 0; /* what fitted, for a caller that compares prefixes */
            return false;
        }
        out[n++] = c;
        /* a segment just ended: resolve "." and ".." */
        bool end = c == '/';
        if (!end && i == len) end = true;
        if (!end) continue;
        size_t seg_end = c == '/' ? n - 1 : n; /* index past the segment */
        size_t seg = seg_end;
        while (seg > 0 && out[seg - 1] != '/')
            seg--;
        size_t seglen = seg_end - seg;
        if (seglen == 1 && out[seg] == '.') {
            n = seg;
        } else if (seglen == 2 && out[seg] == '.' && out[seg + 1] == '.') {
            size_t up = seg > 1 ? seg - 1 : 0; /* the slash before ".." */
            while (up > 0 && out[up - 1] != '/')
                up--;
            n = up > 0 ? up : 1; /* never above the root */
        }
    }
    if (n == 0) out[n++] = '/';
    out[n] = 0;
    return true;
}

bool sl_glob_match(const char *p, const char *s, size_t len, bool fold)
{
    const char *star = NULL;
    size_t i = 0, star_i = 0;
    while (i < len) {
        if (*p == '*') {
            star = ++p;
            star_i = i;
            continue;
        }
        bool ok = false;
        const char *next = p + 1;
        char c = fold ? lower(s[i]) : s[i];
        if (*p == '?') {
            ok = true;
        } else if (*p == '[') {
            const char *q = p + 1;
            bool neg = *q == '!' || *q == '^';
            if (neg) q++;
            bool in = false;
            for (bool first = true; *q && (*q != ']' || first); q++, first = false) {
                char lo = fold ? lower(*q) : *q, hi = lo;
                if (q[1] == '-' && q[2] && q[2] != ']') {
                    hi = fold ? lower(q[2]) : q[2];
                    q += 2;
                }
                if (c >= lo && c <= hi) in = true;
            }
            if (*q == ']') {
                ok = in != neg;
                next = q + 1;
            } else {
                ok = c == '['; /* no closing bracket: a literal */
            }
        } else if (*p) {
            ok = (fold ? lower(*p) : *p) == c;
        }
        if (ok) {
            p = next;
            i++;
        } else if (star) {
            p = star;
            i = ++star_i;
        } else {
            return false;
        }
    }
    while (*p == '*')
        p++;
    return *p == 0;
}

static bool is_glob(const char *p)
{
    return strpbrk(p, "*?[") != NULL;
}

bool sl_route_matches(const struct sl_rule *r, const char *path)
{
    if (r->nroutes == 0) return true;
    size_t len = strlen(path);
    for (int i = 0; i < r->nroutes; i++) {
        const char *route = r->routes[i];
        if (is_glob(route)) {
            if (sl_glob_match(route, path, len, false)) return true;
            continue;
        }
        size_t rl = strlen(route);
        if (rl > len || memcmp(route, path, rl) != 0) continue;
        if (rl == len || route[rl - 1] == '/' || path[rl] == '/') return true;
    }
    return false;
}

bool sl_method_matches(const struct sl_rule *r, const char *method, size_t len)
{
    if (r->nmethods == 0) return true;
    for (int i = 0; i < r->nmethods; i++)
        if (strlen(r->methods[i]) == len && memcmp(r->methods[i], method, len) == 0) return true;
    return false;
}

/* The Host value without a port: "[::1]:80" -> "[::1]", "a.b:80" -> "a.b",
 * and without a trailing dot. */
static size_t host_only(const char *h, size_t len)
{
    if (len && h[0] == '[') {
        const char *close = memchr(h, ']', len);
        return close ? (size_t)(close - h) + 1 : len;
    }
    const char *colon = memchr(h, ':', len);
    if (colon) len = (size_t)(colon - h);
    if (len && h[len - 1] == '.') len--;
    return len;
}

bool sl_host_matches(const struct sl_rule *r, const char *host, size_t len)
{
    if (r->nreq_hosts == 0) return true;
    len = host_only(host, len);
    for (int i = 0; i < r->nreq_hosts; i++) {
        const char *want = r->req_hosts[i];
        if (strpbrk(want, "*?")) {
            if (sl_glob_match(want, host, len, true)) return true;
        } else if (strlen(want) == len && strncasecmp(want, host, len) == 0) {
            return true; /* "[::1]" is an address, not a set */
        }
    }
    return false;
}
