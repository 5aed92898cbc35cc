/* SPDX-License-Identifier: BSD-2-Clause */
/* close.c - keeps fd.c's table true: close forgets a descriptor (and gives
 * back its concurrency places at the process's last copy), the dup family
 * copies an entry. Untracked descriptors cost one load. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/close_range.h>
#include <stdarg.h>
#include <sys/socket.h>
#include <unistd.h>

#include "close.h"
#include "fd.h"
#include "pending.h"
#include "ready.h"
#include "reqin.h"
#include "reqout.h"
#include "shim.h"

void sl_fd_drop(int fd)
{
    struct sl_fd *e = sl_fd_get(fd);
    if (!e) return;
    sl_pending_drop(e);
    sl_reqin_free(e);
    sl_reqout_free(e);
    sl_fd_forget(fd);
}

static void forget(int fd)
{
    if (!atomic_load_explicit(&sl_runtime_ptr, memory_order_relaxed)) return;
    sl_listen_forget(fd);
    sl_ready_forget(fd); /* epoll fds and registrations too: one load when there are none */
    sl_fd_drop(fd);
}

static __attribute__((noinline)) int close_slow(int fd)
{
    struct sl_fd *e = sl_fd_get(fd);
    /* a 429 to write first, at the connection's last descriptor */
    bool linger = e && sl_gate_in(e) && !sl_gate_shared(e) && sl_reqin_close(fd, e);
    forget(fd); /* before the descriptor can be closed by linger.c and reused */
    if (!linger) return REAL(close)(fd);
    sl_linger_add(fd);
    return 0;
}

/* A descriptor sluice never knew (not tracked, not a listener it saw, in
 * no shadowed epoll set) is closed at the cost of a few loads, no lock and
 * no stack frame: nginx closes its file after every request. */
SL_EXPORT int close(int fd)
{
    if (__builtin_expect((unsigned)fd < SL_FD_MAX && !sl_fd_get(fd) &&
                             !atomic_load_explicit(&sl_ready_maybe[fd], memory_order_relaxed) &&
                             !atomic_load_explicit(&sl_listen_port[fd], memory_order_relaxed) &&
                             sl_real.close != NULL,
                         1))
        return sl_real.close(fd);
    return close_slow(fd);
}

/* A connection whose requests ended in a denial gets its 429 before the
 * program's own end of the conversation (servers often shut down for
 * writing before they close). */
SL_EXPORT int shutdown(int fd, int how)
{
    struct sl_fd *e;
    if (how != SHUT_RD && atomic_load_explicit(&sl_runtime_ptr, memory_order_relaxed) &&
        (e = sl_fd_get(fd)) && sl_gate_in(e))
        sl_reqin_shutdown(fd, e);
    return REAL(shutdown)(fd, how);
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

/* fd2 is a copy of fd: its limits, places and request gate come along. */
static void copied(int fd, int fd2)
{
    sl_fd_dup(fd, fd2);
    if (fd != fd2) sl_gate_share(sl_fd_get(fd), sl_fd_get(fd2));
}

SL_EXPORT int dup(int fd)
{
    int n = REAL(dup)(fd);
    if (n >= 0) copied(fd, n);
    return n;
}

SL_EXPORT int dup2(int fd, int fd2)
{
    int n = REAL(dup2)(fd, fd2);
    if (n >= 0 && fd != fd2) {
        forget(fd2);
        copied(fd, fd2);
    }
    return n;
}

SL_EXPORT int dup3(int fd, int fd2, int flags)
{
    int n = REAL(dup3)(fd, fd2, flags);
    if (n >= 0) {
        forget(fd2);
        copied(fd, fd2);
    }
    return n;
}

/* fcntl's third argument is an int or a pointer depending on cmd; both
 * travel in one register on the ABIs glibc supports, so it is passed on as
 * it came. */
static __attribute__((noinline)) int fcntl_dup(int fd, int cmd, void *arg)
{
    int n = REAL(fcntl)(fd, cmd, arg);
    if (n >= 0 && (cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC)) copied(fd, n);
    return n;
}

SL_EXPORT int fcntl(int fd, int cmd, ...)
{
    va_list ap;
    va_start(ap, cmd);
    void *arg = va_arg(ap, void *);
    va_end(ap);
    /* curl asks F_GETFL and F_SETFL around every transfer: a tail call */
    if (__builtin_expect(cmd != F_DUPFD && cmd != F_DUPFD_CLOEXEC && sl_real.fcntl != NULL, 1))
        return sl_real.fcntl(fd, cmd, arg);
    return fcntl_dup(fd, cmd, arg);
}

SL_EXPORT int fcntl64(int fd, int cmd, ...)
{
    va_list ap;
    va_start(ap, cmd);
    void *arg = va_arg(ap, void *);
    va_end(ap);
    return fcntl(fd, cmd, arg);
}
