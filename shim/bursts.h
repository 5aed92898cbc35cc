/* SPDX-License-Identifier: BSD-2-Clause */
/* bursts.h - requests over TLS that sluice cannot decrypt (OpenSSL inside
 * the program's binary as in node's own build, Java's JSSE, rustls),
 * counted as write bursts and paced at the socket.
 *
 * At a connection's first write (reqout.c), a ClientHello that no
 * interposed TLS library has claimed (OpenSSL over a socket or memory
 * BIOs, GnuTLS: those set the connection's tls or bio mode and this is
 * never asked again) opens a tracker. Each burst of application-data
 * records written after the server sent something (the kernel's count of
 * received bytes grew) or first on the connection is one request
 * (core/http/tlsrec.h), decided like a request `GET /` to the server name (or
 * the address) and held at its first record until its turn: a blocking
 * write sleeps, a non-blocking one gets EAGAIN and the socket is reported
 * writable only at the turn (ready.h). `reject` fails the write with the
 * rule's errno and ends the connection (its TLS state counts the records
 * as sent); when h2 is offered, only once the answers on their way are
 * in (bursts.c refusal_wait); `reply` waits its turn within max_delay and
 * falls back to reject beyond it (no 429 can be put into an encrypted
 * stream). When h2 is offered by a program in which no library sluice
 * reads can have written the ClientHello, the first burst is decided at
 * the ClientHello, and a refusal fails that write (bursts.c hello_turn). Exact for a client that offers only http/1.1 (or no
 * ALPN) and does not pipeline; approximate when h2 is offered. The mode is
 * logged once per process for each of the two. Inbound, the same for a
 * server that decrypts without an interposed library (sl_tlsin below).
 */
#ifndef SL_SHIM_BURSTS_H
#define SL_SHIM_BURSTS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "fd.h"

struct sl_runtime;
struct sl_addr;
struct sl_bursts_out;

/* reqout.c, at the connection's first write (buf, len), which starts with
 * a TLS handshake record: a tracker, or NULL (not a whole ClientHello, or
 * no request rule matches). */
struct sl_bursts_out *sl_bursts_open(struct sl_runtime *rt, const struct sl_addr *dst, int fd,
                                     const void *buf, size_t len);

/* reqout.c, before each write of ciphertext on the connection: how many
 * of the len bytes may go now (> 0), or -1 with errno (EAGAIN: held,
 * EINTR, the rule's errno). */
ssize_t sl_bursts_before_write(struct sl_bursts_out *t, int fd, struct sl_fd *e, const void *buf,
                               size_t len, bool nonblock_flag);

/* reqout.c: n bytes of buf were written. */
void sl_bursts_written(struct sl_bursts_out *t, const void *buf, size_t n);

void sl_bursts_close(struct sl_bursts_out *t);

/* Inbound, the same rule of doubt (reqin.c): a server whose TLS sluice
 * cannot decrypt (node's https server: OpenSSL inside its binary, no
 * SSL_read seen) has each burst of the client's application-data records
 * read after the program sent something counted as a request `GET /` to
 * the server name, held at its first record until its turn; a denial
 * resets the connection. Logged once per process. */
struct sl_tlsin;

/* At the first bytes read from a connection an inbound request rule
 * matches, when they begin a TLS handshake record (the ClientHello may be
 * cut: then the local address stands for the server name): a tracker, or
 * NULL. */
struct sl_tlsin *sl_tlsin_open(struct sl_runtime *rt, const struct sl_addr *local,
                               const struct sl_addr *peer, const void *buf, size_t len);

/* n bytes the program took from the socket by another way (reqin.c's gate). */
void sl_tlsin_taken(struct sl_tlsin *t, const void *buf, size_t n);

/* Before a read of up to len bytes (flags as recv's: MSG_DONTWAIT): how
 * many may be read now (> 0; scratch holds a peek at them), 0 at end of
 * file, or -1 as sl_tlsin_read. Report what was read with sl_tlsin_taken. */
ssize_t sl_tlsin_allow(struct sl_tlsin *t, int fd, struct sl_fd *e, void *scratch, size_t len,
                       int flags, bool *reset);

/* A read of the program's (flags as recv's): as recv, or -1 with EAGAIN or
 * EINTR while the burst waits its turn, or ECONNRESET with *reset when it
 * is denied. */
ssize_t sl_tlsin_read(struct sl_tlsin *t, int fd, struct sl_fd *e, void *buf, size_t len, int flags,
                      bool *reset);

/* Says once per process how such connections are counted: at the first
 * burst, or when one closes having been read by no library sluice sees
 * (reqin.c; a program whose handshake sluice sees never says it). */
void sl_tlsin_say(const struct sl_tlsin *t);

void sl_tlsin_close(struct sl_tlsin *t);

#endif
