/* req.c - requests on inbound connections: see req.h. */
#include <errno.h>
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
#include "shim.h"
#include "wait.h"

/* What one peek looks at: a whole head of the largest size the scanner
 * reads, plus one byte, so a head that does not fit is known to be too
 * large (and passed through) rather than waited for. */
#define PEEK_MAX (16384 + 1)

/* How soon an incomplete head is looked at again: the rest of a head split
 * across segments is usually a round trip away. */
#define MORE_NS (2 * 1000000ull)

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

static void denied(struct sl_req_fd *r, const struct sl_req_verdict *v)
{
    r->phase = v->action == SL_ACT_REJECT ? RESET : ENDED;
    r->reply_len = v->reply_len < sizeof r->reply ? v->reply_len : sizeof r->reply;
    memcpy(r->reply, v->reply, r->reply_len);
}

/* EAGAIN until `until`: the readiness layer hides fd's reads until then. */
static ssize_t not_yet(int fd, struct sl_fd *e, uint64_t until)
{
    atomic_store(&e->ready_at[SL_IO_RECV], until);
    sl_ready_throttle(fd, SL_IO_RECV, until);
    errno = EAGAIN;
    return -1;
}

ssize_t sl_req_before_read(int fd, struct sl_fd *e, size_t len, bool nonblock)
{
    struct sl_req_fd *r = e->req;
    if (r->tls) return (ssize_t)len; /* ciphertext: the library's reads are the requests */
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
        if (ok > 0) {
            atomic_store_explicit(&e->ready_at[SL_IO_RECV], 0, memory_order_relaxed);
            errno = saved;
            return (ssize_t)(ok < len ? ok : len);
        }
        uint64_t until;
        switch (v.status) {
        case SL_REQ_DENY:
            denied(r, &v);
            if (r->phase == RESET) return errno = ECONNRESET, -1;
            errno = saved;
            return 0;
        case SL_REQ_HOLD:
            until = now + v.wait_ns;
            break;
        case SL_REQ_NEED_MORE:
            until = now + MORE_NS;
            break;
        default: /* nothing shown may pass yet nothing stopped it: cannot happen */
            errno = saved;
            return (ssize_t)len;
        }
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
    e->req = NULL;
    sl_req_conn_fini(CONN(r));
    if (r->stash) {
        explicit_bzero(r->stash, r->stash_len); /* a request's secrets */
        sl_free(r->stash);
    }
    sl_free(r);
}

/* ---- requests read through a TLS library (shim/tls.c) ----
 *
 * OpenSSL reads ciphertext from the socket itself, so a peek shows
 * nothing readable. Instead the library's own read fills a stash of
 * decrypted bytes, the stash is decided like a peek, and the program gets
 * only what may pass. What is held stays in the stash: the kernel cannot
 * tell the program when its turn comes, so ready.h announces it
 * (sl_ready_held). */

/* The first read through the library: what the plain scanner saw was the
 * TLS handshake (and passed it through), so the requests start afresh. */
static bool tls_begin(struct sl_req_fd *r)
{
    sl_req_conn_fini(CONN(r));
    r->tls = true;
    if (!sl_req_conn_init(CONN(r), r->rt, SL_IN, r->has_local ? &r->local : NULL, &r->peer,
                          sl_clock_now()))
        return false; /* cannot happen: it matched at accept */
    return (r->stash = sl_alloc(STASH_MAX)) != NULL;
}

/* Gives up to num stashed bytes the program may have (ok of them). */
static int tls_give(int fd, struct sl_fd *e, void *buf, int num, size_t ok, uint64_t now)
{
    struct sl_req_fd *r = e->req;
    size_t n = ok < (size_t)num ? ok : (size_t)num;
    memcpy(buf, r->stash, n);
    sl_req_passed(CONN(r), r->stash, n);
    memmove(r->stash, r->stash + n, r->stash_len - n);
    r->stash_len -= n;
    /* bytes that may pass are left: the program is told, as for bytes
     * the library itself keeps after a short read */
    sl_ready_held(fd, e, ok > n ? now : 0);
    return (int)n;
}

int sl_req_tls_read(int fd, struct sl_fd *e, void *ssl, void *buf, int num,
                    const struct sl_tls_ops *ops, enum sl_tls_how *how)
{
    struct sl_req_fd *r = e->req;
    *how = SL_TLS_REAL;
    if (!r->tls && !tls_begin(r)) {
        r->phase = OPEN; /* no memory: this connection's requests pass */
        return ops->read(ssl, buf, num);
    }
    r->ssl = ssl;
    if (r->phase == ENDED) return *how = SL_TLS_EOF, 0;
    if (r->phase == RESET) return *how = SL_TLS_RESET, errno = ECONNRESET, -1;
    if (num <= 0 || (r->stash_len == 0 && sl_req_done(CONN(r)))) return ops->read(ssl, buf, num);
    int saved = errno;
    bool nonblock = sl_fd_nonblocking(fd);
    uint64_t deadline = nonblock ? 0 : sl_wait_deadline(fd, SO_RCVTIMEO, sl_clock_now());
    for (;;) {
        uint64_t now = sl_clock_now();
        struct sl_req_verdict v = {.status = SL_REQ_NEED_MORE};
        size_t ok = r->stash_len ? sl_req_admit(CONN(r), r->stash, r->stash_len, now, &v) : 0;
        if (ok > 0 ||
            r->stash_len == STASH_MAX) { /* full: cannot happen (heads over 16 KiB pass) */
            errno = saved;
            return tls_give(fd, e, buf, num, ok ? ok : r->stash_len, now);
        }
        if (v.status == SL_REQ_DENY) {
            denied(r, &v);
            explicit_bzero(r->stash, r->stash_len);
            r->stash_len = 0;
            sl_ready_held(fd, e, 0);
            if (r->phase == RESET) return *how = SL_TLS_RESET, errno = ECONNRESET, -1;
            errno = saved;
            return *how = SL_TLS_EOF, 0;
        }
        if (v.status == SL_REQ_HOLD) {
            uint64_t until = now + v.wait_ns;
            if (nonblock) {
                atomic_store(&e->ready_at[SL_IO_RECV], until); /* new records wake nobody early */
                sl_ready_throttle(fd, SL_IO_RECV, until);
                sl_ready_held(fd, e, until);
                errno = EAGAIN;
                return *how = SL_TLS_WANT_READ, -1;
            }
            if (sl_wait_until(until, deadline) != 0) return *how = SL_TLS_WANT_READ, -1;
            continue;
        }
        /* an incomplete head, or nothing yet: more from the library */
        int n = ops->read(ssl, r->stash + r->stash_len, (int)(STASH_MAX - r->stash_len));
        if (n <= 0) {
            /* the library's answer stands (want-read: the kernel tells the
             * program when more comes); at the end of the stream a partial
             * head goes to the program, as it would have without sluice */
            if (r->stash_len && !ops->retry(ssl, n)) {
                errno = saved;
                return tls_give(fd, e, buf, num, r->stash_len, now);
            }
            return n;
        }
        r->stash_len += (size_t)n;
    }
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
