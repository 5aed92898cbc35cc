/* SPDX-License-Identifier: BSD-2-Clause */
/* io.c - byte limits on the program's reads and writes of limited sockets.
 *
 * Every hook asks fd.c whether the descriptor carries a byte rule; for any
 * other descriptor (files, pipes, unlimited sockets) the call goes straight
 * to libc after one load. For a limited one, the call is shortened to the
 * budget the key's bucket grants now (partial reads and writes are legal),
 * and what the real call did not use is given back. When the budget is
 * empty:
 *   - a blocking socket waits on this thread for the refill (the program
 *     chose to block);
 *   - a non-blocking one (or MSG_DONTWAIT, SPLICE_F_NONBLOCK) gets EAGAIN,
 *     and the readiness layer (ready.c) keeps the descriptor out of
 *     poll/select/epoll results until the refill, then reports it again:
 *     the program always hears about it, and never spins.
 * A blocking read first waits for data to be there (poll on this one
 * descriptor) before it takes budget, so an idle keep-alive connection does
 * not sit on bytes that other connections of the same key could use.
 *
 * The contract: a call held here behaves as the kernel's call would if the
 * bytes were simply slower to move (tests/contract checks each case, bare
 * and under the shim):
 *   - timeouts: SO_RCVTIMEO (reads) and SO_SNDTIMEO (writes) end the call,
 *     counted from its start, with -1/EAGAIN when nothing moved;
 *   - signals: one whose handler lacks SA_RESTART ends the call with
 *     -1/EINTR when nothing moved; with SA_RESTART (or ignored, or default
 *     action) the call goes on (wait.h says how it is told apart). Signals
 *     are blocked between the waits of a held call and let in by each
 *     wait, so one that comes just as a wait ends is not missed;
 *   - partial transfers: a call stopped by its timeout or a signal after
 *     moving bytes returns that count, errno untouched, as the kernel does;
 *   - a blocking send, sendto, sendmsg, write, writev, sendfile or splice
 *     goes on until everything is sent; a blocking MSG_WAITALL read until
 *     everything is read (or end of stream, a timeout, a signal); any other
 *     read returns what it got;
 *   - MSG_PEEK moves no bytes: it is not held and takes no budget;
 *   - MSG_DONTWAIT on a blocking socket is held like a non-blocking socket;
 *   - a repeated call starts afresh (its own timeout, its own budget);
 *   - fairness: connections of one key take turns on every call family
 *     (see budget()), so one asking for megabytes at a time (nginx's
 *     sendfile) does not starve another, and one alone gets the whole rate.
 * One known gap: a signal whose handler runs while the real call runs
 * without blocking (microseconds) is not seen; the kernel would have
 * finished that call too, but a later wait of the same call goes on.
 *
 * errno: a limited call returns what the real call returned, with its
 * errno, or -1 with EAGAIN (non-blocking descriptor or timeout) or EINTR
 * (signal), which every function here can legitimately return.
 */
#include <dlfcn.h>
#include <errno.h>
#include <string.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/sendfile.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "../core/clock.h"
#include "../core/http/reply.h"
#include "../core/mem.h"
#include "fd.h"
#include "hold.h"
#include "passed.h"
#include "pending.h"
#include "reqin.h"
#include "reqout.h"
#include "ready.h"
#include "reload.h"
#include "shim.h"
#include "tie.h"
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
    size_t base;       /* the call moves the program's buffers from this offset on (a piece) */
    bool cut;          /* len was cut below what the program's buffers hold (requests) */
    uint64_t start;    /* when the held call began: timeouts count from it */
    uint64_t deadline; /* SO_RCVTIMEO / SO_SNDTIMEO from start; 0: none */
    bool deadline_known;
    bool held;       /* signals are blocked between waits (hold_signals) */
    sigset_t caller; /* the program's signal mask, while held */
};

static size_t iov_total(const struct iovec *iov, int n)
{
    size_t t = 0;
    for (int i = 0; i < n; i++)
        t += iov[i].iov_len;
    return t;
}

/* Copies at most `limit` bytes' worth of iov, after its first `skip`
 * bytes, into out; returns the count. */
static int iov_cut(struct iovec *out, const struct iovec *iov, int n, size_t skip, size_t limit)
{
    int m = 0;
    for (int i = 0; i < n && m < IOV_LOCAL && limit > 0; i++) {
        if (iov[i].iov_len <= skip) {
            skip -= iov[i].iov_len;
            continue;
        }
        out[m].iov_base = (char *)iov[i].iov_base + skip;
        out[m].iov_len = iov[i].iov_len - skip;
        skip = 0;
        if (out[m].iov_len > limit) out[m].iov_len = limit;
        limit -= out[m].iov_len;
        m++;
    }
    return m;
}

/* The real call for up to `limit` bytes, `skip` bytes into the program's
 * buffers (a held call that goes on after a partial transfer; sendfile and
 * splice move their own offsets). */
static ssize_t real_call_at(struct call *c, size_t skip, size_t limit)
{
    struct iovec cut[IOV_LOCAL];
    skip += c->base;
    bool whole = skip == 0 && limit >= c->len && !c->cut;
    char *buf = (char *)c->buf + skip;
    const char *cbuf = (const char *)c->cbuf + skip;
    switch (c->k) {
    case K_RECV:
        return REAL(recv)(c->fd, buf, limit, c->flags);
    case K_RECVFROM:
        return REAL(recvfrom)(c->fd, buf, limit, c->flags, c->from, c->fromlen);
    case K_READ:
        return REAL(read)(c->fd, buf, limit);
    case K_SEND:
        return REAL(send)(c->fd, cbuf, limit, c->flags);
    case K_SENDTO:
        return REAL(sendto)(c->fd, cbuf, limit, c->flags, c->to, c->tolen);
    case K_WRITE:
        return REAL(write)(c->fd, cbuf, limit);
    case K_SENDFILE:
        return REAL(sendfile)(c->out_fd, c->in_fd, c->off, limit);
    case K_SPLICE:
        return REAL(splice)(c->in_fd, c->off_in, c->out_fd, c->off_out, limit, c->sflags);
    case K_READV:
        if (whole) return REAL(readv)(c->fd, c->iov, c->iovcnt);
        return REAL(readv)(c->fd, cut, iov_cut(cut, c->iov, c->iovcnt, skip, limit));
    case K_WRITEV:
        if (whole) return REAL(writev)(c->fd, c->iov, c->iovcnt);
        return REAL(writev)(c->fd, cut, iov_cut(cut, c->iov, c->iovcnt, skip, limit));
    case K_RECVMSG: {
        if (whole) return REAL(recvmsg)(c->fd, c->msg, c->flags);
        struct iovec *orig = c->msg->msg_iov;
        size_t origlen = c->msg->msg_iovlen;
        c->msg->msg_iov = cut;
        c->msg->msg_iovlen = (size_t)iov_cut(cut, orig, (int)origlen, skip, limit);
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
        m.msg_iovlen =
            (size_t)iov_cut(cut, c->cmsg->msg_iov, (int)c->cmsg->msg_iovlen, skip, limit);
        if (skip) { /* ancillary data (SCM_RIGHTS) went with the first byte */
            m.msg_control = NULL;
            m.msg_controllen = 0;
        }
        return REAL(sendmsg)(c->fd, &m, c->flags);
    }
    }
    errno = ENOSYS;
    return -1;
}

static ssize_t real_call(struct call *c, size_t limit)
{
    return real_call_at(c, 0, limit);
}

static bool has_msg_flags(const struct call *c)
{
    return c->k == K_RECV || c->k == K_RECVFROM || c->k == K_RECVMSG || c->k == K_SEND ||
           c->k == K_SENDTO || c->k == K_SENDMSG;
}

static bool nonblocking(const struct call *c)
{
    if (has_msg_flags(c) && (c->flags & MSG_DONTWAIT)) return true;
    if (c->k == K_SPLICE && (c->sflags & SPLICE_F_NONBLOCK)) return true;
    return sl_fd_nonblocking(c->fd);
}

/* A peek moves no bytes: it is not held and takes no budget. */
static bool peeking(const struct call *c)
{
    return has_msg_flags(c) && (c->flags & MSG_PEEK);
}

/* From the first wait of a blocking call on, signals stay blocked except
 * inside the waits (which restore the program's mask atomically) and the
 * real calls: one that comes while the call is between two waits, or just
 * as a wait ends, is then still pending at the next wait and ends the call
 * as the kernel's would, instead of running its handler unnoticed.
 * Synchronous signals are never blocked (a fault must not be held). */
static const sigset_t *hold_signals(struct call *c)
{
    if (!c->held) {
        sigset_t all;
        sigfillset(&all);
        static const int sync_signals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS};
        for (size_t i = 0; i < sizeof sync_signals / sizeof sync_signals[0]; i++)
            sigdelset(&all, sync_signals[i]);
        pthread_sigmask(SIG_BLOCK, &all, &c->caller);
        c->held = true;
    }
    return &c->caller;
}

/* Keeps errno: pthread_sigmask returns its error. */
static void release_signals(struct call *c)
{
    if (c->held) pthread_sigmask(SIG_SETMASK, &c->caller, NULL);
    c->held = false;
}

/* Read once, when the call first has to wait. */
static uint64_t deadline(struct call *c, enum sl_io io)
{
    if (!c->deadline_known) {
        int opt = io == SL_IO_RECV ? SO_RCVTIMEO : SO_SNDTIMEO;
        c->deadline = sl_wait_deadline(c->fd, opt, c->start);
        c->deadline_known = true;
    }
    return c->deadline;
}

/* Takes budget for up to `want` bytes: > 0 granted; 0 with errno EAGAIN
 * (non-blocking, or the socket's timeout came) or EINTR (see wait.h).
 *
 * Turns: connections of one key queue for its budget, a quantum each, in
 * the order they asked (core/limit/turn.h), so one asking for megabytes at a
 * time (nginx's sendfile) does not starve another, and one alone waits no
 * longer than its bytes need. A call takes at most two quanta at once
 * from a bucket that holds more (a large burst), so even then the first
 * to call does not take it all. A call that stops keeps the connection's
 * place (e->turn): the program's next call uses it when it is due, close
 * gives it back (fd.c). */
static uint64_t budget(struct sl_runtime *rt, struct sl_fd *e, struct call *c, enum sl_io io,
                       size_t want, int *nb)
{
    int rule = e->bytes_rule[io];
    uint64_t most = 2 * sl_bytes_quantum(rt, rule, io);
    if (want > most) want = most;
    for (;;) {
        uint64_t now = sl_clock_now(), at = now; /* set by every take that gives 0 */
        uint64_t g = sl_bytes_take(rt, rule, &e->bytes_key[io], io, &e->turn[io], now, want, &at);
        if (g) {
            atomic_store_explicit(&e->ready_at[io], 0, memory_order_relaxed);
            return g;
        }
        if (*nb < 0) *nb = nonblocking(c);
        struct sl_hold h = sl_hold_for(c->fd, e, io, *nb);
        h.nonblock = *nb;
        if (!*nb) { /* the call's own deadline and signal mask (see above) */
            h.deadline = deadline(c, io);
            h.deadline_known = true;
            h.mask = hold_signals(c);
        }
        if (sl_hold_until(&h, now, at) != 0) return 0;
    }
}

/* What a call asks the budget for. A read asks for what the kernel holds,
 * not for the program's whole buffer: a place in the key's queue is held
 * until its turn, and one held for 16 KiB when 1 KiB is there would keep
 * the key's other connections waiting for bytes nobody reads (redis reads
 * 16 KiB at a time for 1 KB requests). With nothing there (a non-blocking
 * read about to fail, or the end of the stream) it asks for one byte, so a
 * read never moves bytes it has no budget for. */
static size_t wanted(const struct call *c, enum sl_io io, size_t want)
{
    int n;
    if (io != SL_IO_RECV || ioctl(c->fd, FIONREAD, &n) != 0 || n < 0) return want;
    if (n == 0) return 1;
    return (size_t)n < want ? (size_t)n : want;
}

/* A held call stopped by its timeout or a signal returns what it moved, as
 * the kernel does, else -1 with the errno that stopped it. */
static ssize_t stopped(struct call *c, size_t done, int saved)
{
    release_signals(c);
    if (!done) return -1;
    errno = saved;
    return (ssize_t)done;
}

/* Whether a call that moved `n` of the `g` bytes granted goes on: a
 * blocking send until everything is sent, a blocking MSG_WAITALL read
 * until everything is read, as the kernel's would; everything else returns
 * what it got. A real call that moved less than its grant stopped for a
 * reason of its own (timeout, signal, end of stream): so do we. */
static bool goes_on(const struct call *c, enum sl_io io, size_t done, ssize_t n, uint64_t g,
                    int *nb)
{
    if (n <= 0 || (uint64_t)n < g || done >= c->len) return false;
    if (io == SL_IO_RECV && !(has_msg_flags(c) && (c->flags & MSG_WAITALL))) return false;
    if (*nb < 0) *nb = nonblocking(c);
    return !*nb;
}

static ssize_t limited(struct sl_runtime *rt, struct sl_fd *e, struct call *c, enum sl_io io)
{
    int saved = errno, nb = -1;
    size_t done = 0;
    int rule = e->bytes_rule[io];
    c->start = sl_clock_now();
    for (;;) {
        /* A blocking read waits for data before it takes budget (see the
         * file comment). */
        if (io == SL_IO_RECV && nb < 0) nb = nonblocking(c);
        if (io == SL_IO_RECV && !nb && sl_wait_fd(c->fd, POLLIN, deadline(c, io)) != 0)
            return stopped(c, done, saved);
        uint64_t g = budget(rt, e, c, io, wanted(c, io, c->len - done), &nb);
        if (g == 0) return stopped(c, done, saved);
        release_signals(c);
        ssize_t n = real_call_at(c, done, g);
        int err = errno;
        sl_bytes_refund(rt, rule, &e->bytes_key[io], io, sl_clock_now(),
                        g - (n > 0 ? (uint64_t)n : 0));
        if (n < 0) {
            if (done) return stopped(c, done, saved);
            errno = err;
            return n;
        }
        done += (size_t)n;
        if (!goes_on(c, io, done, n, g, &nb)) break;
    }
    errno = saved;
    return (ssize_t)done;
}

/* The bytes a read took, as one or more iovecs (for reqin.c's scanner). */
static int call_iov(const struct call *c, struct iovec *one, const struct iovec **iov)
{
    if (c->k == K_READV) return *iov = c->iov, c->iovcnt;
    if (c->k == K_RECVMSG) return *iov = c->msg->msg_iov, (int)c->msg->msg_iovlen;
    one->iov_base = c->buf;
    one->iov_len = c->len;
    *iov = one;
    return 1;
}

/* A read of a connection whose requests are counted (reqin.c): it takes only
 * the bytes reqin.c lets through, then reqin.c reads what it took. */
static ssize_t request_read(struct sl_runtime *rt, struct sl_fd *e, struct call *c)
{
    if (c->k == K_SPLICE) return real_call(c, c->len); /* not seen: bytes the program never reads */
    int flags = has_msg_flags(c) ? c->flags : 0;
    if ((e->bytes_rule[SL_IO_RECV] < 0 && !(flags & MSG_WAITALL)) || sl_reqin_stashed(e)) {
        /* one buffer (the first of several: a short read), one real recv */
        struct iovec one;
        const struct iovec *iov;
        int cnt = call_iov(c, &one, &iov), i = 0;
        while (i < cnt - 1 && iov[i].iov_len == 0)
            i++;
        ssize_t n = sl_reqin_read(c->fd, e, cnt ? iov[i].iov_base : NULL, cnt ? iov[i].iov_len : 0,
                                  flags & ~MSG_WAITALL);
        /* a scatter read fills the next buffers with what is there now, as
         * the kernel's would (a short read is legal, but hosts and python's
         * own tests count on the buffers filling in order); never waits */
        if (!(flags & MSG_PEEK) && n > 0 && (size_t)n == iov[i].iov_len) {
            int saved = errno;
            while (++i < cnt) {
                if (iov[i].iov_len == 0) continue;
                ssize_t more = sl_reqin_read(c->fd, e, iov[i].iov_base, iov[i].iov_len,
                                             (flags & ~MSG_WAITALL) | MSG_DONTWAIT);
                if (more <= 0) break;
                n += more;
                if ((size_t)more < iov[i].iov_len) break;
            }
            errno = saved;
        }
        if (n >= 0 && c->k == K_RECVFROM && c->from && c->fromlen) *c->fromlen = 0; /* as TCP's */
        if (n >= 0 && c->k == K_RECVMSG) {
            c->msg->msg_namelen = 0;
            c->msg->msg_controllen = 0;
            c->msg->msg_flags = 0;
        }
        return n;
    }
    ssize_t cap = sl_reqin_before_read(c->fd, e, c->len, nonblocking(c));
    if (cap <= 0) return cap;
    size_t want = c->len;
    c->cut = (size_t)cap < want;
    c->len = (size_t)cap;
    ssize_t n =
        e->bytes_rule[SL_IO_RECV] >= 0 ? limited(rt, e, c, SL_IO_RECV) : real_call(c, (size_t)cap);
    c->len = want;
    c->cut = false;
    if (n > 0 && !peeking(c)) {
        int saved = errno;
        struct iovec one;
        const struct iovec *iov;
        int cnt = call_iov(c, &one, &iov);
        sl_reqin_after_read(e, iov, cnt, (size_t)n);
        errno = saved;
    }
    return n;
}

/* One span of a write of a connection whose requests are counted
 * (reqout.c): the len bytes at buf, which are (or are a copy of) the
 * program's buffers from `at` on. Sends only the bytes before a request
 * head that waits its turn. */
static ssize_t request_piece(struct sl_runtime *rt, struct sl_fd *e, struct call *c,
                             const void *buf, size_t len, size_t at)
{
    bool dontwait = has_msg_flags(c) && (c->flags & MSG_DONTWAIT);
    enum sl_reqout_fate fate;
    ssize_t cap = sl_reqout_before_write(c->fd, e, buf, len, dontwait, &fate);
    if (cap < 0) return -1;
    /* written, as far as the program knows: an outbound `reply` request, or
     * a held h2c write sluice sends at its turn (a read's W_KEPT work) */
    if (fate == SL_REQOUT_SWALLOWED || fate == SL_REQOUT_KEPT) return cap;
    struct call piece = *c;
    piece.base = at;
    piece.len = (size_t)cap;
    piece.cut = at != 0 || (size_t)cap < c->len; /* never the program's whole call */
    ssize_t n = e->bytes_rule[SL_IO_SEND] >= 0 ? limited(rt, e, &piece, SL_IO_SEND)
                                               : real_call(&piece, (size_t)cap);
    sl_reqout_sent(e, buf, fate == SL_REQOUT_LET ? (size_t)cap : 0, n);
    return n;
}

/* The bytes of a gathered write from `at` on, up to max of them, copied
 * into out (the scanner reads one span); returns how many. */
static size_t gather(const struct iovec *iov, int n, size_t at, char *out, size_t max)
{
    size_t got = 0;
    for (int i = 0; i < n && got < max; i++) {
        if (iov[i].iov_len <= at) {
            at -= iov[i].iov_len;
            continue;
        }
        size_t k = iov[i].iov_len - at;
        if (k > max - got) k = max - got;
        memcpy(out + got, (const char *)iov[i].iov_base + at, k);
        got += k;
        at = 0;
    }
    return got;
}

#define GATHER_STACK 2048
#define GATHER_MAX   (64 * 1024)

/* The span a write's bytes are read into before they go: `stack`
 * (GATHER_STACK bytes) for a small write, else up to GATHER_MAX of
 * sluice's heap (the stack when none is left). Returns its room; *heap is
 * what to free. Keeps errno. */
static size_t span_for(size_t len, char *stack, char **span, char **heap)
{
    *span = stack;
    *heap = NULL;
    if (len <= GATHER_STACK) return GATHER_STACK;
    size_t want = len < GATHER_MAX ? len : GATHER_MAX;
    int saved = errno;
    if ((*heap = sl_alloc(want))) *span = *heap;
    errno = saved;
    return *heap ? want : GATHER_STACK;
}

/* Up to max of the bytes a sendfile or splice of c would move next, copied
 * into out without moving them: the file's, read at its offset (sendfile
 * reads files only), or the pipe's, duplicated with tee into a pipe of our
 * own and read from there. -1 when they cannot be read so. */
static ssize_t peek_moved(const struct call *c, char *out, size_t max)
{
    if (max > c->len) max = c->len;
    if (c->k == K_SENDFILE) {
        off_t at = c->off ? *c->off : lseek(c->in_fd, 0, SEEK_CUR);
        return at < 0 ? -1 : pread(c->in_fd, out, max, at);
    }
    if (c->off_in) return pread(c->in_fd, out, max, *c->off_in); /* a file into the socket */
    int p[2];
    if (pipe2(p, O_CLOEXEC | O_NONBLOCK) != 0) return -1;
    ssize_t n = tee(c->in_fd, p[1], max, SPLICE_F_NONBLOCK);
    if (n > 0) n = REAL(read)(p[0], out, (size_t)n);
    REAL(close)(p[0]);
    REAL(close)(p[1]);
    return n;
}

/* A sendfile or splice into a connection whose requests are counted: its
 * bytes are read where they come from before they go (a head in a file or
 * a pipe is a head like any other), and the real call moves only what the
 * scan let go. An empty pipe: a non-blocking call gets EAGAIN, a blocking
 * one waits for bytes (or the writer's end: 0) as the kernel's would, then
 * reads them first. A source that cannot be read gets the kernel's own
 * answer (the real call fails the same way); no pipe of our own to tee
 * into: ENOMEM, which splice may return. */
static ssize_t request_moved(struct sl_runtime *rt, struct sl_fd *e, struct call *c)
{
    char stack[GATHER_STACK], *heap, *span;
    size_t room = span_for(c->len, stack, &span, &heap);
    int saved = errno, nb = -1;
    bool pipe_in = c->k == K_SPLICE && !c->off_in;
    uint64_t deadline = 0;
    ssize_t n;
    for (;;) {
        errno = saved;
        ssize_t got = peek_moved(c, span, room);
        if (got > 0) {
            errno = saved;
            n = request_piece(rt, e, c, span, (size_t)got, 0);
            break;
        }
        if (got < 0 && pipe_in && (errno == EMFILE || errno == ENFILE)) {
            errno = ENOMEM;
            n = -1;
            break;
        }
        if (got < 0 || !pipe_in) { /* end of file, or a source the kernel refuses too */
            errno = saved;
            n = real_call(c, c->len);
            break;
        }
        if (nb < 0) nb = nonblocking(c);
        if (nb) {
            errno = EAGAIN;
            n = -1;
            break;
        }
        struct pollfd p = {.fd = c->in_fd, .events = POLLIN};
        if (!deadline) deadline = sl_wait_deadline(c->fd, SO_SNDTIMEO, sl_clock_now());
        if (sl_wait_fd(c->in_fd, POLLIN, deadline) != 0) { /* a signal, the socket's timeout */
            n = -1;
            break;
        }
        if (REAL(poll)(&p, 1, 0) == 1 && !(p.revents & POLLIN)) { /* the writer's end */
            errno = saved;
            n = 0;
            break;
        }
    }
    saved = errno;
    sl_free(heap);
    errno = saved;
    return n;
}

/* A write of a connection whose requests are counted. A gathered write
 * (writev, sendmsg) is read as one span of its buffers (up to GATHER_MAX
 * at a time), so a head split across buffers is decided before any of its
 * bytes leave, and no byte leaves unread; the real call still writes the
 * program's own buffers. It goes on span after span while each went
 * whole, and stops with a short count (legal) where one went short (a
 * head waits its turn, the socket is full) or failed after earlier ones
 * went. */
static ssize_t request_write(struct sl_runtime *rt, struct sl_fd *e, struct call *c)
{
    if (c->k == K_SENDFILE || c->k == K_SPLICE) return request_moved(rt, e, c);
    if (c->k != K_SENDMSG && c->k != K_WRITEV) return request_piece(rt, e, c, c->cbuf, c->len, 0);
    const struct iovec *iov = c->k == K_WRITEV ? c->iov : c->cmsg->msg_iov;
    int n = c->k == K_WRITEV ? c->iovcnt : (int)c->cmsg->msg_iovlen;
    char stack[GATHER_STACK], *heap, *span;
    size_t room = span_for(c->len, stack, &span, &heap);
    size_t done = 0;
    ssize_t k = 0;
    int entry = errno;
    while (done < c->len) {
        size_t len = gather(iov, n, done, span, room);
        k = request_piece(rt, e, c, span, len, done);
        if (k <= 0) break;
        done += (size_t)k;
        if ((size_t)k < len) break;
    }
    int saved = done ? entry : errno; /* a later failure is the next call's */
    sl_free(heap);
    errno = saved;
    return done ? (ssize_t)done : k;
}

/* The socket transport of an outbound read: the program's own call (its
 * buffers are the iovecs the gate is given), through the byte limiter
 * when a byte rule applies. */
struct sock_read {
    struct sl_runtime *rt;
    struct sl_fd *e;
    struct call *c;
};

static ssize_t sock_readv(const struct sl_transport *t, const struct iovec *iov, int cnt)
{
    (void)iov, (void)cnt;
    const struct sock_read *x = t->ctx;
    return x->e->bytes_rule[SL_IO_RECV] >= 0 && !peeking(x->c)
               ? limited(x->rt, x->e, x->c, SL_IO_RECV)
               : real_call(x->c, x->c->len);
}

/* A read of an outbound connection an outbound `reply` rule matches
 * (reqout.h): through the gate, which gives a queued 429 first and counts
 * the responses in what the server sends. */
static ssize_t reply_read(struct sl_runtime *rt, struct sl_fd *e, struct sl_gate *g, struct call *c)
{
    if (c->k == K_SPLICE) return real_call(c, c->len);
    struct iovec one;
    const struct iovec *iov;
    int cnt = call_iov(c, &one, &iov);
    struct sock_read x = {.rt = rt, .e = e, .c = c};
    struct sl_transport t = {.readv = sock_readv, .fd = c->fd, .ctx = &x};
    bool own;
    ssize_t n = sl_gate_read_replies(g, e, &t, iov, cnt, peeking(c), &own);
    if (n > 0 && own && c->k == K_RECVFROM && c->from && c->fromlen) *c->fromlen = 0; /* as TCP */
    if (n > 0 && own && c->k == K_RECVMSG) {
        c->msg->msg_namelen = 0;
        c->msg->msg_controllen = 0;
        c->msg->msg_flags = 0;
    }
    return n;
}

/* The entry of fd when sluice may have work on it, else NULL: the call
 * goes straight to the kernel. Inline and free of the thread-local guard
 * (the slow half checks it), so that a call on a descriptor sluice does not
 * track costs a few loads and no stack frame: each wrapper's slow half
 * (the guard, a real function not resolved yet, a tracked descriptor) is a
 * function of its own for the same reason. */
static inline struct sl_fd *watched(int fd)
{
    return sl_watching() ? sl_fd_get(fd) : NULL;
}

#define SLOW __attribute__((noinline))

/* The request work of a call of direction io on e: the plain requests an
 * inbound gate reads, the replies (429s) an outbound gate gives (*g), the
 * plain requests an outbound gate writes, or none (a TLS library's own
 * socket calls carry ciphertext: its requests are seen where the library
 * is called, tls.c and gnutls.c). */
enum work { W_NONE, W_REQUESTS_IN, W_REPLIES, W_REQUESTS_OUT, W_ANSWERS, W_KEPT };

static inline enum work work_of(struct sl_fd *e, enum sl_io io, struct sl_gate **g)
{
    if (io == SL_IO_SEND && sl_gate_in(e))
        return sl_gate_answers(e->gate) && sl_reqin_plain(e) ? W_ANSWERS : W_NONE;
    if (io == SL_IO_SEND) return sl_gate_out(e) && sl_reqout_plain(e) ? W_REQUESTS_OUT : W_NONE;
    if (sl_gate_in(e) && sl_reqin_plain(e)) return W_REQUESTS_IN;
    if (sl_gate_out(e) && (*g = sl_reqout_replying(e, false))) return W_REPLIES;
    return sl_gate_out(e) && sl_reqout_kept(e) ? W_KEPT : W_NONE;
}

/* Whether run() would only make the real call: nothing held back, no byte
 * budget, no request work. Then the slow half makes it without building a
 * call: curl's reads and writes under an outbound request rule. */
static inline bool passes(struct sl_fd *e, enum sl_io io)
{
    struct sl_gate *g;
    return e->bytes_rule[io] < 0 && !sl_pending_held(e) && work_of(e, io, &g) == W_NONE;
}

/* A write of e (NULL: untracked) that the slow half would only pass to
 * the kernel: a tracked inbound request connection's responses (nginx's
 * writev) cost the fast half's few loads, not a call. The guard and the
 * runtime need no look: the slow half passes such a call whatever they
 * say. */
static inline bool sends(struct sl_fd *e)
{
    return !e || passes(e, SL_IO_SEND);
}

/* The program's write of its responses on an inbound connection a
 * `count_status` or `req_conns` rule matches: made as it would be, then
 * what went is
 * read (gate.h, sl_gate_wrote). A sendfile's bytes are read back from
 * the file at the offset they were sent from; a splice's cannot be
 * (they came from a pipe and are gone): the count stops there
 * (h1resp.h, lost). */
static ssize_t answer_write(struct sl_runtime *rt, struct sl_fd *e, struct call *c)
{
    off_t from = 0;
    if (c->k == K_SENDFILE) from = c->off ? *c->off : lseek(c->in_fd, 0, SEEK_CUR);
    ssize_t n =
        e->bytes_rule[SL_IO_SEND] >= 0 ? limited(rt, e, c, SL_IO_SEND) : real_call(c, c->len);
    if (n <= 0) return n;
    int saved = errno;
    struct iovec one = {.iov_base = (void *)c->cbuf, .iov_len = (size_t)n};
    if (c->k == K_WRITEV) {
        sl_gate_wrote(e->gate, c->iov, c->iovcnt, (size_t)n);
    } else if (c->k == K_SENDMSG) {
        sl_gate_wrote(e->gate, c->cmsg->msg_iov, (int)c->cmsg->msg_iovlen, (size_t)n);
    } else if (c->k == K_SPLICE || (c->k == K_SENDFILE && from < 0)) {
        sl_gate_wrote(e->gate, NULL, 0, (size_t)n);
    } else if (c->k != K_SENDFILE) {
        sl_gate_wrote(e->gate, &one, 1, (size_t)n);
    } else {
        char buf[4096];
        for (size_t done = 0; done < (size_t)n;) {
            size_t want = (size_t)n - done < sizeof buf ? (size_t)n - done : sizeof buf;
            ssize_t k = pread(c->in_fd, buf, want, from + (off_t)done);
            struct iovec got = {.iov_base = buf, .iov_len = k > 0 ? (size_t)k : 0};
            sl_gate_wrote(e->gate, k > 0 ? &got : NULL, 1, k > 0 ? (size_t)k : (size_t)n - done);
            if (k <= 0) break;
            done += (size_t)k;
        }
    }
    errno = saved;
    return n;
}

static ssize_t run(struct sl_runtime *rt, struct sl_fd *e, struct call *c, enum sl_io io)
{
    rt = sl_reload_check(rt);
    if (sl_pending_held(e) && sl_pending_io(c->fd, e) < 0) return -1;
    struct sl_gate *g = NULL;
    enum work w = c->len ? work_of(e, io, &g) : W_NONE;
    if (io == SL_IO_RECV && sl_gate_out(e) && sl_reqout_kept(e)) {
        /* kept h2c writes whose turn came go before the read */
        bool taken = sl_gate_lock(e->gate);
        sl_reqout_flush(c->fd, e);
        sl_gate_unlock(e->gate, taken);
    }
    switch (w) {
    case W_REQUESTS_IN:
        return request_read(rt, e, c);
    case W_REPLIES:
        return reply_read(rt, e, g, c);
    case W_ANSWERS:
        return answer_write(rt, e, c);
    case W_REQUESTS_OUT: {
        /* one thread at a time once the state is whole (a state waiting for
         * a name still grows, and moves, at its first write) */
        struct sl_gate *out = e->gate;
        bool taken = sl_reqout_live(e) && sl_gate_lock(out);
        ssize_t n = request_write(rt, e, c);
        sl_gate_unlock(out, taken);
        return n;
    }
    case W_KEPT: /* flushed above */
    case W_NONE:
        break;
    }
    if (e->bytes_rule[io] < 0 || c->len == 0 || peeking(c)) return real_call(c, c->len);
    return limited(rt, e, c, io);
}

/* Whether a read of len bytes with these recv flags is the common read of
 * an inbound request connection (reqin.c's sl_reqin_recv): the one a
 * keep-alive server makes per request, taken without building a call. */
static inline bool plain_request_read(struct sl_fd *e, size_t len, int flags)
{
    return len && !(flags & (MSG_PEEK | MSG_WAITALL)) && e->bytes_rule[SL_IO_RECV] < 0 &&
           sl_gate_in(e) && !sl_pending_held(e);
}

/* recv's general case: the request read is taken in recv itself. */
static SLOW ssize_t recv_slow(struct sl_fd *e, int fd, void *buf, size_t len, int flags)
{
    struct sl_runtime *rt = sl_runtime_now();
    if (!e || !rt || passes(e, SL_IO_RECV)) return REAL(recv)(fd, buf, len, flags);
    struct call c = {.k = K_RECV, .fd = fd, .buf = buf, .len = len, .flags = flags};
    return run(rt, e, &c, SL_IO_RECV);
}

SL_EXPORT ssize_t recv(int fd, void *buf, size_t len, int flags)
{
    struct sl_fd *e = watched(fd);
    if (__builtin_expect(!e && sl_real.recv != NULL, 1)) return sl_real.recv(fd, buf, len, flags);
    /* the request read a keep-alive server makes per request: a tail
     * call from here, no frame of recv_slow's */
    struct sl_runtime *rt;
    if (e && plain_request_read(e, len, flags) && (rt = sl_runtime_now()))
        return sl_reqin_recv(rt, fd, e, buf, len, flags);
    return recv_slow(e, fd, buf, len, flags);
}

static SLOW ssize_t recvfrom_slow(struct sl_fd *e, int fd, void *buf, size_t len, int flags,
                                  struct sockaddr *from, socklen_t *fromlen)
{
    struct sl_runtime *rt = sl_runtime_now();
    if (!e || !rt || passes(e, SL_IO_RECV))
        return REAL(recvfrom)(fd, buf, len, flags, from, fromlen);
    struct call c = {.k = K_RECVFROM,
                     .fd = fd,
                     .buf = buf,
                     .len = len,
                     .flags = flags,
                     .from = from,
                     .fromlen = fromlen};
    return run(rt, e, &c, SL_IO_RECV);
}

SL_EXPORT ssize_t recvfrom(int fd, void *buf, size_t len, int flags, struct sockaddr *from,
                           socklen_t *fromlen)
{
    struct sl_fd *e = watched(fd);
    if (__builtin_expect(!e && sl_real.recvfrom != NULL, 1))
        return sl_real.recvfrom(fd, buf, len, flags, from, fromlen);
    return recvfrom_slow(e, fd, buf, len, flags, from, fromlen);
}

static SLOW ssize_t recvmsg_slow(struct sl_fd *e, int fd, struct msghdr *msg, int flags)
{
    struct sl_runtime *rt = sl_runtime_now();
    if (!e || !rt || passes(e, SL_IO_RECV)) return REAL(recvmsg)(fd, msg, flags);
    struct call c = {.k = K_RECVMSG,
                     .fd = fd,
                     .msg = msg,
                     .flags = flags,
                     .len = msg ? iov_total(msg->msg_iov, (int)msg->msg_iovlen) : 0};
    return run(rt, e, &c, SL_IO_RECV);
}

SL_EXPORT ssize_t recvmsg(int fd, struct msghdr *msg, int flags)
{
    struct sl_fd *e = watched(fd);
    ssize_t n;
    if (__builtin_expect(!e && sl_real.recvmsg != NULL, 1))
        n = sl_real.recvmsg(fd, msg, flags);
    else
        n = recvmsg_slow(e, fd, msg, flags);
    /* descriptors passed with it (SCM_RIGHTS): their requests are read too */
    if (__builtin_expect(n >= 0 && msg && msg->msg_controllen, 0) && sl_watching())
        sl_passed_received(msg);
    return n;
}

static SLOW ssize_t read_call(struct sl_runtime *rt, struct sl_fd *e, int fd, void *buf, size_t len)
{
    if (passes(e, SL_IO_RECV)) return REAL(read)(fd, buf, len);
    struct call c = {.k = K_READ, .fd = fd, .buf = buf, .len = len};
    return run(rt, e, &c, SL_IO_RECV);
}

static SLOW ssize_t read_slow(struct sl_fd *e, int fd, void *buf, size_t len)
{
    struct sl_runtime *rt = sl_runtime_now();
    if (!e || !rt) return REAL(read)(fd, buf, len);
    if (plain_request_read(e, len, 0)) return sl_reqin_recv(rt, fd, e, buf, len, 0);
    return read_call(rt, e, fd, buf, len);
}

SL_EXPORT ssize_t read(int fd, void *buf, size_t len)
{
    struct sl_fd *e = watched(fd);
    if (__builtin_expect(!e && sl_real.read != NULL, 1)) return sl_real.read(fd, buf, len);
    return read_slow(e, fd, buf, len);
}

static SLOW ssize_t readv_slow(struct sl_fd *e, int fd, const struct iovec *iov, int iovcnt)
{
    struct sl_runtime *rt = sl_runtime_now();
    if (!e || !rt || passes(e, SL_IO_RECV)) return REAL(readv)(fd, iov, iovcnt);
    struct call c = {.k = K_READV,
                     .fd = fd,
                     .iov = iov,
                     .iovcnt = iovcnt,
                     .len = iovcnt > 0 ? iov_total(iov, iovcnt) : 0};
    return run(rt, e, &c, SL_IO_RECV);
}

SL_EXPORT ssize_t readv(int fd, const struct iovec *iov, int iovcnt)
{
    struct sl_fd *e = watched(fd);
    if (__builtin_expect(!e && sl_real.readv != NULL, 1)) return sl_real.readv(fd, iov, iovcnt);
    return readv_slow(e, fd, iov, iovcnt);
}

static SLOW ssize_t send_slow(struct sl_fd *e, int fd, const void *buf, size_t len, int flags)
{
    struct sl_runtime *rt = sl_runtime_now();
    if (!e || !rt || passes(e, SL_IO_SEND)) return REAL(send)(fd, buf, len, flags);
    struct call c = {.k = K_SEND, .fd = fd, .cbuf = buf, .len = len, .flags = flags};
    return run(rt, e, &c, SL_IO_SEND);
}

SL_EXPORT ssize_t send(int fd, const void *buf, size_t len, int flags)
{
    if (sl_tls_tying) sl_tls_tie(fd); /* tie.h: a TLS client's own BIO (curl) */
    struct sl_fd *e = watched(fd);
    if (__builtin_expect(sends(e) && sl_real.send != NULL, 1))
        return sl_real.send(fd, buf, len, flags);
    return send_slow(e, fd, buf, len, flags);
}

static SLOW ssize_t sendto_slow(struct sl_fd *e, int fd, const void *buf, size_t len, int flags,
                                const struct sockaddr *to, socklen_t tolen)
{
    struct sl_runtime *rt = sl_runtime_now();
    if (!e || !rt || passes(e, SL_IO_SEND)) return REAL(sendto)(fd, buf, len, flags, to, tolen);
    struct call c = {
        .k = K_SENDTO, .fd = fd, .cbuf = buf, .len = len, .flags = flags, .to = to, .tolen = tolen};
    return run(rt, e, &c, SL_IO_SEND);
}

/* TCP Fast Open: a sendto or sendmsg with MSG_FASTOPEN and an address
 * connects as it sends, and its connect must be decided as connect()'s
 * (a delay, a refusal, the requests the connection then carries). So
 * while an outbound rule exists it is made by connect() (connect.c), and
 * the bytes are then sent as a plain write: the SYN no longer carries
 * them (a round trip more). A non-blocking connect still in progress
 * gives EINPROGRESS with nothing sent, as the kernel's does without a
 * Fast Open cookie. */
static SLOW bool fastopen_connect(int fd, const struct sockaddr *to, socklen_t tolen, int *rc)
{
    struct sl_runtime *rt = sl_runtime_now();
    if (!rt || !rt->any_out || !to) return false;
    int saved = errno;
    *rc = connect(fd, to, tolen);
    if (*rc != 0 && errno == EISCONN) *rc = 0; /* connected before: a plain send */
    if (*rc == 0) errno = saved;
    return true;
}

SL_EXPORT ssize_t sendto(int fd, const void *buf, size_t len, int flags, const struct sockaddr *to,
                         socklen_t tolen)
{
    struct sl_fd *e = watched(fd);
    int rc;
    if (__builtin_expect(flags & MSG_FASTOPEN, 0) && fastopen_connect(fd, to, tolen, &rc))
        return rc ? -1 : sendto(fd, buf, len, flags & ~MSG_FASTOPEN, NULL, 0);
    if (__builtin_expect(sends(e) && sl_real.sendto != NULL, 1))
        return sl_real.sendto(fd, buf, len, flags, to, tolen);
    return sendto_slow(e, fd, buf, len, flags, to, tolen);
}

static SLOW ssize_t sendmsg_slow(struct sl_fd *e, int fd, const struct msghdr *msg, int flags)
{
    struct sl_runtime *rt = sl_runtime_now();
    if (!e || !rt || passes(e, SL_IO_SEND)) return REAL(sendmsg)(fd, msg, flags);
    struct call c = {.k = K_SENDMSG,
                     .fd = fd,
                     .cmsg = msg,
                     .flags = flags,
                     .len = msg ? iov_total(msg->msg_iov, (int)msg->msg_iovlen) : 0};
    return run(rt, e, &c, SL_IO_SEND);
}

SL_EXPORT ssize_t sendmsg(int fd, const struct msghdr *msg, int flags)
{
    struct sl_fd *e = watched(fd);
    int rc;
    if (__builtin_expect(flags & MSG_FASTOPEN, 0) && msg &&
        fastopen_connect(fd, msg->msg_name, msg->msg_namelen, &rc)) {
        if (rc) return -1;
        struct msghdr m = *msg;
        m.msg_name = NULL;
        m.msg_namelen = 0;
        return sendmsg(fd, &m, flags & ~MSG_FASTOPEN);
    }
    if (__builtin_expect(sends(e) && sl_real.sendmsg != NULL, 1))
        return sl_real.sendmsg(fd, msg, flags);
    return sendmsg_slow(e, fd, msg, flags);
}

/* Each message as sendmsg would send it, in order: the count of those
 * sent whole, the last one's bytes in its msg_len (a short one ends the
 * call, as the kernel's would); -1 with errno when the first failed. */
static SLOW int sendmmsg_slow(struct sl_fd *e, int fd, struct mmsghdr *v, unsigned int n, int flags)
{
    struct sl_runtime *rt = sl_runtime_now();
    if (!e || !rt || passes(e, SL_IO_SEND)) return REAL(sendmmsg)(fd, v, n, flags);
    int saved = errno;
    for (unsigned int i = 0; i < n; i++) {
        size_t len = iov_total(v[i].msg_hdr.msg_iov, (int)v[i].msg_hdr.msg_iovlen);
        ssize_t k = sendmsg_slow(e, fd, &v[i].msg_hdr, flags);
        if (k < 0 && i == 0) return -1;
        if (k < 0) { /* what went before stands; the failure is the next call's */
            errno = saved;
            return (int)i;
        }
        v[i].msg_len = (unsigned int)k;
        if ((size_t)k < len) return (int)i + 1;
    }
    errno = saved;
    return (int)n;
}

SL_EXPORT int sendmmsg(int fd, struct mmsghdr *v, unsigned int n, int flags)
{
    struct sl_fd *e = watched(fd);
    if (__builtin_expect(sends(e) && sl_real.sendmmsg != NULL, 1))
        return sl_real.sendmmsg(fd, v, n, flags);
    return sendmmsg_slow(e, fd, v, n, flags);
}

static SLOW ssize_t write_slow(struct sl_fd *e, int fd, const void *buf, size_t len)
{
    struct sl_runtime *rt = sl_runtime_now();
    if (!e || !rt || passes(e, SL_IO_SEND)) return REAL(write)(fd, buf, len);
    struct call c = {.k = K_WRITE, .fd = fd, .cbuf = buf, .len = len};
    return run(rt, e, &c, SL_IO_SEND);
}

SL_EXPORT ssize_t write(int fd, const void *buf, size_t len)
{
    struct sl_fd *e = watched(fd);
    if (__builtin_expect(sends(e) && sl_real.write != NULL, 1)) return sl_real.write(fd, buf, len);
    return write_slow(e, fd, buf, len);
}

static SLOW ssize_t writev_slow(struct sl_fd *e, int fd, const struct iovec *iov, int iovcnt)
{
    struct sl_runtime *rt = sl_runtime_now();
    if (!e || !rt || passes(e, SL_IO_SEND)) return REAL(writev)(fd, iov, iovcnt);
    struct call c = {.k = K_WRITEV,
                     .fd = fd,
                     .iov = iov,
                     .iovcnt = iovcnt,
                     .len = iovcnt > 0 ? iov_total(iov, iovcnt) : 0};
    return run(rt, e, &c, SL_IO_SEND);
}

SL_EXPORT ssize_t writev(int fd, const struct iovec *iov, int iovcnt)
{
    struct sl_fd *e = watched(fd);
    if (__builtin_expect(sends(e) && sl_real.writev != NULL, 1))
        return sl_real.writev(fd, iov, iovcnt);
    return writev_slow(e, fd, iov, iovcnt);
}

static SLOW ssize_t sendfile_slow(struct sl_fd *e, int out_fd, int in_fd, off_t *offset,
                                  size_t count)
{
    struct sl_runtime *rt = sl_runtime_now();
    if (!e || !rt || passes(e, SL_IO_SEND)) return REAL(sendfile)(out_fd, in_fd, offset, count);
    struct call c = {.k = K_SENDFILE,
                     .fd = out_fd,
                     .out_fd = out_fd,
                     .in_fd = in_fd,
                     .off = offset,
                     .len = count};
    return run(rt, e, &c, SL_IO_SEND);
}

SL_EXPORT ssize_t sendfile(int out_fd, int in_fd, off_t *offset, size_t count)
{
    struct sl_fd *e = watched(out_fd);
    if (__builtin_expect(sends(e) && sl_real.sendfile != NULL, 1))
        return sl_real.sendfile(out_fd, in_fd, offset, count);
    return sendfile_slow(e, out_fd, in_fd, offset, count);
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
    struct sl_runtime *rt = sl_runtime_now();
    if (rt && rt->any_bytes) {
        struct sl_fd *e = sl_fd_get(fd_out);
        if (e && !passes(e, SL_IO_SEND)) { /* a byte rule, or requests to read */
            c.fd = fd_out;
            return run(rt, e, &c, SL_IO_SEND);
        }
        e = sl_fd_get(fd_in);
        if (e && e->bytes_rule[SL_IO_RECV] >= 0) {
            c.fd = fd_in;
            return run(rt, e, &c, SL_IO_RECV);
        }
    }
    return real_call(&c, len);
}
