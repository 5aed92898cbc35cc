/* SPDX-License-Identifier: BSD-2-Clause */
/* tlsrec.c - requests over TLS sluice cannot decrypt: see tlsrec.h. */
#include "tlsrec.h"

#include <errno.h>
#include <linux/tcp.h>
#include <netinet/in.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "../core/clock.h"
#include "../core/key.h"
#include "../core/log.h"
#include "../core/mem.h"
#include "../core/request.h"
#include "../core/tlsrec.h"
#include "hold.h"
#include "ready.h"
#include "reload.h"
#include "shim.h"
#include "wait.h"

struct sl_tlsrec_conn {
    struct sl_tlsrec rec;
    uint64_t received; /* the kernel's count of bytes received, at the last write */
    bool granted;      /* the burst at the stream position was let go */
    bool said;         /* the mode was logged (or needed not be) */
    struct sl_tls_hello hello;
    unsigned port;
    size_t nhead;
    char head[320];                             /* the request each burst stands for */
    _Alignas(max_align_t) unsigned char conn[]; /* a struct sl_req_conn */
};

#define CONN(t) ((struct sl_req_conn *)(void *)(t)->conn)

/* Once per process for each mode: which one connections get, and why. */
static void say_mode(const struct sl_tls_hello *h, const char *server, unsigned port)
{
    static _Atomic bool told[2];
    bool exact = sl_tls_hello_exact(h);
    if (atomic_exchange(&told[exact], true)) return;
    sl_log(SL_LOG_INFO,
           "a connection to %s port %u speaks TLS that sluice cannot decrypt (ALPN offer: %s): "
           "its requests are counted as write bursts, one per burst after each answer; %s "
           "(said once)",
           server, port,
           !h->alpn        ? "none"
           : h->alpn_h2    ? "h2"
           : h->alpn_other ? "not HTTP/1.1 only"
                           : "http/1.1 only",
           exact ? "exact for a client that does not pipeline"
                 : "approximate: h2 is offered, several streams in one burst count once");
}

struct sl_tlsrec_conn *sl_tlsrec_open(struct sl_runtime *rt, const struct sl_addr *dst, int fd,
                                      const void *buf, size_t len)
{
    struct sl_tls_hello h;
    if (sl_tls_hello_parse(buf, len, &h) != 1) return NULL;
    int saved = errno;
    struct sl_tlsrec_conn *t = sl_alloc(sizeof *t + sl_req_conn_size());
    if (!t || !sl_req_conn_init(CONN(t), rt, SL_OUT, NULL, dst, sl_clock_now())) {
        sl_free(t);
        errno = saved;
        return NULL;
    }
    sl_tlsrec_init(&t->rec);
    t->received = 0;
    t->granted = false;
    char addr[64];
    sl_addr_format(dst->a, addr, sizeof addr);
    int n = snprintf(t->head, sizeof t->head, "GET / HTTP/1.1\r\nHost: %s\r\n\r\n",
                     h.sni[0] ? h.sni : addr);
    t->nhead = n > 0 && (size_t)n < sizeof t->head ? (size_t)n : 0;
    /* said at the first burst: a program whose TLS library sluice
     * interposes (SSL_write, gnutls_record_send) never gets here again */
    t->hello = h;
    if (!h.sni[0]) memcpy(t->hello.sni, addr, sizeof addr);
    t->port = dst->port;
    (void)fd;
    errno = saved;
    return t;
}

/* The server sent bytes since the last write: the kernel's count grew. */
static void check_answer(struct sl_tlsrec_conn *t, int fd)
{
    struct tcp_info info;
    socklen_t len = sizeof info;
    memset(&info, 0, sizeof info);
    int saved = errno;
    if (REAL(getsockopt)(fd, IPPROTO_TCP, TCP_INFO, &info, &len) == 0 &&
        len > offsetof(struct tcp_info, tcpi_bytes_received) &&
        info.tcpi_bytes_received > t->received) {
        t->received = info.tcpi_bytes_received;
        sl_tlsrec_answered(&t->rec);
    }
    errno = saved;
}

ssize_t sl_tlsrec_before_write(struct sl_tlsrec_conn *t, int fd, struct sl_fd *e, const void *buf,
                               size_t len, bool nonblock_flag)
{
    if (!t->granted) check_answer(t, fd);
    size_t at = t->granted ? len : sl_tlsrec_peek(&t->rec, buf, len);
    if (at > 0 || !t->nhead || sl_req_done(CONN(t)))
        return (ssize_t)(at ? at : len); /* the bytes before a burst go first */
    struct sl_req_conn *c = CONN(t);
    if (!t->said) {
        t->said = true;
        say_mode(&t->hello, t->hello.sni, t->port);
    }
    struct sl_runtime *rt = sl_runtime();
    if (rt && (rt = sl_reload_check(rt)) != sl_req_conn_runtime(c)) sl_req_conn_rebind(c, rt);
    int saved = errno, nonblock = nonblock_flag ? 1 : -1;
    uint64_t deadline = 0;
    for (;;) {
        uint64_t now = sl_clock_now();
        struct sl_req_verdict v;
        size_t ok = sl_req_admit(c, t->head, t->nhead, now, &v);
        if (ok == t->nhead || v.status == SL_REQ_PASS || v.status == SL_REQ_NEED_MORE) {
            sl_req_passed(c, t->head, t->nhead);
            t->granted = true;
            atomic_store_explicit(&e->ready_at[SL_IO_SEND], 0, memory_order_relaxed);
            errno = saved;
            return (ssize_t)len;
        }
        if (v.status == SL_REQ_DENY || v.status == SL_REQ_SWALLOW) {
            const struct sl_rule *r = &sl_req_conn_runtime(c)->cfg->rules[v.rule];
            errno = r->err ? r->err : ECONNREFUSED;
            return -1;
        }
        uint64_t until = now + v.wait_ns; /* HOLD: its turn */
        if (nonblock < 0) nonblock = sl_fd_nonblocking(fd);
        if (nonblock) {
            sl_ready_throttle(fd, e, SL_IO_SEND, until);
            errno = EAGAIN;
            return -1;
        }
        if (!deadline) deadline = sl_wait_deadline(fd, SO_SNDTIMEO, now);
        if (sl_wait_until(until, deadline) != 0) return -1;
    }
}

void sl_tlsrec_written(struct sl_tlsrec_conn *t, const void *buf, size_t n)
{
    uint64_t before = t->rec.bursts;
    sl_tlsrec_feed(&t->rec, buf, n);
    if (t->rec.bursts != before) t->granted = false; /* the grant went with its burst */
}

void sl_tlsrec_close(struct sl_tlsrec_conn *t)
{
    if (!t) return;
    sl_req_conn_fini(CONN(t));
    sl_free(t);
}

/* ---- inbound: a server whose TLS sluice cannot decrypt (node's https) ----
 *
 * The rule of doubt, inbound: the client's records are what the program
 * reads; a burst of application-data records read after the program sent
 * something (the kernel's count of bytes sent grew) or first on the
 * connection is one request, decided like `GET /` to the server name the
 * client asked for. A read that would take the first record of a burst
 * waits for its turn (held as req.c holds a head); a denial resets the
 * connection (no 429 can be put into an encrypted stream). */

struct sl_tlsin {
    struct sl_tlsrec rec;
    uint64_t sent; /* the kernel's count of bytes sent, at the last check */
    bool granted;  /* the burst at the stream position was let go */
    size_t nhead;
    char head[320];
    char sni[256];
    _Alignas(max_align_t) unsigned char conn[]; /* a struct sl_req_conn */
};

static void say_inbound(const struct sl_tlsin *t, const struct sl_addr *local)
{
    static _Atomic bool told;
    if (atomic_exchange(&told, true)) return;
    sl_log(SL_LOG_WARN,
           "a connection to port %u that an inbound request rule matches speaks TLS that sluice "
           "cannot decrypt (the program does not use OpenSSL 3's SSL_read: linked statically, as "
           "node's is, or another library): its requests are counted as the client's record "
           "bursts, one per burst after each answer, as requests GET / to %s; exact for a client "
           "that does not pipeline; a denial resets the connection (said once)",
           local ? local->port : 0, t->sni);
}

struct sl_tlsin *sl_tlsin_open(struct sl_runtime *rt, const struct sl_addr *local,
                               const struct sl_addr *peer, const void *buf, size_t len)
{
    struct sl_tls_hello h;
    if (sl_tls_hello_parse(buf, len, &h) != 1) return NULL;
    int saved = errno;
    struct sl_tlsin *t = sl_alloc(sizeof *t + sl_req_conn_size());
    if (!t || !sl_req_conn_init(CONN(t), rt, SL_IN, local, peer, sl_clock_now())) {
        sl_free(t);
        errno = saved;
        return NULL;
    }
    sl_tlsrec_init(&t->rec);
    char addr[64] = "";
    if (local) sl_addr_format(local->a, addr, sizeof addr);
    snprintf(t->sni, sizeof t->sni, "%s", h.sni[0] ? h.sni : addr);
    int n = snprintf(t->head, sizeof t->head, "GET / HTTP/1.1\r\nHost: %s\r\n\r\n", t->sni);
    t->nhead = n > 0 && (size_t)n < sizeof t->head ? (size_t)n : 0;
    say_inbound(t, local);
    errno = saved;
    return t;
}

void sl_tlsin_taken(struct sl_tlsin *t, const void *buf, size_t n)
{
    uint64_t before = t->rec.bursts;
    sl_tlsrec_feed(&t->rec, buf, n);
    if (t->rec.bursts != before) t->granted = false; /* the grant went with its burst */
}

/* The program sent bytes since the last check: the next burst is a request. */
static void check_sent(struct sl_tlsin *t, int fd)
{
    struct tcp_info info;
    socklen_t len = sizeof info;
    memset(&info, 0, sizeof info);
    int saved = errno;
    if (REAL(getsockopt)(fd, IPPROTO_TCP, TCP_INFO, &info, &len) == 0 &&
        len > offsetof(struct tcp_info, tcpi_bytes_sent) && info.tcpi_bytes_sent > t->sent) {
        t->sent = info.tcpi_bytes_sent;
        sl_tlsrec_answered(&t->rec);
    }
    errno = saved;
}

ssize_t sl_tlsin_read(struct sl_tlsin *t, int fd, struct sl_fd *e, void *buf, size_t len, int flags,
                      bool *reset)
{
    *reset = false;
    if ((flags & MSG_PEEK) || len == 0 || !t->nhead || sl_req_done(CONN(t)))
        return REAL(recv)(fd, buf, len, flags);
    struct sl_req_conn *c = CONN(t);
    int saved = errno;
    struct sl_hold h = sl_hold_for(fd, e, SL_IO_RECV, (flags & MSG_DONTWAIT) != 0);
    for (;;) {
        /* what the kernel has: the kernel's own wait, timeouts and signals as usual */
        ssize_t n = REAL(recv)(fd, buf, len, flags | MSG_PEEK);
        if (n <= 0) return n;
        if (!t->granted) check_sent(t, fd);
        size_t at = t->granted ? (size_t)n : sl_tlsrec_peek(&t->rec, buf, (size_t)n);
        if (at > 0) { /* the bytes before a burst, or a granted burst */
            errno = saved;
            ssize_t got = REAL(recv)(fd, buf, at, flags);
            if (got > 0) sl_tlsin_taken(t, buf, (size_t)got);
            return got;
        }
        struct sl_runtime *rt = sl_runtime();
        if (rt && (rt = sl_reload_check(rt)) != sl_req_conn_runtime(c)) sl_req_conn_rebind(c, rt);
        uint64_t now = sl_clock_now();
        struct sl_req_verdict v;
        size_t ok = sl_req_admit(c, t->head, t->nhead, now, &v);
        if (ok == t->nhead || v.status == SL_REQ_PASS || v.status == SL_REQ_NEED_MORE) {
            sl_req_passed(c, t->head, t->nhead);
            t->granted = true;
            atomic_store_explicit(&e->ready_at[SL_IO_RECV], 0, memory_order_relaxed);
            continue;
        }
        if (v.status == SL_REQ_DENY || v.status == SL_REQ_SWALLOW) {
            *reset = true;
            return errno = ECONNRESET, -1;
        }
        if (sl_hold_until(&h, now, now + v.wait_ns) != 0) return -1; /* EAGAIN, EINTR */
    }
}

void sl_tlsin_close(struct sl_tlsin *t)
{
    if (!t) return;
    sl_req_conn_fini(CONN(t));
    sl_free(t);
}
