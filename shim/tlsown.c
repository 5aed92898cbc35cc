/* SPDX-License-Identifier: BSD-2-Clause */
/* tlsown.c - inbound OpenSSL sessions with no socket of their own: see
 * tlsown.h. */
#include "tlsown.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>

#include "fd.h"
#include "lazy.h"
#include "reqin.h"
#include "shim.h"
#include "tie.h"
#include "tiein.h"
#include "tlsbio.h"

static struct {
    size_t (*client_random)(const void *, unsigned char *, size_t);
    int (*is_server)(const void *);
    int (*get_rfd)(const void *);
    int (*peek)(void *, void *, int);
} real;

#define REAL_FN(field, name)                                                                       \
    ((__typeof__(real.field))sl_resolve_lazy((void *_Atomic *)&real.field, name, "OPENSSL_3.0.0",  \
                                             "libssl.so.3", NULL, true))

/* An inbound request rule delays. A server over memory BIOs that reads its
 * socket itself and asks the session again only when bytes arrive
 * (python's asyncio and uvloop: uvicorn) would never read a held request
 * at its turn (the socket has nothing new, and no byte can be put into a
 * stream sluice cannot encrypt): under a delay rule such sessions are not
 * tied, and their record bursts are paced at the socket instead. */
static bool delays_in(void)
{
    struct sl_runtime *rt = atomic_load_explicit(&sl_runtime_ptr, memory_order_relaxed);
    for (int i = 0; rt && i < rt->cfg->nrules; i++)
        if (rt->cfg->rules[i].dir == SL_IN && rt->cfg->rules[i].request &&
            rt->cfg->rules[i].action == SL_ACT_DELAY)
            return true;
    return false;
}

/* The socket of an inbound session over a BIO that is not a socket (its
 * server's own, or memory BIOs): the one whose ClientHello carried its
 * client random (tiein.h), looked for once the library has read the hello.
 * Tied, the connection is read through SSL_read from then on; a server
 * session that cannot be tied is remembered as such (looked for once) and
 * said once (bursts.c, reqin.c). -1: none. See tlsown.h. */
int sl_tlsown_fd(const void *ssl)
{
    int fd = sl_tls_tied_fd(ssl);
    if (fd >= 0 || fd == SL_TLS_UNTIED) return fd >= 0 ? fd : -1;
    size_t (*cr)(const void *, unsigned char *, size_t) =
        REAL_FN(client_random, "SSL_get_client_random");
    int (*server)(const void *) = REAL_FN(is_server, "SSL_is_server");
    unsigned char r[SL_TLS_RANDOM_LEN], zero[SL_TLS_RANDOM_LEN] = {0};
    if (!cr || !server || !server(ssl) || cr(ssl, r, sizeof r) != sizeof r ||
        !memcmp(r, zero, sizeof r))
        return -1;                              /* a client, or the hello not read yet */
    if (sl_tlsbio_memory(ssl) && delays_in()) { /* see delays_in */
        sl_tls_tie_to(ssl, SL_TLS_UNTIED);
        sl_tiein_untied(
            "a delay rule, and the program runs OpenSSL over memory BIOs, which it asks "
            "for a held request again only when new bytes arrive (python's asyncio)");
        return -1;
    }
    if ((fd = sl_tiein_find(r)) < 0) {
        sl_tls_tie_to(ssl, SL_TLS_UNTIED);
        sl_tiein_untied("no connection's first bytes were a ClientHello holding its client "
                        "random: a hello cut into several records, or over 1024 handshakes at "
                        "once");
        return -1;
    }
    sl_tls_tie_to(ssl, fd);
    struct sl_fd *e = sl_fd_get(fd);
    if (e && sl_gate_in(e)) sl_reqin_tls_library(e); /* its SSL_read shows the requests */
    return fd;
}

/* A request of a session over the program's own BIO is held: the program
 * is told want-read, but its BIO may have read the request's records
 * without meeting the socket's end, and a program that remembers that its
 * socket is ready (haproxy) asks again at once, for ever, until the turn.
 * A peek that reads on through the BIO meets it (EAGAIN), and takes
 * nothing: what the library decrypts stays there for the next read. Not on
 * a socket (its own want-read is the socket's) nor a memory BIO (the
 * program reads its socket itself). */
void sl_tlsown_drain(void *ssl)
{
    int (*get_rfd)(const void *) = REAL_FN(get_rfd, "SSL_get_rfd");
    int (*peek)(void *, void *, int) = REAL_FN(peek, "SSL_peek");
    if (!get_rfd || !peek || get_rfd(ssl) >= 0 || sl_tlsbio_memory(ssl)) return;
    int saved = errno;
    char c;
    peek(ssl, &c, 1);
    errno = saved;
}
