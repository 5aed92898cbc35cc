/* SPDX-License-Identifier: BSD-2-Clause */
/* h1fast_body.h - the scan of one request head (h1fast.h), written once and
 * compiled once per instruction set: h1fast_avx2.c, h1fast_sse2.c and
 * h1fast_plain.c each define H1_TARGET (the function attribute of their
 * instruction set), H1_FN (static inline, always, with it), H1_TZ32 (the
 * index of a mask's lowest set bit), struct blk_k (the constants they keep
 * in registers, set by blk_init) and, as bit masks (bit i: byte p[i]),
 *   ln_classify(p, &nn, k): of the 32 bytes at p, the stops (bytes below
 *     0x20, DEL and bytes >= 0x80), and in nn the bytes that are not name
 *     bytes (letters, digits, '-', '_'): nn may be exact only up to its
 *     lowest set bit, which ln_classify_all's never is;
 *   tg_classify(p, &q, k): of the 32 bytes at p, those that end a request
 *     target (space, '#', stops), and in q its '?' bytes;
 * then include this file and define their entry (h1fast_scan.h) as a call
 * of scan_head.
 *
 * The algorithm. The request line is read first: its method by one
 * 8-byte compare, its target 32 bytes a step to its first space, '#' or
 * stop, which must be the space of " HTTP/1.x" CR LF. An HTTP/1.1 head's
 * header lines may then be read from the thread's memory of recent ones
 * (h1fast.c's shapes, through the `lines` hook: a call, made only there,
 * or the compare itself where h1fast.c compiles the scan with it inlined).
 * Otherwise each header line: its first 32 bytes classified at once give
 * where its name ends (the first byte that is not a name byte) and its
 * first stop; a longer line is searched on 32 bytes a step for its first
 * stop. That stop must be its CR, before an LF; so every byte up to the
 * blank line that ends the head is either in a line without stops or one
 * of a line's CR LF.
 * The name must be 1 to 63 bytes and end at a colon, and a value not
 * only spaces must follow. A line whose name may be one the rule or the
 * framing reads (by its length and first letter: `looked_at`, or the
 * key's length) is compared and read by header_line, inlined: the line
 * loop makes no call but on rare shapes, and its vector constants stay
 * in registers. Most of a real head (User-Agent, Accept, traceparent,
 * x-stainless-*) is only checked. Each step of the loop needs little:
 * a stop is no name byte, so the name's end is found at or before the
 * line's first stop, and a line that begins more than 32 bytes before
 * lim has the byte after its CR in the buffer. Bytes past the buffer are
 * never read: the last 32 bytes before lim are read instead, their masks
 * shifted (a head under 32 bytes is scanned in a copy with 32 readable
 * bytes before its end: h1fast.c). The bytes a load takes in
 * beyond the blank line never count: the result depends only on the
 * head's bytes (h1fast.c's memory relies on it).
 *
 * Measured (callgrind, bench/h1_insn.sh: ~300-byte realistic heads, none
 * repeated, AVX2): about 37 instructions a line, 11 of them vector; the
 * request line about 90; a line read by header_line (Host, the key) 15
 * to 30 more. Classifying whole 64-byte blocks first (simdjson's way:
 * line starts and name ends as bit masks, E = (nm + S) & ~nm) counted
 * more: 4 blocks of ~70 and a visit of ~30 per line still, against 7
 * lines of ~37 here.
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
#ifndef SL_H1FAST_BODY_H
#define SL_H1FAST_BODY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "h1fast.h"
#include "h1fast_scan.h"

/* 8 bytes at p, as a little-endian word (x86-64 and arm64 both are). */
H1_FN uint64_t load8(const char *p)
{
    uint64_t w;
    memcpy(&w, p, 8);
    return w;
}

/* The index of x's lowest set bit (x != 0), zero-extended. */
H1_FN size_t tz(uint64_t x)
{
    return (unsigned)__builtin_ctzll(x);
}

/* 2 bytes at p, as a little-endian word. */
H1_FN uint16_t load2(const char *p)
{
    uint16_t w;
    memcpy(&w, p, 2);
    return w;
}

#define CRLF ('\r' | '\n' << 8)

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
H1_FN int method_of(const char *p)
{
    uint64_t w = load8(p);
    for (size_t m = 0; m < sizeof methods / sizeof methods[0]; m++)
        if ((w & methods[m].mask) == methods[m].word) return (int)m;
    return -1;
}

struct state {
    bool get, keep_alive;
};

/* What the header lines feed: one pointer, so that the line loop keeps
 * its own state in registers. */
struct fields {
    const struct sl_h1fast_key *k;
    struct sl_h1fast *out;
    struct state st;
};

/* The 32 bytes from `at` as tg_classify reads them: bytes that end a
 * target in the return, '?' in *q; bytes past lim end it (the last 32
 * bytes before lim are read, shifted). */
H1_FN uint32_t tg_at(const char *buf, size_t at, size_t lim, uint32_t *q, const struct blk_k *kc)
{
    if (at + 32 <= lim) return tg_classify(buf + at, q, kc);
    if (at >= lim) return *q = 0, ~0u;
    unsigned sh = (unsigned)(at + 32 - lim); /* 1..31 */
    uint32_t ends = tg_classify(buf + lim - 32, q, kc);
    *q >>= sh;
    return ends >> sh | ~(~0u >> sh);
}

/* The request line (lim >= 18): its fields into out, and where the first
 * header line begins (*ls); false: declined. */
H1_FN bool request_line(const char *buf, size_t lim, struct sl_h1fast *out, struct state *st,
                        size_t *ls, const struct blk_k *kc)
{
    int m = method_of(buf);
    if (m < 0) return false;
    size_t t = methods[m].len + 1u, at = t, q = SIZE_MAX;
    if (buf[t] != '/') return false;
    uint32_t qm, ends;
    /* the target: to its first space, '#' or stop; q at its first '?' */
    while (!(ends = tg_at(buf, at, lim, &qm, kc))) {
        if (qm && q == SIZE_MAX) q = at + H1_TZ32(qm);
        at += 32;
    }
    size_t x = at + H1_TZ32(ends);
    qm &= ends ^ (ends - 1); /* the '?' bytes before the end */
    if (q == SIZE_MAX) q = qm ? at + H1_TZ32(qm) : x;
    /* " HTTP/1.x" CR LF ends the line */
    if (x + 11 > lim || load8(buf + x) != W(' ', 'H', 'T', 'T', 'P', '/', '1', '.') ||
        load2(buf + x + 9) != CRLF)
        return false;
    char minor = buf[x + 8];
    if (minor != '0' && minor != '1') return false;
    size_t tl = x - t;
    q -= t;
    out->method = methods[m].name;
    out->method_len = methods[m].len;
    out->http_minor = (uint8_t)(minor - '0');
    out->url = (struct sl_h1fast_slice){.off = (uint16_t)t, .len = (uint16_t)tl, .present = true};
    /* as core/http/http1.c splits an origin-form target: the query after the first '?' */
    out->path_len = (uint16_t)q;
    out->query_off = (uint16_t)(q < tl ? q + 1 : 0);
    out->query_len = (uint16_t)(q < tl ? tl - q - 1 : 0);
    st->get = methods[m].get;
    *ls = x + 11;
    return true;
}

/* Whether the name at p (c bytes, name bytes only) is the lowercase
 * literal lit (len bytes, 4 <= len <= 16, lit readable for 16): folded
 * (| 0x20), 8 bytes at a time. Among name bytes folding only merges the
 * two cases ('_' folds to 0x7f, in no literal). The head has at least 4
 * bytes after a name (its colon, a value, CR LF), so 8 are readable at p. */
H1_FN bool name_is(const char *p, size_t c, const char *lit, size_t len)
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
H1_FN uint64_t key_fold(uint64_t w)
{
    uint64_t x = w | 0x2020202020202020ull;
    uint64_t del = (x + 0x0101010101010101ull) & 0x8080808080808080ull;
    return x ^ (del >> 7) * (0x7f ^ '-');
}

/* The name at p (c bytes, the key's length) is the key's: whole words
 * where 8 bytes are readable at p (c >= 4, as for name_is); k->name is
 * zero past its length (sl_h1fast_key_init), as the masked word is. */
H1_FN bool key_is(const char *p, size_t c, const struct sl_h1fast_key *k)
{
    if (c >= 4 && c <= 8) return (key_fold(load8(p)) & (~0ull >> (64 - 8 * c))) == load8(k->name);
    if (c > 8 && c <= 16)
        return key_fold(load8(p)) == load8(k->name) &&
               key_fold(load8(p + c - 8)) == load8(k->name + c - 8);
    for (size_t i = 0; i < c; i++) {
        uint8_t b = sl_h1fast_name_chr[(uint8_t)p[i]];
        if ((b == '_' ? '-' : b) != (uint8_t)k->name[i]) return false;
    }
    return true;
}

/* name (n bytes, already known to be name bytes) is `lower`. */
H1_FN bool name_eq(const char *name, size_t n, const char *lower, size_t ln)
{
    if (n != ln) return false;
    for (size_t i = 0; i < n; i++)
        if (sl_h1fast_name_chr[(uint8_t)name[i]] != (uint8_t)lower[i]) return false;
    return true;
}

#define EQ(name, n, lit) name_eq(name, n, lit, sizeof lit - 1)

/* The names some line must be looked at for, as a bit per name length
 * (bit c: c bytes) by the name's first byte & 0x1f (a letter of either
 * case; a digit or '-' aliases a letter, which only costs a compare):
 * host, cookie, upgrade, connection, content-length, idempotency-key,
 * proxy-connection, and names of 17 to 63 bytes beginning with 't' (may
 * be Transfer-Encoding). The key's name is told by its length (scan_head).
 * Every other line is checked (a plain name, its colon, a value not
 * empty) and stepped over: most of a real head (User-Agent, Accept,
 * traceparent, x-stainless-*). */
static const uint64_t looked_at[32] = {
    ['h' & 31] = 1ull << 4,  ['c' & 31] = 1ull << 6 | 1ull << 10 | 1ull << 14,
    ['u' & 31] = 1ull << 7,  ['i' & 31] = 1ull << 15,
    ['p' & 31] = 1ull << 16, ['t' & 31] = ~0ull << 17,
};

/* A value slice [ls + v, ls + n) with its trimmed length. */
H1_FN struct sl_h1fast_slice value_of(const char *p, size_t ls, size_t v, size_t n)
{
    /* untrimmed, as http-parser hands it over: a value cut to its buffer
     * is hashed whole, trailing spaces included, before the trim */
    size_t t = n;
    if ((uint8_t)p[t - 1] <= ' ') /* rare: the value is not empty, so t > v */
        while (t > v && (p[t - 1] == ' ' || p[t - 1] == '\t'))
            t--;
    return (struct sl_h1fast_slice){.off = (uint16_t)(ls + v),
                                    .len = (uint16_t)(n - v),
                                    .trimmed = (uint16_t)(t - v),
                                    .present = true};
}

/* The name lengths of the framing headers (framing). */
#define FRAMING_LENS (1ull << 7 | 1ull << 10 | 1ull << 14 | 1ull << 16)

/* The framing a header line [0, n) at p gives, whose name (c bytes, a
 * length in FRAMING_LENS) may be Upgrade, Connection, Content-Length or
 * Proxy-Connection, its value from p + v; false: the head declines. */
H1_FN bool framing(const char *p, size_t n, size_t c, size_t v, struct sl_h1fast *out,
                   struct state *st)
{
    switch (c) {
    case 7:
        return !IS(p, c, "upgrade");
    case 10:
        if (IS(p, c, "connection")) {
            if (n - v != 10 || !EQ(p + v, n - v, "keep-alive")) return false;
            st->keep_alive = true;
        }
        return true;
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
        return true;
    default:
        return !IS(p, c, "proxy-connection");
    }
}

/* A header line [ls, ls + n) of the head, at p, whose name (c bytes) may
 * be one looked at and whose value begins at p + v (header found it);
 * false: the head declines. Two or three lines of a head come here. It
 * makes no call: inlined into the line loop, the scan's vector constants
 * stay in their registers. */
H1_FN bool header_line(const char *p, size_t ls, size_t n, size_t c, size_t v, struct fields *fs)
{
    const struct sl_h1fast_key *k = fs->k;
    struct sl_h1fast *out = fs->out;
    /* framing first: it does not depend on which field the value feeds
     * (most kept lines are Host and the key: one test steps over it) */
    if (((FRAMING_LENS >> c) & 1) && !framing(p, n, c, v, out, &fs->st)) return false;
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

/* The slow side of header's check of the line at buf whose name ends at
 * e, its CR at r: the name ends at a colon, and a value follows, not only
 * spaces. Where the value begins; 0: it does not. */
static __attribute__((noinline, cold)) H1_TARGET size_t odd_value(const char *buf, size_t e,
                                                                  size_t r)
{
    if (buf[e] != ':') return 0;
    size_t v = e + 1;
    while (buf[v] == ' ')
        v++;
    return v < r ? v : 0;
}

/* The header line [s, r) of the head at buf (r: its CR, an LF after it),
 * whose name ends at e (its first byte that is not a name byte, after 1
 * to 63 name bytes): that byte must be a colon, and a value must follow
 * it (not only spaces: http-parser's callbacks differ for an empty
 * value). A line whose name may be looked at (looked_at, or the key's
 * length: its bit in kbit) is read by header_line. False: the head
 * declines. */
H1_FN bool header(const char *buf, size_t s, size_t e, size_t r, const uint64_t *la, uint64_t kbit,
                  struct fields *fs)
{
    size_t c = e - s, v = e + 2; /* 1 <= c <= 63: the line loop's */
    /* ": x" is the common shape */
    if ((load2(buf + e) != (':' | ' ' << 8) || (uint8_t)buf[e + 2] <= ' ') &&
        !(v = odd_value(buf, e, r)))
        return false;
    if (!(((la[buf[s] & 31] | kbit) >> c) & 1)) return true;
    return header_line(buf + s, s, r - s, c, v - s, fs);
}

/* The 32 bytes from `at` (< lim) as ln_classify reads them: stops in the
 * return, bytes that are not name bytes in *nn; bits past lim are set in
 * both (the last 32 bytes before lim are read, shifted). */
H1_FN uint32_t ln_at(const char *buf, size_t at, size_t lim, uint32_t *nn, const struct blk_k *kc)
{
    if (at + 32 <= lim) return ln_classify(buf + at, nn, kc);
    if (at >= lim) return *nn = ~0u;         /* nothing left: a stop (and no name) */
    unsigned sh = (unsigned)(at + 32 - lim); /* 1..31 */
    uint32_t past = ~(~0u >> sh), st = ln_classify_all(buf + lim - 32, nn, kc);
    *nn = *nn >> sh | past;
    return st >> sh | past;
}

/* A line that runs past its first 32 bytes, from `at`: its first stop (a
 * position >= lim: none before lim). */
H1_FN size_t line_stop(const char *buf, size_t at, size_t lim, const struct blk_k *kc)
{
    for (;; at += 32) {
        if (at >= lim) return lim;
        uint32_t nn, st = ln_at(buf, at, lim, &nn, kc);
        if (st) return at + H1_TZ32(st);
    }
}

/* A name that fills the 32 bytes from s: its length (64 when it runs that
 * far: declined). Its own constants: the scan's stay in registers. */
static __attribute__((noinline, cold)) H1_TARGET size_t long_name(const char *buf, size_t s,
                                                                  size_t lim)
{
    struct blk_k kc;
    blk_init(&kc);
    for (size_t at = s + 32; at < lim && at - s < 64; at += 32) {
        uint32_t nn;
        ln_at(buf, at, lim, &nn, &kc);
        if (nn) return at - s + H1_TZ32(nn);
    }
    return 64;
}

/* The end of the head at its blank line (at ls): the last checks.
 * HTTP/1.0 is kept alive only when asked; a GET or HEAD with a body is
 * odd (core/http/http1.c). */
H1_FN bool head_end(size_t ls, const struct state *st, struct sl_h1fast *out)
{
    if (out->http_minor == 0 && !st->keep_alive) return false;
    if (st->get && out->content_length > 0) return false;
    out->end = (uint16_t)(ls + 2); /* <= lim <= SL_H1FAST_MAX */
    return true;
}

/* The head at buf (the 32 bytes before buf + lim readable), as the file's
 * comment says; lines, when given, may read the header lines of an
 * HTTP/1.1 head from its memory (scan_head's declaration). */
H1_FN bool scan_head(const char *buf, size_t lim, const struct sl_h1fast_key *k,
                     struct sl_h1fast *out, sl_h1fast_lines_fn *lines)
{
    struct fields fs = {.k = k, .out = out};
    struct blk_k kc;
    blk_init(&kc);
    memset(out, 0, sizeof *out);
    size_t s;
    if (!request_line(buf, lim, out, &fs.st, &s, &kc)) return false;
    if (lines) {
        if (out->http_minor == 1 && lines(buf, lim, s, fs.st.get, k, out)) return true;
        /* the call may clobber every vector register: loaded, not kept;
         * where lines is inlined, the line loop's constants are then not
         * loaded before the request line (which takes a few of them) */
        blk_init(&kc);
    }
    uint64_t kbit = k->len < 64 ? 1ull << k->len : 0; /* a name's length is below 64 */
    const uint64_t *la = looked_at;
    __asm__("" : "+r"(la)); /* the table's address in a register, not rebuilt each line */
    for (;;) { /* a line at s: its first 32 bytes give its name's end and its first stop */
        uint32_t nn, st;
        size_t c, r;
        if (s + 32 < lim) { /* the byte after each of the 32 is the head's too */
            st = ln_classify(buf + s, &nn, &kc);
            /* a stop is no name byte: bit 0 of nn is set at the blank
             * line, at a stop or any other byte where a name must begin */
            if (nn & 1) break;
            if (st) { /* nn's lowest bit is at or before st's */
                c = H1_TZ32(nn);
                r = s + H1_TZ32(st);
            } else { /* a line longer than 32 bytes */
                c = nn ? H1_TZ32(nn) : long_name(buf, s, lim);
                r = line_stop(buf, s + 32, lim, &kc);
                if (c >= 64 || r + 1 >= lim) return false;
            }
        } else { /* the head's last bytes: bits past lim are set in both */
            if (s + 2 <= lim && load2(buf + s) == CRLF)
                return head_end(s, &fs.st, out); /* most often */
            st = ln_at(buf, s, lim, &nn, &kc);
            if (nn & 1) break;
            if (!st) return false; /* s + 32 == lim: no CR before lim */
            c = H1_TZ32(nn);
            r = s + H1_TZ32(st);
            if (r + 1 >= lim) return false;
        }
        if (load2(buf + r) != CRLF) return false;
        if (!header(buf, s, s + c, r, la, kbit, &fs)) return false;
        s = r + 2;
    }
    if (s + 2 > lim || load2(buf + s) != CRLF) return false;
    return head_end(s, &fs.st, out);
}

#endif
