/* req.c - requests on inbound connections: see req.h. */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stddef.h>
#include <string.h>
#include <sys/socket.h>

#include "../core/clock.h"
#include "../core/log.h"
#include "../core/mem.h"
#include "../core/request.h"
#include "fd.h"
#include "ready.h"
#include "req.h"
#include "reload.h"
#include "shim.h"
#include "wait.h"

/* What one peek looks at: a whole head of the largest size the scanner
 * reads, plus one byte, so a head that does not fit is known to be too
 * large (and passed through) rather than waited for. */
#define PEEK_MAX (16384 + 1)

/* What a TLS connection keeps of the decrypted bytes it read from the
 * library and has not given the program yet: a head of the largest size
 * the scanner reads, and one more read after it. */
#define STASH_MAX (2 * 16384 + 2)

struct sl_req_fd {
    enum { OPEN, ENDED, RESET } phase; /* ENDED: a denied head, its 429 due at the end */
    bool replied;                      /* the 429 was written */
    size_t reply_len;
    char reply[1024];
    /* to start over when the program's TLS library turns out to read
     * the connection (sl_req_tls_read) */
    struct sl_runtime *rt;
    struct sl_addr local, peer;
    bool has_local;
    bool tls;    /* the requests are read through the TLS library */
    bool first;  /* the first byte from the peer has been seen */
    bool hello;  /* ... and it opened a TLS handshake */
    void *ssl;   /* that library's connection (an SSL *), NULL once freed */
    char *stash; /* TLS: decrypted bytes read, not given to the program yet */
    size_t stash_len;
    _Alignas(max_align_t) unsigned char conn[]; /* a struct sl_req_conn: sl_req_conn_size() */
};

#define CONN(r) ((struct sl_req_conn *)(void *)(r)->conn)

void sl_req_accept(struct sl_runtime *rt, int fd, const struct sl_addr *local,
                   const struct sl_addr *peer)
{
    if (!rt->any_req_in) return;
    int saved = errno;
    struct sl_req_fd *r = sl_alloc(sizeof *r + sl_req_conn_size());
    struct sl_fd *e;
    if (!r || !sl_req_conn_init(CONN(r), rt, SL_IN, local, peer, sl_clock_now()) ||
        !(e = sl_fd_track(fd))) {
        sl_free(r);
        errno = saved;
        return;
    }
    r->rt = rt;
    r->peer = *peer;
    if ((r->has_local = local != NULL)) r->local = *local;
    e->req = r;
    errno = saved;
}

/* Decide with the newest configuration (shim/reload.h). */
static void fresh(struct sl_req_fd *r)
{
    struct sl_runtime *rt = sl_runtime();
    if (!rt || (rt = sl_reload_check(rt)) == sl_req_conn_runtime(CONN(r))) return;
    r->rt = rt;
    sl_req_conn_rebind(CONN(r), rt);
}

static void denied(struct sl_req_fd *r, const struct sl_req_verdict *v)
{
    r->phase = v->action == SL_ACT_REJECT ? RESET : ENDED;
    r->reply_len = v->reply_len < sizeof r->reply ? v->reply_len : sizeof r->reply;
    memcpy(r->reply, v->reply, r->reply_len);
}

/* EAGAIN until `until`: the readiness layer hides fd's reads until then. */
static ssize_t not_yet(int fd, struct sl_fd *e, uint64_t until)
{
    sl_ready_throttle(fd, e, SL_IO_RECV, until);
    errno = EAGAIN;
    return -1;
}

ssize_t sl_req_before_read(int fd, struct sl_fd *e, size_t len, bool nonblock)
{
    struct sl_req_fd *r = e->req;
    if (r->tls) return (ssize_t)len; /* ciphertext: the library's reads are the requests */
    fresh(r);
    if (r->phase == ENDED) return 0;
    if (r->phase == RESET) return errno = ECONNRESET, -1;
    if (sl_req_done(CONN(r))) return (ssize_t)len;
    int saved = errno;
    uint64_t start = sl_clock_now();
    uint64_t deadline = nonblock ? 0 : sl_wait_deadline(fd, SO_RCVTIMEO, start);
    char buf[PEEK_MAX];
    for (;;) {
        /* the kernel's own wait for data: timeouts and signals as usual */
        ssize_t n = REAL(recv)(fd, buf, sizeof buf, MSG_PEEK | (nonblock ? MSG_DONTWAIT : 0));
        if (n <= 0) return n < 0 ? -1 : (errno = saved, 0);
        uint64_t now = sl_clock_now();
        struct sl_req_verdict v;
        size_t ok = sl_req_admit(CONN(r), buf, (size_t)n, now, &v);
        /* the peek shows everything the kernel has (a head that does not
         * fit passes): an incomplete head goes to the program as it is and
         * is decided when it completes (see the stash below) */
        if (v.status == SL_REQ_NEED_MORE || v.status == SL_REQ_PASS) ok = (size_t)n;
        if (ok > 0) {
            atomic_store_explicit(&e->ready_at[SL_IO_RECV], 0, memory_order_relaxed);
            /* a short read: what stays in the kernel is announced again,
             * a denial at once, a held head at its turn */
            if (v.status == SL_REQ_DENY) sl_ready_held_read(fd, e, now);
            if (v.status == SL_REQ_HOLD) sl_ready_throttle(fd, e, SL_IO_RECV, now + v.wait_ns);
            errno = saved;
            return (ssize_t)(ok < len ? ok : len);
        }
        if (v.status == SL_REQ_DENY) {
            denied(r, &v);
            if (r->phase == RESET) return errno = ECONNRESET, -1;
            errno = saved;
            return 0;
        }
        if (v.status != SL_REQ_HOLD) { /* nothing may pass yet nothing stopped it: cannot happen */
            errno = saved;
            return (ssize_t)len;
        }
        uint64_t until = now + v.wait_ns;
        if (nonblock) return not_yet(fd, e, until);
        if (sl_wait_until(until, deadline) != 0) return -1; /* EINTR, or EAGAIN at SO_RCVTIMEO */
    }
}

void sl_req_after_read(struct sl_fd *e, const struct iovec *iov, int iovcnt, size_t got)
{
    struct sl_req_fd *r = e->req;
    if (r->tls) return;
    for (int i = 0; i < iovcnt && got > 0; i++) {
        size_t n = iov[i].iov_len < got ? iov[i].iov_len : got;
        sl_req_passed(CONN(r), iov[i].iov_base, n);
        got -= n;
    }
}

static void reply(int fd, struct sl_req_fd *r)
{
    if (r->replied || r->tls) return; /* TLS: written through the library (sl_req_tls_end) */
    r->replied = true;
    int saved = errno;
    /* after every response the program wrote: it read end-of-file first */
    ssize_t n = REAL(send)(fd, r->reply, r->reply_len, MSG_DONTWAIT | MSG_NOSIGNAL);
    (void)n;
    errno = saved;
}

void sl_req_shutdown(int fd, struct sl_fd *e)
{
    if (e->req->phase == ENDED) reply(fd, e->req);
}

bool sl_req_close(int fd, struct sl_fd *e)
{
    struct sl_req_fd *r = e->req;
    if (r->phase == RESET) { /* as an inbound reject: the client sees a reset */
        struct linger lg = {.l_onoff = 1, .l_linger = 0};
        setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
        return false;
    }
    if (r->phase != ENDED) return false;
    int saved = errno;
    reply(fd, r);
    REAL(shutdown)(fd, SHUT_WR);
    errno = saved;
    return true;
}

void sl_req_free(struct sl_fd *e)
{
    struct sl_req_fd *r = e->req;
    if (!r) return;
    static _Atomic bool told;
    if (r->hello && !r->tls && !atomic_exchange(&told, true)) {
        char addr[64];
        sl_addr_format(r->peer.a, addr, sizeof addr);
        sl_log(SL_LOG_WARN,
               "a connection from %s that an inbound request rule matches spoke TLS, and the "
               "program decrypted it without OpenSSL 3's SSL_read (linked statically, or another "
               "TLS library): its requests were not limited (said once)",
               addr);
    }
    e->req = NULL;
    sl_req_conn_fini(CONN(r));
    if (r->stash) {
        explicit_bzero(r->stash, r->stash_len); /* a request's secrets */
        sl_free(r->stash);
    }
    sl_free(r);
}

/* ---- reading through the stash ----
 *
 * The common read goes straight into the program's buffer (one system
 * call, as without sluice) and is decided there: when every byte it got
 * may pass, that is all. When it got a head that may not pass yet (held,
 * denied, or incomplete), the bytes from that head on are kept in the
 * connection's stash, and later reads are served from the stash first.
 * The same loop serves a TLS library's reads (OpenSSL decrypts into its
 * own buffers: a peek at the socket would show ciphertext).
 *
 * Nothing is lost and nothing waits without bound:
 *   - an incomplete head is completed from what already arrived (reads
 *     that do not wait), never waited for: when the source has nothing
 *     more now, the partial head goes to the program as it is, and the
 *     request is decided when its head completes (a denied one then ends
 *     the connection: the program already has part of it). So the
 *     program's read returns whenever it would have without sluice;
 *   - whenever bytes stay in the stash after a read, the readiness layer
 *     announces them (ready.h: sl_ready_held): at once when they may pass
 *     or are a partial head or a denial to report, at its turn for a held
 *     head. The kernel no longer knows about them, and an edge-triggered
 *     program that got a short read waits for that announcement.
 * Blocking and timeouts are the source's own (the real read blocks as the
 * program asked), except while a held head waits its turn (shim/wait.h). */

/* Where bytes come from: the socket (recv), or the TLS library. */
struct src {
    struct sl_req_fd *r;
    ssize_t (*read)(const struct src *s, void *buf, size_t n); /* > 0, or <= 0 failed */
    ssize_t (*more)(const struct src *s, void *buf, size_t n); /* as read, never waits */
    int fd, flags;
    void *ssl;
    const struct sl_tls_ops *ops;
};

static bool stash_room(struct sl_req_fd *r)
{
    return r->stash || (r->stash = sl_alloc(STASH_MAX)) != NULL;
}

/* A held head on a non-blocking descriptor: nothing to read until `until`,
 * when the readiness layer announces it (new bytes wake nobody early). */
static void hold(int fd, struct sl_fd *e, uint64_t until)
{
    sl_ready_throttle(fd, e, SL_IO_RECV, until);
    sl_ready_held_read(fd, e, until);
}

/* Tells the readiness layer about what the stash holds after a read that
 * gave the program bytes: nothing (forget it), or the bytes after what was
 * given, due now (they may pass: `left`, or a partial head, or a denial)
 * or at a held head's turn (v: what stopped what was given). */
static void announce(int fd, struct sl_fd *e, const struct sl_req_verdict *v, bool left,
                     uint64_t now)
{
    if (e->req->stash_len == 0)
        sl_ready_held_read(fd, e, 0);
    else if (!left && v->status == SL_REQ_HOLD)
        hold(fd, e, now + v->wait_ns);
    else
        sl_ready_held_read(fd, e, now);
}

/* Gives up to num of the ok stashed bytes that may pass (peek: copies
 * them and keeps them). */
static ssize_t give(int fd, struct sl_fd *e, void *buf, size_t num, size_t ok, bool peek,
                    const struct sl_req_verdict *v, uint64_t now)
{
    struct sl_req_fd *r = e->req;
    size_t n = ok < num ? ok : num;
    memcpy(buf, r->stash, n);
    if (peek) return (ssize_t)n;
    sl_req_passed(CONN(r), r->stash, n);
    memmove(r->stash, r->stash + n, r->stash_len - n);
    r->stash_len -= n;
    announce(fd, e, v, ok > n, now);
    return (ssize_t)n;
}

/* Reads up to num bytes the program may have into buf: > 0, or 0 (end of
 * stream), or -1 with errno; *how says what a TLS caller reports. */
static ssize_t stash_read(int fd, struct sl_fd *e, void *buf, size_t num, bool peek,
                          const struct src *src, enum sl_tls_how *how)
{
    struct sl_req_fd *r = e->req;
    *how = SL_TLS_REAL;
    if (r->phase == ENDED) return *how = SL_TLS_EOF, 0;
    if (r->phase == RESET) return *how = SL_TLS_RESET, errno = ECONNRESET, -1;
    int saved = errno, nonblock = -1;
    uint64_t deadline = 0;
    if (peek && r->stash_len && r->stash_len < num && stash_room(r)) {
        /* a peek shows what the kernel has too, as bare: a shorter peek
         * before stashed only its own length, and a program that peeks
         * until it sees enough would otherwise see that forever */
        size_t room = STASH_MAX - r->stash_len, want = num - r->stash_len;
        ssize_t n = src->more(src, r->stash + r->stash_len, want < room ? want : room);
        if (n > 0) r->stash_len += (size_t)n;
        errno = saved;
    }
    if (r->stash_len == 0 && !peek) { /* the common read: straight into buf */
        ssize_t n = src->read(src, buf, num);
        if (n <= 0) return n;
        struct sl_req_verdict v;
        uint64_t now = sl_clock_now();
        size_t ok = sl_req_admit(CONN(r), buf, (size_t)n, now, &v);
        if (ok == (size_t)n || !stash_room(r)) { /* no memory: these pass as they are */
            sl_req_passed(CONN(r), buf, (size_t)n);
            errno = saved;
            return n;
        }
        memcpy(r->stash, (char *)buf + ok, (size_t)n - ok);
        r->stash_len = (size_t)n - ok;
        if (ok > 0) {
            sl_req_passed(CONN(r), buf, ok);
            announce(fd, e, &v, false, now);
            errno = saved;
            return (ssize_t)ok;
        }
    }
    for (;;) {
        struct sl_req_verdict v = {.status = SL_REQ_NEED_MORE};
        uint64_t now = sl_clock_now();
        size_t ok = r->stash_len ? sl_req_admit(CONN(r), r->stash, r->stash_len, now, &v) : 0;
        if (v.status == SL_REQ_NEED_MORE && ok == 0) {
            /* an incomplete head (or nothing yet): what the source has */
            if (!stash_room(r)) return src->read(src, buf, num); /* no memory: unscanned */
            size_t room = STASH_MAX - r->stash_len;
            ssize_t n = room == 0      ? 0 /* cannot happen: heads over 16 KiB pass */
                        : r->stash_len ? src->more(src, r->stash + r->stash_len, room)
                                       : src->read(src, r->stash, num < room ? num : room);
            if (n > 0) {
                r->stash_len += (size_t)n;
                continue;
            }
            if (r->stash_len == 0) return n; /* the source's own answer: wait, end, error */
            /* nothing more now: the partial head goes to the program (the
             * source's answer, if it was an end or an error, comes again
             * at the next read) */
            errno = saved;
            return give(fd, e, buf, num, r->stash_len, peek, &v, sl_clock_now());
        }
        if (ok > 0) {
            errno = saved;
            return give(fd, e, buf, num, ok, peek, &v, now);
        }
        if (v.status == SL_REQ_DENY) {
            denied(r, &v);
            explicit_bzero(r->stash, r->stash_len);
            r->stash_len = 0;
            sl_ready_held_read(fd, e, 0);
            if (r->phase == RESET) return *how = SL_TLS_RESET, errno = ECONNRESET, -1;
            errno = saved;
            return *how = SL_TLS_EOF, 0;
        }
        if (v.status != SL_REQ_HOLD) { /* nothing may pass yet nothing stopped it: cannot happen */
            errno = saved;
            return give(fd, e, buf, num, r->stash_len, peek, &v, now);
        }
        uint64_t until = now + v.wait_ns;
        if (nonblock < 0) nonblock = (src->flags & MSG_DONTWAIT) || sl_fd_nonblocking(fd);
        if (nonblock) {
            hold(fd, e, until);
            errno = EAGAIN;
            return *how = SL_TLS_WANT_READ, -1;
        }
        if (!deadline) deadline = sl_wait_deadline(fd, SO_RCVTIMEO, now);
        if (sl_wait_until(until, deadline) != 0) return *how = SL_TLS_WANT_READ, -1;
    }
}

/* ---- the plain socket ---- */

static ssize_t sock_read(const struct src *s, void *buf, size_t n)
{
    ssize_t got = REAL(recv)(s->fd, buf, n, s->flags);
    if (got > 0 && !s->r->first) {
        s->r->first = true;
        s->r->hello = ((const unsigned char *)buf)[0] == 0x16; /* a TLS handshake record */
    }
    return got;
}

static ssize_t sock_more(const struct src *s, void *buf, size_t n)
{
    return REAL(recv)(s->fd, buf, n, s->flags | MSG_DONTWAIT);
}

ssize_t sl_req_read(int fd, struct sl_fd *e, void *buf, size_t len, int flags)
{
    struct sl_req_fd *r = e->req;
    if (r->tls || (r->stash_len == 0 && sl_req_done(CONN(r))))
        return REAL(recv)(fd, buf, len, flags);
    fresh(r);
    struct src s = {
        .r = r, .read = sock_read, .more = sock_more, .fd = fd, .flags = flags & ~MSG_PEEK};
    enum sl_tls_how how;
    return stash_read(fd, e, buf, len, (flags & MSG_PEEK) != 0, &s, &how);
}

bool sl_req_stashed(const struct sl_fd *e)
{
    return e->req->stash_len != 0;
}

/* ---- requests read through a TLS library (shim/tls.c) ---- */

/* The first read through the library: what the plain scanner saw was the
 * TLS handshake (and passed it through), so the requests start afresh. */
static bool tls_begin(struct sl_req_fd *r)
{
    sl_req_conn_fini(CONN(r));
    r->tls = true;
    r->stash_len = 0;
    return sl_req_conn_init(CONN(r), r->rt, SL_IN, r->has_local ? &r->local : NULL, &r->peer,
                            sl_clock_now()); /* true: it matched at accept */
}

static ssize_t tls_read(const struct src *s, void *buf, size_t n)
{
    return s->ops->read(s->ssl, buf, n > INT_MAX ? INT_MAX : (int)n);
}

/* The library reads the socket as the program set it: on a blocking one,
 * only when the socket has bytes now (what OpenSSL itself buffered is
 * then left for the program's next read, which decides the head). */
static ssize_t tls_more(const struct src *s, void *buf, size_t n)
{
    if (!sl_fd_nonblocking(s->fd)) {
        struct pollfd p = {.fd = s->fd, .events = POLLIN};
        if (REAL(poll)(&p, 1, 0) != 1) return errno = EAGAIN, -1;
    }
    return tls_read(s, buf, n);
}

int sl_req_tls_read(int fd, struct sl_fd *e, void *ssl, void *buf, int num,
                    const struct sl_tls_ops *ops, enum sl_tls_how *how)
{
    struct sl_req_fd *r = e->req;
    *how = SL_TLS_REAL;
    if (!r->tls && !tls_begin(r)) return ops->read(ssl, buf, num);
    r->ssl = ssl;
    fresh(r);
    if (num <= 0 || (r->stash_len == 0 && r->phase == OPEN && sl_req_done(CONN(r))))
        return ops->read(ssl, buf, num);
    struct src s = {.r = r, .read = tls_read, .more = tls_more, .fd = fd, .ssl = ssl, .ops = ops};
    return (int)stash_read(fd, e, buf, (size_t)num, false, &s, how);
}

void sl_req_tls_end(struct sl_fd *e, void *ssl, const struct sl_tls_ops *ops)
{
    struct sl_req_fd *r = e->req;
    if (!r->tls || r->ssl != ssl) return;
    if (r->phase == ENDED && !r->replied) {
        r->replied = true;
        int saved = errno;
        ops->write(ssl, r->reply, (int)r->reply_len);
        errno = saved;
    }
}

void sl_req_tls_free(struct sl_fd *e, void *ssl)
{
    if (e->req->ssl == ssl) e->req->ssl = NULL;
}

bool sl_req_tls_denied(struct sl_fd *e, const void *ssl)
{
    return e->req->tls && e->req->ssl == ssl && e->req->phase == ENDED;
}
