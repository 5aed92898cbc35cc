/* SPDX-License-Identifier: BSD-2-Clause */
/* reqin.h - requests on the program's inbound connections: the socket
 * transport of the inbound gate (gate.h), core/http/request.h deciding.
 *
 * A connection some inbound request rule matches carries a gate in its
 * descriptor entry (fd.h). The program's read goes straight into its own
 * buffer, one real read as without sluice, and is decided there: when
 * every byte it got may pass, that is all; from a head that may not pass
 * yet (held, denied, incomplete) on, the bytes are kept in the gate's
 * stash and later reads are served from it first. The bytes the program
 * reads are never changed, and it never reads a request that was not let
 * through.
 *   - an incomplete head is completed from what already arrived, never
 *     waited for (gate.h); a held head: a blocking read waits here (its
 *     SO_RCVTIMEO and signals keep their meaning, shim/wait.h); a
 *     non-blocking one gets EAGAIN and the stash is announced readable at
 *     its turn (ready.h);
 *   - a denied head (reply): the program reads end-of-file there, so it
 *     finishes the responses of the requests it already read, in order,
 *     and shuts down or closes; the 429 is written then, first, and the
 *     connection lingers until the client has read it (shim/linger.c);
 *   - reject: the read fails with ECONNRESET and the close resets.
 */
#ifndef SL_REQIN_H
#define SL_REQIN_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "fd.h"
#include "gate.h"

struct sl_runtime;
struct sl_addr;

/* accept.c: fd was accepted from peer on local (NULL: not known). */
void sl_reqin_accept(struct sl_runtime *rt, int fd, const struct sl_addr *local,
                     const struct sl_addr *peer);

/* io.c, before a read of up to len bytes of a request connection: how
 * many bytes the read may take (> 0); 0 for end-of-file; -1 with errno. */
ssize_t sl_reqin_before_read(int fd, struct sl_fd *e, size_t len, bool nonblock);

/* io.c, for a read of up to len bytes into one buffer (recv flags; a read
 * of a request connection that no byte rule limits): the program gets
 * only bytes that may pass, straight from one real recv when they all may
 * (see gate.h). Returns as recv. */
ssize_t sl_reqin_read(int fd, struct sl_fd *e, void *buf, size_t len, int flags);

/* The same for io.c's common case (recv or read of len > 0 bytes, neither
 * MSG_PEEK nor MSG_WAITALL, nothing pending, no byte rule, an inbound
 * gate), rt the runtime (its reload checked here, once): one real recv and
 * the decision, with no transport built unless a head has to wait in the
 * stash. A socket whose requests a TLS library reads is passed through. */
ssize_t sl_reqin_recv(struct sl_runtime *rt, int fd, struct sl_fd *e, void *buf, size_t len,
                      int flags);

/* tls.c: an interposed TLS library's handshake runs on the connection, so
 * its SSL_read will show the requests (no record bursts counted). */
void sl_reqin_tls_library(struct sl_fd *e);

/* False once a TLS library reads the connection's requests (tls.c): the
 * socket then carries ciphertext, and io.c passes its reads by. */
bool sl_reqin_plain(const struct sl_fd *e);

/* True when bytes of fd are kept by reqin.c: every read must come through it. */
bool sl_reqin_stashed(const struct sl_fd *e);

/* io.c, after the read took `got` bytes into iov (MSG_PEEK reads: not). */
void sl_reqin_after_read(struct sl_fd *e, const struct iovec *iov, int iovcnt, size_t got);

/* close.c: fd is being closed; a 429 due is written. True when the
 * descriptor must linger rather than close (shim/linger.c): the withheld
 * request is unread, and closing now would reset the connection and lose
 * the 429. */
bool sl_reqin_close(int fd, struct sl_fd *e);

/* close.c: the program shuts fd down for writing: a 429 due is written
 * first. */
void sl_reqin_shutdown(int fd, struct sl_fd *e);

/* Requests read through a TLS library (shim/tls.c): t is the library's
 * transport of the session (gate.h; t->ctx: the session): read, its read
 * that never waits (more), and write, for the 429 of a denial. */

/* tls.c, for the program's read of up to num bytes into buf through the
 * session of t on a request connection: the bytes it gets (> 0), or 0 /
 * -1 with *how (gate.h: what the library's error function must then say). */
ssize_t sl_reqin_tls_read(struct sl_fd *e, const struct sl_transport *t, void *buf, size_t num,
                          enum sl_tls_how *how);

/* tls.c, as the program ends the session of t (shutdown or free): a 429
 * due is written through it first. */
void sl_reqin_tls_end(struct sl_fd *e, const struct sl_transport *t);

/* tls.c: the session ssl is freed. */
void sl_reqin_tls_free(struct sl_fd *e, const void *ssl);

/* tls.c: the session's requests ended in a denial (reported as the peer's
 * close_notify). */
bool sl_reqin_tls_denied(struct sl_fd *e, const void *ssl);

/* fd.c: the entry is forgotten; frees the request state. */
void sl_reqin_free(struct sl_fd *e);

#endif
