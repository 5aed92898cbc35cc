/* SPDX-License-Identifier: BSD-2-Clause */
/* reqout.h - requests on the program's outbound connections: what it
 * writes to a destination an outbound request rule matches (a paid API) is
 * scanned for HTTP/1 request heads (core/http/request.h decides), and each head
 * waits its turn before its bytes leave:
 *   - delay (the default outbound action): a blocking write sleeps until
 *     the turn (SO_SNDTIMEO and signals keep their meaning, shim/wait.h);
 *     a non-blocking one gets EAGAIN and poll/select/epoll report the
 *     socket writable only when the turn comes (shim/ready.h);
 *   - reject: the write fails with the rule's errno;
 *   - reply (HTTP/1): the request, head and body, is swallowed (reported
 *     written, never sent) and a 429 is queued for the program's next
 *     reads (gate.h: sl_gate_read_replies) once it has read the responses
 *     to every request sent before (core/http/request.h: sl_req_swallow); until then the
 *     write is held (blocking: up to a second, then the rule's errno, for
 *     a client that pipelines on one thread; non-blocking: EAGAIN). The
 *     socket is reported readable while a 429 waits (ready.h). HTTP/2
 *     requests are rejected instead (a HEADERS frame cannot be dropped
 *     without breaking HPACK).
 * A write is shortened at a head that may not leave yet (a partial write
 * is legal); the bytes are never changed. A gathered write (writev,
 * sendmsg, sendmmsg) is read as one span of its buffers before any of it
 * leaves (io.c), so a head split across them is decided whole. The bytes of a head still being
 * written pass: its request is decided when its end is written, so the
 * server has at most an incomplete head while it waits.
 */
#ifndef SL_REQOUT_H
#define SL_REQOUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "../core/limit/key.h"
#include "fd.h"
#include "gate.h"

struct sl_runtime;
struct sl_addr;

/* connect.c: fd is connecting (or connected) to dst. */
void sl_reqout_connect(struct sl_runtime *rt, int fd, const struct sl_addr *dst);

/* What the count a write decision returns stands for (*fate). */
enum sl_reqout_fate {
    SL_REQOUT_LET,       /* write them: counted as passed already (a shortfall is handed back) */
    SL_REQOUT_PASS,      /* write them: nothing counts them as requests (no rule matches yet,
                            ciphertext records, which wait their turn at the socket) */
    SL_REQOUT_SWALLOWED, /* a `reply` rule answers the request: reported written, never sent */
    SL_REQOUT_KEPT,      /* a held h2c write sluice took: reported written, sent at its turn
                            (sl_reqout_flush) */
};

/* io.c, before a write of up to len bytes of buf: how many of them (> 0),
 * which *fate says what to do with, or -1 with errno (EAGAIN held, EINTR,
 * the rule's errno). Swallowed or kept bytes the caller reports written
 * without sending them. */
ssize_t sl_reqout_before_write(int fd, struct sl_fd *e, const void *buf, size_t len,
                               bool nonblock_flag, enum sl_reqout_fate *fate);

/* io.c, tls.c, gnutls.c, before a read of the connection (tls: through
 * the library): its gate when an outbound `reply` rule matches it, and
 * the read must then go through sl_gate_read_replies (the 429s queued,
 * the responses counted); else NULL. */
struct sl_gate *sl_reqout_replying(struct sl_fd *e, bool tls);

/* False once a TLS library writes the connection's requests (tls.c,
 * gnutls.c) over its own socket calls: the socket then carries ciphertext,
 * and io.c passes its reads and writes by (memory BIOs excepted: their
 * records wait their turn at the socket, tlsbio.h). */
bool sl_reqout_plain(const struct sl_fd *e);

/* io.c, before a read of a plain connection whose HTTP/2 (h2c) writes
 * were kept back (sl_reqout_kept): those whose turn came are sent. A held
 * h2c write is kept and reported written, as through TLS (curl 7.88 fails
 * an HTTP/2 write that returns EAGAIN), and the socket is announced
 * readable at its turn so the program comes back. */
void sl_reqout_flush(int fd, struct sl_fd *e);
bool sl_reqout_kept(const struct sl_fd *e);

/* After every write of the connection's bytes that a write decision gave
 * to be written (io.c: sl_reqout_before_write's SL_REQOUT_LET or
 * SL_REQOUT_PASS; the TLS libraries' writes here): `sent` of them were
 * written (<= 0: none), `let` of them were counted as passed
 * (SL_REQOUT_LET's count; 0 otherwise): what was counted but did not go
 * is handed back. */
void sl_reqout_sent(struct sl_fd *e, const void *buf, size_t let, ssize_t sent);

/* tls.c: the program writes this connection's plaintext through OpenSSL
 * (SSL_write): from now on the requests are read there (tls true in the
 * calls above), never in the ciphertext the library sends. False when the
 * connection can no longer be tracked. */
bool sl_reqout_tls(struct sl_fd *e);

/* tls.c, gnutls.c: the program's write of n plaintext bytes through a
 * TLS library, whose own write is t->write (t->offset: the session runs
 * over memory BIOs, tlsbio.h). Each request waits its turn, in parts
 * around a request `reply` swallows; the write waits for its last request
 * (all or nothing, as the libraries' writes). Returns the bytes handled
 * (n, or fewer when a part failed after earlier ones went), or, when none
 * went: -1 with *refused set and errno (EAGAIN: held, the socket writable
 * at the turn; EINTR; the rule's errno), or t->write's own failure.
 *
 * HTTP/2 on a non-blocking socket (curl, libcurl) is the exception: a
 * write that must wait is taken, reported written and kept, instead of
 * failing (see tls.c); the kept bytes go, in order and before anything the
 * program writes after them, at its first call on the session once their
 * turn came (sl_reqout_tls_flush before reads), the socket reported
 * readable then (ready.h). What it writes meanwhile is kept behind them,
 * up to SL_REQOUT_KEEP_MAX, beyond which it is refused (EAGAIN). */
#define SL_REQOUT_KEEP_MAX (64 * 1024)
ssize_t sl_reqout_tls_write(struct sl_fd *e, const struct sl_transport *t, const void *buf,
                            size_t n, bool *refused);

/* tls.c, gnutls.c, before a read of the session: the kept bytes whose turn
 * came go first, with t->write. */
void sl_reqout_tls_flush(struct sl_fd *e, const struct sl_transport *t);

/* tls.c: the connection's records come from OpenSSL memory BIOs (its
 * ClientHello tied it to a session without a socket): its writes go
 * through tlsbio.h's transport. */
bool sl_reqout_bio(struct sl_fd *e);

/* io.c: the connection's requests are counted (its state is whole: it no
 * longer grows or moves). */
bool sl_reqout_live(const struct sl_fd *e);

/* fd.c: the entry is forgotten. */
void sl_reqout_free(struct sl_fd *e);

#endif
