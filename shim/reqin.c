/* SPDX-License-Identifier: BSD-2-Clause */
/* reqin.c - requests on inbound connections: see reqin.h. */
#include <errno.h>
#include <stddef.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include "../core/clock.h"
#include "../core/log.h"
#include "../core/mem.h"
#include "../core/http/request.h"
#include "fd.h"
#include "gate.h"
#include "hold.h"
#include "ready.h"
#include "reqin.h"
#include "reload.h"
#include "shim.h"
#include "bursts.h"
#include "tiein.h"

/* What one peek looks at: a whole head of the largest size the scanner
 * reads, plus one byte, so a head that does not fit is known to be too
 * large (and passed through) rather than waited for. */
#define PEEK_MAX (16384 + 1)

struct sl_reqin_conn {
    struct sl_gate g; /* phase, stash, the 429 due (gate.h) */
    /* to start over when the program's TLS library turns out to read
     * the connection (sl_reqin_tls_read) */
    struct sl_runtime *rt;
    struct sl_addr local, peer;
    bool has_local;
    bool first;        /* the first byte from the peer has been seen */
    bool hello;        /* ... and it opened a TLS handshake */
    bool lib;          /* an interposed TLS library's handshake ran on it (tls.c) */
    int fd;            /* the socket, as accepted */
    bool hello_kept;   /* its ClientHello's random is remembered for fd (tiein.h) */
    uint8_t hello_got; /* ... gathered so far into hello_head */
    unsigned char hello_head[SL_TIEIN_HEAD];
    struct sl_tlsin *cipher; /* TLS read by no library sluice sees: bursts (bursts.h) */
    /* what the requests are read through, as the read of its transport:
     * the socket's (from the accept), or a TLS library's from the
     * program's first read through it, of `session` (NULL once freed) */
    ssize_t (*reads)(const struct sl_transport *t, void *buf, size_t n);
    void *session;
    _Alignas(max_align_t) unsigned char conn[]; /* a struct sl_req_conn: sl_req_conn_size() */
};

#define CONN(r) ((struct sl_req_conn *)(void *)(r)->conn)
/* The inbound state of a descriptor whose gate is inbound (g comes first). */
#define REQ(e) ((struct sl_reqin_conn *)(void *)(e)->gate)

static ssize_t sock_read(const struct sl_transport *t, void *buf, size_t n);
static ssize_t sock_more(const struct sl_transport *t, void *buf, size_t n);
static ssize_t sock_write(const struct sl_transport *t, const void *buf, size_t n);

/* The socket transport: the plain requests, the 429 written at the
 * socket's shutdown or close. */
static const struct sl_transport sock = {.read = sock_read, .more = sock_more, .write = sock_write};

/* The requests are read from the socket (not through a TLS library). */
static bool socket_reads(const struct sl_reqin_conn *r)
{
    return r->reads == sock_read;
}

/* The socket transport of fd, whose requests r reads. */
static struct sl_transport sock_of(struct sl_reqin_conn *r, int fd, int flags)
{
    struct sl_transport t = sock;
    t.fd = fd;
    t.flags = flags;
    t.ctx = r;
    return t;
}

void sl_reqin_accept(struct sl_runtime *rt, int fd, const struct sl_addr *local,
                     const struct sl_addr *peer)
{
    if (!rt->any_req_in) return;
    int saved = errno;
    struct sl_reqin_conn *r = sl_alloc(sizeof *r + sl_req_conn_size());
    struct sl_fd *e;
    if (!r || !sl_req_conn_init(CONN(r), rt, SL_IN, local, peer, sl_clock_now()) ||
        !(e = sl_fd_track(fd))) {
        sl_free(r);
        errno = saved;
        return;
    }
    r->rt = rt;
    r->g.dir = SL_IN;
    r->g.conn = CONN(r);
    r->peer = *peer;
    r->reads = sock_read;
    r->fd = fd;
    if ((r->has_local = local != NULL)) r->local = *local;
    e->gate = &r->g;
    sl_ready_requests(); /* its bytes may be held: every epoll wait from now on can be woken */
    errno = saved;
}

/* Decide with the newest configuration (shim/reload.h), given the
 * runtime the caller holds (rt: sl_runtime_now(), NULL before one exists). */
static inline void fresh_of(struct sl_reqin_conn *r, struct sl_runtime *rt)
{
    if (!rt || (rt = sl_reload_check(rt)) == sl_req_conn_runtime(CONN(r))) return;
    r->rt = rt;
    sl_req_conn_rebind(CONN(r), rt);
}

static void fresh(struct sl_reqin_conn *r)
{
    fresh_of(r, sl_runtime_now());
}

/* The first bytes from the peer: a TLS handshake that no library
 * sluice sees may follow (bursts.h: its record bursts are then the
 * requests), unless a session over a BIO that is not a socket turns out to
 * be the one whose hello this is (tiein.h). */
static void first_bytes(struct sl_reqin_conn *r, const void *buf, size_t n)
{
    r->first = true;
    r->hello = ((const unsigned char *)buf)[0] == 0x16; /* a TLS handshake record */
    if (!r->hello || r->lib) return;
    r->cipher = sl_tlsin_open(r->rt, r->has_local ? &r->local : NULL, &r->peer, buf, n);
}

/* The ClientHello's head, gathered over the first reads (haproxy reads the
 * record's header alone first): its random is then remembered for the
 * socket (tiein.h). */
static void hello_more(struct sl_reqin_conn *r, const void *buf, size_t n)
{
    size_t k = sizeof r->hello_head - r->hello_got;
    memcpy(r->hello_head + r->hello_got, buf, n < k ? n : k);
    r->hello_got += (uint8_t)(n < k ? n : k);
    if (r->hello_got < sizeof r->hello_head) return;
    sl_tiein_hello(r->fd, r->hello_head, sizeof r->hello_head);
    r->hello_kept = true;
    memset(r->hello_head, 0, sizeof r->hello_head);
}

/* A read of the socket as bare (the requests decided: TLS, or done), the
 * ClientHello's head gathered from it. */
static ssize_t bare_recv(struct sl_reqin_conn *r, int fd, void *buf, size_t len, int flags)
{
    ssize_t n = REAL(recv)(fd, buf, len, flags);
    if (n > 0 && r->hello && !r->lib && r->hello_got < sizeof r->hello_head && !(flags & MSG_PEEK))
        hello_more(r, buf, (size_t)n);
    return n;
}

/* n bytes of the peer's the program took from the socket (not peeked). */
static void taken(struct sl_reqin_conn *r, const void *buf, size_t n)
{
    if (r->cipher) sl_tlsin_taken(r->cipher, buf, n);
    if (r->hello && !r->lib && r->hello_got < sizeof r->hello_head) hello_more(r, buf, n);
}

/* TLS that no library sluice interposes reads: the client's record
 * bursts are the requests (bursts.h), once the gate holds nothing. */
static bool ciphertext(const struct sl_reqin_conn *r)
{
    return r->cipher && socket_reads(r) && !r->lib && r->g.stash_len == 0 && sl_req_done(CONN(r));
}

/* What look() returns when its window filled with bytes that may all
 * pass while the read asks for more: look again, wider. */
#define WIDER (-2)

/* One decision of sl_reqin_before_read over a peek of up to `size` bytes
 * into buf (wide: it is already as wide as the read and the kernel). */
static ssize_t look(int fd, struct sl_fd *e, struct sl_reqin_conn *r, size_t len, bool nonblock,
                    struct sl_hold *h, char *buf, size_t size, bool wide)
{
    int saved = errno;
    for (;;) {
        /* the kernel's own wait for data: timeouts and signals as usual */
        ssize_t n = REAL(recv)(fd, buf, size, MSG_PEEK | (nonblock ? MSG_DONTWAIT : 0));
        if (n <= 0) return n < 0 ? -1 : (errno = saved, 0);
        uint64_t now = sl_clock_now();
        struct sl_req_verdict v;
        size_t ok = sl_req_admit(CONN(r), buf, (size_t)n, now, &v);
        /* the peek shows everything the kernel has (a head that does not
         * fit passes): an incomplete head goes to the program as it is and
         * is decided when it completes (the stash: gate.h) */
        if (v.status == SL_REQ_NEED_MORE || v.status == SL_REQ_PASS) ok = (size_t)n;
        /* a window that filled and may all pass ends no request: the read
         * would be short while the kernel has more, which an edge-triggered
         * program takes for "drained" (issue 21) */
        if (!wide && ok == size && len > size) return errno = saved, WIDER;
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
            sl_gate_denied(&r->g, fd, e, &v, now);
            if (r->g.phase == SL_GATE_RESET) return errno = ECONNRESET, -1;
            errno = saved;
            return 0;
        }
        if (v.status != SL_REQ_HOLD) { /* nothing may pass yet nothing stopped it: cannot happen */
            errno = saved;
            return (ssize_t)len;
        }
        if (sl_hold_until(h, now, now + v.wait_ns) != 0) return -1; /* EAGAIN, EINTR */
    }
}

/* EAGAIN until `until`: the readiness layer hides fd's reads until then. */
ssize_t sl_reqin_before_read(int fd, struct sl_fd *e, size_t len, bool nonblock)
{
    struct sl_reqin_conn *r = REQ(e);
    fresh(r);
    if (r->g.phase == SL_GATE_ENDED) return 0;
    if (r->g.phase == SL_GATE_RESET) return errno = ECONNRESET, -1;
    if (ciphertext(r)) { /* its record bursts are the requests */
        char scratch[PEEK_MAX];
        bool reset;
        ssize_t n =
            sl_tlsin_allow(r->cipher, fd, e, scratch, len < sizeof scratch ? len : sizeof scratch,
                           nonblock ? MSG_DONTWAIT : 0, &reset);
        if (reset) r->g.phase = SL_GATE_RESET;
        return n;
    }
    if (sl_req_done(CONN(r))) return (ssize_t)len;
    struct sl_hold h = sl_hold_for(fd, e, SL_IO_RECV, nonblock);
    h.nonblock = nonblock; /* the caller asked already */
    char buf[PEEK_MAX];
    ssize_t cap = look(fd, e, r, len, nonblock, &h, buf, sizeof buf, false);
    if (cap != WIDER) return cap;
    /* as wide as the read, or as what the kernel holds if less: the bytes
     * are there, so this look does not wait */
    int saved = errno, queued;
    size_t size = len;
    if (ioctl(fd, FIONREAD, &queued) == 0 && queued >= 0 && (size_t)queued < size)
        size = (size_t)queued;
    char *wide = size > sizeof buf ? sl_alloc(size) : NULL;
    errno = saved;
    if (!wide) return (ssize_t)sizeof buf; /* no memory, or nothing more: the window */
    cap = look(fd, e, r, len, nonblock, &h, wide, size, true);
    saved = errno;
    sl_free(wide);
    errno = saved;
    return cap;
}

void sl_reqin_after_read(struct sl_fd *e, const struct iovec *iov, int iovcnt, size_t got)
{
    struct sl_reqin_conn *r = REQ(e);
    for (int i = 0; i < iovcnt && got > 0; i++) {
        size_t n = iov[i].iov_len < got ? iov[i].iov_len : got;
        if (n && !r->first) first_bytes(r, iov[i].iov_base, n); /* as sock_read's */
        sl_req_passed(CONN(r), iov[i].iov_base, n);
        taken(r, iov[i].iov_base, n);
        got -= n;
    }
}

/* The 429 due, written once through t, after every response the program
 * wrote (it read end-of-file first). */
static void reply(struct sl_reqin_conn *r, const struct sl_transport *t)
{
    if (r->g.phase != SL_GATE_ENDED || r->g.replied) return;
    r->g.replied = true;
    int saved = errno;
    if (r->g.reply_len) {
        ssize_t n = t->write(t, r->g.reply, r->g.reply_len);
        (void)n;
    }
    errno = saved;
}

/* The program ends the socket: the 429 due goes first, through the socket
 * when the requests came from it (through a TLS library: at the session's
 * end, sl_reqin_tls_end). */
void sl_reqin_shutdown(int fd, struct sl_fd *e)
{
    struct sl_transport t = sock_of(REQ(e), fd, 0);
    if (socket_reads(REQ(e))) reply(REQ(e), &t);
}

bool sl_reqin_close(int fd, struct sl_fd *e)
{
    struct sl_reqin_conn *r = REQ(e);
    if (r->g.phase == SL_GATE_RESET) { /* as an inbound reject: the client sees a reset */
        struct linger lg = {.l_onoff = 1, .l_linger = 0};
        setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
        return false;
    }
    if (r->g.phase != SL_GATE_ENDED) return false;
    int saved = errno;
    sl_reqin_shutdown(fd, e);
    REAL(shutdown)(fd, SHUT_WR);
    errno = saved;
    return true;
}

void sl_reqin_free(struct sl_fd *e)
{
    struct sl_reqin_conn *r = REQ(e);
    if (!sl_gate_in(e) || sl_gate_let_go(e)) return;
    static _Atomic bool told;
    if (r->hello_kept) sl_tiein_forget(r->fd);
    /* TLS no interposed library read: the trackers say it (bursts.c, the
     * cause included); without one, the requests were not limited at all */
    if (r->hello && socket_reads(r) && !r->lib && r->cipher) sl_tlsin_say(r->cipher);
    if (r->hello && socket_reads(r) && !r->lib && !r->cipher && !atomic_exchange(&told, true)) {
        char addr[64];
        const char *why = sl_tiein_why();
        sl_addr_format(r->peer.a, addr, sizeof addr);
        if (why)
            sl_log(SL_LOG_WARN,
                   "a connection from %s that an inbound request rule matches spoke TLS, and "
                   "the program's OpenSSL session over a BIO that is not a socket could not be "
                   "tied to it (%s): its requests were not limited (said once)",
                   addr, why);
        else
            sl_log(SL_LOG_WARN,
                   "a connection from %s that an inbound request rule matches spoke TLS, and the "
                   "program decrypted it without OpenSSL 3's SSL_read or GnuTLS's "
                   "gnutls_record_recv (a static OpenSSL, another library): its requests were "
                   "not limited (said once)",
                   addr);
    }
    e->gate = NULL;
    sl_tlsin_close(r->cipher);
    sl_req_conn_fini(CONN(r));
    sl_gate_end(&r->g); /* the stash: a request's secrets, zeroed */
    sl_free(r);
}

/* ---- the plain socket ---- */

static ssize_t sock_read(const struct sl_transport *t, void *buf, size_t n)
{
    struct sl_reqin_conn *r = t->ctx;
    ssize_t got = REAL(recv)(t->fd, buf, n, t->flags);
    if (got > 0 && !r->first) first_bytes(r, buf, (size_t)got);
    if (got > 0) taken(r, buf, (size_t)got);
    return got;
}

static ssize_t sock_more(const struct sl_transport *t, void *buf, size_t n)
{
    struct sl_reqin_conn *r = t->ctx;
    ssize_t got = REAL(recv)(t->fd, buf, n, t->flags | MSG_DONTWAIT);
    if (got > 0) taken(r, buf, (size_t)got);
    return got;
}

static ssize_t sock_write(const struct sl_transport *t, const void *buf, size_t n)
{
    return REAL(send)(t->fd, buf, n, MSG_DONTWAIT | MSG_NOSIGNAL);
}

ssize_t sl_reqin_read(int fd, struct sl_fd *e, void *buf, size_t len, int flags)
{
    struct sl_reqin_conn *r = REQ(e);
    if (r->g.phase == SL_GATE_RESET) return errno = ECONNRESET, -1;
    if (ciphertext(r)) {
        bool reset;
        ssize_t n = sl_tlsin_read(r->cipher, fd, e, buf, len, flags, &reset);
        if (n > 0 && !(flags & MSG_PEEK) && r->hello_got < sizeof r->hello_head)
            hello_more(r, buf, (size_t)n);
        if (reset) r->g.phase = SL_GATE_RESET; /* the close resets it (sl_reqin_close) */
        return n;
    }
    if (r->g.stash_len == 0 && sl_req_done(CONN(r))) return bare_recv(r, fd, buf, len, flags);
    fresh(r);
    struct sl_transport t = sock_of(r, fd, flags & ~MSG_PEEK);
    enum sl_tls_how how;
    return sl_gate_read(&r->g, e, &t, buf, len, (flags & MSG_PEEK) != 0, &how);
}

ssize_t sl_reqin_recv(struct sl_runtime *rt, int fd, struct sl_fd *e, void *buf, size_t len,
                      int flags)
{
    struct sl_reqin_conn *r = REQ(e);
    if (!socket_reads(r)) return REAL(recv)(fd, buf, len, flags); /* ciphertext: as io.c's run */
    /* anything but an open gate with an empty stash: the general read */
    if (r->g.phase != SL_GATE_OPEN || r->g.stash_len || ciphertext(r))
        return sl_reqin_read(fd, e, buf, len, flags);
    if (sl_req_done(CONN(r))) return bare_recv(r, fd, buf, len, flags);
    fresh_of(r, rt);
    ssize_t n = REAL(recv)(fd, buf, len, flags);
    if (n <= 0) return n;
    if (!r->first || r->cipher) { /* as sock_read's, errno kept as the gate's read keeps it */
        int saved = errno;
        if (!r->first) first_bytes(r, buf, (size_t)n);
        taken(r, buf, (size_t)n);
        errno = saved;
    }
    if ((n = sl_gate_took(&r->g, e, fd, buf, (size_t)n)) != SL_GATE_MORE) return n;
    /* a head that waits (now in the stash): the gate's general read */
    struct sl_transport t = sock_of(r, fd, flags);
    enum sl_tls_how how;
    return sl_gate_read(&r->g, e, &t, buf, len, false, &how);
}

void sl_reqin_tls_library(struct sl_fd *e)
{
    struct sl_reqin_conn *r = REQ(e);
    r->lib = true;
    sl_tlsin_close(r->cipher); /* its records are not counted: SSL_read shows the requests */
    r->cipher = NULL;
    if (r->hello_kept) sl_tiein_forget(r->fd);
    r->hello_kept = false;
}

bool sl_reqin_plain(const struct sl_fd *e)
{
    return socket_reads(REQ(e));
}

bool sl_reqin_stashed(const struct sl_fd *e)
{
    return REQ(e)->g.stash_len != 0;
}

/* ---- requests read through a TLS library (shim/tls.c) ---- */

/* The first read through the library (its transport t): what the plain
 * scanner saw was the TLS handshake (and passed it through), so the
 * requests start afresh. */
static bool tls_begin(struct sl_reqin_conn *r, const struct sl_transport *t)
{
    sl_req_conn_fini(CONN(r));
    r->reads = t->read;
    sl_gate_drop(&r->g);
    return sl_req_conn_init(CONN(r), r->rt, SL_IN, r->has_local ? &r->local : NULL, &r->peer,
                            sl_clock_now()); /* true: it matched at accept */
}

ssize_t sl_reqin_tls_read(struct sl_fd *e, const struct sl_transport *t, void *buf, size_t num,
                          enum sl_tls_how *how)
{
    struct sl_reqin_conn *r = REQ(e);
    *how = SL_TLS_REAL;
    if (socket_reads(r) && !tls_begin(r, t)) return t->read(t, buf, num);
    r->session = t->ctx; /* a later session on the same socket, too */
    fresh(r);
    if (num == 0 || (r->g.stash_len == 0 && r->g.phase == SL_GATE_OPEN && sl_req_done(CONN(r))))
        return t->read(t, buf, num);
    return sl_gate_read(&r->g, e, t, buf, num, false, how);
}

void sl_reqin_tls_end(struct sl_fd *e, const struct sl_transport *t)
{
    struct sl_reqin_conn *r = REQ(e);
    if (!socket_reads(r) && r->session == t->ctx) reply(r, t);
}

void sl_reqin_tls_free(struct sl_fd *e, const void *ssl)
{
    struct sl_reqin_conn *r = REQ(e);
    if (!socket_reads(r) && r->session == ssl) r->session = NULL;
}

bool sl_reqin_tls_denied(struct sl_fd *e, const void *ssl)
{
    struct sl_reqin_conn *r = REQ(e);
    return !socket_reads(r) && r->session == ssl && r->g.phase == SL_GATE_ENDED;
}
