/* SPDX-License-Identifier: BSD-2-Clause */
/* sys.h - core's one door to the kernel.
 *
 * Inside libsluice.so a plain call to close(), read(), sendto(), ...
 * binds to the library's own interposed definition (shim/), not to libc:
 * core would run the shim's hooks on its own descriptors, and take their
 * locks on the decision path (the conns sweep closing /proc files through
 * shim/close.c took the epoll mutex). So core never names a libc function
 * that does descriptor I/O: it calls these, which go to the kernel through
 * a system call of their own (sl_syscall: not libc's syscall(), which the
 * shim interposes). They behave as the libc call of the same name: -1 with errno
 * set on failure, no retry on EINTR. Calls no shim interposes (mmap,
 * munmap, getpid, kill, nanosleep, clock_gettime) stay libc's.
 *
 * tests/check-boundary.sh fails the build when an object of core/ or conf/
 * refers to a name shim/exports.map exports.
 */
#ifndef SL_SYS_H
#define SL_SYS_H

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

/* The kernel's system call itself, not libc's syscall(): the shim
 * interposes syscall() too (shim/raw.c: a program's raw close or connect
 * goes through sluice's hooks), and a core call must reach the kernel.
 * -1 with errno on failure, as syscall(). */
static inline long sl_raw_syscall6(long n, long a1, long a2, long a3, long a4, long a5, long a6)
{
    long ret;
#if defined(__x86_64__)
    register long r10 __asm__("r10") = a4;
    register long r8 __asm__("r8") = a5;
    register long r9 __asm__("r9") = a6;
    __asm__ volatile("syscall"
                     : "=a"(ret)
                     : "a"(n), "D"(a1), "S"(a2), "d"(a3), "r"(r10), "r"(r8), "r"(r9)
                     : "rcx", "r11", "memory");
#elif defined(__aarch64__)
    register long x8 __asm__("x8") = n;
    register long x0 __asm__("x0") = a1;
    register long x1 __asm__("x1") = a2;
    register long x2 __asm__("x2") = a3;
    register long x3 __asm__("x3") = a4;
    register long x4 __asm__("x4") = a5;
    register long x5 __asm__("x5") = a6;
    __asm__ volatile("svc 0"
                     : "+r"(x0)
                     : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4), "r"(x5)
                     : "memory", "cc");
    ret = x0;
#else
#error "sl_raw_syscall6: no raw system call for this architecture"
#endif
    if (ret < 0 && ret > -4096) {
        errno = (int)-ret;
        return -1;
    }
    return ret;
}

/* sl_syscall(SYS_x, args...): up to six arguments, each as a long. */
#define sl_syscall(...) SL_SYSCALL7(__VA_ARGS__, 0, 0, 0, 0, 0, 0, 0)
#define SL_SYSCALL7(n, a, b, c, d, e, f, ...)                                                      \
    sl_raw_syscall6((long)(n), (long)(a), (long)(b), (long)(c), (long)(d), (long)(e), (long)(f))

static inline int sl_sys_open(const char *path, int flags, mode_t mode)
{
    return (int)sl_syscall(SYS_openat, AT_FDCWD, path, flags, mode);
}

static inline int sl_sys_close(int fd)
{
    return (int)sl_syscall(SYS_close, fd);
}

static inline ssize_t sl_sys_read(int fd, void *buf, size_t n)
{
    return sl_syscall(SYS_read, fd, buf, n);
}

static inline ssize_t sl_sys_pread(int fd, void *buf, size_t n, off_t at)
{
    return sl_syscall(SYS_pread64, fd, buf, n, at);
}

static inline ssize_t sl_sys_write(int fd, const void *buf, size_t n)
{
    return sl_syscall(SYS_write, fd, buf, n);
}

static inline int sl_sys_fstat(int fd, struct stat *st)
{
    return (int)sl_syscall(SYS_fstat, fd, st);
}

/* Without CLOEXEC, children started with exec open it. */
static inline int sl_sys_memfd(const char *name, bool cloexec)
{
    return (int)sl_syscall(SYS_memfd_create, name, cloexec ? 1u /* MFD_CLOEXEC */ : 0u);
}

static inline int sl_sys_dupfd(int fd, int lowest, bool cloexec)
{
    return (int)sl_syscall(SYS_fcntl, fd, cloexec ? F_DUPFD_CLOEXEC : F_DUPFD, lowest);
}

static inline int sl_sys_fchmod(int fd, mode_t mode)
{
    return (int)sl_syscall(SYS_fchmod, fd, mode);
}

/* A new open of the file fd names, with these flags, through /proc: the
 * kernel checks the file's owner and mode as for a path, so only its
 * owner (or root) gets write access to a 0600 file this way, whatever
 * fd's own mode. */
static inline int sl_sys_reopen(int fd, int flags)
{
    char path[40];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    return sl_sys_open(path, flags, 0);
}

static inline int sl_sys_stat(const char *path, struct stat *st)
{
    return (int)sl_syscall(SYS_newfstatat, AT_FDCWD, path, st, 0);
}

static inline ssize_t sl_sys_readlink(const char *path, char *buf, size_t len)
{
    return sl_syscall(SYS_readlinkat, AT_FDCWD, path, buf, len);
}

static inline int sl_sys_ftruncate(int fd, off_t len)
{
    return (int)sl_syscall(SYS_ftruncate, fd, len);
}

/* POSIX shared memory is a file in /dev/shm, as glibc's shm_open has it:
 * `name` is "/NAME" with no other '/' (EINVAL otherwise, as glibc's).
 * O_NOFOLLOW: a symbolic link planted there by another user is refused. */
static inline int sl_sys_shm_path(char *path, size_t len, const char *name)
{
    if (name[0] != '/' || !name[1] || strchr(name + 1, '/') ||
        (size_t)snprintf(path, len, "/dev/shm%s", name) >= len) {
        errno = EINVAL;
        return -1;
    }
    return 0;
}

static inline int sl_sys_shm_open(const char *name, int flags, mode_t mode)
{
    char path[256];
    if (sl_sys_shm_path(path, sizeof path, name) != 0) return -1;
    return sl_sys_open(path, flags | O_NOFOLLOW | O_CLOEXEC, mode);
}

static inline int sl_sys_shm_unlink(const char *name)
{
    char path[256];
    if (sl_sys_shm_path(path, sizeof path, name) != 0) return -1;
    return (int)sl_syscall(SYS_unlinkat, AT_FDCWD, path, 0);
}

static inline int sl_sys_link(const char *from, const char *to)
{
    return (int)sl_syscall(SYS_linkat, AT_FDCWD, from, AT_FDCWD, to, 0);
}

static inline int sl_sys_socket(int domain, int type, int proto)
{
    return (int)sl_syscall(SYS_socket, domain, type, proto);
}

static inline int sl_sys_bind(int fd, const struct sockaddr *sa, socklen_t len)
{
    return (int)sl_syscall(SYS_bind, fd, sa, len);
}

static inline ssize_t sl_sys_sendto(int fd, const void *buf, size_t n, int flags,
                                    const struct sockaddr *sa, socklen_t len)
{
    return sl_syscall(SYS_sendto, fd, buf, n, flags, sa, len);
}

static inline ssize_t sl_sys_recvfrom(int fd, void *buf, size_t n, int flags)
{
    return sl_syscall(SYS_recvfrom, fd, buf, n, flags, NULL, NULL);
}

static inline int sl_sys_connect(int fd, const struct sockaddr *sa, socklen_t len)
{
    return (int)sl_syscall(SYS_connect, fd, sa, len);
}

static inline int sl_sys_getsockopt(int fd, int level, int name, void *val, socklen_t *len)
{
    return (int)sl_syscall(SYS_getsockopt, fd, level, name, val, len);
}

/* The kernel's sigset is 8 bytes, not sizeof(sigset_t). */
static inline int sl_sys_ppoll(struct pollfd *fds, nfds_t n, const struct timespec *ts)
{
    return (int)sl_syscall(SYS_ppoll, fds, n, ts, NULL, 8);
}

#endif
