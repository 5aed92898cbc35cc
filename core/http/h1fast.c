/* SPDX-License-Identifier: BSD-2-Clause */
/* h1fast.c - the one-pass reader of common request heads (see h1fast.h):
 * the key, the thread's memory of the last head (which also answers a
 * head that differs from it only inside header values: a trace id per
 * request; compared by h1fast_match.h, with AVX2 where the scan has it),
 * and which scan reads a head it does not answer.
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
 * bytes, none repeated, sl_h1fast_read whole): AVX2 2.70 instructions per
 * byte of head (801 a head; 816 with heads up to 1,024 bytes remembered,
 * not 256), SSE2 3.81, plain C 24; before (a line at a
 * time, SSE2, 16 bytes a load, each kept line read by a call from the
 * loop) 3.83. SSE4.2's PCMPISTRI (one instruction for a search of 16
 * bytes, as picohttpparser uses) counted 3.1 but took more cycles.
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
                     struct sl_h1fast *out);

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
static bool scan_by(scan_fn *f, const char *buf, size_t len, const struct sl_h1fast_key *k,
                    struct sl_h1fast *out)
{
    size_t lim = len < SL_H1FAST_MAX ? len : SL_H1FAST_MAX;
    if (lim < 18) return false; /* "GET / HTTP/1.1" and two CRLFs at least */
    if (lim >= 32) return f(buf, lim, k, out);
    char pad[32];
    memcpy(pad + 32 - lim, buf, lim);
    return f(pad + 32 - lim, lim, k, out);
}

static bool scan(const char *buf, size_t len, const struct sl_h1fast_key *k, struct sl_h1fast *out)
{
    scan_fn *f = atomic_load_explicit(&scanner, memory_order_relaxed);
    if (!f) {
        f = path_fn(SL_H1FAST_BEST);
        match_with(f);
        atomic_store_explicit(&scanner, f, memory_order_relaxed);
    }
    return scan_by(f, buf, len, k, out);
}

bool sl_h1fast_scan_path(enum sl_h1fast_path p, const char *buf, size_t len,
                         const struct sl_h1fast_key *k, struct sl_h1fast *out)
{
    scan_fn *f = path_fn(p);
    return f && scan_by(f, buf, len, k, out);
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

/* A head that is not the memory's: read, and perhaps remembered. */
static __attribute__((noinline)) const struct sl_h1fast *read_new(const char *buf, size_t len,
                                                                  const struct sl_h1fast_key *k)
{
    struct memo *m = &memo;
    struct sl_h1fast *out = &room;
    if (!scan(buf, len, k, out)) return NULL;
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

/* Where the memory's head may differ from a head the scan would read the
 * same way, offsets included: the bytes of its header values, save their
 * spaces; not the request line, a name, a colon, a line end or the value
 * of Connection (framing). The scan looks at a value's bytes only for its
 * first stop (its CR), where it begins (its first byte that is not a
 * space) and where its trim ends (its last): any other byte from 0x21 to
 * 0x7e (memo_read's test) leaves each of them where it was, and a slice
 * of the key, Host or Idempotency-Key where it was, with the new bytes.
 * Content-Length's digits may differ too: memo_read reads them again
 * (length_again), as a client posting bodies of one number of digits
 * sends them. Run once for a head, at its first read as a near one: the
 * head is one the scan read whole, so each header line has a colon and
 * ends at a CR. */
static __attribute__((noinline, cold)) void vary_of(struct memo *m)
{
    const char *h = m->head;
    size_t n = m->len;
    memset(m->vary, 0, sizeof m->vary);
    m->near = NEAR_NONE;
    m->cl_len = 0;
    const char *nl = memchr(h, '\n', n);
    if (!nl) return;
    for (size_t s = (size_t)(nl - h) + 1; s + 2 < n;) {
        const char *cr = memchr(h + s, '\r', n - s);
        const char *colon = cr ? memchr(h + s, ':', (size_t)(cr - h) - s) : NULL;
        if (!colon) return;
        size_t r = (size_t)(cr - h), c = (size_t)(colon - h) - s;
        if (c == 14 && strncasecmp(h + s, "content-length", 14) == 0) {
            size_t v = s + c + 1;
            while (h[v] == ' ')
                v++;
            m->cl_at = (uint16_t)v; /* digits to the CR (the scan read them so) */
            m->cl_len = (uint8_t)(r - v);
        }
        if (!(c == 10 && strncasecmp(h + s, "connection", 10) == 0))
            for (size_t at = s + c + 1; at < r;) { /* bits [at, r), a word at a time */
                size_t w = at / 64, end = r - w * 64 < 64 ? r - w * 64 : 64;
                m->vary[w] |= (end == 64 ? ~0ull : (1ull << end) - 1) & ~0ull << (at % 64);
                at = w * 64 + end;
            }
        s = r + 2;
    }
    for (size_t at = 0; at < n; at += 16) /* then not its spaces (n <= SL_H1FAST_MEMO) */
        m->vary[at / 64] &= ~((uint64_t)spaces16(h + at) << (at % 64));
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

/* Content-Length's new digits (len of them at p) into f, as the scan
 * reads them; false: the scan would decline (not digits, or a body after
 * a GET or HEAD). */
static bool length_again(struct sl_h1fast *f, const char *p, size_t len)
{
    uint64_t cl = 0;
    for (size_t i = 0; i < len; i++) {
        if (p[i] < '0' || p[i] > '9') return false;
        cl = cl * 10 + (uint64_t)(p[i] - '0');
    }
    /* GET and HEAD: the only methods of the scan's that begin so */
    if (cl && (f->method[0] == 'G' || f->method[0] == 'H')) return false;
    f->content_length = cl;
    return true;
}

/* memo_match, once per instruction set (h1fast_match.h). */
typedef const struct sl_h1fast *match_fn(const char *buf);

#define MATCH_ATTR
#define MATCH        match_16
#define NEAR         near_16
#define DIFF32(a, b) (differ16(a, b) | differ16((a) + 16, (b) + 16) << 16)
#define ODD32(a)     (odd16(a) | odd16((a) + 16) << 16)
#include "h1fast_match.h"
#undef MATCH_ATTR
#undef MATCH
#undef NEAR
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

#define MATCH_ATTR   H1_AVX2
#define MATCH        match_avx2
#define NEAR         near_avx2
#define DIFF32(a, b) differ32(a, b)
#define ODD32(a)     odd32(a)
#include "h1fast_match.h"
#undef MATCH_ATTR
#undef MATCH
#undef NEAR
#undef DIFF32
#undef ODD32
#endif

/* The memory's compare: AVX2's where the scan is (h1fast_avx2.c). */
static match_fn *_Atomic matcher = match_16;

static void match_with(scan_fn *f)
{
#if defined(SL_H1FAST_X86)
    atomic_store_explicit(&matcher, f == sl_h1fast_scan_avx2 ? match_avx2 : match_16,
                          memory_order_relaxed);
#else
    (void)f;
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
    return f ? f : read_new(buf, len, k);
}

uint64_t sl_h1fast_near_reads(void)
{
    return near_reads;
}

uint64_t sl_h1fast_kept(void)
{
    return kept;
}

void sl_h1fast_forget(void)
{
    memo.len = 0;
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
    if (!memo_may_start(&memo, buf, len, k)) return read_new(buf, len, k);
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
