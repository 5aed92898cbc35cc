/* mem.c - a private jemalloc arena, without the thread caches, so no
 * per-thread state is left behind in threads the host program owns. */
#include "mem.h"

#include <jemalloc/jemalloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

static unsigned arena;
static int arena_ok;
static pthread_once_t arena_once = PTHREAD_ONCE_INIT;
static _Atomic long fail_after = -1;

static void arena_create(void)
{
    size_t sz = sizeof arena;
    arena_ok = mallctl("arenas.create", &arena, &sz, NULL, 0) == 0;
}

static int flags(void)
{
    return MALLOCX_ARENA(arena) | MALLOCX_TCACHE_NONE;
}

void *sl_alloc(size_t n)
{
    long left = atomic_load_explicit(&fail_after, memory_order_relaxed);
    if (left >= 0) {
        if (left == 0) return NULL;
        atomic_fetch_sub_explicit(&fail_after, 1, memory_order_relaxed);
    }
    pthread_once(&arena_once, arena_create);
    if (!arena_ok || n == 0) return NULL;
    return mallocx(n, flags() | MALLOCX_ZERO);
}

void sl_free(void *p)
{
    if (p) dallocx(p, flags());
}

void *sl_realloc(void *p, size_t n)
{
    if (!p) return sl_alloc(n);
    if (n == 0) {
        sl_free(p);
        return NULL;
    }
    return rallocx(p, n, flags());
}

char *sl_strdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = sl_alloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

void sl_mem_fail_after(long n)
{
    atomic_store(&fail_after, n);
}
