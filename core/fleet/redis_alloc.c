/* SPDX-License-Identifier: BSD-2-Clause */
/* redis_alloc.c - hiredis's memory, from sluice's private arena.
 *
 * hiredis 0.14 (Debian 12) calls malloc, calloc, realloc, free and strdup
 * directly and has no allocator hooks (hiredisSetAllocators came in 1.0).
 * The build links a copy of its static archive whose references to those
 * names are renamed to the functions below (objcopy --redefine-sym, see
 * the Makefile), so hiredis never touches the program's heap and the
 * program's allocator is the same with or without a redis rule.
 *
 * A reply says how large it is before it arrives ("*333333331" makes
 * hiredis allocate an array of that many pointers at once), so one
 * allocation is capped at HI_MAX: sluice's replies are a few words, and a
 * larger one from a broken or hostile server fails as out of memory (a
 * backend error) instead of taking gigabytes of the program's memory.
 */
#include <string.h>

#include "../mem.h"

#define HI_MAX (4u << 20)

void *sl_hi_malloc(size_t n);
void *sl_hi_calloc(size_t n, size_t size);
void *sl_hi_realloc(void *p, size_t n);
void sl_hi_free(void *p);
char *sl_hi_strdup(const char *s);

void *sl_hi_malloc(size_t n)
{
    return n > HI_MAX ? NULL : sl_alloc(n ? n : 1);
}

void *sl_hi_calloc(size_t n, size_t size)
{
    if (size && n > (size_t)-1 / size) return NULL;
    size_t total = n * size;
    return total > HI_MAX ? NULL : sl_alloc(total ? total : 1);
}

void *sl_hi_realloc(void *p, size_t n)
{
    return n > HI_MAX ? NULL : sl_realloc(p, n ? n : 1);
}

void sl_hi_free(void *p)
{
    sl_free(p);
}

char *sl_hi_strdup(const char *s)
{
    return sl_strdup(s);
}
