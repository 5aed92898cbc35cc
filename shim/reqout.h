/* SPDX-License-Identifier: BSD-2-Clause */
/* reqout.h - requests on the program's outbound connections: what it
 * writes to a destination an outbound request rule matches (a paid API) is
 * scanned for HTTP/1 request heads (core/request.h decides), and each head
 * waits its turn before its bytes leave:
 *   - delay (the default outbound action): a blocking write sleeps until
 *     the turn (SO_SNDTIMEO and signals keep their meaning, shim/wait.h);
 *     a non-blocking one gets EAGAIN and poll/select/epoll report the
 *     socket writable only when the turn comes (shim/ready.h);
 *   - reject: the write fails with the rule's errno;
 *   - reply (HTTP/1): the request, head and body, is swallowed (reported
 *     written, never sent) and a 429 is queued for the program's next
 *     reads (sl_reqout_inject) once it has read the responses to every
 *     request sent before (core/request.h: sl_req_swallow); until then the
 *     write is held (blocking: up to a second, then the rule's errno, for
 *     a client that pipelines on one thread; non-blocking: EAGAIN). The
 *     socket is reported readable while a 429 waits (ready.h). HTTP/2
 *     requests are rejected instead (a HEADERS frame cannot be dropped
 *     without breaking HPACK).
 * A write is shortened at a head that may not leave yet (a partial write
 * is legal); the bytes are never changed. The bytes of a head still being
 * written pass: its request is decided when its end is written, so the
 * server has at most an incomplete head while it waits.
 */
#ifndef SL_REQOUT_H
#define SL_REQOUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "../core/key.h"
#include "fd.h"
#include "gate.h"

struct sl_runtime;
struct sl_addr;

/* connect.c: fd is connecting (or connected) to dst. */
void sl_reqout_connect(struct sl_runtime *rt, int fd, const struct sl_addr *dst);

/* io.c, before a write of up to len bytes of buf: how many may go now
 * (> 0), or -1 with errno (EAGAIN held, EINTR, the rule's errno). With
 * *swallowed set, that many were swallowed instead: the caller reports
 * them written without sending them. */
ssize_t sl_reqout_before_write(int fd, struct sl_fd *e, const void *buf, size_t len,
                               bool nonblock_flag, bool tls, bool *swallowed);

/* io.c, tls.c, before a read: copies up to len bytes of queued 429s into
 * buf (taken unless peek); 0 when none wait. */
size_t sl_reqout_inject(int fd, struct sl_fd *e, void *buf, size_t len, bool peek, bool tls);

/* io.c, tls.c: the program read these n bytes from the server (n 0: end
 * of stream), counted as responses when the connection replies. */
void sl_reqout_read(struct sl_fd *e, const void *buf, size_t n, bool tls);

/* False once a TLS library writes the connection's requests (tls.c,
 * gnutls.c) over its own socket calls: the socket then carries ciphertext,
 * and io.c passes its reads and writes by (memory BIOs excepted: their
 * records wait their turn at the socket, tlsbio.h). */
bool sl_reqout_plain(const struct sl_fd *e);

/* True when an outbound `reply` rule matches the connection (its reads
 * must then go through the two calls above). */
bool sl_reqout_replies(struct sl_fd *e);

/* io.c: n of those bytes were written. */
void sl_reqout_written(struct sl_fd *e, const void *buf, size_t n, bool tls);

/* tls.c: the program writes this connection's plaintext through OpenSSL
 * (SSL_write): from now on the requests are read there (tls true in the
 * calls above), never in the ciphertext the library sends. False when the
 * connection can no longer be tracked. */
bool sl_reqout_tls(struct sl_fd *e);

/* tls.c: the connection's plaintext opened with the HTTP/2 preface. */
bool sl_reqout_h2(struct sl_fd *e);

/* tls.c: bytes the program wrote through the library that sluice took
 * (reported written) and writes itself when their turn comes, in order
 * (see tls.c). keep appends n bytes (false: no room, at most
 * SL_REQOUT_KEEP_MAX kept); kept peeks; kept_take drops n written. */
#define SL_REQOUT_KEEP_MAX (64 * 1024)
bool sl_reqout_keep(struct sl_fd *e, const void *buf, size_t n);
size_t sl_reqout_kept(struct sl_fd *e, const char **p);
void sl_reqout_kept_take(struct sl_fd *e, size_t n);

/* tls.c, gnutls.c: after a write of HTTP/2 on a non-blocking socket was
 * held, keeps its bytes (reported written by the caller) and announces the
 * socket readable at their turn; false (not HTTP/2, blocking, no room):
 * the caller reports the wait as before. */
bool sl_reqout_keep_held(int fd, struct sl_fd *e, const void *buf, size_t n);

/* tls.c, gnutls.c, before any write or read of the session: writes the
 * kept bytes whose turn came with w (the library's write of plaintext:
 * bytes taken, or <= 0). True when none are left kept. */
typedef ssize_t (*sl_reqout_write_fn)(void *session, const void *buf, size_t n);
bool sl_reqout_flush(int fd, struct sl_fd *e, sl_reqout_write_fn w, void *session);

/* tlsbio.c: the connection's records come from OpenSSL memory BIOs (its
 * ClientHello tied it to a session without a socket). */
bool sl_reqout_bio(struct sl_fd *e);

/* tlsbio.c: the session's SSL_write of n plaintext bytes, written with w
 * in parts: each request that must wait adds a hold at offset(session),
 * the ciphertext offset where its records begin, which the socket writes
 * of the records then honour (a denied one fails them there). Returns the
 * bytes written, or -1. */
ssize_t sl_reqout_bio_write(int fd, struct sl_fd *e, const void *buf, size_t n,
                            sl_reqout_write_fn w, void *session, uint64_t (*offset)(void *session));

/* fd.c: the entry is forgotten. */
void sl_reqout_free(struct sl_fd *e);

#endif
