/* SPDX-License-Identifier: BSD-2-Clause */
/* tls.c - requests on connections the program decrypts with OpenSSL.
 *
 * A server that terminates TLS itself (nginx `ssl`, python's ssl module)
 * reads requests with SSL_read or SSL_read_ex, not with recv: the bytes
 * shim/reqin.c would look at are ciphertext. So those two are interposed
 * too, on a connection an inbound request rule matches, and read through
 * reqin.c's gate (sl_reqin_tls_read) over this file's OpenSSL transport
 * (SSL_read; a read that never waits; SSL_write for the 429), which gives
 * the program only what may pass, exactly as for plain connections. What the program
 * then asks of the library about that call is answered for it:
 *   - SSL_get_error: want-read while a request is held (the socket is
 *     announced readable when its turn comes, ready.h), zero-return for a
 *     denied request (the program ends the session as if the client had),
 *     syscall with ECONNRESET for a rejected one;
 *   - SSL_get_shutdown: the client's close_notify "received" after a
 *     denial (python reads end-of-file only then);
 *   - SSL_set_shutdown, SSL_shutdown, SSL_free: the 429 due is written
 *     through the session first, after every response the program wrote;
 *   - SSL_want (puma asks SSL_want_read before SSL_get_error): what
 *     SSL_get_error says, as a state;
 *   - SSL_shutdown is a new call: SSL_get_error then says the library's
 *     own (python's unwrap asks it, and a denial's zero-return there would
 *     fail the shutdown before the 429 left).
 * The session is tied to its socket by SSL_get_rfd. A server that runs
 * OpenSSL over a BIO of its own (apache's mod_ssl, haproxy) or over memory
 * BIOs (puma's MiniSSL, python's asyncio and uvloop: uvicorn) reads the
 * socket itself and the session has no descriptor: it is tied to the
 * socket whose first bytes were its ClientHello (tiein.h: reqin.c
 * remembers the hello's client random per socket, tlsown.c compares
 * SSL_get_client_random once the library has read the hello, at the end
 * of a handshake step or at an SSL_read), and read as any other from then
 * on; its 429 is written through it (SSL_write into the program's BIO)
 * before the library's close_notify, and the program sends both. A
 * server session that matches no socket is marked untied, its connection
 * counted as TLS records per address (bursts.h), and said once with the
 * cause. So are sessions over memory BIOs while an inbound rule delays
 * (tlsown.c): python's loops would never read a held request at its
 * turn. A held request of a session over the program's own BIO is
 * followed by a peek that meets the socket's end (tlsown.c), or haproxy
 * would ask again at once until the turn.
 *
 * The real functions are found lazily, at the first call: a program that
 * never loads libssl never gets here, and one that loads it later with
 * dlopen(RTLD_LOCAL) (python) is found through sl_resolve_next's NOLOAD
 * lookup. These exports carry no symbol version (shim/exports.map is an
 * anonymous version node), so they satisfy references to
 * SSL_read@OPENSSL_3.0.0; the real ones are fetched with that version.
 *
 * TLS 1.3 early data (0-RTT) is refused on a connection an inbound
 * request rule matches: SSL_read_early_data, the only way a server takes
 * it, sets the session's max_early_data to 0 before the real call reads
 * the ClientHello, so the library rejects the early data (and skips its
 * records), issues tickets that offer none, and the client sends its
 * requests again after the handshake, where SSL_read counts them. A
 * replayable 0-RTT request could not be held or denied by the rules
 * anyway; sessions no rule matches keep 0-RTT. A client's early data needs
 * no hook of its own: OpenSSL's SSL_write_early_data writes it through
 * SSL_write_ex, which binds to ours, so it is counted as any write (a hook
 * on both would see each early request twice).
 *
 * Outbound (the program is a TLS client, shim/reqout.h): SSL_write and
 * SSL_write_ex hand the plaintext to reqout.c (sl_reqout_tls_write, over
 * this file's OpenSSL transport, or tlsbio.h's for memory BIOs) before the
 * library encrypts it; a request that must wait makes the write wait
 * (blocking) or fail with want-write, and a rejected one fails it with the
 * rule's errno. A write through the library is all or nothing, so it
 * waits for its last request. SSL_read and SSL_read_ex of a session an
 * outbound `reply` rule matches read through the gate (gate.h:
 * sl_gate_read_replies): a queued 429 first, then the server's bytes,
 * counted as responses. The session is tied to its socket by SSL_get_wfd.
 *
 * HTTP/2 on a non-blocking socket (curl, libcurl) is the exception: a
 * write that must wait is taken, reported written and kept (reqout.h),
 * instead of failing with want-write. curl 7.88 (Debian
 * 12) treats a want-write met while it answers the server's SETTINGS in
 * its read path as a fatal send error (exit 55; 92 with several streams).
 * The kept bytes go, in order and before anything the program writes
 * after them, at its first call on the session once their turn came; the
 * socket is reported readable then (ready.h), so an event loop calls
 * SSL_read. What the program writes meanwhile is kept behind them, up to
 * SL_REQOUT_KEEP_MAX, beyond which it gets want-write as before.
 */
#include <errno.h>
#include <limits.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <stdatomic.h>

#include "fd.h"
#include "reqin.h"
#include "reload.h"
#include "reqout.h"
#include "lazy.h"
#include "shim.h"
#include "tie.h"
#include "tlsbio.h"
#include "tlsown.h"
#include "unseen.h"
#include "wait.h"

#define SSL_VERSION "OPENSSL_3.0.0"
#define SSL_LIB     SL_LIB_OPENSSL

static struct {
    int (*read)(SSL *, void *, int);
    int (*read_ex)(SSL *, void *, size_t, size_t *);
    int (*write)(SSL *, const void *, int);
    int (*write_ex)(SSL *, const void *, size_t, size_t *);
    int (*get_wfd)(const SSL *);
    int (*connect)(SSL *);
    int (*do_handshake)(SSL *);
    int (*accept)(SSL *);
    int (*get_error)(const SSL *, int);
    int (*get_rfd)(const SSL *);
    int (*get_shutdown)(const SSL *);
    void (*set_shutdown)(SSL *, int);
    int (*shutdown)(SSL *);
    void (*free)(SSL *);
    int (*read_early_data)(SSL *, void *, size_t, size_t *);
    int (*set_max_early_data)(SSL *, uint32_t);
    int (*want)(const SSL *);
} real;

#define REAL_SSL(field, name, ours)                                                                \
    ((__typeof__(real.field))sl_resolve_lazy((void *_Atomic *)&real.field, name, SSL_VERSION,      \
                                             SSL_LIB, (void *)(ours), true))

/* The thread's last call this file answered for the library (a write
 * held: want-write). */
#define SL_TLS_WANT_WRITE ((enum sl_tls_how)100)
static _Thread_local struct {
    const SSL *ssl;
    enum sl_tls_how how;
    int err; /* SL_TLS_RESET: the errno to report (0: ECONNRESET) */
} last;

/* The descriptor entry of a session (inbound: its read side, or the socket
 * it was tied to; outbound: its write side, or the socket it was tied to),
 * when a rule of that direction counts requests; the gate is checked by
 * the caller. */
static struct sl_fd *session_entry(const SSL *ssl, enum sl_dir dir, int *fd)
{
    struct sl_runtime *rt = atomic_load_explicit(&sl_runtime_ptr, memory_order_relaxed);
    if (!rt || !(dir == SL_IN ? rt->any_req_in : rt->any_req_out) || !ssl) return NULL;
    int (*get_fd)(const SSL *) = dir == SL_IN ? REAL_SSL(get_rfd, "SSL_get_rfd", NULL)
                                              : REAL_SSL(get_wfd, "SSL_get_wfd", NULL);
    if (!get_fd) return NULL;
    int saved = errno;
    *fd = get_fd(ssl);
    if (*fd < 0)
        *fd = dir == SL_OUT ? sl_tls_tied_fd(ssl) /* curl: its own BIO */
                            : sl_tlsown_fd(ssl);  /* apache, puma: tlsown.h */
    errno = saved;
    return *fd >= 0 ? sl_fd_get(*fd) : NULL;
}

/* The descriptor entry of a session whose requests are counted, or NULL. */
static struct sl_fd *tracked(const SSL *ssl, int *fd)
{
    struct sl_fd *e = session_entry(ssl, SL_IN, fd);
    return e && sl_gate_in(e) ? e : NULL;
}

/* ---- inbound sessions: the OpenSSL transport (ctx: the SSL *) ---- */

static ssize_t in_read(const struct sl_transport *t, void *buf, size_t n)
{
    return REAL_SSL(read, "SSL_read", SSL_read)(t->ctx, buf, n > INT_MAX ? INT_MAX : (int)n);
}

/* The library reads the socket as the program set it: on a blocking one,
 * only when the socket has bytes now (what OpenSSL itself buffered is
 * then left for the program's next read, which decides the head). */
static ssize_t in_more(const struct sl_transport *t, void *buf, size_t n)
{
    if (!sl_fd_nonblocking(t->fd)) {
        struct pollfd p = {.fd = t->fd, .events = POLLIN};
        if (REAL(poll)(&p, 1, 0) != 1) return errno = EAGAIN, -1;
    }
    return in_read(t, buf, n);
}

/* The 429 of a denial, written through the session as it ends. */
static ssize_t in_write(const struct sl_transport *t, const void *buf, size_t n)
{
    int (*w)(SSL *, const void *, int) = REAL_SSL(write, "SSL_write", NULL);
    return w ? w(t->ctx, buf, n > INT_MAX ? INT_MAX : (int)n) : -1;
}

static struct sl_transport in_transport(SSL *ssl, int fd)
{
    return (struct sl_transport){
        .read = in_read, .more = in_more, .write = in_write, .fd = fd, .ctx = ssl};
}

static struct sl_fd *tracked_out(const SSL *ssl, int *fd);
static int read_out(SSL *ssl, void *buf, size_t num, size_t *got,
                    int (*own)(SSL *, void *, size_t, size_t *));

static int read_ex_of_read(SSL *ssl, void *buf, size_t n, size_t *got)
{
    int r = REAL_SSL(read, "SSL_read", SSL_read)(ssl, buf, n > INT_MAX ? INT_MAX : (int)n);
    *got = r > 0 ? (size_t)r : 0;
    return r;
}

static int read_ex_real(SSL *ssl, void *buf, size_t n, size_t *got)
{
    return REAL_SSL(read_ex, "SSL_read_ex", SSL_read_ex)(ssl, buf, n, got);
}

/* SSL_read and SSL_read_ex: the program's read of up to num bytes (> 0
 * read, with *got; else the library's failure, or the gate's: see last).
 * own: the program's own form, for sessions sluice does not count. */
static int read_through(SSL *ssl, void *buf, size_t num, size_t *got,
                        int (*own)(SSL *, void *, size_t, size_t *))
{
    int fd;
    struct sl_fd *e = tracked(ssl, &fd);
    last.ssl = NULL;
    *got = 0;
    if (!e) return read_out(ssl, buf, num, got, own);
    /* SSL_read with an int count reads the same records */
    struct sl_transport t = in_transport(ssl, fd);
    enum sl_tls_how how;
    int n = (int)sl_reqin_tls_read(e, &t, buf, num > INT_MAX ? INT_MAX : num, &how);
    if (how != SL_TLS_REAL) last.ssl = ssl, last.how = how, last.err = 0;
    if (how == SL_TLS_WANT_READ) sl_tlsown_drain(ssl); /* haproxy: tlsown.c */
    *got = n > 0 ? (size_t)n : 0;
    return n;
}

SL_EXPORT int SSL_read(SSL *ssl, void *buf, int num)
{
    if (num < 0) return REAL_SSL(read, "SSL_read", SSL_read)(ssl, buf, num); /* its own error */
    size_t got;
    int ret = read_through(ssl, buf, (size_t)num, &got, read_ex_of_read);
    return ret > 0 ? (int)got : ret;
}

SL_EXPORT int SSL_read_ex(SSL *ssl, void *buf, size_t num, size_t *readbytes)
{
    size_t got;
    int ret = read_through(ssl, buf, num, &got, read_ex_real);
    if (readbytes) *readbytes = ret > 0 ? got : 0;
    return ret > 0;
}

SL_EXPORT int SSL_read_early_data(SSL *ssl, void *buf, size_t num, size_t *readbytes)
{
    int fd;
    last.ssl = NULL;
    if (tracked(ssl, &fd)) { /* before the ClientHello is read: see the top */
        int (*set_max)(SSL *, uint32_t) =
            REAL_SSL(set_max_early_data, "SSL_set_max_early_data", NULL);
        if (set_max) set_max(ssl, 0);
    }
    return REAL_SSL(read_early_data, "SSL_read_early_data", SSL_read_early_data)(ssl, buf, num,
                                                                                 readbytes);
}

/* The handshake: a session without a descriptor of its own is tied to the
 * socket its first nested send reaches. */
static int handshake(SSL *ssl, int (*real_call)(SSL *))
{
    struct sl_runtime *rt = atomic_load_explicit(&sl_runtime_ptr, memory_order_relaxed);
    int (*get_wfd)(const SSL *) = REAL_SSL(get_wfd, "SSL_get_wfd", NULL);
    bool tie = rt && rt->any_req_out && get_wfd && get_wfd(ssl) < 0 && sl_tls_tied_fd(ssl) < 0;
    if (tie) sl_tls_tying = ssl;
    int in_fd;
    struct sl_fd *in = rt && rt->any_req_in ? session_entry(ssl, SL_IN, &in_fd) : NULL;
    if (in && sl_gate_in(in)) sl_reqin_tls_library(in); /* its SSL_read shows the requests */
    int rc = real_call(ssl);
    if (rt && rt->any_req_in && !in) {
        int saved = errno;
        session_entry(ssl, SL_IN, &in_fd); /* a server's own BIO: tied once the hello was read */
        errno = saved;
    }
    if (tie) sl_tls_tying = NULL;
    if (tie && sl_tls_tied_fd(ssl) < 0) sl_tlsbio_remember(ssl); /* memory BIOs: tlsbio.h */
    return rc;
}

SL_EXPORT int SSL_connect(SSL *ssl)
{
    last.ssl = NULL;
    return handshake(ssl, REAL_SSL(connect, "SSL_connect", SSL_connect));
}

/* A server's handshake: inbound, it marks the connection as read through
 * SSL_read (reqin.h), so no record burst is counted during it. */
SL_EXPORT int SSL_accept(SSL *ssl)
{
    last.ssl = NULL;
    return handshake(ssl, REAL_SSL(accept, "SSL_accept", SSL_accept));
}

SL_EXPORT int SSL_do_handshake(SSL *ssl)
{
    last.ssl = NULL;
    return handshake(ssl, REAL_SSL(do_handshake, "SSL_do_handshake", SSL_do_handshake));
}

/* The descriptor entry of a session whose outbound requests are counted
 * (shim/reqout.h), or NULL. */
static struct sl_fd *tracked_out(const SSL *ssl, int *fd)
{
    struct sl_fd *e = session_entry(ssl, SL_OUT, fd);
    return e && sl_gate_out(e) && sl_reqout_tls(e) ? e : NULL;
}

static int write_ex_of_write(SSL *ssl, const void *buf, size_t n, size_t *got)
{
    int (*w)(SSL *, const void *, int) = REAL_SSL(write, "SSL_write", SSL_write);
    int r = w(ssl, buf, n > INT_MAX ? INT_MAX : (int)n);
    *got = r > 0 ? (size_t)r : 0;
    return r > 0;
}

static int write_ex_real(SSL *ssl, const void *buf, size_t n, size_t *got)
{
    return REAL_SSL(write_ex, "SSL_write_ex", SSL_write_ex)(ssl, buf, n, got);
}

/* ---- outbound sessions: the OpenSSL transport (memory BIOs: tlsbio.h) ---- */

/* The program's own forms of the library's calls, on one session. */
struct ssl_io {
    SSL *ssl;
    int (*read)(SSL *, void *, size_t, size_t *);
    int (*write)(SSL *, const void *, size_t, size_t *);
};

static ssize_t out_read(const struct sl_transport *t, void *buf, size_t n)
{
    const struct ssl_io *x = t->ctx;
    size_t got = 0;
    int r = x->read(x->ssl, buf, n, &got);
    return r > 0 ? (ssize_t)got : r;
}

/* The read's failure r was the server's close_notify. */
static bool out_ended(const struct sl_transport *t, ssize_t r)
{
    const struct ssl_io *x = t->ctx;
    int saved = errno;
    bool end = REAL_SSL(get_error, "SSL_get_error", SSL_get_error)(x->ssl, (int)r) ==
               SSL_ERROR_ZERO_RETURN;
    errno = saved;
    return end;
}

static ssize_t out_write(const struct sl_transport *t, const void *buf, size_t n)
{
    const struct ssl_io *x = t->ctx;
    size_t got = 0;
    return x->write(x->ssl, buf, n, &got) && got ? (ssize_t)got : -1;
}

/* The transport of an outbound session on fd: the library's own reads
 * and writes; a session over memory BIOs writes through tlsbio.h's (its
 * reads are the library's, as over a socket). */
static struct sl_transport out_transport(struct sl_fd *e, int fd, struct ssl_io *x, bool writes)
{
    if (writes && sl_reqout_bio(e)) return sl_tlsbio_transport(x->ssl, fd);
    return (struct sl_transport){
        .read = out_read, .ended = out_ended, .write = out_write, .fd = fd, .ctx = x};
}

/* A read of a session no inbound request rule counts: kept writes go
 * first when due (reqout.h), and when an outbound `reply` rule matches it
 * the read goes through the gate (a queued 429 first, the responses
 * counted); else it is the library's own. */
static int read_out(SSL *ssl, void *buf, size_t num, size_t *got,
                    int (*own)(SSL *, void *, size_t, size_t *))
{
    int fd;
    struct sl_fd *e = tracked_out(ssl, &fd);
    if (!e) return own(ssl, buf, num, got);
    struct ssl_io kept = {.ssl = ssl, .write = write_ex_real}, x = {.ssl = ssl, .read = own};
    struct sl_transport k = out_transport(e, fd, &kept, true);
    sl_reqout_tls_flush(e, &k);
    struct sl_gate *g = num > 0 ? sl_reqout_replying(e, true) : NULL;
    if (!g) return own(ssl, buf, num, got);
    struct sl_transport t = out_transport(e, fd, &x, false);
    struct iovec v = {.iov_base = buf, .iov_len = num};
    bool mine;
    ssize_t n = sl_gate_read_replies(g, e, &t, &v, 1, false, &mine);
    *got = n > 0 ? (size_t)n : 0;
    if (n == 0 && mine) last.ssl = ssl, last.how = SL_TLS_EOF; /* after a closing 429 */
    return n > 0 ? 1 : (int)n;
}

/* SSL_write and SSL_write_ex (w: the program's form) of n bytes on a
 * session whose requests are counted: the count handled, or -1 with
 * `last` or the library's error to report. */
static ssize_t write_out(SSL *ssl, int fd, struct sl_fd *e, const void *buf, size_t n,
                         int (*w)(SSL *, const void *, size_t, size_t *))
{
    struct ssl_io x = {.ssl = ssl, .write = w};
    struct sl_transport t = out_transport(e, fd, &x, true);
    bool refused;
    ssize_t k = sl_reqout_tls_write(e, &t, buf, n, &refused);
    if (k > 0 || !refused) return k > 0 ? k : -1;
    last.ssl = ssl;
    if (errno == EAGAIN || errno == EINTR) {
        last.how = SL_TLS_WANT_WRITE; /* held (or a blocking wait was cut): try again */
    } else {
        last.how = SL_TLS_RESET; /* reject: the rule's errno */
        last.err = errno;
    }
    return -1;
}

/* A write through a session with no socket and no tie: OpenSSL over memory
 * BIOs, which the log names if the records then reach a matched socket. */
static void note_memory_bio(const SSL *ssl)
{
    struct sl_runtime *rt = atomic_load_explicit(&sl_runtime_ptr, memory_order_relaxed);
    int (*get_wfd)(const SSL *) = REAL_SSL(get_wfd, "SSL_get_wfd", NULL);
    if (!rt || !rt->any_req_out || !get_wfd) return;
    int saved = errno;
    if (get_wfd(ssl) < 0 && sl_tls_tied_fd(ssl) < 0) sl_unseen_memory_bio();
    errno = saved;
}

/* The program's n bytes of plaintext written through an inbound session:
 * its responses, read for count_status and req_conns (gate.h), never
 * changed. */
static void answered_in(SSL *ssl, const void *buf, size_t n)
{
    struct sl_runtime *rt = atomic_load_explicit(&sl_runtime_ptr, memory_order_relaxed);
    if (!rt || !sl_reload_check(rt)->any_answers_in) return; /* no rule reads them */
    int fd, saved = errno;
    struct sl_fd *e = tracked(ssl, &fd);
    struct sl_gate *g = e ? sl_gate_in(e) : NULL;
    if (g && sl_gate_answers(g))
        sl_gate_wrote(g, &(struct iovec){.iov_base = (void *)buf, .iov_len = n}, 1, n);
    errno = saved;
}

SL_EXPORT int SSL_write(SSL *ssl, const void *buf, int num)
{
    int fd;
    struct sl_fd *e = num > 0 ? tracked_out(ssl, &fd) : NULL;
    last.ssl = NULL;
    int (*w)(SSL *, const void *, int) = REAL_SSL(write, "SSL_write", SSL_write);
    if (!e) {
        if (num > 0) note_memory_bio(ssl);
        int r = w(ssl, buf, num);
        if (r > 0) answered_in(ssl, buf, (size_t)r);
        return r;
    }
    ssize_t n = write_out(ssl, fd, e, buf, (size_t)num, write_ex_of_write);
    return n > 0 ? (int)n : -1;
}

SL_EXPORT int SSL_write_ex(SSL *ssl, const void *buf, size_t num, size_t *written)
{
    int fd;
    struct sl_fd *e = num > 0 ? tracked_out(ssl, &fd) : NULL;
    last.ssl = NULL;
    int (*w)(SSL *, const void *, size_t, size_t *) =
        REAL_SSL(write_ex, "SSL_write_ex", SSL_write_ex);
    if (!e) {
        if (num > 0) note_memory_bio(ssl);
        size_t got = 0;
        int r = w(ssl, buf, num, &got);
        if (r > 0 && got) answered_in(ssl, buf, got);
        if (written) *written = got;
        return r;
    }
    ssize_t n = write_out(ssl, fd, e, buf, num, write_ex_real);
    if (written) *written = n > 0 ? (size_t)n : 0;
    return n > 0;
}

SL_EXPORT int SSL_get_error(const SSL *ssl, int ret)
{
    if (ret <= 0 && last.ssl && last.ssl == ssl) {
        switch (last.how) {
        case SL_TLS_WANT_READ:
            return SSL_ERROR_WANT_READ;
        case SL_TLS_EOF:
            return SSL_ERROR_ZERO_RETURN;
        case SL_TLS_RESET:
            errno = last.err ? last.err : ECONNRESET;
            return SSL_ERROR_SYSCALL;
        case SL_TLS_REAL:
            break;
        default:
            if (last.how == SL_TLS_WANT_WRITE) return SSL_ERROR_WANT_WRITE;
        }
    }
    return REAL_SSL(get_error, "SSL_get_error", SSL_get_error)(ssl, ret);
}

/* SSL_want (SSL_want_read is a macro over it; puma asks it before
 * SSL_get_error): what the last call answered for the library. */
SL_EXPORT int SSL_want(const SSL *ssl)
{
    if (last.ssl && last.ssl == ssl) {
        if (last.how == SL_TLS_WANT_READ) return SSL_READING;
        if (last.how == SL_TLS_WANT_WRITE) return SSL_WRITING;
        if (last.how == SL_TLS_EOF || last.how == SL_TLS_RESET) return SSL_NOTHING;
    }
    return REAL_SSL(want, "SSL_want", SSL_want)(ssl);
}

SL_EXPORT int SSL_get_shutdown(const SSL *ssl)
{
    int mode = REAL_SSL(get_shutdown, "SSL_get_shutdown", SSL_get_shutdown)(ssl);
    int fd;
    struct sl_fd *e = tracked(ssl, &fd);
    if (e && sl_reqin_tls_denied(e, ssl)) mode |= SSL_RECEIVED_SHUTDOWN;
    return mode;
}

/* The program ends the session: a 429 due goes first. */
static void ending(SSL *ssl)
{
    int fd;
    struct sl_fd *e = tracked(ssl, &fd);
    if (!e) return;
    struct sl_transport t = in_transport(ssl, fd);
    sl_reqin_tls_end(e, &t);
}

SL_EXPORT void SSL_set_shutdown(SSL *ssl, int mode)
{
    ending(ssl);
    REAL_SSL(set_shutdown, "SSL_set_shutdown", SSL_set_shutdown)(ssl, mode);
}

SL_EXPORT int SSL_shutdown(SSL *ssl)
{
    /* a new call: its errors are the library's (python's unwrap asks
     * SSL_get_error of it, and a denial's zero-return there fails it) */
    if (last.ssl == ssl) last.ssl = NULL;
    ending(ssl);
    return REAL_SSL(shutdown, "SSL_shutdown", SSL_shutdown)(ssl);
}

SL_EXPORT void SSL_free(SSL *ssl)
{
    int fd;
    struct sl_fd *e = tracked(ssl, &fd);
    if (e) {
        struct sl_transport t = in_transport(ssl, fd);
        sl_reqin_tls_end(e, &t);
        sl_reqin_tls_free(e, ssl);
    }
    if (last.ssl == ssl) last.ssl = NULL;
    sl_tls_untie(ssl);
    sl_tlsbio_forget(ssl);
    REAL_SSL(free, "SSL_free", SSL_free)(ssl);
}
