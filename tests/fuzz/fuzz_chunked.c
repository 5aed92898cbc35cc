/* SPDX-License-Identifier: BSD-2-Clause */
/* fuzz_chunked.c - libFuzzer target: sluice frames a chunked request body
 * as the servers do, or reads what follows it for heads (issue 31.1).
 *
 * The input (after a first byte that picks the split of the feeds) is the
 * body of a chunked POST. Three readings of it, written here from the
 * servers' sources rather than from sluice's:
 * - nginx (ngx_http_parse_chunked, 1.22): a size line ends at LF or CRLF,
 *   after the hex digits anything up to it is an extension (begun by ";",
 *   SP or HTAB), data is followed by LF or CRLF, trailer lines are
 *   anything up to LF or CRLF. llhttp accepts less (CRLF only, token
 *   extensions) and frames what it accepts as nginx does, so nginx's
 *   reading stands for it;
 * - python (http.client's reader, what WSGI servers copy): readline (to
 *   LF), the size is int(line before ";", 16) (blanks, "0x", "_" and "+"
 *   taken), any two bytes after the data, trailer lines to an empty one;
 * - the common ground (strict): HEX[;ext]CRLF with a token-ish extension,
 *   data then CRLF, trailers "token:text" CRLF, then CRLF; a trailer named
 *   Content-Length holds one length, as http-parser (sluice's reader) takes
 *   it in a head, else the body leaves the common ground where it stops.
 * Checked, fed whole and in pieces:
 * 1. where a server's reading ends the body, a request inserted there (the
 *    request that server runs next) is inside a head sluice reports;
 * 2. a body on the common ground ends where nginx and python end it, and
 *    sluice finds nothing odd in it (sl_h1_odd_body);
 * 3. a body that leaves the common ground at byte j is odd from byte j.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "../../core/http/http1.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define HEAD   "POST /p HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
#define HIDDEN "GET /hidden HTTP/1.1\r\nHost: x\r\n\r\n"
#define MAXB   4096
/* every head a scan reports (at most one a byte: a head cut short by where
 * a body ends may be one byte; 64 were kept, and a request hidden behind
 * the 64th went unchecked: a finding of the harness, not of sluice) */
#define MAXH (sizeof HEAD + MAXB + sizeof HIDDEN)

/* The readings: the length of the body (the offset where the next request
 * begins), END_BAD when refused, END_MORE when it needs more bytes. */
#define END_BAD  (-1)
#define END_MORE (-2)

static int hex_of(uint8_t c)
{
    if (c >= '0' && c <= '9') return c - '0';
    c |= 0x20;
    return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

static long nginx_end(const uint8_t *b, size_t n)
{
    enum { START, SIZE, EXT, EXT_LF, DATA, AFTER, AFTER_LF, TRAILER, TRAILER_LF, THEAD, THEAD_LF };
    int st = START;
    uint64_t size = 0;
    bool last = false;
    for (size_t i = 0; i < n; i++) {
        uint8_t c = b[i];
        switch (st) {
        case START:
            if (hex_of(c) < 0) return END_BAD;
            size = (uint64_t)hex_of(c);
            st = SIZE;
            break;
        case SIZE:
            if (size > INT64_MAX / 16) return END_BAD;
            if (hex_of(c) >= 0) {
                size = size * 16 + (uint64_t)hex_of(c);
                break;
            }
            last = size == 0;
            if (c == '\r')
                st = EXT_LF;
            else if (c == '\n')
                st = last ? TRAILER : DATA;
            else if (c == ';' || c == ' ' || c == '\t')
                st = EXT;
            else
                return END_BAD;
            break;
        case EXT:
            if (c == '\r') st = EXT_LF;
            if (c == '\n') st = last ? TRAILER : DATA;
            break;
        case EXT_LF:
            if (c != '\n') return END_BAD;
            st = last ? TRAILER : DATA;
            break;
        case DATA: {
            uint64_t take = size < n - i ? size : n - i;
            size -= take;
            i += take - 1;
            if (size == 0) st = AFTER;
            break;
        }
        case AFTER:
            if (c == '\r')
                st = AFTER_LF;
            else if (c == '\n')
                st = START;
            else
                return END_BAD;
            break;
        case AFTER_LF:
            if (c != '\n') return END_BAD;
            st = START;
            break;
        case TRAILER:
            if (c == '\n') return (long)i + 1;
            st = c == '\r' ? TRAILER_LF : THEAD;
            break;
        case TRAILER_LF:
            if (c != '\n') return END_BAD;
            return (long)i + 1;
        case THEAD:
            if (c == '\r') st = THEAD_LF;
            if (c == '\n') st = TRAILER;
            break;
        case THEAD_LF:
            if (c != '\n') return END_BAD;
            st = TRAILER;
            break;
        }
    }
    return END_MORE;
}

/* The next line (through its LF) at *i: its length, 0 when there is no LF. */
static size_t readline(const uint8_t *b, size_t n, size_t i)
{
    const uint8_t *lf = memchr(b + i, '\n', n - i);
    return lf ? (size_t)(lf - (b + i)) + 1 : 0;
}

static bool py_space(uint8_t c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

/* int(s, 16) as python reads it (a negative size is refused). */
static bool py_hex(const uint8_t *s, size_t n, uint64_t *v)
{
    while (n && py_space(s[0]))
        s++, n--;
    while (n && py_space(s[n - 1]))
        n--;
    if (n && s[0] == '+') s++, n--;
    bool prefix = n >= 2 && s[0] == '0' && (s[1] | 0x20) == 'x';
    if (prefix) s += 2, n -= 2;
    *v = 0;
    bool digit = false, under = prefix; /* "0x_1" is taken, "_1" and "1__2" are not */
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '_' && (digit || under) && !(i > 0 && s[i - 1] == '_')) {
            under = false;
            continue;
        }
        if (hex_of(s[i]) < 0 || *v > UINT64_MAX / 32) return false;
        *v = *v * 16 + (uint64_t)hex_of(s[i]);
        digit = true;
        under = false;
    }
    return digit && s[n - 1] != '_';
}

static long python_end(const uint8_t *b, size_t n)
{
    size_t i = 0;
    for (;;) {
        size_t l = readline(b, n, i);
        if (!l) return END_MORE;
        const uint8_t *semi = memchr(b + i, ';', l);
        uint64_t size;
        if (!py_hex(b + i, semi ? (size_t)(semi - (b + i)) : l, &size)) return END_BAD;
        i += l;
        if (size == 0) break;
        if (size > n - i || n - i - size < 2) return END_MORE;
        i += size + 2; /* _safe_read(2): whatever they are */
    }
    for (;;) { /* trailers, to an empty line */
        size_t l = readline(b, n, i);
        if (!l) return END_MORE;
        i += l;
        if (l == 1 || (l == 2 && b[i - 2] == '\r')) return (long)i;
    }
}

static bool tchar(uint8_t c)
{
    if ((c >= '0' && c <= '9') || ((c | 0x20) >= 'a' && (c | 0x20) <= 'z')) return true;
    return c && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

/* A trailer named Content-Length: http-parser reads it as in a head, so
 * its value is digits between spaces (no tab), at most one such trailer,
 * and not empty; the common ground takes what it takes. From after the
 * colon at *i, through the line's LF: 0, or where the value leaves it as
 * strict_end says it (END_MORE for a prefix). */
static long length_value(const uint8_t *b, size_t n, size_t *at, bool again)
{
    size_t i = *at;
    while (i < n && (b[i] == ' ' || b[i] == '\t'))
        i++;
    if (i == n) return END_MORE;
    if (b[i] == '\r') { /* empty: refused at the next line's first byte */
        if (++i == n) return END_MORE;
        if (b[i++] != '\n') return -(long)i + 1 - 3;
        return i == n ? END_MORE : -(long)i - 3;
    }
    if (again || b[i] < '0' || b[i] > '9') return -(long)i - 3;
    uint64_t v = 0;
    bool spaces = false;
    for (; i < n && b[i] != '\r'; i++) {
        if (b[i] == ' ') {
            spaces = true;
            continue;
        }
        if (spaces || b[i] < '0' || b[i] > '9' || (UINT64_MAX - 10) / 10 < v) return -(long)i - 3;
        v = v * 10 + (uint64_t)(b[i] - '0');
    }
    if (i == n || ++i == n) return END_MORE;
    if (b[i++] != '\n') return -(long)i + 1 - 3;
    *at = i;
    return 0;
}

/* The common ground: the body's length, or -(j + 3) for a body that
 * leaves it at byte j, END_MORE for a prefix of one. */
static long strict_end(const uint8_t *b, size_t n)
{
    size_t i = 0;
    for (;;) {
        size_t s = i;
        uint64_t size = 0;
        for (; i < n && hex_of(b[i]) >= 0; i++) {
            if (size >> 56) return -(long)i - 3;
            size = size * 16 + (uint64_t)hex_of(b[i]);
        }
        if (i == n) return END_MORE;
        if (i == s) return -(long)i - 3;
        if (b[i] == ';')
            for (i++; i < n && b[i] != '\r'; i++)
                if (!tchar(b[i]) && !(b[i] && strchr(";=\" \t", b[i]))) return -(long)i - 3;
        if (i == n) return END_MORE;
        if (b[i++] != '\r') return -(long)i + 1 - 3;
        if (i == n) return END_MORE;
        if (b[i++] != '\n') return -(long)i + 1 - 3;
        if (size == 0) break;
        if (size > n - i) return END_MORE;
        i += size;
        for (const char *crlf = "\r\n"; *crlf; crlf++, i++) {
            if (i == n) return END_MORE;
            if (b[i] != (uint8_t)*crlf) return -(long)i - 3;
        }
    }
    int lengths = 0;
    for (;;) { /* trailers */
        if (i == n) return END_MORE;
        if (b[i] == '\r') {
            if (++i == n) return END_MORE;
            return b[i] == '\n' ? (long)i + 1 : -(long)i - 3;
        }
        if (!tchar(b[i])) return -(long)i - 3;
        size_t name = i;
        while (i < n && tchar(b[i]))
            i++;
        if (i == n) return END_MORE;
        bool length =
            i - name == 14 && strncasecmp((const char *)b + name, "content-length", 14) == 0;
        if (b[i++] != ':') return -(long)i + 1 - 3;
        if (length) {
            long at = length_value(b, n, &i, lengths++ > 0);
            if (at != 0) return at;
            continue;
        }
        while (i < n && b[i] != '\r') {
            if (b[i] != '\t' && (b[i] < 0x20 || b[i] >= 0x7f)) return -(long)i - 3;
            i++;
        }
        if (i == n || ++i == n) return END_MORE;
        if (b[i++] != '\n') return -(long)i + 1 - 3;
    }
}

struct seen {
    int heads;
    uint64_t start[MAXH], end[MAXH];
    uint64_t odd;
};

static void scan(const uint8_t *buf, size_t len, unsigned seed, struct seen *r)
{
    static struct sl_h1 s;
    sl_h1_fini(&s);
    sl_h1_init(&s, SL_H1_KEY_HEADER, "x-api-key");
    r->heads = 0;
    for (size_t off = 0; off < len;) {
        size_t piece = seed ? 1 + (seed = seed * 1103515245 + 12345) % 17 : len - off;
        if (piece > len - off) piece = len - off;
        enum sl_h1_event ev;
        off += sl_h1_feed(&s, buf + off, piece, &ev);
        if (ev == SL_H1_HEAD) {
            if (r->heads == MAXH) abort(); /* more heads than bytes */
            const struct sl_h1_head *h = sl_h1_head(&s);
            r->start[r->heads] = h->start;
            r->end[r->heads++] = h->end;
        }
        if (ev == SL_H1_H2 || ev == SL_H1_PASSTHROUGH) break;
    }
    r->odd = sl_h1_odd_body(&s);
}

/* Check 1: HIDDEN inserted where a reading ends the body is counted. */
static void inserted(const uint8_t *b, size_t n, long end, unsigned seed)
{
    static uint8_t buf[sizeof HEAD + MAXB + sizeof HIDDEN];
    size_t h = strlen(HEAD), k = strlen(HIDDEN), e = (size_t)end;
    memcpy(buf, HEAD, h);
    memcpy(buf + h, b, e);
    memcpy(buf + h + e, HIDDEN, k);
    memcpy(buf + h + e + k, b + e, n - e);
    for (int pass = 0; pass < 2; pass++) {
        static struct seen r;
        scan(buf, h + n + k, pass ? seed : 0, &r);
        bool found = false;
        for (int i = 1; i < r.heads && !found; i++)
            found = r.start[i] <= h + e && h + e < r.end[i];
        if (!found) abort(); /* a request the server runs went uncounted */
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size - 1 > MAXB) return 0;
    const uint8_t *b = data + 1;
    size_t n = size - 1;
    unsigned seed = data[0] | 1u;
    long ng = nginx_end(b, n), py = python_end(b, n), st = strict_end(b, n);
    if (ng >= 0) inserted(b, n, ng, seed);
    if (py >= 0 && py != ng) inserted(b, n, py, seed);
    static uint8_t buf[sizeof HEAD + MAXB];
    size_t h = strlen(HEAD);
    memcpy(buf, HEAD, h);
    memcpy(buf + h, b, n);
    for (int pass = 0; pass < 2; pass++) {
        static struct seen r;
        scan(buf, h + n, pass ? seed : 0, &r);
        if (st >= 0) {                         /* 2: the common ground */
            if (ng != st || py != st) abort(); /* the servers part on it: it is not common */
            if (r.odd && r.odd < h + (size_t)st) abort();
        } else if (st <= -3) { /* 3: left at byte j */
            if (r.odd != h + (size_t)(-st - 3)) abort();
        } else if (r.odd) { /* a prefix of the common ground */
            abort();
        }
    }
    return 0;
}
