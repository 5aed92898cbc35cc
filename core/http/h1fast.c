/* SPDX-License-Identifier: BSD-2-Clause */
/* h1fast.c - the one-pass reader of common request heads (see h1fast.h).
 *
 * One pass over the head, line by line (SSE2, which every x86-64 has; a
 * plain byte loop elsewhere and for the last bytes before the end of the
 * read). A line's first 16 bytes are loaded once: the same load gives
 * where its name ends (its first byte that is not a letter, digit, '-' or
 * '_') and its first "stop" (a byte below 0x20, DEL or a byte >= 0x80);
 * a longer line is searched 16 bytes a step for its first stop, which
 * must be its CR before an LF. So every byte up to the blank line that
 * ends the head is either in a line without stops or one of a line's
 * CR LF: a refused byte, or a CR or LF anywhere else, sends the head to
 * http-parser, as does any line not plainly shaped. Of the header lines
 * only those whose name may be one the rule or the framing reads (told by
 * the name's length and first letter: Host, the key's, Content-Length,
 * Connection, ...) are compared and read (header_line); the rest of a
 * real head (User-Agent, Accept, traceparent, x-stainless-*) is only
 * checked: a plain name, its colon, a value not empty. Values are kept
 * as slices.
 *
 * Measured (bench/h1_insn.sh: ~300-byte heads, none repeated): 3.8
 * instructions per byte of head, 61 ns a head, against 7.4 and 87 ns for
 * the 16-byte block masks and per-line parsing this replaced. SSE4.2's
 * PCMPISTRI (one instruction for a search of 16 bytes, as picohttpparser
 * uses) counted 3.1 instructions per byte but took 68 ns a head on the
 * same machine: fewer instructions, more cycles, so it is not used.
 *
 * Why each shape is safe (http-parser 2.9.4, built without strict mode):
 * its URL characters in a path or query are every printable ASCII byte
 * but '#' (fragment: declined) and space; header names are its tokens
 * (we take only letters, digits, '-', '_'); values skip leading SP/HT and
 * run to the CR (callers trim trailing spaces as core/http/http1.c does);
 * "HTTP/1.0" and "HTTP/1.1" are the versions it reads with one digit
 * each. The headers that steer its framing are recognised by their full
 * name: Content-Length (digits only here; a second one is its error),
 * Connection (only "keep-alive" is taken), Transfer-Encoding (any name
 * beginning with it, as its matcher flags a prefix), Upgrade and
 * Proxy-Connection (declined). A head that would not keep the connection
 * alive declines too: http-parser then refuses the bytes after it, and
 * only its own run gives that state.
 */
#include "h1fast.h"

#include <stdatomic.h>
#include <string.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/* A header name byte, lowercased; 0: not one the fast path reads. */
static const uint8_t name_chr[256] = {
    ['-'] = '-', ['_'] = '_', ['0'] = '0', ['1'] = '1', ['2'] = '2', ['3'] = '3', ['4'] = '4',
    ['5'] = '5', ['6'] = '6', ['7'] = '7', ['8'] = '8', ['9'] = '9',
#define L(u, l) [u] = l, [l] = l
    L('A', 'a'), L('B', 'b'), L('C', 'c'), L('D', 'd'), L('E', 'e'), L('F', 'f'), L('G', 'g'),
    L('H', 'h'), L('I', 'i'), L('J', 'j'), L('K', 'k'), L('L', 'l'), L('M', 'm'), L('N', 'n'),
    L('O', 'o'), L('P', 'p'), L('Q', 'q'), L('R', 'r'), L('S', 's'), L('T', 't'), L('U', 'u'),
    L('V', 'v'), L('W', 'w'), L('X', 'x'), L('Y', 'y'), L('Z', 'z'),
#undef L
};

/* The key's generation: FNV-1a over what the scan reads of it (its
 * length and lowercase name). Names come from the configuration, so two
 * that differ meet in one process with a chance of 2^-64, and never by a
 * peer's choice. */
static void key_gen(struct sl_h1fast_key *k)
{
    uint64_t h = 0xcbf29ce484222325ull ^ k->len;
    for (size_t i = 0; i < k->len; i++)
        h = (h ^ (uint8_t)k->name[i]) * 0x100000001b3ull;
    k->gen = h;
}

bool sl_h1fast_key_init(struct sl_h1fast_key *k, const char *name, size_t len, bool cookies)
{
    memset(k, 0, sizeof *k);
    k->cookies = cookies;
    bool ok = true;
    if (name && len >= sizeof k->name) {
        ok = false;
    } else if (name && len) {
        for (size_t i = 0; i < len; i++) {
            uint8_t c = name_chr[(uint8_t)name[i]];
            if (!c) { /* never a name here: matches nothing */
                memset(k->name, 0, sizeof k->name);
                ok = false;
                break;
            }
            k->name[i] = (char)(c == '_' ? '-' : c); /* one name to servers (key_is) */
        }
        if (ok) k->len = (uint8_t)len;
    }
    key_gen(k);
    return ok;
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

/* 8 bytes at p, as a little-endian word (x86-64 and arm64 both are). */
static inline uint64_t load8(const char *p)
{
    uint64_t w;
    memcpy(&w, p, 8);
    return w;
}

#define W(a, b, c, d, e, f, g, h)                                                                  \
    ((uint64_t)(uint8_t)(a) | (uint64_t)(uint8_t)(b) << 8 | (uint64_t)(uint8_t)(c) << 16 |         \
     (uint64_t)(uint8_t)(d) << 24 | (uint64_t)(uint8_t)(e) << 32 | (uint64_t)(uint8_t)(f) << 40 |  \
     (uint64_t)(uint8_t)(g) << 48 | (uint64_t)(uint8_t)(h) << 56)

struct method {
    uint64_t word, mask; /* the method and its space, as the line's first bytes */
    char name[8];        /* NUL-padded: 8 bytes may be copied */
    uint8_t len;
    bool get;
};

#define M(n) (~0ull >> (64 - 8 * (n)))
static const struct method methods[] = {
    {W('G', 'E', 'T', ' ', 0, 0, 0, 0), M(4), "GET", 3, true},
    {W('P', 'O', 'S', 'T', ' ', 0, 0, 0), M(5), "POST", 4, false},
    {W('P', 'U', 'T', ' ', 0, 0, 0, 0), M(4), "PUT", 3, false},
    {W('H', 'E', 'A', 'D', ' ', 0, 0, 0), M(5), "HEAD", 4, true},
    {W('D', 'E', 'L', 'E', 'T', 'E', ' ', 0), M(7), "DELETE", 6, false},
    {W('P', 'A', 'T', 'C', 'H', ' ', 0, 0), M(6), "PATCH", 5, false},
    {W('O', 'P', 'T', 'I', 'O', 'N', 'S', ' '), M(8), "OPTIONS", 7, false},
};
#undef M

/* The method the line at p begins with (8 bytes readable), with its
 * space: its index in methods, or -1. */
static inline int method_of(const char *p)
{
    uint64_t w = load8(p);
    for (size_t m = 0; m < sizeof methods / sizeof methods[0]; m++)
        if ((w & methods[m].mask) == methods[m].word) return (int)m;
    return -1;
}

/* The request line's fields: method m, the target [t, t + tl) with its
 * first '?' at q (tl: none), the version's minor digit. */
static void request_out(int m, size_t t, size_t tl, size_t q, char minor, struct sl_h1fast *out,
                        bool *get)
{
    out->method = methods[m].name;
    out->method_len = methods[m].len;
    out->http_minor = (uint8_t)(minor - '0');
    out->url = (struct sl_h1fast_slice){.off = (uint16_t)t, .len = (uint16_t)tl, .present = true};
    /* as core/http/http1.c splits an origin-form target: the query after the first '?' */
    out->path_len = (uint16_t)q;
    out->query_off = (uint16_t)(q < tl ? q + 1 : 0);
    out->query_len = (uint16_t)(q < tl ? tl - q - 1 : 0);
    *get = methods[m].get;
}

/* The request line [p, p + n) without its CRLF (n >= 14: checked; lim
 * bytes readable at p). */
static bool request_line(const char *p, size_t n, size_t lim, struct sl_h1fast *out, bool *get)
{
    int m = method_of(p);
    if (m < 0) return false;
    size_t t = methods[m].len + 1u; /* the target's first byte */
    /* " HTTP/1.x" ends the line; the target is everything between */
    if (n < t + 1 + 9 || load8(p + n - 9) != W(' ', 'H', 'T', 'T', 'P', '/', '1', '.'))
        return false;
    char minor = p[n - 1];
    if ((minor != '0' && minor != '1') || p[t] != '/') return false;
    size_t tl = n - 9 - t, q = tl;
    for (size_t i = 0; i < tl;) {
#if defined(__SSE2__)
        if (t + i + 16 <= lim) { /* 16 target bytes at a time: no space, no '#', the first '?' */
            __m128i b = _mm_loadu_si128((const __m128i *)(const void *)(p + t + i));
            uint32_t no = (uint32_t)_mm_movemask_epi8(_mm_or_si128(
                _mm_cmpeq_epi8(b, _mm_set1_epi8(' ')), _mm_cmpeq_epi8(b, _mm_set1_epi8('#'))));
            uint32_t qm = (uint32_t)_mm_movemask_epi8(_mm_cmpeq_epi8(b, _mm_set1_epi8('?')));
            uint32_t want = tl - i >= 16 ? 0xffffu : (1u << (tl - i)) - 1;
            if (no & want) return false;
            if ((qm & want) && q == tl) q = i + (size_t)__builtin_ctz(qm & want);
            i += 16;
            continue;
        }
#endif
        char c = p[t + i];
        if (c == ' ' || c == '#') return false;
        if (c == '?' && q == tl) q = i;
        i++;
    }
    request_out(m, t, tl, q, minor, out, get);
    return true;
}

struct state {
    bool get, keep_alive;
};

/* Whether the name at p (c bytes, name bytes only) is the lowercase
 * literal lit (len bytes, 4 <= len <= 16, lit readable for 16): folded
 * (| 0x20), 8 bytes at a time. Among name bytes folding only merges the
 * two cases ('_' folds to 0x7f, in no literal). The head has at least 4
 * bytes after a name (its colon, a value, CR LF), so 8 are readable at p. */
static inline bool name_is(const char *p, size_t c, const char *lit, size_t len)
{
    const uint64_t f = 0x2020202020202020ull;
    if (c != len) return false;
    if (len <= 8) return ((load8(p) | f) & (~0ull >> (64 - 8 * len))) == load8(lit);
    return (load8(p) | f) == load8(lit) && (load8(p + len - 8) | f) == load8(lit + len - 8);
}

#define IS(p, c, lit) name_is(p, c, (const char[16]){lit}, sizeof lit - 1)

/* 8 name bytes folded as servers fold names (core/http/reqkey.h: any
 * case, '_' as '-'): | 0x20, then 0x7f (a folded '_') made '-'. Every byte
 * folded is below 0x80, so + 1 carries into no other byte. */
static inline uint64_t key_fold(uint64_t w)
{
    uint64_t x = w | 0x2020202020202020ull;
    uint64_t del = (x + 0x0101010101010101ull) & 0x8080808080808080ull;
    return x ^ (del >> 7) * (0x7f ^ '-');
}

/* The name at p (c bytes, the key's length) is the key's: whole words
 * where 8 bytes are readable at p (c >= 4, as for name_is); k->name is
 * zero past its length (sl_h1fast_key_init), as the masked word is. */
static inline bool key_is(const char *p, size_t c, const struct sl_h1fast_key *k)
{
    if (c >= 4 && c <= 8) return (key_fold(load8(p)) & (~0ull >> (64 - 8 * c))) == load8(k->name);
    if (c > 8 && c <= 16)
        return key_fold(load8(p)) == load8(k->name) &&
               key_fold(load8(p + c - 8)) == load8(k->name + c - 8);
    for (size_t i = 0; i < c; i++) {
        uint8_t b = name_chr[(uint8_t)p[i]];
        if ((b == '_' ? '-' : b) != (uint8_t)k->name[i]) return false;
    }
    return true;
}

/* The bytes a line stops at, 16 from p, as a bit mask: every byte below
 * 0x20 (CR and LF among them), DEL and every byte >= 0x80. Signed, b + 1
 * is below 0x21 for exactly these (0x7f wraps to -128, 0x80..0xff to
 * -127..0), so b + 1 - 0x21, saturated, is negative for exactly these:
 * two vector operations and the sign bits. */
#if defined(__SSE2__)
static inline uint32_t stops_of(__m128i b)
{
    return (uint32_t)_mm_movemask_epi8(
        _mm_subs_epi8(_mm_add_epi8(b, _mm_set1_epi8(1)), _mm_set1_epi8(0x21)));
}
#endif

static inline uint32_t stops16(const char *p)
{
#if defined(__SSE2__)
    return stops_of(_mm_loadu_si128((const __m128i *)(const void *)p));
#else
    uint32_t x = 0;
    for (int i = 0; i < 16; i++) {
        uint8_t c = (uint8_t)p[i];
        x |= (uint32_t)(c < 0x20 || c >= 0x7f) << i;
    }
    return x;
#endif
}

/* 2 bytes at p, as a little-endian word. */
static inline uint16_t load2(const char *p)
{
    uint16_t w;
    memcpy(&w, p, 2);
    return w;
}

#define CRLF ('\r' | '\n' << 8)

/* The CR that ends the line at pos (first: the stops of its first 16
 * bytes, lim - pos >= 16): the line's first stop, which must be a CR
 * before an LF, both before lim. 0: not so (a bare CR or LF, a refused
 * byte, or the line runs on past lim); a line never ends at 0. Near lim,
 * the last 16 bytes are read shifted, the bytes past lim counted as
 * stops (never read). */
static inline size_t line_end(const char *buf, size_t pos, size_t lim, uint32_t first)
{
    size_t at = pos, last = lim - 16; /* the last start of 16 readable bytes */
    uint32_t m = first;
    while (!m) {
        at += 16;
        if (at > last) { /* near lim, or past it */
            if (at >= lim) return 0;
            size_t room = lim - at;
            m = stops16(buf + last) >> (16 - room) | (0xffffu << room & 0xffffu);
            break;
        }
        m = stops16(buf + at);
    }
    size_t e = at + (size_t)__builtin_ctz(m);
    if (e + 1 >= lim || load2(buf + e) != CRLF) return 0;
    return e;
}

#if defined(__SSE2__)
/* The bytes of b that are not name bytes (letters, digits, '-', '_'), as
 * a bit mask; f: b folded (| 0x20). Signed compares on biased bytes; each
 * class is exact on every byte value (a control byte folds to no letter). */
static inline uint32_t not_name16(__m128i b, __m128i f)
{
    __m128i alpha = _mm_cmplt_epi8(_mm_add_epi8(f, _mm_set1_epi8((char)(0x80 - 'a'))),
                                   _mm_set1_epi8((char)(0x80 - 0x100 + 26)));
    __m128i digit = _mm_cmplt_epi8(_mm_add_epi8(b, _mm_set1_epi8((char)(0x80 - '0'))),
                                   _mm_set1_epi8((char)(0x80 - 0x100 + 10)));
    __m128i tok = _mm_or_si128(
        _mm_or_si128(alpha, digit),
        _mm_or_si128(_mm_cmpeq_epi8(b, _mm_set1_epi8('-')), _mm_cmpeq_epi8(b, _mm_set1_epi8('_'))));
    return ~(uint32_t)_mm_movemask_epi8(tok) & 0xffffu;
}
#endif

/* The length of a name that fills the 16 bytes at p (room readable):
 * read on, 16 bytes a step while they are readable, then byte by byte. */
static size_t long_name(const char *p, size_t room)
{
    size_t c = 16;
#if defined(__SSE2__)
    while (room - c >= 16) {
        __m128i b = _mm_loadu_si128((const __m128i *)(const void *)(p + c));
        uint32_t o = not_name16(b, _mm_or_si128(b, _mm_set1_epi8(0x20)));
        if (o) return c + (size_t)__builtin_ctz(o);
        c += 16;
    }
#endif
    while (c < room && name_chr[(uint8_t)p[c]])
        c++;
    return c;
}

/* The names some line must be looked at for, by length and first letter
 * (folded): host, cookie, upgrade, connection,
 * content-length, idempotency-key, proxy-connection; names of 17 bytes or
 * more beginning with 't' may be Transfer-Encoding, and the key's name is
 * told by its length and first byte (scan). Every other line is checked
 * (a plain name, its colon, a value not empty) and stepped over: most of
 * a real head (User-Agent, Accept, traceparent, x-stainless-*). */
static const char looked_at[64] = {
    [4] = 'h',  [6] = 'c', [7] = 'u', [10] = 'c', [14] = 'c', [15] = 'i', [16] = 'p',
#define T4(n) [n] = 't', [n + 1] = 't', [n + 2] = 't', [n + 3] = 't'
    [17] = 't', T4(18),    T4(22),    T4(26),     T4(30),     T4(34),     T4(38),
    T4(42),     T4(46),    T4(50),    T4(54),     T4(58),     [62] = 't', [63] = 't',
#undef T4
};

/* A value slice [ls + v, ls + n) with its trimmed length. */
static struct sl_h1fast_slice value_of(const char *p, size_t ls, size_t v, size_t n)
{
    /* untrimmed, as http-parser hands it over: a value cut to its buffer
     * is hashed whole, trailing spaces included, before the trim */
    size_t t = n;
    while (t > v && (p[t - 1] == ' ' || p[t - 1] == '\t'))
        t--;
    return (struct sl_h1fast_slice){.off = (uint16_t)(ls + v),
                                    .len = (uint16_t)(n - v),
                                    .trimmed = (uint16_t)(t - v),
                                    .present = true};
}

/* A header line [ls, ls + n) of the head, at p, whose name (c bytes) is
 * one looked at, its value from v; false: the head declines. Out of the
 * line loop: two or three lines of a head come here. */
static __attribute__((noinline)) bool header_line(const char *p, size_t ls, size_t n, size_t c,
                                                  size_t v, const struct sl_h1fast_key *k,
                                                  struct sl_h1fast *out, struct state *st)
{
    /* framing first: it does not depend on which field the value feeds */
    switch (c) {
    case 7:
        if (IS(p, c, "upgrade")) return false;
        break;
    case 10:
        if (IS(p, c, "connection")) {
            if (n - v != 10 || !EQ(p + v, n - v, "keep-alive")) return false;
            st->keep_alive = true;
        }
        break;
    case 14:
        if (IS(p, c, "content-length")) {
            if (out->has_length || n - v > 15) return false;
            uint64_t len = 0;
            for (size_t i = v; i < n; i++) {
                if (p[i] < '0' || p[i] > '9') return false;
                len = len * 10 + (uint64_t)(p[i] - '0');
            }
            out->has_length = true;
            out->content_length = len;
        }
        break;
    case 16:
        if (IS(p, c, "proxy-connection")) return false;
        break;
    default:
        break;
    }
    /* http-parser takes any name that begins with Transfer-Encoding for
     * one (it sets the flag once the name's first 17 bytes match) */
    if (c >= 17 && IS(p, 16, "transfer-encodin") && (p[16] | 0x20) == 'g') return false;
    /* then the field it feeds, in core/http/http1.c's order: the key (a
     * second line of it, under any name servers fold with it, is a second
     * copy: http1.c joins them), a Cookie line, Host, Idempotency-Key */
    if (k->len == c && key_is(p, c, k)) {
        if (out->key.present) return false;
        out->key = value_of(p, ls, v, n);
        return true;
    }
    if (c == 6 && k->cookies && IS(p, c, "cookie")) return false;
    if (IS(p, c, "host")) {
        if (!out->host.present) out->host = value_of(p, ls, v, n);
    } else if (IS(p, c, "idempotency-key")) {
        if (!out->idem.present) out->idem = value_of(p, ls, v, n);
    }
    return true;
}

/* The line [ls, ls + n) at p = buf + ls, without its CRLF, whose name ends
 * after c bytes, at its first byte that is not a name byte: that byte must
 * be its colon (the CR is no name byte, so c <= n) and a value must
 * follow. Lines with a name looked at go to header_line; the rest are
 * stepped over. kf, kf2: the key name's first byte folded as f0 below
 * ('_' folds to 0x7f). False: the head declines. */
static inline bool field(const char *p, size_t ls, size_t n, size_t c,
                         const struct sl_h1fast_key *k, uint8_t kf, uint8_t kf2,
                         struct sl_h1fast *out, struct state *st)
{
    if (c == 0 || p[c] != ':') return false;
    size_t v = c + 2;
    if (p[c + 1] != ' ' || (uint8_t)p[c + 2] <= ' ') { /* not ": x" (c + 2 <= n + 1) */
        v = c + 1;
        while (p[v] == ' ') /* stops at the CR at p[n] */
            v++;
        if (v == n) return false; /* an empty value: http-parser's callbacks differ */
    }
    uint8_t f0 = (uint8_t)(p[0] | 0x20);
    if (c < 64 && looked_at[c] != f0 && (c != k->len || (f0 != kf && f0 != kf2))) return true;
    return header_line(p, ls, n, c, v, k, out, st);
}

/* The end of the head at its blank line (at ls): the last checks.
 * HTTP/1.0 is kept alive only when asked; a GET or HEAD with a body is
 * odd (core/http/http1.c). */
static inline bool head_end(size_t ls, const struct state *st, struct sl_h1fast *out)
{
    if (out->http_minor == 0 && !st->keep_alive) return false;
    if (st->get && out->content_length > 0) return false;
    out->end = (uint16_t)(ls + 2); /* <= lim <= SL_H1FAST_MAX */
    return true;
}

/* The head at buf, line by line. Each line's first 16 bytes are loaded
 * once: the same load gives where its name ends and its first stops; a
 * longer line is searched on 16 bytes a step for its first stop, which
 * must be its CR before an LF. So every byte of the head up to its blank
 * line is either in a line without stops or one of a line's CR LF: a
 * refused byte, or a CR or LF anywhere else, declines. The last few bytes
 * (fewer than 16 from a line's start to lim) are read byte by byte.
 * Lines whose name is not one the rule or the framing looks at (most of a
 * real head: User-Agent, Accept, traceparent, x-stainless-*) are only
 * checked: a plain name, its colon, a value not empty. */

static bool scan(const char *buf, size_t len, const struct sl_h1fast_key *k, struct sl_h1fast *out)
{
    size_t lim = len < SL_H1FAST_MAX ? len : SL_H1FAST_MAX;
    if (lim < 18) return false; /* "GET / HTTP/1.1" and two CRLFs at least */
    struct state st = {0};
    memset(out, 0, sizeof *out);
    size_t e = line_end(buf, 0, lim, stops16(buf));
    if (e < 14 || !request_line(buf, e, lim, out, &st.get)) return false;
    uint8_t kf = (uint8_t)k->name[0], kf2 = kf == '-' ? 0x7f : kf;
    size_t ls = e + 2;
#if defined(__SSE2__)
    for (size_t last = lim - 16; ls <= last; ls = e + 2) {
        const char *p = buf + ls;
        __m128i b = _mm_loadu_si128((const __m128i *)(const void *)p);
        uint32_t stops = stops_of(b);
        if (stops & 1) /* the blank line, or a stop where a name begins */
            return load2(p) == CRLF && head_end(ls, &st, out);
        uint32_t other = not_name16(b, _mm_or_si128(b, _mm_set1_epi8(0x20)));
        size_t c = other ? (size_t)__builtin_ctz(other) : long_name(p, lim - ls);
        e = line_end(buf, ls, lim, stops);
        if (!e || !field(p, ls, e - ls, c, k, kf, kf2, out, &st)) return false;
    }
#endif
    for (; ls < lim; ls = e + 2) { /* byte by byte */
        const char *p = buf + ls;
        if (p[0] == '\r') return lim - ls >= 2 && p[1] == '\n' && head_end(ls, &st, out);
        for (e = ls; e < lim && (uint8_t)(buf[e] - 0x20) < 0x5f; e++)
            ;
        if (e + 1 >= lim || load2(buf + e) != CRLF) return false;
        size_t c = 0;
        while (name_chr[(uint8_t)p[c]]) /* stops at the CR at most */
            c++;
        if (!field(p, ls, e - ls, c, k, kf, kf2, out, &st)) return false;
    }
    return false;
}

/* The last head this thread read whole, and what it gave. A keep-alive
 * client repeats its head byte for byte (the same path, Host, API key),
 * and the scan of the same bytes with the same key gives the same result:
 * it reads nothing past the blank line that ends the head (the bytes a
 * load takes in beyond it are never looked at), so equal
 * bytes up to the head's end mean an equal result, offsets included. The
 * key is told by its generation (a hash of what the scan reads of it: the
 * connections of one rule share the memory, as a client's pool of
 * keep-alive connections sends one head) and `cookies`, which the
 * scanner's owner may set after init. Per thread: no sharing, no lock
 * (initial-exec, as core/http/reqkey.c's hash memo, which also holds
 * request bytes). */
struct memo {
    uint64_t gen;
    bool cookies;
    uint8_t misses;  /* since the last hit or store */
    uint16_t len;    /* 0: empty */
    uint64_t serial; /* this store's (memo_serials) */
    struct sl_h1fast out;
    char head[SL_H1FAST_MEMO];
};
static __thread struct memo memo __attribute__((tls_model("initial-exec")));
static _Atomic uint64_t memo_serials; /* stores in every thread: a store's serial */

/* Where a head that is not the memory's is read. */
static __thread struct sl_h1fast room __attribute__((tls_model("initial-exec")));

/* A head that is not the memory's: read, and perhaps remembered. */
static __attribute__((noinline)) const struct sl_h1fast *read_new(const char *buf, size_t len,
                                                                  const struct sl_h1fast_key *k)
{
    struct memo *m = &memo;
    struct sl_h1fast *out = &room;
    if (!scan(buf, len, k, out)) return NULL;
    /* heads that vary (another path each time) would pay the store on
     * every request: after a miss, only every fourth head is kept */
    if (out->end <= sizeof m->head && (m->len == 0 || ++m->misses >= 4)) {
        m->misses = 0;
        memcpy(m->head, buf, out->end);
        m->len = (uint16_t)out->end;
        m->out = *out;
        m->gen = k->gen;
        m->cookies = k->cookies;
        m->serial = atomic_fetch_add_explicit(&memo_serials, 1, memory_order_relaxed) + 1;
        return &m->out; /* the same result, now with a serial */
    }
    return out;
}

/* Whether buf begins with the head the memory holds, read with a key like k. */
static inline bool memo_holds(const struct memo *m, const char *buf, size_t len,
                              const struct sl_h1fast_key *k)
{
    return m->len && len >= m->len && m->gen == k->gen && m->cookies == k->cookies &&
           memcmp(buf, m->head, m->len) == 0;
}

const struct sl_h1fast *sl_h1fast_read(const char *buf, size_t len, const struct sl_h1fast_key *k)
{
    struct memo *m = &memo;
    if (!memo_holds(m, buf, len, k)) return read_new(buf, len, k);
    m->misses = 0;
    return &m->out;
}

uint64_t sl_h1fast_serial(const struct sl_h1fast *f)
{
    return f == &memo.out ? memo.serial : 0;
}

const struct sl_h1fast *sl_h1fast_again(const char *buf, size_t len, const struct sl_h1fast_key *k,
                                        uint64_t serial)
{
    struct memo *m = &memo;
    if (m->serial != serial || !memo_holds(m, buf, len, k)) return NULL;
    m->misses = 0;
    return &m->out;
}
