#include "shm.h"

#include "sys.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

void *sl_shm_map(int fd, const char *name, size_t bytes, bool created, char *err, size_t errlen)
{
    if (created && sl_sys_ftruncate(fd, (off_t)bytes) != 0) {
        snprintf(err, errlen, "ftruncate %s: %s", name, strerror(errno));
        sl_sys_close(fd);
        sl_sys_shm_unlink(name);
        return NULL;
    }
    void *map = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    int saved = errno;
    sl_sys_close(fd);
    if (map == MAP_FAILED) {
        snprintf(err, errlen, "mmap %zu bytes: %s", bytes, strerror(saved));
        if (created) sl_sys_shm_unlink(name);
        return NULL;
    }
    return map;
}
