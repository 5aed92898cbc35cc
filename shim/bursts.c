/* SPDX-License-Identifier: BSD-2-Clause */
/* bursts.c - requests over TLS sluice cannot decrypt: see bursts.h. */
#include "bursts.h"

#include <errno.h>
#include <linux/sockios.h>
#include <linux/tcp.h>
#include <netinet/in.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include "../core/clock.h"
#include "../core/limit/key.h"
#include "../core/log.h"
#include "../core/mem.h"
#include "../core/http/request.h"
#include "../core/http/tlsrec.h"
#include "hold.h"
#include "reload.h"
#include "shim.h"
#include "tiein.h"
#include "unseen.h"

struct sl_bursts_out {
    struct sl_tlsrec rec;
    uint64_t received; /* the kernel's count of bytes received, at the last write */
    bool granted;      /* the burst at the stream position was let go */
    bool said;         /* the mode was logged (or needed not be) */
    bool any_granted;  /* some burst went: an answer may be on its way */
    bool hello_seen;   /* the ClientHello's write was looked at */
    bool prepaid;      /* the first burst was granted at the ClientHello */
    struct {
        uint64_t by;         /* a refused burst ends the connection by then (0: none) */
        uint64_t quiet_from; /* ... once nothing came in since this time */
        uint64_t received;   /* the kernel's count of bytes received, at the last look */
    } refusal;               /* refusal_wait's */
    struct sl_tls_hello hello;
    unsigned port;
    size_t nhead;
    char head[320];                             /* the request each burst stands for */
    _Alignas(max_align_t) unsigned char conn[]; /* a struct sl_req_conn */
};

#define CONN(t) ((struct sl_req_conn *)(void *)(t)->conn)

/* A tracker of `size` bytes whose struct sl_req_conn (its last member, at
 * `off`) is set up for a connection: NULL without memory or a rule. */
static void *tracker_new(size_t size, size_t off, struct sl_runtime *rt, enum sl_dir dir,
                         const struct sl_addr *local, const struct sl_addr *peer)
{
    int saved = errno;
    char *t = sl_alloc(size + sl_req_conn_size());
    if (t && !sl_req_conn_init((struct sl_req_conn *)(void *)(t + off), rt, dir, local, peer,
                               sl_clock_now())) {
        sl_free(t);
        t = NULL;
    }
    errno = saved;
    return t;
}

/* The request each burst stands for, GET / to `host`: its length (0: it
 * does not fit). */
static size_t burst_head(char *head, size_t cap, const char *host)
{
    int n = snprintf(head, cap, "GET / HTTP/1.1\r\nHost: %s\r\n\r\n", host);
    return n > 0 && (size_t)n < cap ? (size_t)n : 0;
}

/* Whether the kernel's count of bytes fd received (or sent) grew past
 * *last since the last look: the other side's turn came (core/http/tlsrec.h). */
static bool tcp_count_grew(int fd, bool sent, uint64_t *last)
{
    struct tcp_info info;
    socklen_t len = sizeof info;
    memset(&info, 0, sizeof info);
    int saved = errno;
    size_t need = sent ? offsetof(struct tcp_info, tcpi_bytes_sent)
                       : offsetof(struct tcp_info, tcpi_bytes_received);
    bool grew = false;
    if (REAL(getsockopt)(fd, IPPROTO_TCP, TCP_INFO, &info, &len) == 0 && len > need) {
        uint64_t now = sent ? info.tcpi_bytes_sent : info.tcpi_bytes_received;
        grew = now > *last;
        if (grew) *last = now;
    }
    errno = saved;
    return grew;
}

/* How long a refused burst waits before it ends the connection (0: end
 * now). The program's TLS state counts the refused records as sent, so
 * the connection cannot go on; but the answers of the bursts that went
 * are let in first. sluice cannot see where they end: h2 streams inside
 * TLS it cannot read, where the refused burst is as likely a frame of the
 * client's own (a WINDOW_UPDATE or SETTINGS ACK after the answer it read,
 * each a burst under the rule of doubt) as a request. So it waits while
 * bytes still come in or lie unread in the socket, until none did for
 * REFUSAL_QUIET_NS, and never past the rule's max_delay from the refusal:
 * a client is not told a call failed whose answer was arriving (Java's
 * HttpClient was told so of a call nginx had served). A connection on
 * which no burst went has no answer to wait for, nor has one that offered
 * only HTTP/1.1: a burst there begins once an answer came (its client
 * does not pipeline, or the count is not exact anyway). */
#define REFUSAL_QUIET_NS (SL_NS_PER_SEC / 20)
#define REFUSAL_STEP_NS  (SL_NS_PER_SEC / 200)
static uint64_t refusal_wait(struct sl_bursts_out *t, int fd, const struct sl_rule *r, uint64_t now)
{
    if (!t->any_granted || sl_tls_hello_exact(&t->hello)) return 0;
    if (!t->refusal.by) {
        t->refusal.by = now + r->max_delay_ns;
        t->refusal.quiet_from = now;
    }
    int unread = 0, saved = errno;
    if (ioctl(fd, SIOCINQ, &unread) != 0) unread = 0;
    errno = saved;
    if (tcp_count_grew(fd, false, &t->refusal.received) || unread > 0) t->refusal.quiet_from = now;
    uint64_t until = t->refusal.quiet_from + REFUSAL_QUIET_NS;
    if (until > t->refusal.by) until = t->refusal.by;
    if (now >= until) return 0;
    return until - now < REFUSAL_STEP_NS ? until - now : REFUSAL_STEP_NS;
}

/* Decide with the newest configuration (shim/reload.h). */
static void fresh(struct sl_req_conn *c)
{
    struct sl_runtime *rt = sl_runtime_now();
    if (rt && (rt = sl_reload_check(rt)) != sl_req_conn_runtime(c)) sl_req_conn_rebind(c, rt);
}

/* The burst at the stream position, as the request `head` stands for it:
 * 1 granted, 0 held (v->wait_ns), -1 denied (v->rule). */
static int decide_burst(struct sl_req_conn *c, const char *head, size_t nhead, uint64_t now,
                        struct sl_req_verdict *v)
{
    /* records: no 429 can be put into a stream sluice cannot encrypt */
    sl_req_reply_waits(c, SL_NO_REPLY_RECORDS);
    size_t ok = sl_req_admit(c, head, nhead, now, v);
    if (ok == nhead || v->status == SL_REQ_PASS || v->status == SL_REQ_NEED_MORE) {
        sl_req_passed(c, head, nhead);
        return 1;
    }
    return v->status == SL_REQ_DENY || v->status == SL_REQ_SWALLOW ? -1 : 0;
}

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

/* The connection's mode, at its first burst (or its refusal at the
 * ClientHello). */
static void say_once(struct sl_bursts_out *t)
{
    if (t->said) return;
    t->said = true;
    say_mode(&t->hello, t->hello.sni, t->port);
}

struct sl_bursts_out *sl_bursts_open(struct sl_runtime *rt, const struct sl_addr *dst, int fd,
                                     const void *buf, size_t len)
{
    struct sl_tls_hello h;
    if (sl_tls_hello_parse(buf, len, &h) != 1) return NULL;
    struct sl_bursts_out *t =
        tracker_new(sizeof *t, offsetof(struct sl_bursts_out, conn), rt, SL_OUT, NULL, dst);
    if (!t) return NULL;
    sl_tlsrec_init(&t->rec);
    t->received = 0;
    t->granted = t->any_granted = t->hello_seen = t->prepaid = false;
    memset(&t->refusal, 0, sizeof t->refusal);
    char addr[64];
    sl_addr_format(dst->a, addr, sizeof addr);
    t->nhead = burst_head(t->head, sizeof t->head, h.sni[0] ? h.sni : addr);
    /* said at the first burst: a program whose TLS library sluice
     * interposes (SSL_write, gnutls_record_send) never gets here again */
    t->hello = h;
    if (!h.sni[0]) memcpy(t->hello.sni, addr, sizeof addr);
    t->port = dst->port;
    (void)fd;
    return t;
}

/* The connection's end at a refusal: its reads meet the end at once, and
 * the write fails with the rule's errno. */
static ssize_t refuse(int fd, struct sl_req_conn *c, int rule)
{
    const struct sl_rule *r = &sl_req_conn_runtime(c)->cfg->rules[rule];
    REAL(shutdown)(fd, SHUT_RDWR);
    errno = r->err ? r->err : ECONNREFUSED;
    return -1;
}

/* The ClientHello's write, when h2 is offered and no library sluice reads
 * can have written it (sl_unseen_tls_certain: else its session may yet
 * show its requests through SSL_write, and the tracker is dropped): the
 * first burst is decided now. A refusal fails the ClientHello, which
 * clients take as a connection that could not be made; a refusal of the
 * first burst after the handshake was lost by undici (its request never
 * settled: a session that ends as it starts) or waited for Java's whole
 * timeout. A grant is kept for the first burst (prepaid); a wait is left
 * to it. -1: refused. */
static int hello_turn(struct sl_bursts_out *t, int fd)
{
    t->hello_seen = true;
    if (sl_tls_hello_exact(&t->hello) || !t->nhead || !sl_unseen_tls_certain()) return 0;
    struct sl_req_conn *c = CONN(t);
    fresh(c);
    struct sl_req_verdict v;
    int d = decide_burst(c, t->head, t->nhead, sl_clock_now(), &v);
    if (d > 0) t->prepaid = true;
    if (d >= 0) return 0;
    say_once(t);
    return refuse(fd, c, v.rule), -1;
}

ssize_t sl_bursts_before_write(struct sl_bursts_out *t, int fd, struct sl_fd *e, const void *buf,
                               size_t len, bool nonblock_flag)
{
    if (!t->hello_seen) {
        int saved = errno;
        if (hello_turn(t, fd) < 0) return -1;
        errno = saved;
    }
    if (!t->granted && tcp_count_grew(fd, false, &t->received)) sl_tlsrec_answered(&t->rec);
    size_t at = t->granted ? len : sl_tlsrec_peek(&t->rec, buf, len);
    if (at > 0 || !t->nhead || sl_req_done(CONN(t)))
        return (ssize_t)(at ? at : len); /* the bytes before a burst go first */
    struct sl_req_conn *c = CONN(t);
    say_once(t);
    fresh(c);
    int saved = errno;
    struct sl_hold h = sl_hold_for(fd, e, SL_IO_SEND, nonblock_flag);
    for (;;) {
        uint64_t now = sl_clock_now();
        struct sl_req_verdict v;
        int d = t->prepaid ? 1 : decide_burst(c, t->head, t->nhead, now, &v);
        if (d > 0) {
            t->prepaid = false;
            t->granted = t->any_granted = true;
            t->refusal.by = 0;
            atomic_store_explicit(&e->ready_at[SL_IO_SEND], 0, memory_order_relaxed);
            errno = saved;
            return (ssize_t)len;
        }
        if (d < 0) {
            /* the program's TLS state counts the refused records sent: the
             * connection cannot go on, so it ends (once the answers on
             * their way are in: refusal_wait), and a client that ignores
             * a failed write (node's http2 under undici) hears of it at
             * once rather than at its own timeout */
            uint64_t wait = refusal_wait(t, fd, &sl_req_conn_runtime(c)->cfg->rules[v.rule], now);
            if (wait) {
                if (sl_hold_until(&h, now, now + wait) != 0) return -1;
                continue;
            }
            return refuse(fd, c, v.rule);
        }
        if (sl_hold_until(&h, now, now + v.wait_ns) != 0) return -1; /* HOLD: its turn */
    }
}

void sl_bursts_written(struct sl_bursts_out *t, const void *buf, size_t n)
{
    uint64_t before = t->rec.bursts;
    sl_tlsrec_feed(&t->rec, buf, n);
    if (t->rec.bursts != before) t->granted = false; /* the grant went with its burst */
}

void sl_bursts_close(struct sl_bursts_out *t)
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
 * waits for its turn (held as reqin.c holds a head); a denial resets the
 * connection (no 429 can be put into an encrypted stream). */

struct sl_tlsin {
    struct sl_tlsrec rec;
    uint64_t sent; /* the kernel's count of bytes sent, at the last check */
    bool granted;  /* the burst at the stream position was let go */
    size_t nhead;
    char head[320];
    char sni[256];
    unsigned port;                              /* the server's, for the log */
    _Alignas(max_align_t) unsigned char conn[]; /* a struct sl_req_conn */
};

void sl_tlsin_say(const struct sl_tlsin *t)
{
    static _Atomic bool told;
    if (atomic_exchange(&told, true)) return;
    const char *why = sl_tiein_why(); /* the program's OpenSSL over a BIO of its own: untied */
    if (why) {
        sl_log(SL_LOG_WARN,
               "a connection to port %u that an inbound request rule matches speaks TLS that the "
               "program decrypts with OpenSSL over a BIO that is not a socket, and sluice could "
               "not tie its session to the connection (%s): its requests are counted per "
               "address, as the client's record bursts, one per burst after each answer, as "
               "requests GET / to %s; a denial resets the connection (under `reply`, a request "
               "first waits its turn within max_delay) (said once)",
               t->port, why, t->sni);
        return;
    }
    sl_log(SL_LOG_WARN,
           "a connection to port %u that an inbound request rule matches speaks TLS that sluice "
           "cannot decrypt (the program uses neither OpenSSL 3's SSL_read nor GnuTLS's "
           "gnutls_record_recv: a static OpenSSL, as node's is, or another library): its "
           "requests are counted as the client's record "
           "bursts, one per burst after each answer, as requests GET / to %s; exact for a client "
           "that does not pipeline; a denial resets the connection (under `reply`, a request "
           "first waits its turn within max_delay) (said once)",
           t->port, t->sni);
}

struct sl_tlsin *sl_tlsin_open(struct sl_runtime *rt, const struct sl_addr *local,
                               const struct sl_addr *peer, const void *buf, size_t len)
{
    /* a first read may hold only part of the hello (a 1-byte peek, a
     * record header): the records are followed from the first byte all
     * the same, the local address standing for the server name */
    struct sl_tls_hello h;
    if (sl_tls_hello_parse(buf, len, &h) < 0) return NULL;
    struct sl_tlsin *t =
        tracker_new(sizeof *t, offsetof(struct sl_tlsin, conn), rt, SL_IN, local, peer);
    if (!t) return NULL;
    sl_tlsrec_init(&t->rec);
    char addr[64] = "";
    if (local) sl_addr_format(local->a, addr, sizeof addr);
    snprintf(t->sni, sizeof t->sni, "%s", h.sni[0] ? h.sni : addr);
    t->nhead = burst_head(t->head, sizeof t->head, t->sni);
    t->port = local ? local->port : 0;
    return t;
}

void sl_tlsin_taken(struct sl_tlsin *t, const void *buf, size_t n)
{
    uint64_t before = t->rec.bursts;
    sl_tlsrec_feed(&t->rec, buf, n);
    if (t->rec.bursts != before) t->granted = false; /* the grant went with its burst */
}

ssize_t sl_tlsin_allow(struct sl_tlsin *t, int fd, struct sl_fd *e, void *scratch, size_t len,
                       int flags, bool *reset)
{
    *reset = false;
    if (len == 0 || !t->nhead || sl_req_done(CONN(t))) return (ssize_t)len;
    struct sl_req_conn *c = CONN(t);
    int saved = errno;
    struct sl_hold h = sl_hold_for(fd, e, SL_IO_RECV, (flags & MSG_DONTWAIT) != 0);
    for (;;) {
        /* what the kernel has: the kernel's own wait, timeouts and signals as usual */
        ssize_t n = REAL(recv)(fd, scratch, len, (flags & MSG_DONTWAIT) | MSG_PEEK);
        if (n <= 0) return n;
        if (!t->granted && tcp_count_grew(fd, true, &t->sent)) sl_tlsrec_answered(&t->rec);
        size_t at = t->granted ? (size_t)n : sl_tlsrec_peek(&t->rec, scratch, (size_t)n);
        if (at > 0) { /* the bytes before a burst, or a granted burst */
            errno = saved;
            return (ssize_t)at;
        }
        sl_tlsin_say(t);
        fresh(c);
        uint64_t now = sl_clock_now();
        struct sl_req_verdict v;
        int d = decide_burst(c, t->head, t->nhead, now, &v);
        if (d > 0) {
            t->granted = true;
            atomic_store_explicit(&e->ready_at[SL_IO_RECV], 0, memory_order_relaxed);
            continue;
        }
        if (d < 0) {
            *reset = true;
            return errno = ECONNRESET, -1;
        }
        if (sl_hold_until(&h, now, now + v.wait_ns) != 0) return -1; /* EAGAIN, EINTR */
    }
}

ssize_t sl_tlsin_read(struct sl_tlsin *t, int fd, struct sl_fd *e, void *buf, size_t len, int flags,
                      bool *reset)
{
    *reset = false;
    if (flags & MSG_PEEK) return REAL(recv)(fd, buf, len, flags);
    ssize_t ok = sl_tlsin_allow(t, fd, e, buf, len, flags, reset);
    if (ok <= 0) return ok;
    ssize_t got = REAL(recv)(fd, buf, (size_t)ok, flags);
    if (got > 0) sl_tlsin_taken(t, buf, (size_t)got);
    return got;
}

void sl_tlsin_close(struct sl_tlsin *t)
{
    if (!t) return;
    sl_req_conn_fini(CONN(t));
    sl_free(t);
}
