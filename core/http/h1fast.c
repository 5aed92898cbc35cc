/* SPDX-License-Identifier: BSD-2-Clause */
/* h1fast.c - the one-pass reader of common request heads (see h1fast.h):
 * the key, the thread's memory of the last head, and which scan reads a
 * head that is not in it.
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
 * byte of head (801 a head), SSE2 3.81, plain C 24; before (a line at a
 * time, SSE2, 16 bytes a load, each kept line read by a call from the
 * loop) 3.83. SSE4.2's PCMPISTRI (one instruction for a search of 16
 * bytes, as picohttpparser uses) counted 3.1 but took more cycles.
 */
#include "h1fast.h"

#include <stdatomic.h>
#include <string.h>

#include "h1fast_scan.h"

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
    if (f) atomic_store_explicit(&scanner, f, memory_order_relaxed);
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

/* 8 bytes at p. */
static inline uint64_t load8(const char *p)
{
    uint64_t w;
    memcpy(&w, p, 8);
    return w;
}

/* Whether buf may begin with the head the memory holds, read with a key
 * like k: all but the compare of the bytes, save the 8 before the last
 * CR LF CR LF (heads that vary differ there: the last line's value, a
 * trace id, a key; heads are at least 18 bytes long). No call: a head that
 * misses costs no frame here. */
static inline bool memo_may_hold(const struct memo *m, const char *buf, size_t len,
                                 const struct sl_h1fast_key *k)
{
    return m->len && len >= m->len && m->gen == k->gen && m->cookies == k->cookies &&
           load8(buf + m->len - 12) == load8(m->head + m->len - 12);
}

/* sl_h1fast_read once memo_may_hold: the whole compare. */
static __attribute__((noinline)) const struct sl_h1fast *memo_read(const char *buf, size_t len,
                                                                   const struct sl_h1fast_key *k)
{
    struct memo *m = &memo;
    if (memcmp(buf, m->head, m->len) != 0) return read_new(buf, len, k);
    m->misses = 0;
    return &m->out;
}

const struct sl_h1fast *sl_h1fast_read(const char *buf, size_t len, const struct sl_h1fast_key *k)
{
    if (!memo_may_hold(&memo, buf, len, k)) return read_new(buf, len, k);
    return memo_read(buf, len, k);
}

uint64_t sl_h1fast_serial(const struct sl_h1fast *f)
{
    return f == &memo.out ? memo.serial : 0;
}

const struct sl_h1fast *sl_h1fast_again(const char *buf, size_t len, const struct sl_h1fast_key *k,
                                        uint64_t serial)
{
    struct memo *m = &memo;
    if (m->serial != serial || !memo_may_hold(m, buf, len, k) || memcmp(buf, m->head, m->len) != 0)
        return NULL;
    m->misses = 0;
    return &m->out;
}
