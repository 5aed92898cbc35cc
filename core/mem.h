/* SPDX-License-Identifier: BSD-2-Clause */
/* mem.h - the shim's own memory.
 *
 * Everything sluice allocates comes from its own small heap (core/mem.c),
 * so the host program's allocator is never replaced, never sees our objects,
 * and no allocator library is loaded into the host (see README, "Memory").
 * Tests can make the next allocations fail.
 */
#ifndef SL_MEM_H
#define SL_MEM_H

#include <stddef.h>

void *sl_alloc(size_t n); /* zeroed; NULL on failure */
void sl_free(void *p);
char *sl_strdup(const char *s);
void *sl_realloc(void *p, size_t n); /* as realloc; the grown part is not zeroed */

/* Bytes usable at p (its size class); 0 in sanitizer builds, which use libc. */
size_t sl_mem_usable(const void *p);

/* Test hook: the next `n` allocations succeed, then all fail; -1 disables. */
void sl_mem_fail_after(long n);

#endif
