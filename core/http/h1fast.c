/* SPDX-License-Identifier: BSD-2-Clause */
/* h1fast.c - the one-pass reader of common request heads (see h1fast.h):
 * the key, the thread's memory of the last head (which also answers a
 * head that differs from it only inside header values: a trace id per
 * request; compared by h1fast_match.h, with AVX2 where the scan has it),
 * its memory of the header lines of recent heads (shapes: lines that
 * differ from one only inside values are read from it, whatever the
 * request line), and which scan reads a head it does not answer.
 *
 * The scan (h1fast_body.h: a line at a time, its first 32 bytes
 * classified at once for where its name ends and its first stop) is
 * compiled three times: with AVX2 (h1fast_avx2.c: name bytes by two
 * vpshufb lookups), with SSE2 (h1fast_sse2.c, every x86-64) and in plain
 * C (h1fast_plain.c, any CPU). The first read picks the best the CPU has
 * (__builtin_cpu_supports); sl_h1fast_use forces one, for the tests and
 * bench/bench_h1.c, and test_h1fast and fuzz_h1fast run every path on
 * every input. Every path gives the same result for the same bytes.
 *
 * Measured (callgrind, bench/h1_insn.sh: 20,000 realistic heads of ~296
 * bytes, none repeated): sl_h1fast_read, its lines read from the
 * thread's shapes, 1.38 instructions per byte of head with AVX2 (407 a
 * head: read_new_avx2, the compare inlined in the scan), 2.2 with SSE2,
 * 6.2 in plain C (before 16 shapes and the inlined compare: 1.71, 505);
 * the scan alone, every line read, 2.26 (670), 3.18 and 21. Before
 * the shapes, the reader was the scan (2.34 with AVX2); before that (a
 * line at a time, SSE2, 16 bytes a load, each kept line read by a call
 * from the loop) 3.83. SSE4.2's PCMPISTRI (one instruction for a search
 * of 16 bytes, as picohttpparser uses) counted 3.1 but took more cycles.
 */
#include "h1fast.h"

#include <stdatomic.h>
#include <string.h>
#include <strings.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "h1fast_scan.h"
#if defined(SL_H1FAST_X86)
#include <immintrin.h>
#endif

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
            uint8_t c = sl_h1fast_name_chr[(uint8_t)name[i]];
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

/* A scan of h1fast_scan.h. */
typedef bool scan_fn(const char *buf, size_t lim, const struct sl_h1fast_key *k,
                     struct sl_h1fast *out, sl_h1fast_lines_fn *lines);

/* The reading of header lines from the thread's shapes that the scan
 * asks (h1fast_match.h's LINES, for the scan's instruction set). */
static sl_h1fast_lines_fn *_Atomic liner;

/* The scan reads use: NULL until the first read picks one (a race of two
 * threads picks the same). */
static scan_fn *_Atomic scanner;
static void match_with(scan_fn *f);

static scan_fn *path_fn(enum sl_h1fast_path p)
{
#if defined(SL_H1FAST_X86)
    if (p == SL_H1FAST_BEST || p == SL_H1FAST_AVX2) {
        __builtin_cpu_init(); /* may run before the constructors that do it */
        if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("bmi"))
            return sl_h1fast_scan_avx2;
        if (p == SL_H1FAST_AVX2) return NULL;
    }
    if (p != SL_H1FAST_PLAIN) return sl_h1fast_scan_sse2;
#else
    if (p != SL_H1FAST_BEST && p != SL_H1FAST_PLAIN) return NULL;
#endif
    return sl_h1fast_scan_plain;
}

bool sl_h1fast_use(enum sl_h1fast_path p)
{
    scan_fn *f = path_fn(p);
    if (f) {
        atomic_store_explicit(&scanner, f, memory_order_relaxed);
        match_with(f);
    }
    return f != NULL;
}

/* The head at buf (len bytes available) into out by f; false: declined.
 * A head that may end within its first 32 bytes is scanned in a copy
 * whose 32 bytes before its end are readable (the scans read 32 bytes
 * at a time). */
static inline __attribute__((always_inline)) bool scan_by(scan_fn *f, const char *buf, size_t len,
                                                          const struct sl_h1fast_key *k,
                                                          struct sl_h1fast *out,
                                                          sl_h1fast_lines_fn *lines)
{
    size_t lim = len < SL_H1FAST_MAX ? len : SL_H1FAST_MAX;
    if (lim < 18) return false; /* "GET / HTTP/1.1" and two CRLFs at least */
    if (lim >= 32) return f(buf, lim, k, out, lines);
    char pad[32]; /* too short for a shape (SHAPE_MIN): none is asked */
    memcpy(pad + 32 - lim, buf, lim);
    return f(pad + 32 - lim, lim, k, out, NULL);
}

/* A read's scan of a head (scan's signature). */
typedef bool scan_read_fn(const char *buf, size_t len, const struct sl_h1fast_key *k,
                          struct sl_h1fast *out);

/* The scan reads use, with the thread's shapes of header lines. */
static bool scan(const char *buf, size_t len, const struct sl_h1fast_key *k, struct sl_h1fast *out)
{
    scan_fn *f = atomic_load_explicit(&scanner, memory_order_relaxed);
    if (!f) {
        f = path_fn(SL_H1FAST_BEST);
        match_with(f);
        atomic_store_explicit(&scanner, f, memory_order_relaxed);
    }
    return scan_by(f, buf, len, k, out, atomic_load_explicit(&liner, memory_order_relaxed));
}

bool sl_h1fast_scan_path(enum sl_h1fast_path p, const char *buf, size_t len,
                         const struct sl_h1fast_key *k, struct sl_h1fast *out)
{
    scan_fn *f = path_fn(p);
    return f && scan_by(f, buf, len, k, out, NULL);
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
 * request bytes). A head that differs from it only inside header values
 * (vary_of) gives its result too (memo_read): real clients repeat a head
 * but for a trace id. Heads up to SL_H1FAST_MAX bytes: an SDK's head is
 * often 500 to 700 (on bench/insn.sh's realistic heads, 512 and 1,024
 * counted alike, 17 instructions a request above 256). */
enum near { NEAR_UNSEEN, NEAR_SEEN, NEAR_NONE };

struct memo {
    uint64_t gen;
    bool cookies;
    uint8_t misses;  /* since the last hit or store */
    uint8_t every;   /* misses before a head is kept (read_new) */
    bool hit;        /* since the last store */
    uint8_t near;    /* whether `vary` is this head's (vary_of) */
    uint8_t cl_len;  /* Content-Length's digits (vary_of; 0: none)... */
    uint16_t cl_at;  /* ...from here */
    uint16_t len;    /* 0: empty */
    uint16_t lines;  /* where the header lines begin (after the request line) */
    uint64_t serial; /* this store's (memo_serials) */
    struct sl_h1fast out;
    uint64_t vary[SL_H1FAST_MEMO / 64]; /* bit i: head[i] may differ (vary_of) */
    char head[SL_H1FAST_MEMO];
};
static __thread struct memo memo __attribute__((tls_model("initial-exec")));
static _Atomic uint64_t memo_serials; /* stores in every thread: a store's serial */

/* Heads this thread read as like the memory's (memo_read), and heads it
 * kept (read_new), for tests. */
static __thread uint64_t near_reads __attribute__((tls_model("initial-exec")));
static __thread uint64_t kept __attribute__((tls_model("initial-exec")));

/* Where a head that is not the memory's is read. */
static __thread struct sl_h1fast room __attribute__((tls_model("initial-exec")));

/* Where a head read as differing from the memory's only in bytes vary_of
 * allows is answered (h1fast_match.h): the memory's result, copied when
 * it is stored, and the new head's Content-Length; apart from `room`
 * (read_new's), so that a read tells which it was (sl_h1fast_memory). */
static __thread struct sl_h1fast near_room __attribute__((tls_model("initial-exec")));

static inline void shape_keep(const char *buf, const struct sl_h1fast *out,
                              const struct sl_h1fast_key *k);
/* Heads read with header lines from a shape (shape_take). */
static __thread uint64_t shape_reads __attribute__((tls_model("initial-exec")));

/* A head that is not the memory's: read by scan_it, and perhaps
 * remembered (and its header lines as a shape, when the scan read them
 * itself). Inline in read_new and read_new_avx2, each with its scan. */
static inline __attribute__((always_inline)) const struct sl_h1fast *
read_new_by(scan_read_fn *scan_it, const char *buf, size_t len, const struct sl_h1fast_key *k)
{
    struct memo *m = &memo;
    struct sl_h1fast *out = &room;
    uint64_t shaped = shape_reads;
    if (!scan_it(buf, len, k, out)) return NULL;
    if (shape_reads == shaped) shape_keep(buf, out, k);
    /* heads that vary (another path each time) would pay the store on
     * every request: after a hit, the fourth miss is kept; after a head
     * kept and never hit, the eighth, ... the 64th */
    if (out->end <= sizeof m->head && (m->len == 0 || ++m->misses >= m->every)) {
        m->every = m->len == 0 || m->hit ? 4 : m->every < 64 ? m->every * 2 : 64;
        m->hit = false;
        m->misses = 0;
        kept++;
        m->near = NEAR_UNSEEN;
        memcpy(m->head, buf, out->end);
        m->len = (uint16_t)out->end;
        m->lines = (uint16_t)(out->url.off + out->url.len + 11); /* " HTTP/1.x" CR LF */
        m->out = near_room = *out;
        m->gen = k->gen;
        m->cookies = k->cookies;
        m->serial = atomic_fetch_add_explicit(&memo_serials, 1, memory_order_relaxed) + 1;
        return out; /* no serial yet: the lane opens at a head read again */
    }
    return out;
}

/* read_new_by with the scan of the scanner picked (scan). */
static __attribute__((noinline)) const struct sl_h1fast *read_new(const char *buf, size_t len,
                                                                  const struct sl_h1fast_key *k)
{
    return read_new_by(scan, buf, len, k);
}

/* The reads' read_new: read_new, or the one of the scanner picked
 * (match_with), which makes no call to scan a head. */
typedef const struct sl_h1fast *read_new_fn(const char *buf, size_t len,
                                            const struct sl_h1fast_key *k);
static read_new_fn *_Atomic reader = read_new;

/* The memory's head answered a read: kept after 4 misses again. */
static inline void answered(struct memo *m)
{
    m->misses = 0;
    m->hit = true;
    m->every = 4;
}

/* The spaces of the 16 bytes at a, as a bit mask. */
static inline uint32_t spaces16(const char *a)
{
#if defined(__SSE2__)
    __m128i x = _mm_loadu_si128((const __m128i *)(const void *)a);
    return (uint32_t)_mm_movemask_epi8(_mm_cmpeq_epi8(x, _mm_set1_epi8(' ')));
#else
    uint32_t sp = 0;
    for (int i = 0; i < 16; i++)
        sp |= (uint32_t)(a[i] == ' ') << i;
    return sp;
#endif
}

/* Where a head's header lines h[s, n) (each with a colon, ending at a CR:
 * a head the scan read whole) may differ from those of a head the scan
 * would read the same way, offsets included, as bits of vary (bit i:
 * h[i]; cleared first): the bytes of their values, save their spaces;
 * not a name, a colon, a line end or the value of Connection (framing).
 * The scan looks at a value's bytes only for its first stop (its CR),
 * where it begins (its first byte that is not a space) and where its trim
 * ends (its last): any other byte from 0x21 to 0x7e (may_differ's test)
 * leaves each of them where it was, and a slice of the key, Host or
 * Idempotency-Key where it was, with the new bytes. Content-Length's
 * digits may differ too (*cl_at, *cl_len; 0: no such line): they are
 * read again (length_again), as a client posting bodies of one number of
 * digits sends them. h is readable to n rounded up to 16. False: a line
 * without a colon (never, for a head the scan read). */
static bool vary_lines(const char *h, size_t s, size_t n, uint64_t *vary, size_t words,
                       uint16_t *cl_at, uint8_t *cl_len)
{
    memset(vary, 0, words * sizeof *vary);
    *cl_len = 0;
    while (s + 2 < n) {
        const char *cr = memchr(h + s, '\r', n - s);
        const char *colon = cr ? memchr(h + s, ':', (size_t)(cr - h) - s) : NULL;
        if (!colon) return false;
        size_t r = (size_t)(cr - h), c = (size_t)(colon - h) - s;
        if (c == 14 && strncasecmp(h + s, "content-length", 14) == 0) {
            size_t v = s + c + 1;
            while (h[v] == ' ')
                v++;
            *cl_at = (uint16_t)v; /* digits to the CR (the scan read them so) */
            *cl_len = (uint8_t)(r - v);
        }
        if (!(c == 10 && strncasecmp(h + s, "connection", 10) == 0))
            for (size_t at = s + c + 1; at < r;) { /* bits [at, r), a word at a time */
                size_t w = at / 64, end = r - w * 64 < 64 ? r - w * 64 : 64;
                vary[w] |= (end == 64 ? ~0ull : (1ull << end) - 1) & ~0ull << (at % 64);
                at = w * 64 + end;
            }
        s = r + 2;
    }
    for (size_t at = 0; at < n; at += 16) /* then not its spaces */
        vary[at / 64] &= ~((uint64_t)spaces16(h + at) << (at % 64));
    return true;
}

/* Where the memory's head may differ (vary_lines): in its header lines,
 * never in its request line. Run once for a head, at its first read as a
 * near one. */
static __attribute__((noinline, cold)) void vary_of(struct memo *m)
{
    const char *nl = memchr(m->head, '\n', m->len);
    m->near = NEAR_NONE;
    m->cl_len = 0;
    if (nl && vary_lines(m->head, (size_t)(nl - m->head) + 1, m->len, m->vary,
                         sizeof m->vary / sizeof m->vary[0], &m->cl_at, &m->cl_len))
        m->near = NEAR_SEEN;
}

/* The bytes of the 16 at a that differ from the 16 at b, as a bit mask. */
static inline uint32_t differ16(const char *a, const char *b)
{
#if defined(__SSE2__)
    __m128i x = _mm_loadu_si128((const __m128i *)(const void *)a);
    __m128i y = _mm_loadu_si128((const __m128i *)(const void *)b);
    return ~(uint32_t)_mm_movemask_epi8(_mm_cmpeq_epi8(x, y)) & 0xffff;
#else
    uint32_t d = 0;
    for (int i = 0; i < 16; i++)
        d |= (uint32_t)(a[i] != b[i]) << i;
    return d;
#endif
}

/* The bytes of the 16 at a that are not 0x21 to 0x7e, as a bit mask. */
static inline uint32_t odd16(const char *a)
{
#if defined(__SSE2__)
    __m128i x = _mm_loadu_si128((const __m128i *)(const void *)a);
    /* 0x21..0x7e + 0x5f is 0x80..0xdd: as signed bytes, -128 to -35 */
    return (uint32_t)_mm_movemask_epi8(
        _mm_cmpgt_epi8(_mm_add_epi8(x, _mm_set1_epi8(0x5f)), _mm_set1_epi8(-35)));
#else
    uint32_t o = 0;
    for (int i = 0; i < 16; i++)
        o |= (uint32_t)((uint8_t)a[i] < 0x21 || (uint8_t)a[i] > 0x7e) << i;
    return o;
#endif
}

/* Whether the bytes d of the memory's head from `at` (a multiple of 16;
 * of 32 when d has 32 bits) may differ as they do, odd those of them
 * outside 0x21..0x7e; vary_of made already (h1fast_match.h's NEAR: no
 * call here, in its loop). */
static inline bool may_differ(const struct memo *m, size_t at, uint32_t d, uint32_t odd)
{
    /* never in the request line */
    if (at + (unsigned)__builtin_ctz(d) < m->lines) return false;
    return m->near == NEAR_SEEN && !(d & odd) && !(d & ~(uint32_t)(m->vary[at / 64] >> (at % 64)));
}

/* The len digits at p (Content-Length's, as the scan reads them) into
 * *cl; false: a byte that is not a digit. */
static inline bool digits(const char *p, size_t len, uint64_t *cl)
{
    uint64_t v = 0;
    for (size_t i = 0; i < len; i++) {
        if (p[i] < '0' || p[i] > '9') return false;
        v = v * 10 + (uint64_t)(p[i] - '0');
    }
    *cl = v;
    return true;
}

/* Content-Length's new digits (len of them at p) into f, as the scan
 * reads them; false: the scan would decline (not digits, or a body after
 * a GET or HEAD). */
static bool length_again(struct sl_h1fast *f, const char *p, size_t len)
{
    uint64_t cl;
    if (!digits(p, len, &cl)) return false;
    /* GET and HEAD: the only methods of the scan's that begin so */
    if (cl && (f->method[0] == 'G' || f->method[0] == 'H')) return false;
    f->content_length = cl;
    return true;
}

/* The thread's shapes: the header lines of the last few heads it read
 * whole, apart from their request lines. An API's clients send a few
 * shapes of head (one an SDK): the same lines in the same order, values
 * of one length but for the ones that vary (a trace id, a key), while the
 * request line changes from request to request (a path, a query): the
 * memory of the whole head (memo) does not answer them. A head whose
 * header lines differ from a shape's only where vary_lines allows, each
 * new byte from 0x21 to 0x7e, has the shape's reading of them, moved to
 * where its own begin (shape_take), with its own Content-Length: the scan
 * reads its request line and asks (LINES, h1fast_match.h) instead of
 * reading its lines. Why that is the scan's reading: the scan reads the
 * lines in turn, and what it makes of one depends on its name, where its
 * value begins and ends and the lines before it (a second Host is not
 * read, a second key declines), and on nothing in the request line but
 * its method (a body after a GET declines: shape_take asks) and version;
 * names, spaces and line ends are the shape's, byte for byte. Only for
 * HTTP/1.1 heads: HTTP/1.0's keep-alive depends on the lines (head_end).
 * SHAPES of them, the least recently used replaced, a store paid ever
 * more rarely while none is read (shape_keep), one that keeps finding
 * other lines let go (shape_failed); about 12.5 KiB of each thread's
 * static TLS. bench_h1's realistic heads (3 SDKs, 1 in 10 a POST with a
 * body of 2 or 3 digits: 9 shapes) have 99.9 % of their lines read from
 * a shape with 16 of them, 98.8 % with 8 (the rarest shapes replacing
 * each other: about 15 instructions a head more), 95.5 % with 6, 88.5 %
 * with 4. An API's clients send a few SDKs' heads, each with and without
 * a body: 16 leaves room for a dozen shapes. */
#define SHAPES      SL_H1FAST_SHAPES
#define SHAPE_MIN   32  /* bytes of lines: the compare reads 32 at a time */
#define SHAPE_MAX   640 /* an SDK's head is often 500 to 700 bytes, its request line 30 to 150 */
#define SHAPE_FAILS 4   /* compares in a row that find other lines: the shape is let go */

struct shape {
    uint16_t len;   /* block's bytes, to the end of the blank line; 0: empty */
    uint16_t cl_at; /* Content-Length's digits, in block (vary_lines)... */
    uint8_t cl_len; /* ...this many (0: none) */
    uint8_t near;   /* whether vary is this one's (vary_lines) */
    uint8_t fails;  /* compares in a row that found other lines (shape_failed) */
    bool cookies;
    bool has_length;
    uint64_t gen;  /* the key's, as the memo's */
    uint64_t used; /* shape_clock at its last store or read: the least is replaced */
    uint64_t content_length;
    uint64_t slices[3]; /* Host, the key, Idempotency-Key: sl_h1fast_slice, off in block */
    uint64_t vary[SHAPE_MAX / 64];
    char block[SHAPE_MAX];
};
static __thread struct shape shapes[SHAPES] __attribute__((tls_model("initial-exec")));
/* each one's len again, side by side: LINES looks for the one whose lines
 * end where the head may without touching the others */
static __thread uint16_t shape_lens[SHAPES] __attribute__((tls_model("initial-exec")));
static __thread uint64_t shape_clock __attribute__((tls_model("initial-exec")));
/* as the memo's: misses since the last store, and how many make one (0:
 * none stored yet; after a store no read used, twice as many, up to 64) */
static __thread uint64_t shape_reads_kept __attribute__((tls_model("initial-exec")));
static __thread uint8_t shape_misses __attribute__((tls_model("initial-exec")));
static __thread uint8_t shape_every __attribute__((tls_model("initial-exec")));

_Static_assert(sizeof(struct sl_h1fast_slice) == 8, "a slice is one word");

static inline uint64_t slice_word(struct sl_h1fast_slice v)
{
    uint64_t w;
    memcpy(&w, &v, sizeof w);
    return w;
}

/* A shape's slice word (off in its block) for lines from ls: off is the
 * low 16 bits, and off + ls < SL_H1FAST_MAX carries into nothing. An
 * absent slice (present false, len 0) gets off ls, which says nothing
 * (h1fast.h). */
static inline struct sl_h1fast_slice slice_at(uint64_t w, size_t ls)
{
    w += ls;
    struct sl_h1fast_slice v;
    memcpy(&v, &w, sizeof v);
    return v;
}

#if defined(__SSE2__)
/* shapes_of_len's compare of eight lengths l (as 16-bit words: 0xffff each). */
static inline __m128i lens8(__m128i l, __m128i want, bool shorter)
{
    __m128i z = _mm_setzero_si128(); /* lengths <= SL_H1FAST_MAX: signed compares */
    return shorter ? _mm_and_si128(_mm_cmpgt_epi16(l, z), _mm_cmplt_epi16(l, want))
                   : _mm_cmpeq_epi16(l, want);
}
#endif

/* The shapes whose lines are n bytes long (shorter: those shorter, not
 * empty), as a bit each (bit i: shapes[i]); 1 <= n <= SL_H1FAST_MAX. */
static inline unsigned shapes_of_len(size_t n, bool shorter)
{
#if defined(__SSE2__)
    _Static_assert(SHAPES == 16 && sizeof shape_lens == 32, "the lengths: two vectors");
    __m128i want = _mm_set1_epi16((short)n);
    __m128i l0 = _mm_loadu_si128((const __m128i *)(const void *)shape_lens);
    __m128i l1 = _mm_loadu_si128((const __m128i *)(const void *)(shape_lens + 8));
    return (unsigned)_mm_movemask_epi8(
        _mm_packs_epi16(lens8(l0, want, shorter), lens8(l1, want, shorter))); /* a bit each */
#else
    unsigned m = 0;
    for (unsigned i = 0; i < SHAPES; i++)
        m |= (unsigned)(shorter ? shape_lens[i] && shape_lens[i] < n : shape_lens[i] == n) << i;
    return m;
#endif
}

/* A shape's vary, at its first compare that finds a byte changed (until
 * then vary is 0: no byte may differ). False: none may. */
static __attribute__((noinline, cold)) bool shape_vary(struct shape *s)
{
    s->near = vary_lines(s->block, 0, s->len, s->vary, sizeof s->vary / sizeof s->vary[0],
                         &s->cl_at, &s->cl_len)
                  ? NEAR_SEEN
                  : NEAR_NONE;
    if (s->near == NEAR_NONE) memset(s->vary, 0, sizeof s->vary);
    return s->near == NEAR_SEEN;
}

/* A shape's lines against a head's (h1fast_match.h's LIKE). */
enum like { LIKE_NO, LIKE_YES, LIKE_UNSEEN };

/* The bits of shape s's vary for its 32 bytes from `at` (a multiple of
 * 32): half a word, little-endian. */
static inline uint32_t shape_vary32(const struct shape *s, size_t at)
{
    uint32_t v;
    memcpy(&v, (const char *)s->vary + at / 8, sizeof v);
    return v;
}

/* The head at buf whose header lines, from ls, shape s stands for (LINES
 * compared them): its reading of them into out, moved to ls, with the
 * head's own Content-Length; false, out untouched: the scan reads them
 * (it will decline: digits no more, or a body after a GET or HEAD). */
static inline bool shape_take(struct shape *s, const char *buf, size_t ls, bool get,
                              struct sl_h1fast *out)
{
    uint64_t cl = s->content_length; /* the block's own digits, when no byte differed */
    if (s->cl_len && s->near == NEAR_SEEN && !digits(buf + ls + s->cl_at, s->cl_len, &cl))
        return false;
    if (get && cl) return false;
    out->content_length = cl;
    out->has_length = s->has_length;
    out->end = (uint16_t)(ls + s->len);
    out->host = slice_at(s->slices[0], ls);
    out->key = slice_at(s->slices[1], ls);
    out->idem = slice_at(s->slices[2], ls);
    s->used = ++shape_clock;
    s->fails = 0;
    shape_reads++;
    return true;
}

/* Shape i (s) was compared with a head's lines of its length and found
 * other lines: after SHAPE_FAILS such compares in a row, none read from
 * it between, it is let go (the first replaced), so that a thread whose
 * heads share no shape, or whose heads of one length differ in a name,
 * stops comparing them. 20,000 heads whose lines share no shape, of one
 * length each with another name: 829 instructions a head (891 with 8
 * shapes and the hook's call; 1,497 without letting go; 769 before
 * shapes); of 50 lengths in turn: 765 (822, 903, 682). */
static __attribute__((noinline)) void shape_failed(struct shape *s, size_t i)
{
    if (++s->fails < SHAPE_FAILS) return;
    s->len = shape_lens[i] = 0;
    s->used = 0;
}

_Static_assert(SHAPE_MAX % 32 == 0, "vary in halves of words");

/* Whether the head's end may be at e: its blank line's CR LF CR LF. */
static inline bool ends_at(const char *buf, size_t e)
{
    uint32_t end;
    memcpy(&end, buf + e - 4, 4);
    return end == ('\r' | '\n' << 8 | '\r' << 16 | (uint32_t)'\n' << 24);
}

/* A slice of a head whose header lines begin at `lines`, as a shape
 * holds it: off in its block. */
static inline uint64_t slice_in(struct sl_h1fast_slice v, size_t lines)
{
    v.off = v.present ? (uint16_t)(v.off - lines) : 0;
    return slice_word(v);
}

/* shape_keep's store of lines [lines, lines + n) of the head at buf. */
static __attribute__((noinline)) void shape_store(const char *buf, const struct sl_h1fast *out,
                                                  const struct sl_h1fast_key *k, size_t lines,
                                                  size_t n)
{
    bool read = shape_reads != shape_reads_kept; /* a shape was read since the last store */
    shape_every = !shape_every || read ? 1 : shape_every < 64 ? shape_every * 2 : 64;
    shape_reads_kept = shape_reads;
    shape_misses = 0;
    size_t v = 0;
    for (size_t i = 1; i < SHAPES; i++)
        if (shapes[i].used < shapes[v].used) v = i;
    struct shape *s = &shapes[v];
    memcpy(s->block, buf + lines, n);
    s->len = shape_lens[v] = (uint16_t)n;
    s->near = NEAR_UNSEEN;
    s->fails = 0;
    memset(s->vary, 0, sizeof s->vary); /* none may differ until shape_vary */
    s->cookies = k->cookies;
    s->has_length = out->has_length;
    s->gen = k->gen;
    s->used = ++shape_clock;
    s->content_length = out->content_length;
    s->slices[0] = slice_in(out->host, lines);
    s->slices[1] = slice_in(out->key, lines);
    s->slices[2] = slice_in(out->idem, lines);
}

/* The head at buf, read whole by the scan (out) and not from a shape:
 * its header lines kept as one, in place of the least recently used,
 * when a store is due (the test inline: most misses store nothing). */
static inline void shape_keep(const char *buf, const struct sl_h1fast *out,
                              const struct sl_h1fast_key *k)
{
    size_t lines = (size_t)out->url.off + out->url.len + 11, n = out->end - lines;
    if (n - SHAPE_MIN > SHAPE_MAX - SHAPE_MIN || ++shape_misses < shape_every) return;
    shape_store(buf, out, k, lines, n);
}

/* memo_match, once per instruction set (h1fast_match.h). */
typedef const struct sl_h1fast *match_fn(const char *buf);

#define MATCH_ATTR
#define LINES_ATTR
#define MATCH        match_16
#define NEAR         near_16
#define LINES        lines_16
#define LIKE         like_16
#define LIKE_MADE    like_made_16
#define DIFF32(a, b) (differ16(a, b) | differ16((a) + 16, (b) + 16) << 16)
#define ODD32(a)     (odd16(a) | odd16((a) + 16) << 16)
#define ODDL32(a)    ODD32(a)
#include "h1fast_match.h"
#undef MATCH_ATTR
#undef LINES_ATTR
#undef MATCH
#undef NEAR
#undef LINES
#undef LIKE
#undef LIKE_MADE
#undef ODDL32
#undef DIFF32
#undef ODD32

#if defined(SL_H1FAST_X86)
#define H1_AVX2 __attribute__((target("avx2")))
static inline __attribute__((always_inline)) H1_AVX2 uint32_t differ32(const char *a, const char *b)
{
    __m256i x = _mm256_loadu_si256((const __m256i *)(const void *)a);
    __m256i y = _mm256_loadu_si256((const __m256i *)(const void *)b);
    return ~(uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(x, y));
}

/* Its constants loaded at each use, from an address behind a volatile
 * asm (which stays where it is, in the branch of a differing step):
 * hoisted, they cost the compare of every head, a near one or not, their
 * broadcasts and the registers that hold them, where a head differs in a
 * step or two. */
static const int8_t odd_konst[2][32] __attribute__((aligned(32))) = {
    {[0 ... 31] = 0x5f}, /* 0x21..0x7e + 0x5f is 0x80..0xdd: */
    {[0 ... 31] = -35},  /* as signed bytes, -128 to -35 */
};

static inline __attribute__((always_inline)) H1_AVX2 uint32_t odd32(const char *a)
{
    const int8_t(*k)[32] = odd_konst;
    __asm__ volatile("" : "+r"(k));
    __m256i x = _mm256_loadu_si256((const __m256i *)(const void *)a);
    __m256i shift = _mm256_load_si256((const __m256i *)(const void *)k[0]);
    __m256i least = _mm256_load_si256((const __m256i *)(const void *)k[1]);
    return (uint32_t)_mm256_movemask_epi8(_mm256_cmpgt_epi8(_mm256_add_epi8(x, shift), least));
}

/* odd32 with constants the compiler may keep in registers (LIKE: a
 * head's lines nearly always differ in a trace id), or take as operands
 * from memory: behind an asm that is not volatile, loads it may hoist,
 * never broadcasts rebuilt from immediates at each use. */
static inline __attribute__((always_inline)) H1_AVX2 uint32_t odd32_kept(const char *a)
{
    const int8_t(*k)[32] = odd_konst;
    __asm__("" : "+r"(k));
    __m256i x = _mm256_loadu_si256((const __m256i *)(const void *)a);
    __m256i shift = _mm256_load_si256((const __m256i *)(const void *)k[0]);
    __m256i least = _mm256_load_si256((const __m256i *)(const void *)k[1]);
    return (uint32_t)_mm256_movemask_epi8(_mm256_cmpgt_epi8(_mm256_add_epi8(x, shift), least));
}

#define MATCH_ATTR   H1_AVX2
#define LINES_ATTR   inline __attribute__((always_inline)) /* in read_new_avx2 */
#define MATCH        match_avx2
#define NEAR         near_avx2
#define LINES        lines_avx2
#define LIKE         like_avx2
#define LIKE_MADE    like_made_avx2
#define DIFF32(a, b) differ32(a, b)
#define ODD32(a)     odd32(a)
#define ODDL32(a)    odd32_kept(a)
#include "h1fast_match.h"
#undef MATCH_ATTR
#undef LINES_ATTR
#undef MATCH
#undef NEAR
#undef LINES
#undef LIKE
#undef LIKE_MADE
#undef ODDL32
#undef DIFF32
#undef ODD32
#endif

#if defined(SL_H1FAST_X86)
#include "h1fast_vec32.h"

/* scan() with AVX2: the scan compiled here (h1fast_vec32.h), with the
 * AVX2 compare of the thread's shapes inlined where it asks them. */
static inline __attribute__((always_inline)) H1_TARGET bool
scan_avx2(const char *buf, size_t len, const struct sl_h1fast_key *k, struct sl_h1fast *out)
{
    if (len < 32) return scan_by(sl_h1fast_scan_avx2, buf, len, k, out, NULL);
    return scan_head(buf, len < SL_H1FAST_MAX ? len : SL_H1FAST_MAX, k, out, lines_avx2);
}

/* read_new with AVX2: a head read, its header lines most often from a
 * shape, in one frame, with no call (issue 32: a call and a frame each
 * for read_new, the scan and the shapes' compare were about 60
 * instructions a realistic head). */
static __attribute__((noinline)) H1_TARGET const struct sl_h1fast *
read_new_avx2(const char *buf, size_t len, const struct sl_h1fast_key *k)
{
    return read_new_by(scan_avx2, buf, len, k);
}
#endif

/* The memory's compare: AVX2's where the scan is (h1fast_avx2.c). */
static match_fn *_Atomic matcher = match_16;

static void match_with(scan_fn *f)
{
#if defined(SL_H1FAST_X86)
    bool avx2 = f == sl_h1fast_scan_avx2;
    atomic_store_explicit(&matcher, avx2 ? match_avx2 : match_16, memory_order_relaxed);
    atomic_store_explicit(&liner, avx2 ? lines_avx2 : lines_16, memory_order_relaxed);
    atomic_store_explicit(&reader, avx2 ? read_new_avx2 : read_new, memory_order_relaxed);
#else
    (void)f;
    atomic_store_explicit(&liner, lines_16, memory_order_relaxed);
#endif
}

static inline const struct sl_h1fast *memo_match(const char *buf)
{
    return atomic_load_explicit(&matcher, memory_order_relaxed)(buf);
}

/* memo_match, else the scan's read (read_new). */
static __attribute__((noinline)) const struct sl_h1fast *memo_read(const char *buf, size_t len,
                                                                   const struct sl_h1fast_key *k)
{
    const struct sl_h1fast *f = memo_match(buf);
    return f ? f : atomic_load_explicit(&reader, memory_order_relaxed)(buf, len, k);
}

uint64_t sl_h1fast_near_reads(void)
{
    return near_reads;
}

uint64_t sl_h1fast_kept(void)
{
    return kept;
}

uint64_t sl_h1fast_shape_reads(void)
{
    return shape_reads;
}

void sl_h1fast_forget(void)
{
    memo.len = 0;
    for (size_t i = 0; i < SHAPES; i++) {
        shapes[i] = (struct shape){0};
        shape_lens[i] = 0;
    }
    shape_misses = shape_every = 0;
    shape_reads_kept = shape_reads;
}

/* Whether buf may begin with the memory's head, or one like it
 * (memo_read): the same key, and a blank line where the memory's ends. */
static inline bool memo_may_start(const struct memo *m, const char *buf, size_t len,
                                  const struct sl_h1fast_key *k)
{
    if (!m->len || len < m->len || m->gen != k->gen || m->cookies != k->cookies) return false;
    uint32_t end;
    memcpy(&end, buf + m->len - 4, 4);
    return end == ('\r' | '\n' << 8 | '\r' << 16 | (uint32_t)'\n' << 24);
}

const struct sl_h1fast *sl_h1fast_read(const char *buf, size_t len, const struct sl_h1fast_key *k)
{
    if (!memo_may_start(&memo, buf, len, k))
        return atomic_load_explicit(&reader, memory_order_relaxed)(buf, len, k);
    return memo_read(buf, len, k);
}

uint64_t sl_h1fast_serial(const struct sl_h1fast *f)
{
    return f == &memo.out ? memo.serial : 0;
}

uint64_t sl_h1fast_memory(const struct sl_h1fast *f)
{
    return f != &room ? memo.serial : 0; /* read_new's is the one not from the memory */
}

const struct sl_h1fast *sl_h1fast_again(const char *buf, size_t len, const struct sl_h1fast_key *k,
                                        uint64_t serial)
{
    struct memo *m = &memo;
    if (m->serial != serial || !memo_may_start(m, buf, len, k)) return NULL;
    return memo_match(buf);
}
