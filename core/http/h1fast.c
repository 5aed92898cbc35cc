/* SPDX-License-Identifier: BSD-2-Clause */
/* h1fast.c - the one-pass reader of common request heads (see h1fast.h).
 *
 * One pass over the head in 16-byte blocks (SSE2, which every x86-64 has;
 * a plain byte loop elsewhere) gives three bit masks per block: LF, CR,
 * and bytes the fast path refuses (control bytes other than CR and LF,
 * DEL, bytes >= 0x80). The LF bits are the line ends; each line is read
 * once, where it lies, and values are kept as slices. The head ends at
 * the first empty line. Refused bytes up to there, a CR anywhere but
 * right before an LF (the CR mask shifted by one must fall on LF bits), or
 * any line that is not plainly shaped sends the head to http-parser.
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
 * length and lowercase name; `folded` follows from them). Names come from
 * the configuration, so two that differ meet in one process with a chance
 * of 2^-64, and never by a peer's choice. */
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
        if (ok) {
            k->len = (uint8_t)len;
            for (size_t i = 0; i < len && i < sizeof k->folded; i++)
                k->folded[i] = (char)(k->name[i] | 0x20);
        }
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

/* The request line [p, p + n) without its CRLF (n >= 14: checked; lim
 * bytes readable at p). */
static bool request_line(const char *p, size_t n, size_t lim, struct sl_h1fast *out, bool *get)
{
    uint64_t w = load8(p);
    size_t m = 0;
    while ((w & methods[m].mask) != methods[m].word)
        if (++m == sizeof methods / sizeof methods[0]) return false;
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
    out->method = methods[m].name;
    out->method_len = methods[m].len;
    out->http_minor = (uint8_t)(minor - '0');
    out->url = (struct sl_h1fast_slice){.off = (uint16_t)t, .len = (uint16_t)tl, .present = true};
    /* as core/http/http1.c splits an origin-form target: the query after the first '?' */
    out->path_len = (uint16_t)q;
    out->query_off = (uint16_t)(q < tl ? q + 1 : 0);
    out->query_len = (uint16_t)(q < tl ? tl - q - 1 : 0);
    *get = methods[m].get;
    return true;
}

struct state {
    bool get, keep_alive;
};

/* A header name of c bytes at p: the name bytes folded (| 0x20) in f when
 * `vec`, else compared byte by byte. Among the bytes a name may hold
 * (letters, digits, '-', '_'), folding only merges the two cases. */
struct name {
    const char *p;
    size_t c;
#if defined(__SSE2__)
    __m128i f;
#endif
    bool vec;
};

/* The name is `lit16` (zero-padded to 16 bytes, len long): folded bytes
 * for the vector path, lowercase for the byte path (the same for names
 * without '_'). */
static inline bool name_is(const struct name *nm, const char *lit16, size_t len)
{
    if (nm->c != len) return false;
#if defined(__SSE2__)
    if (nm->vec) {
        __m128i l = _mm_loadu_si128((const __m128i *)(const void *)lit16);
        uint32_t eq = (uint32_t)_mm_movemask_epi8(_mm_cmpeq_epi8(nm->f, l));
        uint32_t want = (1u << len) - 1;
        return (eq & want) == want;
    }
#endif
    return name_eq(nm->p, nm->c, lit16, len);
}

#define IS(nm, lit) name_is(nm, (const char[16]){lit}, sizeof lit - 1)

/* The name is the key's, as servers fold names (core/http/reqkey.h: any
 * case, '_' as '-'; the key's name is kept with '-'). Only for a name of
 * the key's length: a few more vector operations on that line alone. */
static inline bool key_is(const struct name *nm, const struct sl_h1fast_key *k)
{
#if defined(__SSE2__)
    if (nm->vec) { /* a folded '_' is 0x7f: made '-' (0x2d), which folding keeps */
        __m128i us = _mm_cmpeq_epi8(nm->f, _mm_set1_epi8(0x7f));
        __m128i f = _mm_xor_si128(nm->f, _mm_and_si128(us, _mm_set1_epi8(0x7f ^ 0x2d)));
        __m128i l = _mm_loadu_si128((const __m128i *)(const void *)k->folded);
        uint32_t eq = (uint32_t)_mm_movemask_epi8(_mm_cmpeq_epi8(f, l));
        uint32_t want = (1u << k->len) - 1;
        return (eq & want) == want;
    }
#endif
    for (size_t i = 0; i < nm->c; i++) {
        uint8_t c = name_chr[(uint8_t)nm->p[i]];
        if ((c == '_' ? '-' : c) != (uint8_t)k->name[i]) return false;
    }
    return true;
}

/* The name at p, up to its ':' (false: not a plain name and colon). */
static bool name_read(const char *p, size_t n, size_t room, struct name *nm)
{
    nm->p = p;
    nm->vec = false;
#if defined(__SSE2__)
    nm->f = _mm_setzero_si128();
#endif
#if defined(__SSE2__)
    if (room >= 16) {
        __m128i b = _mm_loadu_si128((const __m128i *)(const void *)p);
        __m128i f = _mm_or_si128(b, _mm_set1_epi8(0x20));
        /* letters (folded), digits, '-', '_': signed compares on biased bytes */
        __m128i alpha = _mm_cmplt_epi8(_mm_add_epi8(f, _mm_set1_epi8((char)(0x80 - 'a'))),
                                       _mm_set1_epi8((char)(0x80 - 0x100 + 26)));
        __m128i digit = _mm_cmplt_epi8(_mm_add_epi8(b, _mm_set1_epi8((char)(0x80 - '0'))),
                                       _mm_set1_epi8((char)(0x80 - 0x100 + 10)));
        __m128i tok = _mm_or_si128(_mm_or_si128(alpha, digit),
                                   _mm_or_si128(_mm_cmpeq_epi8(b, _mm_set1_epi8('-')),
                                                _mm_cmpeq_epi8(b, _mm_set1_epi8('_'))));
        uint32_t other = ~(uint32_t)_mm_movemask_epi8(tok) & 0xffff;
        if (other) { /* the name ends in these 16 bytes */
            size_t c = (size_t)__builtin_ctz(other);
            if (c == 0 || c >= n || p[c] != ':') return false;
            nm->c = c;
            nm->f = f;
            nm->vec = true;
            return true;
        }
    }
#endif
    (void)room;
    size_t c = 0;
    while (c < n && name_chr[(uint8_t)p[c]])
        c++;
    if (c == 0 || c == n || p[c] != ':') return false;
    nm->c = c;
    return true;
}

/* A header line [ls, ls + n) of buf (lim bytes readable), without its CRLF. */
static bool header_line(const char *buf, size_t ls, size_t n, size_t lim,
                        const struct sl_h1fast_key *k, struct sl_h1fast *out, struct state *st)
{
    const char *p = buf + ls;
    struct name nm;
    if (!name_read(p, n, lim - ls, &nm)) return false;
    size_t c = nm.c, v = c + 1;
    while (v < n && p[v] == ' ')
        v++;
    if (v == n) return false; /* an empty value: http-parser's callbacks differ */
    /* untrimmed, as http-parser hands it over: a value cut to its buffer
     * is hashed whole, trailing spaces included, before the trim */
    size_t t = n;
    while (t > v && (p[t - 1] == ' ' || p[t - 1] == '\t'))
        t--;
    struct sl_h1fast_slice val = {.off = (uint16_t)(ls + v),
                                  .len = (uint16_t)(n - v),
                                  .trimmed = (uint16_t)(t - v),
                                  .present = true};
    /* framing first: it does not depend on which field the value feeds */
    switch (c) {
    case 7:
        if (IS(&nm, "upgrade")) return false;
        break;
    case 10:
        if (IS(&nm, "connection")) {
            if (n - v != 10 || !EQ(p + v, n - v, "keep-alive")) return false;
            st->keep_alive = true;
        }
        break;
    case 14:
        if (IS(&nm, "content-length")) {
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
    case 16: /* never read by the vector path: 16 name bytes have no end */
        if (EQ(p, c, "proxy-connection")) return false;
        break;
    default:
        break;
    }
    /* http-parser takes any name that begins with Transfer-Encoding for
     * one (it sets the flag once the name's first 17 bytes match) */
    if (c >= 17 && name_eq(p, 17, "transfer-encoding", 17)) return false;
    /* then the field it feeds, in core/http/http1.c's order: the key (a
     * second line of it, under any name servers fold with it, is a second
     * copy: http1.c joins them), a Cookie line, Host, Idempotency-Key */
    if (k->len == c && key_is(&nm, k)) {
        if (out->key.present) return false;
        out->key = val;
        return true;
    }
    if (c == 6 && k->cookies && IS(&nm, "cookie")) return false;
    if (IS(&nm, "host")) {
        if (!out->host.present) out->host = val;
    } else if (IS(&nm, "idempotency-key")) {
        if (!out->idem.present) out->idem = val;
    }
    return true;
}

/* The masks of the 16 bytes at p: LF, CR, and refused bytes. */
static inline void masks(const char *p, uint32_t *lf, uint32_t *cr, uint32_t *bad)
{
#if defined(__SSE2__)
    __m128i b = _mm_loadu_si128((const __m128i *)(const void *)p);
    uint32_t l = (uint32_t)_mm_movemask_epi8(_mm_cmpeq_epi8(b, _mm_set1_epi8('\n')));
    uint32_t r = (uint32_t)_mm_movemask_epi8(_mm_cmpeq_epi8(b, _mm_set1_epi8('\r')));
    /* unsigned b <= 0x1f, b == 0x7f, b >= 0x80 (the sign bit) */
    __m128i low = _mm_cmpeq_epi8(_mm_max_epu8(b, _mm_set1_epi8(0x1f)), _mm_set1_epi8(0x1f));
    __m128i del = _mm_cmpeq_epi8(b, _mm_set1_epi8(0x7f));
    uint32_t x = (uint32_t)_mm_movemask_epi8(_mm_or_si128(_mm_or_si128(low, del), b));
#else
    uint32_t l = 0, r = 0, x = 0;
    for (int i = 0; i < 16; i++) {
        uint8_t c = (uint8_t)p[i];
        l |= (uint32_t)(c == '\n') << i;
        r |= (uint32_t)(c == '\r') << i;
        x |= (uint32_t)(c < 0x20 || c >= 0x7f) << i;
    }
#endif
    *lf = l;
    *cr = r;
    *bad = x & ~(l | r);
}

static bool scan(const char *buf, size_t len, const struct sl_h1fast_key *k, struct sl_h1fast *out)
{
    size_t lim = len < SL_H1FAST_MAX ? len : SL_H1FAST_MAX;
    if (lim < 18) return false; /* "GET / HTTP/1.1" and two CRLFs at least */
    struct state st = {0};
    size_t ls = 0, lines = 0;
    uint32_t carry = 0; /* the last block ended in a CR: an LF must follow */
    memset(out, 0, sizeof *out);
    for (size_t blk = 0; blk < lim; blk += 16) {
        uint32_t lf, cr, bad;
        if (lim - blk >= 16) {
            masks(buf + blk, &lf, &cr, &bad);
        } else { /* the tail: the last 16 bytes, shifted (never past lim) */
            unsigned back = (unsigned)(16 - (lim - blk));
            masks(buf + lim - 16, &lf, &cr, &bad);
            lf >>= back;
            cr >>= back;
            bad >>= back;
        }
        if (carry && !(lf & 1)) return false;
        uint32_t lfs = lf;
        while (lf) {
            size_t bit = (size_t)__builtin_ctz(lf);
            size_t i = blk + bit; /* an LF */
            lf &= lf - 1;
            if (i == ls || buf[i - 1] != '\r') return false;
            size_t n = i - 1 - ls; /* the line without CRLF */
            if (++lines == 1) {
                if (n < 14 || !request_line(buf, n, lim, out, &st.get)) return false;
            } else if (n > 0) {
                if (!header_line(buf, ls, n, lim, k, out, &st)) return false;
            } else { /* the blank line: the head ends after this LF */
                uint32_t upto = (2u << bit) - 1;
                /* every CR before it is followed by an LF */
                if ((bad & upto) || ((cr & upto) << 1 & ~lfs)) return false;
                /* HTTP/1.0 is kept alive only when asked; a GET or HEAD
                 * with a body is odd (core/http/http1.c) */
                if (out->http_minor == 0 && !st.keep_alive) return false;
                if (st.get && out->content_length > 0) return false;
                out->end = (uint16_t)(i + 1); /* i < SL_H1FAST_MAX */
                return true;
            }
            ls = i + 1;
        }
        if (bad || (cr << 1 & ~lfs & 0xffff)) return false;
        carry = cr >> 15 & 1;
    }
    return false;
}

/* The last head this thread read whole, and what it gave. A keep-alive
 * client repeats its head byte for byte (the same path, Host, API key),
 * and the scan of the same bytes with the same key gives the same result:
 * it reads nothing past the blank line that ends the head (the bytes of
 * the last block beyond it are masked off or never reached), so equal
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
