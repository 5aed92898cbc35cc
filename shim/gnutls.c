/* SPDX-License-Identifier: BSD-2-Clause */
/* gnutls.c - requests on connections the program encrypts with GnuTLS:
 * outbound (wget, programs on libcurl3-gnutls such as git and apt over
 * https) and inbound (servers that terminate TLS with GnuTLS: lighttpd's
 * mod_gnutls, gnutls-serv).
 *
 * Inbound, as tls.c for OpenSSL: gnutls_record_recv of a session on a
 * socket an inbound request rule matches reads through reqin.c's gate
 * (sl_reqin_tls_read) over the library's own receive; a held request is
 * GNUTLS_E_AGAIN (the socket announced readable at its turn), a denied
 * one the peer's close_notify (0: the server finishes what it owes and
 * ends the session), a rejected one GNUTLS_E_PULL_ERROR with ECONNRESET.
 * The 429 is written through the session (gnutls_record_send) when the
 * program ends it: gnutls_bye, or gnutls_deinit without one.
 * gnutls_record_send of an inbound session shows the program's responses
 * to count_status and req_conns. A server session is tied to its socket
 * by the client random of the ClientHello the socket carried (tiein.h),
 * once a handshake step has read it, as tls.c ties OpenSSL sessions over
 * a server's own BIO: the descriptor the program gave
 * (gnutls_transport_get_int2) is not trusted, since a server with
 * transport functions of its own (apache's mod_gnutls) stores a pointer
 * there. From the tie on, the connection is read through the library
 * (its ciphertext no longer counted as record bursts); a session that
 * cannot be tied is counted by its record bursts, per address, and said
 * at the connection's end (reqin.c).
 *
 * Outbound:
 * gnutls_record_send hands its plaintext to shim/reqout.c before GnuTLS
 * encrypts it, as SSL_write does for OpenSSL (shim/tls.c): a request that
 * must wait makes the call sleep (blocking socket) or return
 * GNUTLS_E_AGAIN with the socket reported writable at its turn; a
 * rejected one fails it with GNUTLS_E_PUSH_ERROR and the rule's errno; a
 * request `reply` swallows is reported sent. GnuTLS may send fewer bytes
 * than asked, so a write is shortened at a request that may not go yet.
 * gnutls_record_recv serves the 429s `reply` queued and counts responses.
 * HTTP/2 on a non-blocking socket (libcurl) keeps a held write instead of
 * returning GNUTLS_E_AGAIN, as tls.c explains for OpenSSL (curl 7.88 fails
 * the stream otherwise): written at its turn by the next send or receive.
 *
 * The session's socket: gnutls_transport_get_int2 when the program gave
 * GnuTLS a descriptor (wget); otherwise (its own push function, as libcurl
 * has) the socket the handshake's first send reached (tls.h, the same tie
 * as curl's OpenSSL BIO). The real functions are found at the first call
 * (GNUTLS_3_4 versions); a program without GnuTLS never gets here.
 */
#include <errno.h>
#include <stdatomic.h>
#include <sys/types.h>

#include <poll.h>
#include <string.h>

#include "fd.h"
#include "reqin.h"
#include "reload.h"
#include "reqout.h"
#include "lazy.h"
#include "shim.h"
#include "tie.h"
#include "tiein.h"
#include "unseen.h"
#include "wait.h"

#define GNUTLS_VERSION "GNUTLS_3_4"
#define GNUTLS_LIB     SL_LIB_GNUTLS

/* From gnutls/gnutls.h (the ABI of libgnutls.so.30), not included so the
 * build needs no GnuTLS headers. */
#define SL_GNUTLS_E_AGAIN       (-28)
#define SL_GNUTLS_E_INTERRUPTED (-52)
#define SL_GNUTLS_E_PUSH_ERROR  (-53)
#define SL_GNUTLS_E_PULL_ERROR  (-54)
typedef struct gnutls_session_int *gnutls_session_t;
struct sl_gnutls_datum { /* gnutls_datum_t */
    unsigned char *data;
    unsigned int size;
};

static struct {
    ssize_t (*send)(gnutls_session_t, const void *, size_t);
    ssize_t (*recv)(gnutls_session_t, void *, size_t);
    void (*get_int2)(gnutls_session_t, int *, int *);
    int (*handshake)(gnutls_session_t);
    void (*deinit)(gnutls_session_t);
    int (*bye)(gnutls_session_t, int);
    void (*get_random)(gnutls_session_t, struct sl_gnutls_datum *, struct sl_gnutls_datum *);
} real;

#define REAL_GNUTLS(field, name, ours)                                                             \
    ((__typeof__(real.field))sl_resolve_lazy((void *_Atomic *)&real.field, name, GNUTLS_VERSION,   \
                                             GNUTLS_LIB, (void *)(ours), false))

ssize_t gnutls_record_send(gnutls_session_t s, const void *data, size_t size);
ssize_t gnutls_record_recv(gnutls_session_t s, void *data, size_t size);
int gnutls_handshake(gnutls_session_t s);
void gnutls_deinit(gnutls_session_t s);
int gnutls_bye(gnutls_session_t s, int how);

/* The descriptor entry of a session whose outbound requests are counted
 * (the socket its handshake's first send reached, or the descriptor the
 * program gave), or NULL. */
static struct sl_fd *tracked_out(gnutls_session_t s, int *fd)
{
    struct sl_runtime *rt = atomic_load_explicit(&sl_runtime_ptr, memory_order_relaxed);
    if (!rt || !rt->any_req_out || !s) return NULL;
    void (*get_int2)(gnutls_session_t, int *, int *) =
        REAL_GNUTLS(get_int2, "gnutls_transport_get_int2", NULL);
    int saved = errno, rfd = -1;
    *fd = sl_tls_tied_fd(s); /* exact: its handshake's first send (its own push function) */
    if (*fd < 0 && get_int2) get_int2(s, &rfd, fd); /* the descriptor the program gave */
    struct sl_fd *e = *fd >= 0 ? sl_fd_get(*fd) : NULL;
    errno = saved;
    return e && sl_gate_out(e) && sl_reqout_tls(e) ? e : NULL;
}

/* The descriptor entry of a server session whose requests are counted:
 * the socket it was tied to (tie_in), or NULL. */
static struct sl_fd *tracked_in(gnutls_session_t s, int *fd)
{
    struct sl_runtime *rt = atomic_load_explicit(&sl_runtime_ptr, memory_order_relaxed);
    if (!rt || !rt->any_req_in || !s) return NULL;
    int saved = errno;
    *fd = sl_tls_tied_fd(s);
    struct sl_fd *e = *fd >= 0 ? sl_fd_get(*fd) : NULL;
    errno = saved;
    return e && sl_gate_in(e) ? e : NULL;
}

/* After a handshake step: a session not tied yet whose client random is
 * known is tied to the socket whose ClientHello carried it (tiein.h), and
 * that connection is read through the library from then on; none (a
 * client's session, a hello cut into several records): looked for once. */
static void tie_in(gnutls_session_t s)
{
    struct sl_runtime *rt = atomic_load_explicit(&sl_runtime_ptr, memory_order_relaxed);
    if (!rt || !rt->any_req_in || sl_tls_tied_fd(s) != -1) return;
    void (*get_random)(gnutls_session_t, struct sl_gnutls_datum *, struct sl_gnutls_datum *) =
        REAL_GNUTLS(get_random, "gnutls_session_get_random", NULL);
    struct sl_gnutls_datum client = {0}, server = {0};
    static const unsigned char zero[SL_TLS_RANDOM_LEN];
    int saved = errno;
    if (get_random) get_random(s, &client, &server);
    if (client.size == SL_TLS_RANDOM_LEN && memcmp(client.data, zero, sizeof zero)) {
        int fd = sl_tiein_find(client.data);
        sl_tls_tie_to(s, fd >= 0 ? fd : SL_TLS_UNTIED);
        struct sl_fd *e = fd >= 0 ? sl_fd_get(fd) : NULL;
        if (e && sl_gate_in(e)) sl_reqin_tls_library(e); /* its record_recv shows the requests */
    }
    errno = saved;
}

/* ---- the GnuTLS transport: the library's own calls on one session ---- */

static ssize_t recv_plain(const struct sl_transport *t, void *buf, size_t n)
{
    return REAL_GNUTLS(recv, "gnutls_record_recv", gnutls_record_recv)(t->ctx, buf, n);
}

static ssize_t send_plain(const struct sl_transport *t, const void *buf, size_t n)
{
    return REAL_GNUTLS(send, "gnutls_record_send", gnutls_record_send)(t->ctx, buf, n);
}

static struct sl_transport transport(gnutls_session_t s, int fd)
{
    return (struct sl_transport){.read = recv_plain, .write = send_plain, .fd = fd, .ctx = s};
}

/* Inbound, the library reads the socket as the program set it: on a
 * blocking one, only when the socket has bytes now. */
static ssize_t recv_more(const struct sl_transport *t, void *buf, size_t n)
{
    if (!sl_fd_nonblocking(t->fd)) {
        struct pollfd p = {.fd = t->fd, .events = POLLIN};
        if (REAL(poll)(&p, 1, 0) != 1) return SL_GNUTLS_E_AGAIN;
    }
    return recv_plain(t, buf, n);
}

static struct sl_transport in_transport(gnutls_session_t s, int fd)
{
    struct sl_transport t = transport(s, fd);
    t.more = recv_more;
    return t;
}

/* Inbound, the program's read through the gate: the library's own answer,
 * or the gate's in GnuTLS's terms. */
static ssize_t recv_in(gnutls_session_t s, int fd, struct sl_fd *e, void *data, size_t size)
{
    struct sl_transport t = in_transport(s, fd);
    enum sl_tls_how how;
    ssize_t n = sl_reqin_tls_read(e, &t, data, size, &how);
    switch (how) {
    case SL_TLS_WANT_READ: /* held: the socket is announced readable at its turn */
        return errno == EINTR ? SL_GNUTLS_E_INTERRUPTED : SL_GNUTLS_E_AGAIN;
    case SL_TLS_EOF: /* denied: the client's close_notify, as the program sees it */
        return 0;
    case SL_TLS_RESET:
        errno = ECONNRESET;
        return SL_GNUTLS_E_PULL_ERROR;
    case SL_TLS_REAL:
        break;
    }
    return n;
}

/* The program ends an inbound session on fd (its entry e, from
 * tracked_in): a 429 due is written through it first. */
static void ending(gnutls_session_t s, int fd, struct sl_fd *e)
{
    int saved = errno;
    struct sl_transport t = in_transport(s, fd);
    sl_reqin_tls_end(e, &t);
    errno = saved;
}

/* The program's n bytes of plaintext sent through an inbound session: its
 * responses, read for count_status and req_conns (gate.h), never changed. */
static void answered_in(gnutls_session_t s, const void *buf, size_t n)
{
    struct sl_runtime *rt = atomic_load_explicit(&sl_runtime_ptr, memory_order_relaxed);
    if (!rt || !sl_reload_check(rt)->any_answers_in) return; /* no rule reads them */
    int fd, saved = errno;
    struct sl_fd *e = tracked_in(s, &fd);
    struct sl_gate *g = e ? sl_gate_in(e) : NULL;
    if (g && sl_gate_answers(g))
        sl_gate_wrote(g, &(struct iovec){.iov_base = (void *)buf, .iov_len = n}, 1, n);
    errno = saved;
}

SL_EXPORT int gnutls_handshake(gnutls_session_t s)
{
    int (*h)(gnutls_session_t) = REAL_GNUTLS(handshake, "gnutls_handshake", gnutls_handshake);
    struct sl_runtime *rt = atomic_load_explicit(&sl_runtime_ptr, memory_order_relaxed);
    bool tie = rt && rt->any_req_out && sl_tls_tied_fd(s) < 0;
    if (tie) sl_tls_tying = s; /* the first send ties it (io.c) */
    int rc = h(s);
    tie_in(s); /* a server's session, once it read the hello */
    if (tie) sl_tls_tying = NULL;
    return rc;
}

SL_EXPORT ssize_t gnutls_record_send(gnutls_session_t s, const void *data, size_t size)
{
    int fd;
    struct sl_fd *e = size && data ? tracked_out(s, &fd) : NULL;
    if (!e) {
        /* also (NULL, 0): the resumption of a pending send */
        ssize_t n = REAL_GNUTLS(send, "gnutls_record_send", gnutls_record_send)(s, data, size);
        if (n > 0 && data) answered_in(s, data, (size_t)n);
        return n;
    }
    struct sl_transport t = transport(s, fd);
    bool refused;
    ssize_t n = sl_reqout_tls_write(e, &t, data, size, &refused);
    if (!refused) return n;
    if (errno == EAGAIN) return SL_GNUTLS_E_AGAIN; /* held: the socket is writable at its turn */
    if (errno == EINTR) return SL_GNUTLS_E_INTERRUPTED;
    return SL_GNUTLS_E_PUSH_ERROR; /* reject: errno is the rule's */
}

SL_EXPORT ssize_t gnutls_record_recv(gnutls_session_t s, void *data, size_t size)
{
    int fd;
    struct sl_fd *in = size && data ? tracked_in(s, &fd) : NULL;
    if (in) return recv_in(s, fd, in, data, size);
    struct sl_fd *e = size && data ? tracked_out(s, &fd) : NULL;
    if (!e) return REAL_GNUTLS(recv, "gnutls_record_recv", gnutls_record_recv)(s, data, size);
    struct sl_transport t = transport(s, fd);
    sl_reqout_tls_flush(e, &t); /* kept writes go first when due */
    struct sl_gate *g = sl_reqout_replying(e, true);
    if (!g) return t.read(&t, data, size);
    struct iovec v = {.iov_base = data, .iov_len = size};
    bool mine;
    return sl_gate_read_replies(g, e, &t, &v, 1, false, &mine);
}

SL_EXPORT int gnutls_bye(gnutls_session_t s, int how)
{
    int fd;
    struct sl_fd *e = tracked_in(s, &fd);
    if (e) ending(s, fd, e);
    return REAL_GNUTLS(bye, "gnutls_bye", gnutls_bye)(s, how);
}

SL_EXPORT void gnutls_deinit(gnutls_session_t s)
{
    int fd;
    struct sl_fd *e = tracked_in(s, &fd);
    if (e) {
        ending(s, fd, e);
        sl_reqin_tls_free(e, s);
    }
    sl_tls_untie(s);
    REAL_GNUTLS(deinit, "gnutls_deinit", gnutls_deinit)(s);
}
