/* SPDX-License-Identifier: BSD-2-Clause */
/* h2mem.c - an nghttp2_mem over core/mem.h (see h2mem.h). mem.h has no
 * realloc, so each block carries its size in front. */
#include "h2mem.h"

#include <stdint.h>
#include <string.h>

#include "../mem.h"

#define SIZE_HDR 16 /* keeps max_align_t alignment */

static void *mem_malloc(size_t n, void *unused)
{
    (void)unused;
    if (n > SIZE_MAX - SIZE_HDR) return NULL;
    size_t *p = sl_alloc(n + SIZE_HDR);
    if (!p) return NULL;
    *p = n;
    return (char *)p + SIZE_HDR;
}

static void mem_free(void *ptr, void *unused)
{
    (void)unused;
    if (ptr) sl_free((char *)ptr - SIZE_HDR);
}

static void *mem_calloc(size_t nmemb, size_t size, void *unused)
{
    if (size && nmemb > SIZE_MAX / size) return NULL;
    return mem_malloc(nmemb * size, unused); /* sl_alloc zeroes */
}

static void *mem_realloc(void *ptr, size_t n, void *unused)
{
    void *p = mem_malloc(n, unused);
    if (p && ptr) {
        size_t old = *(size_t *)((char *)ptr - SIZE_HDR);
        memcpy(p, ptr, old < n ? old : n);
    }
    if (p) mem_free(ptr, unused);
    return p;
}

static nghttp2_mem mem = {NULL, mem_malloc, mem_free, mem_calloc, mem_realloc};

nghttp2_mem *sl_h2_mem(void)
{
    return &mem;
}
