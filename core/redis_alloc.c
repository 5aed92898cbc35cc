/* redis_alloc.c - hiredis's memory, from sluice's private arena.
 *
 * hiredis 0.14 (Debian 12) calls malloc, calloc, realloc, free and strdup
 * directly and has no allocator hooks (hiredisSetAllocators came in 1.0).
 * The build links a copy of its static archive whose references to those
 * names are renamed to the functions below (objcopy --redefine-sym, see
 * the Makefile), so hiredis never touches the program's heap and the
 * program's allocator is the same with or without a redis rule.
 */
#include <string.h>

#include "mem.h"

void *sl_hi_malloc(size_t n);
void *sl_hi_calloc(size_t n, size_t size);
void *sl_hi_realloc(void *p, size_t n);
void sl_hi_free(void *p);
char *sl_hi_strdup(const char *s);

void *sl_hi_malloc(size_t n)
{
    return sl_alloc(n ? n : 1);
}

void *sl_hi_calloc(size_t n, size_t size)
{
    if (size && n > (size_t)-1 / size) return NULL;
    size_t total = n * size;
    return sl_alloc(total ? total : 1);
}

void *sl_hi_realloc(void *p, size_t n)
{
    return sl_realloc(p, n ? n : 1);
}

void sl_hi_free(void *p)
{
    sl_free(p);
}

char *sl_hi_strdup(const char *s)
{
    return sl_strdup(s);
}
