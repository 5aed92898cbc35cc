/* SPDX-License-Identifier: BSD-2-Clause */
/* gnutls.c - outbound requests written through GnuTLS (wget, programs on
 * libcurl3-gnutls such as git and apt over https).
 *
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

#include "fd.h"
#include "reqout.h"
#include "lazy.h"
#include "shim.h"
#include "tie.h"

#define GNUTLS_VERSION "GNUTLS_3_4"
#define GNUTLS_LIB     "libgnutls.so.30"

/* From gnutls/gnutls.h (the ABI of libgnutls.so.30), not included so the
 * build needs no GnuTLS headers. */
#define SL_GNUTLS_E_AGAIN       (-28)
#define SL_GNUTLS_E_INTERRUPTED (-52)
#define SL_GNUTLS_E_PUSH_ERROR  (-53)
typedef struct gnutls_session_int *gnutls_session_t;

static struct {
    ssize_t (*send)(gnutls_session_t, const void *, size_t);
    ssize_t (*recv)(gnutls_session_t, void *, size_t);
    void (*get_int2)(gnutls_session_t, int *, int *);
    int (*handshake)(gnutls_session_t);
    void (*deinit)(gnutls_session_t);
} real;

#define REAL_GNUTLS(field, name, ours)                                                             \
    ((__typeof__(real.field))sl_resolve_lazy((void *_Atomic *)&real.field, name, GNUTLS_VERSION,   \
                                             GNUTLS_LIB, (void *)(ours), false))

ssize_t gnutls_record_send(gnutls_session_t s, const void *data, size_t size);
ssize_t gnutls_record_recv(gnutls_session_t s, void *data, size_t size);
int gnutls_handshake(gnutls_session_t s);
void gnutls_deinit(gnutls_session_t s);

/* The descriptor entry of a session whose outbound requests are counted,
 * or NULL. */
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

SL_EXPORT int gnutls_handshake(gnutls_session_t s)
{
    int (*h)(gnutls_session_t) = REAL_GNUTLS(handshake, "gnutls_handshake", gnutls_handshake);
    struct sl_runtime *rt = atomic_load_explicit(&sl_runtime_ptr, memory_order_relaxed);
    bool tie = rt && rt->any_req_out && sl_tls_tied_fd(s) < 0;
    if (tie) sl_tls_tying = s; /* the first send ties it (io.c) */
    int rc = h(s);
    if (tie) sl_tls_tying = NULL;
    return rc;
}

SL_EXPORT ssize_t gnutls_record_send(gnutls_session_t s, const void *data, size_t size)
{
    int fd;
    struct sl_fd *e = size && data ? tracked_out(s, &fd) : NULL;
    if (!e) return REAL_GNUTLS(send, "gnutls_record_send", gnutls_record_send)(s, data, size);
    /* also (NULL, 0) above: the resumption of a pending send */
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

SL_EXPORT void gnutls_deinit(gnutls_session_t s)
{
    sl_tls_untie(s);
    REAL_GNUTLS(deinit, "gnutls_deinit", gnutls_deinit)(s);
}
