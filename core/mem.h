/* mem.h - the shim's own memory.
 *
 * Everything sluice allocates comes from a private jemalloc arena through
 * mallocx/dallocx, so the host program's allocator is never replaced and
 * never sees our objects (see README, "Memory"). Tests can make the next
 * allocations fail.
 */
#ifndef SL_MEM_H
#define SL_MEM_H

#include <stddef.h>

void *sl_alloc(size_t n); /* zeroed; NULL on failure */
void sl_free(void *p);
char *sl_strdup(const char *s);
void *sl_realloc(void *p, size_t n); /* as realloc; the grown part is not zeroed */

/* Test hook: the next `n` allocations succeed, then all fail; -1 disables. */
void sl_mem_fail_after(long n);

#endif
