/* shm.h - shared memory objects by name (/dev/shm), for the tables that
 * separately started programs share. */
#ifndef SL_SHM_H
#define SL_SHM_H

#include <stdbool.h>
#include <stddef.h>

/* Sizes the object (when this process `created` it) and maps it shared;
 * closes fd either way. Returns NULL with a message in err on failure, and
 * then unlinks an object this process created. */
void *sl_shm_map(int fd, const char *name, size_t bytes, bool created, char *err, size_t errlen);

#endif
