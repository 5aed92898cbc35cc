/* SPDX-License-Identifier: BSD-2-Clause */
/* raw.c - system calls a program makes through libc's syscall().
 *
 * Some programs make a call by its number rather than through its libc
 * function: libuv (uvloop, node) closes descriptors with
 * syscall(SYS_close) to avoid close()'s cancellation point. Unseen, such
 * a close skips the 429 an inbound `reply` denial owes the client and the
 * places a connection holds; a raw connect is never decided. So the calls
 * sluice has hooks for go through those hooks, which end in the same
 * kernel call; every other number goes straight to libc's syscall() with
 * its arguments as given. A program that makes the system call
 * instruction itself (Go, a static binary) is not seen: `sluice run`, the
 * library's start (unseen.c) and the README's coverage table say so.
 */
#include <stdarg.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "shim.h"

SL_EXPORT long syscall(long n, ...)
{
    va_list ap;
    va_start(ap, n);
    long a = va_arg(ap, long), b = va_arg(ap, long), c = va_arg(ap, long);
    long d = va_arg(ap, long), e = va_arg(ap, long), f = va_arg(ap, long);
    va_end(ap);
    switch (n) {
    case SYS_close:
        return close((int)a);
    case SYS_shutdown:
        return shutdown((int)a, (int)b);
    case SYS_connect:
        return connect((int)a, (const struct sockaddr *)b, (socklen_t)c);
    case SYS_accept:
        return accept((int)a, (struct sockaddr *)b, (socklen_t *)c);
    case SYS_accept4:
        return accept4((int)a, (struct sockaddr *)b, (socklen_t *)c, (int)d);
    case SYS_read:
        return read((int)a, (void *)b, (size_t)c);
    case SYS_write:
        return write((int)a, (const void *)b, (size_t)c);
    case SYS_readv:
        return readv((int)a, (const struct iovec *)b, (int)c);
    case SYS_writev:
        return writev((int)a, (const struct iovec *)b, (int)c);
    case SYS_recvfrom:
        return recvfrom((int)a, (void *)b, (size_t)c, (int)d, (struct sockaddr *)e, (socklen_t *)f);
    case SYS_sendto:
        return sendto((int)a, (const void *)b, (size_t)c, (int)d, (const struct sockaddr *)e,
                      (socklen_t)f);
    case SYS_recvmsg:
        return recvmsg((int)a, (struct msghdr *)b, (int)c);
    case SYS_sendmsg:
        return sendmsg((int)a, (const struct msghdr *)b, (int)c);
    case SYS_dup:
        return dup((int)a);
    case SYS_dup3:
        return dup3((int)a, (int)b, (int)c);
    case SYS_epoll_ctl:
        return epoll_ctl((int)a, (int)b, (int)c, (struct epoll_event *)d);
    default:
        return REAL(syscall)(n, a, b, c, d, e, f);
    }
}
