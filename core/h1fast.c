/* h1fast.c - the one-pass reader of common request heads (see h1fast.h).
 *
 * One pass over the head in 16-byte blocks (SSE2, which every x86-64 has;
 * a plain byte loop elsewhere) gives three bit masks per block: LF, CR,
 * and bytes the fast path refuses (control bytes other than CR and LF,
 * DEL, bytes >= 0x80). The LF bits are the line ends; each line is read
 * once, where it lies, and values are kept as slices. The head ends at
 * the first empty line. Refused bytes up to there, a CR anywhere but
 * right before an LF (counted: as many CRs as lines), or any line that is
 * not plainly shaped sends the head to http-parser.
 *
 * Why each shape is safe (http-parser 2.9.4, built without strict mode):
 * its URL characters in a path or query are every printable ASCII byte
 * but '#' (fragment: declined) and space; header names are its tokens
 * (we take only letters, digits, '-', '_'); values skip leading SP/HT and
 * run to the CR (callers trim trailing spaces as core/http1.c does);
 * "HTTP/1.0" and "HTTP/1.1" are the versions it reads with one digit
 * each. The headers that steer its framing are recognised by their full
 * name: Content-Length (digits only here; a second one is its error),
 * Connection (only "keep-alive" is taken), Transfer-Encoding, Upgrade and
 * Proxy-Connection (declined). A head that would not keep the connection
 * alive declines too: http-parser then refuses the bytes after it, and
 * only its own run gives that state.
 */
#include "h1fast.h"

#include <string.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/* A header name byte, lowercased; 0: not one the fast path reads. */
static const uint8_t name_chr[256] = {
    ['-'] = '-', ['_'] = '_',
    ['0'] = '0', ['1'] = '1', ['2'] = '2', ['3'] = '3', ['4'] = '4',
    ['5'] = '5', ['6'] = '6', ['7'] = '7', ['8'] = '8', ['9'] = '9',
#define L(u, l) [u] = l, [l] = l
    L('A', 'a'), L('B', 'b'), L('C', 'c'), L('D', 'd'), L('E', 'e'), L('F', 'f'), L('G', 'g'),
    L('H', 'h'), L('I', 'i'), L('J', 'j'), L('K', 'k'), L('L', 'l'), L('M', 'm'), L('N', 'n'),
    L('O', 'o'), L('P', 'p'), L('Q', 'q'), L('R', 'r'), L('S', 's'), L('T', 't'), L('U', 'u'),
    L('V', 'v'), L('W', 'w'), L('X', 'x'), L('Y', 'y'), L('Z', 'z'),
#undef L
};

bool sl_h1fast_key_init(struct sl_h1fast_key *k, const char *name, size_t len, bool cookies)
{
    memset(k, 0, sizeof *k);
    k->cookies = cookies;
    if (!name || len == 0) return true;
    if (len >= sizeof k->name) return false;
    for (size_t i = 0; i < len; i++) {
        uint8_t c = name_chr[(uint8_t)name[i]];
        if (!c) { /* never a name here: matches nothing */
            k->len = 0;
            return false;
        }
        k->name[i] = (char)c;
    }
    k->len = (uint8_t)len;
    return true;
}

/* name (n bytes, already known to be name_chr bytes) is `lower`. */
static bool name_eq(const char *name, size_t n, const char *lower, size_t ln)
{
    if (n != ln) return false;
    for (size_t i = 0; i < n; i++)
        if (name_chr[(uint8_t)name[i]] != (uint8_t)lower[i]) return false;
    return true;
}

#define EQ(name, n, lit) name_eq(name, n, lit, sizeof lit - 1)

struct method {
    char text[8]; /* "GET " */
    uint8_t len;  /* without the space */
    bool get;
};

static const struct method methods[] = {
    {"GET ", 3, true},  {"POST ", 4, false},    {"PUT ", 3, false},   {"HEAD ", 4, true},
    {"DELETE ", 6, false}, {"PATCH ", 5, false}, {"OPTIONS ", 7, false},
};
static const char *const method_names[] = {"GET", "POST", "PUT", "HEAD", "DELETE", "PATCH", "OPTIONS"};

/* The request line [p, p + n) without its CRLF. */
static bool request_line(const char *p, size_t n, struct sl_h1fast *out, bool *get)
{
    size_t m;
    for (m = 0; m < sizeof methods / sizeof methods[0]; m++)
        if (n > methods[m].len && memcmp(p, methods[m].text, methods[m].len + 1u) == 0) break;
    if (m == sizeof methods / sizeof methods[0]) return false;
    size_t t = methods[m].len + 1u; /* the target's first byte */
    /* " HTTP/1.x" ends the line; the target is everything between */
    if (n < t + 1 + 9 || memcmp(p + n - 9, " HTTP/1.", 8) != 0) return false;
    char minor = p[n - 1];
    if (minor != '0' && minor != '1') return false;
    size_t tl = n - 9 - t;
    if (p[t] != '/' || memchr(p + t, ' ', tl) || memchr(p + t, '#', tl)) return false;
    out->method = method_names[m];
    out->method_len = methods[m].len;
    out->http_minor = (uint8_t)(minor - '0');
    out->url = (struct sl_h1fast_slice){.off = (uint16_t)t, .len = (uint16_t)tl, .present = true};
    *get = methods[m].get;
    return true;
}

struct state {
    bool get, keep_alive;
};

/* A header line [ls, ls + n) of buf, without its CRLF. */
static bool header_line(const char *buf, size_t ls, size_t n, const struct sl_h1fast_key *k,
                        struct sl_h1fast *out, struct state *st)
{
    const char *p = buf + ls;
    size_t c = 0;
    while (c < n && name_chr[(uint8_t)p[c]])
        c++;
    if (c == 0 || c == n || p[c] != ':') return false;
    size_t v = c + 1;
    while (v < n && p[v] == ' ')
        v++;
    size_t e = n;
    while (e > v && p[e - 1] == ' ')
        e--;
    if (e == v) return false; /* an empty value: http-parser's callbacks differ */
    /* untrimmed, as http-parser hands it over: a value cut to its buffer
     * is hashed whole, trailing spaces included, before the trim */
    struct sl_h1fast_slice val = {.off = (uint16_t)(ls + v), .len = (uint16_t)(n - v), .present = true};
    /* framing first: it does not depend on which field the value feeds */
    switch (c) {
    case 7:
        if (EQ(p, c, "upgrade")) return false;
        break;
    case 10:
        if (EQ(p, c, "connection")) {
            if (e != n || !EQ(p + v, e - v, "keep-alive")) return false;
            st->keep_alive = true;
        }
        break;
    case 14:
        if (EQ(p, c, "content-length")) {
            if (out->has_length || e != n || e - v > 15) return false;
            uint64_t len = 0;
            for (size_t i = v; i < e; i++) {
                if (p[i] < '0' || p[i] > '9') return false;
                len = len * 10 + (uint64_t)(p[i] - '0');
            }
            out->has_length = true;
            out->content_length = len;
        }
        break;
    case 16:
        if (EQ(p, c, "proxy-connection")) return false;
        break;
    case 17:
        if (EQ(p, c, "transfer-encoding")) return false;
        break;
    default:
        break;
    }
    /* then the field it feeds, in core/http1.c's order: the key (the
     * first wins), a Cookie line, Host, Idempotency-Key */
    if (k->len && name_eq(p, c, k->name, k->len)) {
        if (!out->key.present) out->key = val;
        return true;
    }
    if (c == 6 && k->cookies && EQ(p, c, "cookie")) return false;
    if (c == 4 && EQ(p, c, "host")) {
        if (!out->host.present) out->host = val;
    } else if (c == 15 && EQ(p, c, "idempotency-key")) {
        if (!out->idem.present) out->idem = val;
    }
    return true;
}

/* The masks of 16 bytes at p (n <= 16 of them are real). */
static inline void masks(const char *p, size_t n, uint32_t *lf, uint32_t *cr, uint32_t *bad)
{
    char tmp[16];
    if (n < 16) { /* the tail: never read past the buffer */
        memset(tmp, 0, sizeof tmp);
        memcpy(tmp, p, n);
        p = tmp;
    }
    uint32_t real = n < 16 ? (1u << n) - 1 : 0xffffu;
#if defined(__SSE2__)
    __m128i b = _mm_loadu_si128((const __m128i *)(const void *)p);
    uint32_t l = (uint32_t)_mm_movemask_epi8(_mm_cmpeq_epi8(b, _mm_set1_epi8('\n')));
    uint32_t r = (uint32_t)_mm_movemask_epi8(_mm_cmpeq_epi8(b, _mm_set1_epi8('\r')));
    /* unsigned b <= 0x1f, b == 0x7f, b >= 0x80 */
    __m128i low = _mm_cmpeq_epi8(_mm_max_epu8(b, _mm_set1_epi8(0x1f)), _mm_set1_epi8(0x1f));
    uint32_t x = (uint32_t)_mm_movemask_epi8(low) | (uint32_t)_mm_movemask_epi8(b) |
                 (uint32_t)_mm_movemask_epi8(_mm_cmpeq_epi8(b, _mm_set1_epi8(0x7f)));
#else
    uint32_t l = 0, r = 0, x = 0;
    for (int i = 0; i < 16; i++) {
        uint8_t c = (uint8_t)p[i];
        l |= (uint32_t)(c == '\n') << i;
        r |= (uint32_t)(c == '\r') << i;
        x |= (uint32_t)(c < 0x20 || c >= 0x7f) << i;
    }
#endif
    *lf = l & real;
    *cr = r & real;
    *bad = x & ~(l | r) & real;
}

bool sl_h1fast_scan(const char *buf, size_t len, const struct sl_h1fast_key *k,
                    struct sl_h1fast *out)
{
    size_t lim = len < SL_H1FAST_MAX ? len : SL_H1FAST_MAX;
    struct state st = {0};
    size_t ls = 0, lines = 0, crs = 0;
    memset(out, 0, sizeof *out);
    for (size_t blk = 0; blk < lim; blk += 16) {
        uint32_t lf, cr, bad;
        masks(buf + blk, lim - blk < 16 ? lim - blk : 16, &lf, &cr, &bad);
        while (lf) {
            size_t bit = (size_t)__builtin_ctz(lf);
            size_t i = blk + bit; /* an LF */
            lf &= lf - 1;
            if (i == ls || buf[i - 1] != '\r') return false;
            size_t n = i - 1 - ls; /* the line without CRLF */
            lines++;
            if (lines == 1) {
                if (!request_line(buf, n, out, &st.get)) return false;
            } else if (n > 0) {
                if (!header_line(buf, ls, n, k, out, &st)) return false;
            } else { /* the blank line: the head ends after this LF */
                uint32_t upto = bit == 31 ? ~0u : (2u << bit) - 1;
                if (bad & upto) return false;
                crs += (size_t)__builtin_popcount(cr & upto);
                if (crs != lines) return false;
                /* HTTP/1.0 is kept alive only when asked; a GET or HEAD
                 * with a body is odd (core/http1.c) */
                if (out->http_minor == 0 && !st.keep_alive) return false;
                if (st.get && out->content_length > 0) return false;
                out->end = i + 1;
                return true;
            }
            ls = i + 1;
        }
        if (bad) return false;
        crs += (size_t)__builtin_popcount(cr);
    }
    return false;
}
