/* SPDX-License-Identifier: BSD-2-Clause */
/* mem.c - sluice's own heap: size classes carved from anonymous mappings.
 *
 * A library loaded into other people's programs must not bring an
 * allocator with it: a dynamic one (Debian's libjemalloc.so.2) exports C++
 * operator new/delete and takes them over from libstdc++, and a static one
 * is easy to mix with the host's free(). So sluice keeps a small heap of its
 * own, reached only through sl_alloc/sl_free/sl_realloc, and depends on no
 * allocator library at all.
 *
 * Blocks up to 64 KiB come from 46 size classes, four per doubling (at most
 * 25% slack); a freed block goes on its class's free list and is reused,
 * never returned to the kernel (sluice's objects are per connection and per
 * rule, so the high-water mark is what the program needs anyway). Larger
 * blocks are mappings of their own. One mutex guards the lists: the shim
 * allocates per connection, not per request, so it is never contended in
 * practice; fork handlers hold it across fork so a child never inherits it
 * locked.
 *
 * Sanitizer builds use libc's calloc/realloc/free instead, so ASan checks
 * sluice's own objects (bounds, use after free, leaks in the unit tests).
 */
#include "mem.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SL_MEM_LIBC 1
#include <stdlib.h>
#endif

static _Atomic long fail_after = -1;

static int may_allocate(void)
{
    long left = atomic_load_explicit(&fail_after, memory_order_relaxed);
    if (left < 0) return 1;
    if (left == 0) return 0;
    atomic_fetch_sub_explicit(&fail_after, 1, memory_order_relaxed);
    return 1;
}

void sl_mem_fail_after(long n)
{
    atomic_store(&fail_after, n);
}

char *sl_strdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = sl_alloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

#ifdef SL_MEM_LIBC

void *sl_alloc(size_t n)
{
    if (!may_allocate() || n == 0) return NULL;
    return calloc(1, n);
}

void sl_free(void *p)
{
    free(p);
}

void *sl_realloc(void *p, size_t n)
{
    if (!p) return sl_alloc(n);
    if (n == 0) {
        free(p);
        return NULL;
    }
    return realloc(p, n);
}

size_t sl_mem_usable(const void *p)
{
    (void)p;
    return 0;
}

#else

enum {
    HDR = 16,              /* keeps every block 16-byte aligned */
    SMALL_MAX = 64 * 1024, /* larger blocks are mappings of their own */
    NCLASS = 46,
    CHUNK = 1024 * 1024, /* small blocks are carved from these */
    LARGE = 0xffff,
};

/* The 16 bytes before each block: its class, or LARGE and the mapping's
 * length. A free block's first word links it into its class's list. */
struct hdr {
    uint32_t cls;
    uint32_t magic;
    size_t len;
};
#define MAGIC 0x736c6d65u /* "slme": catches a pointer that is not ours */

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static void *free_list[NCLASS];
static char *bump, *bump_end;

/* Class of a request of n bytes (1 <= n <= SMALL_MAX): 16, 32, then four
 * classes per power of two (40, 48, 56, 64, 80, ...). */
static unsigned class_of(size_t n)
{
    if (n <= 32) return n <= 16 ? 0 : 1;
    size_t m = n - 1;
    unsigned b = 63 - (unsigned)__builtin_clzl(m); /* b >= 5 */
    unsigned sub = (unsigned)(m >> (b - 2)) & 3;
    return 2 + (b - 5) * 4 + sub;
}

static size_t class_size(unsigned c)
{
    if (c < 2) return 16u << c;
    unsigned b = 5 + (c - 2) / 4, sub = (c - 2) % 4;
    return (size_t)(4 + sub + 1) << (b - 2);
}

static void before_fork(void)
{
    pthread_mutex_lock(&lock);
}

static void after_fork(void)
{
    pthread_mutex_unlock(&lock);
}

static void setup(void)
{
    pthread_atfork(before_fork, after_fork, after_fork);
}

static void *map(size_t len)
{
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

static struct hdr *hdr_of(const void *p)
{
    return (struct hdr *)((char *)p - HDR);
}

/* A fresh block of class c from the current chunk, or a new chunk (the rest
 * of the old one is left unused: at most 64 KiB of 1 MiB). Called locked. */
static struct hdr *carve(unsigned c)
{
    size_t need = HDR + ((class_size(c) + 15) & ~(size_t)15); /* keeps 16-byte alignment */
    if (!bump || (size_t)(bump_end - bump) < need) {
        char *chunk = map(CHUNK);
        if (!chunk) return NULL;
        bump = chunk;
        bump_end = chunk + CHUNK;
    }
    struct hdr *h = (struct hdr *)bump;
    bump += need;
    return h;
}

static void *alloc_large(size_t n)
{
    size_t len = (HDR + n + 4095) & ~(size_t)4095;
    struct hdr *h = map(len); /* zeroed by the kernel */
    if (!h) return NULL;
    h->cls = LARGE;
    h->magic = MAGIC;
    h->len = len;
    return (char *)h + HDR;
}

void *sl_alloc(size_t n)
{
    if (!may_allocate() || n == 0) return NULL;
    if (n > SMALL_MAX) return alloc_large(n);
    pthread_once(&once, setup);
    unsigned c = class_of(n);
    pthread_mutex_lock(&lock);
    void *p = free_list[c];
    if (p) {
        free_list[c] = *(void **)p;
        pthread_mutex_unlock(&lock);
        memset(p, 0, n); /* only what was asked for: the rest is never read */
        return p;
    }
    struct hdr *h = carve(c);
    pthread_mutex_unlock(&lock);
    if (!h) return NULL;
    h->cls = c;
    h->magic = MAGIC;
    return (char *)h + HDR; /* fresh from the kernel: already zero */
}

void sl_free(void *p)
{
    if (!p) return;
    struct hdr *h = hdr_of(p);
    if (h->magic != MAGIC) __builtin_trap(); /* not from sl_alloc: never guess */
    if (h->cls == LARGE) {
        munmap(h, h->len);
        return;
    }
    pthread_mutex_lock(&lock);
    *(void **)p = free_list[h->cls];
    free_list[h->cls] = p;
    pthread_mutex_unlock(&lock);
}

size_t sl_mem_usable(const void *p)
{
    const struct hdr *h = hdr_of(p);
    return h->cls == LARGE ? h->len - HDR : class_size(h->cls);
}

void *sl_realloc(void *p, size_t n)
{
    if (!p) return sl_alloc(n);
    if (n == 0) {
        sl_free(p);
        return NULL;
    }
    size_t have = sl_mem_usable(p);
    if (n <= have && (n > SMALL_MAX || class_of(n) == hdr_of(p)->cls)) return p;
    void *q = sl_alloc(n);
    if (!q) return NULL;
    memcpy(q, p, have < n ? have : n);
    sl_free(p);
    return q;
}

#endif
