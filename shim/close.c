/* close.c - keeps fd.c's table true: close forgets a descriptor (and gives
 * back its concurrency places at the process's last copy), the dup family
 * copies an entry. Untracked descriptors cost one load. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/close_range.h>
#include <stdarg.h>
#include <unistd.h>

#include "fd.h"
#include "ready.h"
#include "shim.h"

static void forget(int fd)
{
    if (!atomic_load_explicit(&sl_runtime_ptr, memory_order_relaxed)) return;
    sl_listen_forget(fd);
    sl_ready_forget(fd); /* epoll fds and registrations too: one load when there are none */
    if (sl_fd_get(fd)) sl_fd_forget(fd);
}

SL_EXPORT int close(int fd)
{
    forget(fd);
    return REAL(close)(fd);
}

/* Programs about to exec close everything with one call: forget what it
 * closes too (a plain loop: close_range is rare). */
SL_EXPORT int close_range(unsigned int first, unsigned int last, int flags)
{
    int rc = REAL(close_range)(first, last, flags);
    if (rc == 0 && !(flags & CLOSE_RANGE_CLOEXEC)) {
        int saved = errno;
        for (unsigned int fd = first; fd <= last && fd < SL_FD_MAX; fd++)
            forget((int)fd);
        errno = saved;
    }
    return rc;
}

SL_EXPORT int dup(int fd)
{
    int n = REAL(dup)(fd);
    if (n >= 0) sl_fd_dup(fd, n);
    return n;
}

SL_EXPORT int dup2(int fd, int fd2)
{
    int n = REAL(dup2)(fd, fd2);
    if (n >= 0 && fd != fd2) {
        forget(fd2);
        sl_fd_dup(fd, fd2);
    }
    return n;
}

SL_EXPORT int dup3(int fd, int fd2, int flags)
{
    int n = REAL(dup3)(fd, fd2, flags);
    if (n >= 0) {
        forget(fd2);
        sl_fd_dup(fd, fd2);
    }
    return n;
}

/* fcntl's third argument is an int or a pointer depending on cmd; both
 * travel in one register on the ABIs glibc supports, so it is passed on as
 * it came. */
SL_EXPORT int fcntl(int fd, int cmd, ...)
{
    va_list ap;
    va_start(ap, cmd);
    void *arg = va_arg(ap, void *);
    va_end(ap);
    int n = REAL(fcntl)(fd, cmd, arg);
    if (n >= 0 && (cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC)) sl_fd_dup(fd, n);
    return n;
}

SL_EXPORT int fcntl64(int fd, int cmd, ...)
{
    va_list ap;
    va_start(ap, cmd);
    void *arg = va_arg(ap, void *);
    va_end(ap);
    return fcntl(fd, cmd, arg);
}
