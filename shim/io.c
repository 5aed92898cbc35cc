/* io.c - byte limits on the program's reads and writes of limited sockets.
 *
 * Every hook asks fd.c whether the descriptor carries a byte rule; for any
 * other descriptor (files, pipes, unlimited sockets) the call goes straight
 * to libc after one load. For a limited one, the call is shortened to the
 * budget the key's bucket grants now (partial reads and writes are legal),
 * and what the real call did not use is given back. When the budget is
 * empty:
 *   - a blocking socket waits on this thread for the refill (the program
 *     chose to block), and a blocking send keeps going until everything is
 *     sent, as a blocking send would;
 *   - a non-blocking one gets EAGAIN, and the readiness layer (ready.c)
 *     keeps the descriptor out of poll/select/epoll results until the
 *     refill, then reports it again: the program always hears about it, and
 *     never spins.
 * A blocking read first waits for data to be there (poll on this one
 * descriptor) before it takes budget, so an idle keep-alive connection does
 * not sit on bytes that other connections of the same key could use.
 *
 * errno: a limited call returns what the real call returned, with its
 * errno, or -1/EAGAIN (only on a non-blocking descriptor), which every
 * function here can legitimately return.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/sendfile.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "../core/clock.h"
#include "fd.h"
#include "pending.h"
#include "ready.h"
#include "shim.h"
#include "wait.h"

#define IOV_LOCAL 64

enum kind {
    K_RECV,
    K_RECVFROM,
    K_RECVMSG,
    K_READ,
    K_READV,
    K_SEND,
    K_SENDTO,
    K_SENDMSG,
    K_WRITE,
    K_WRITEV,
    K_SENDFILE,
    K_SPLICE
};

struct call {
    enum kind k;
    int fd;
    void *buf;
    const void *cbuf;
    size_t len;
    int flags;
    struct sockaddr *from;
    socklen_t *fromlen;
    const struct sockaddr *to;
    socklen_t tolen;
    const struct iovec *iov;
    int iovcnt;
    struct msghdr *msg;
    const struct msghdr *cmsg;
    int in_fd;      /* sendfile, splice */
    off_t *off;     /* sendfile */
    loff_t *off_in; /* splice */
    int out_fd;
    loff_t *off_out;
    unsigned int sflags;
};

static size_t iov_total(const struct iovec *iov, int n)
{
    size_t t = 0;
    for (int i = 0; i < n; i++)
        t += iov[i].iov_len;
    return t;
}

/* Copies at most `limit` bytes' worth of iov into out; returns the count. */
static int iov_cut(struct iovec *out, const struct iovec *iov, int n, size_t limit)
{
    int m = 0;
    for (int i = 0; i < n && m < IOV_LOCAL && limit > 0; i++) {
        out[m] = iov[i];
        if (out[m].iov_len > limit) out[m].iov_len = limit;
        limit -= out[m].iov_len;
        m++;
    }
    return m;
}

static ssize_t real_call(struct call *c, size_t limit)
{
    struct iovec cut[IOV_LOCAL];
    bool whole = limit >= c->len;
    switch (c->k) {
    case K_RECV:
        return REAL(recv)(c->fd, c->buf, limit, c->flags);
    case K_RECVFROM:
        return REAL(recvfrom)(c->fd, c->buf, limit, c->flags, c->from, c->fromlen);
    case K_READ:
        return REAL(read)(c->fd, c->buf, limit);
    case K_SEND:
        return REAL(send)(c->fd, c->cbuf, limit, c->flags);
    case K_SENDTO:
        return REAL(sendto)(c->fd, c->cbuf, limit, c->flags, c->to, c->tolen);
    case K_WRITE:
        return REAL(write)(c->fd, c->cbuf, limit);
    case K_SENDFILE:
        return REAL(sendfile)(c->out_fd, c->in_fd, c->off, limit);
    case K_SPLICE:
        return REAL(splice)(c->in_fd, c->off_in, c->out_fd, c->off_out, limit, c->sflags);
    case K_READV:
        if (whole) return REAL(readv)(c->fd, c->iov, c->iovcnt);
        return REAL(readv)(c->fd, cut, iov_cut(cut, c->iov, c->iovcnt, limit));
    case K_WRITEV:
        if (whole) return REAL(writev)(c->fd, c->iov, c->iovcnt);
        return REAL(writev)(c->fd, cut, iov_cut(cut, c->iov, c->iovcnt, limit));
    case K_RECVMSG: {
        if (whole) return REAL(recvmsg)(c->fd, c->msg, c->flags);
        struct iovec *orig = c->msg->msg_iov;
        size_t origlen = c->msg->msg_iovlen;
        c->msg->msg_iov = cut;
        c->msg->msg_iovlen = (size_t)iov_cut(cut, orig, (int)origlen, limit);
        ssize_t n = REAL(recvmsg)(c->fd, c->msg, c->flags);
        int saved = errno;
        c->msg->msg_iov = orig;
        c->msg->msg_iovlen = origlen;
        errno = saved;
        return n;
    }
    case K_SENDMSG: {
        if (whole) return REAL(sendmsg)(c->fd, c->cmsg, c->flags);
        struct msghdr m = *c->cmsg;
        m.msg_iov = cut;
        m.msg_iovlen = (size_t)iov_cut(cut, c->cmsg->msg_iov, (int)c->cmsg->msg_iovlen, limit);
        return REAL(sendmsg)(c->fd, &m, c->flags);
    }
    }
    errno = ENOSYS;
    return -1;
}

static bool nonblocking(const struct call *c)
{
    if ((c->k == K_RECV || c->k == K_RECVFROM || c->k == K_RECVMSG || c->k == K_SEND ||
         c->k == K_SENDTO || c->k == K_SENDMSG) &&
        (c->flags & MSG_DONTWAIT))
        return true;
    if (c->k == K_SPLICE && (c->sflags & SPLICE_F_NONBLOCK)) return true;
    return sl_fd_nonblocking(c->fd);
}

static void sleep_until(uint64_t t)
{
    while (sl_wait_until(t, 0) != 0) {
    }
}

/* Waits until the descriptor has data (blocking reads; see the file comment). */
static void wait_readable(int fd)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    while (syscall(SYS_ppoll, &p, 1, NULL, NULL, 0) < 0 && errno == EINTR) {
    }
}

/* Takes budget for up to `want` bytes: > 0 granted; 0 means EAGAIN was
 * decided (non-blocking, errno set). */
static uint64_t budget(struct sl_runtime *rt, struct sl_fd *e, const struct call *c, enum sl_io io,
                       size_t want, int *nb)
{
    for (;;) {
        uint64_t now = sl_clock_now(), wait;
        uint64_t g = sl_bytes_take(rt, e->bytes_rule[io], &e->bytes_key[io], io, now, want, &wait);
        if (g) {
            atomic_store_explicit(&e->ready_at[io], 0, memory_order_relaxed);
            return g;
        }
        if (*nb < 0) *nb = nonblocking(c);
        if (*nb) {
            atomic_store(&e->ready_at[io], now + wait);
            sl_ready_throttle(c->fd, io, now + wait);
            errno = EAGAIN;
            return 0;
        }
        sleep_until(now + wait);
    }
}

static ssize_t limited(struct sl_runtime *rt, struct sl_fd *e, struct call *c, enum sl_io io)
{
    int saved = errno, nb = -1;
    size_t done = 0;
    int rule = e->bytes_rule[io];
    if (io == SL_IO_RECV && (nb = nonblocking(c)) == 0) wait_readable(c->fd);
    for (;;) {
        uint64_t g = budget(rt, e, c, io, c->len - done, &nb);
        if (g == 0) return done ? (errno = saved, (ssize_t)done) : -1;
        ssize_t n = real_call(c, g);
        int err = errno;
        uint64_t used = n > 0 ? (uint64_t)n : 0;
        if (io == SL_IO_RECV && c->k != K_READ && c->k != K_READV && (c->flags & MSG_PEEK))
            used = 0;
        sl_bytes_refund(rt, rule, &e->bytes_key[io], io, sl_clock_now(), g - used);
        if (n < 0) {
            if (done) return errno = saved, (ssize_t)done;
            errno = err;
            return n;
        }
        done += (size_t)n;
        /* A blocking send goes on until all is sent; everything else returns
         * what it got. */
        if (io == SL_IO_RECV || n == 0 || (uint64_t)n < g || done >= c->len) break;
        if (nb < 0) nb = nonblocking(c);
        if (nb) break;
        c->buf = (char *)c->buf + n;
        c->cbuf = (const char *)c->cbuf + n;
        if (c->k != K_SEND && c->k != K_SENDTO && c->k != K_WRITE) break;
    }
    errno = saved;
    return (ssize_t)done;
}

static ssize_t run(struct call *c, enum sl_io io, int fd)
{
    struct sl_runtime *rt = sl_runtime();
    struct sl_fd *e;
    if (!rt || !(rt->any_bytes || rt->any_out) || !(e = sl_fd_get(fd))) return real_call(c, c->len);
    if (sl_pending_held(e) && sl_pending_io(c->fd, e) < 0) return -1;
    if (e->bytes_rule[io] < 0 || c->len == 0) return real_call(c, c->len);
    return limited(rt, e, c, io);
}

SL_EXPORT ssize_t recv(int fd, void *buf, size_t len, int flags)
{
    struct call c = {.k = K_RECV, .fd = fd, .buf = buf, .len = len, .flags = flags};
    return run(&c, SL_IO_RECV, fd);
}

SL_EXPORT ssize_t recvfrom(int fd, void *buf, size_t len, int flags, struct sockaddr *from,
                           socklen_t *fromlen)
{
    struct call c = {.k = K_RECVFROM,
                     .fd = fd,
                     .buf = buf,
                     .len = len,
                     .flags = flags,
                     .from = from,
                     .fromlen = fromlen};
    return run(&c, SL_IO_RECV, fd);
}

SL_EXPORT ssize_t recvmsg(int fd, struct msghdr *msg, int flags)
{
    struct call c = {.k = K_RECVMSG,
                     .fd = fd,
                     .msg = msg,
                     .flags = flags,
                     .len = msg ? iov_total(msg->msg_iov, (int)msg->msg_iovlen) : 0};
    return run(&c, SL_IO_RECV, fd);
}

SL_EXPORT ssize_t read(int fd, void *buf, size_t len)
{
    struct call c = {.k = K_READ, .fd = fd, .buf = buf, .len = len};
    return run(&c, SL_IO_RECV, fd);
}

SL_EXPORT ssize_t readv(int fd, const struct iovec *iov, int iovcnt)
{
    struct call c = {.k = K_READV,
                     .fd = fd,
                     .iov = iov,
                     .iovcnt = iovcnt,
                     .len = iovcnt > 0 ? iov_total(iov, iovcnt) : 0};
    return run(&c, SL_IO_RECV, fd);
}

SL_EXPORT ssize_t send(int fd, const void *buf, size_t len, int flags)
{
    struct call c = {.k = K_SEND, .fd = fd, .cbuf = buf, .len = len, .flags = flags};
    return run(&c, SL_IO_SEND, fd);
}

SL_EXPORT ssize_t sendto(int fd, const void *buf, size_t len, int flags, const struct sockaddr *to,
                         socklen_t tolen)
{
    struct call c = {
        .k = K_SENDTO, .fd = fd, .cbuf = buf, .len = len, .flags = flags, .to = to, .tolen = tolen};
    return run(&c, SL_IO_SEND, fd);
}

SL_EXPORT ssize_t sendmsg(int fd, const struct msghdr *msg, int flags)
{
    struct call c = {.k = K_SENDMSG,
                     .fd = fd,
                     .cmsg = msg,
                     .flags = flags,
                     .len = msg ? iov_total(msg->msg_iov, (int)msg->msg_iovlen) : 0};
    return run(&c, SL_IO_SEND, fd);
}

SL_EXPORT ssize_t write(int fd, const void *buf, size_t len)
{
    struct call c = {.k = K_WRITE, .fd = fd, .cbuf = buf, .len = len};
    return run(&c, SL_IO_SEND, fd);
}

SL_EXPORT ssize_t writev(int fd, const struct iovec *iov, int iovcnt)
{
    struct call c = {.k = K_WRITEV,
                     .fd = fd,
                     .iov = iov,
                     .iovcnt = iovcnt,
                     .len = iovcnt > 0 ? iov_total(iov, iovcnt) : 0};
    return run(&c, SL_IO_SEND, fd);
}

SL_EXPORT ssize_t sendfile(int out_fd, int in_fd, off_t *offset, size_t count)
{
    struct call c = {.k = K_SENDFILE,
                     .fd = out_fd,
                     .out_fd = out_fd,
                     .in_fd = in_fd,
                     .off = offset,
                     .len = count};
    return run(&c, SL_IO_SEND, out_fd);
}

/* On 64-bit glibc sendfile64 is the same function under another name;
 * Debian's nginx imports it. */
SL_EXPORT ssize_t sendfile64(int out_fd, int in_fd, off_t *offset, size_t count)
{
    return sendfile(out_fd, in_fd, offset, count);
}

SL_EXPORT ssize_t splice(int fd_in, loff_t *off_in, int fd_out, loff_t *off_out, size_t len,
                         unsigned int flags)
{
    struct call c = {.k = K_SPLICE,
                     .in_fd = fd_in,
                     .off_in = off_in,
                     .out_fd = fd_out,
                     .off_out = off_out,
                     .len = len,
                     .sflags = flags};
    struct sl_runtime *rt = sl_runtime();
    if (rt && rt->any_bytes) {
        struct sl_fd *e = sl_fd_get(fd_out);
        if (e && e->bytes_rule[SL_IO_SEND] >= 0) {
            c.fd = fd_out;
            return run(&c, SL_IO_SEND, fd_out);
        }
        e = sl_fd_get(fd_in);
        if (e && e->bytes_rule[SL_IO_RECV] >= 0) {
            c.fd = fd_in;
            return run(&c, SL_IO_RECV, fd_in);
        }
    }
    return real_call(&c, len);
}
