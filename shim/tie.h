/* SPDX-License-Identifier: BSD-2-Clause */
/* tie.h - which socket a TLS session without a descriptor of its own
 * writes to (tie.c), for tls.c, gnutls.c and tlsbio.c.
 *
 * A TLS client that drives OpenSSL through a BIO of its own (curl) gives
 * the library no descriptor: while its handshake runs, sl_tls_tying names
 * the session, and the first send it makes ties the session to that
 * socket. shim/gnutls.c ties GnuTLS sessions the same way. */
#ifndef SL_TIE_H
#define SL_TIE_H

#include <stdbool.h>
#include <stddef.h>

extern _Thread_local void *sl_tls_tying;

/* send(): fd is the socket the session being tied writes to. */
void sl_tls_tie(int fd);

/* Ties a session to fd. */
void sl_tls_tie_to(const void *session, int fd);

/* Sessions over memory BIOs (tlsbio.h): one whose handshake began with
 * this client random waits for its ClientHello to reach a socket; forget
 * drops it (the session is freed). */
#define SL_TLS_RANDOM_LEN 32
void sl_tls_wait_hello(const void *session, const unsigned char random[SL_TLS_RANDOM_LEN]);
void sl_tls_forget_hello(const void *session);

/* reqout.c: the first record the program writes to fd; true when it is the
 * ClientHello of a waiting session, now tied to fd. */
bool sl_tls_tie_hello(int fd, const void *rec, size_t len);

/* A server session looked for and found tied to no socket (tlsown.c,
 * gnutls.c): tied to this, looked for once. */
#define SL_TLS_UNTIED (-2)

/* The socket a session (OpenSSL's SSL, GnuTLS's session) was tied to, or
 * -1 (or SL_TLS_UNTIED); untie forgets it (the session is freed). */
int sl_tls_tied_fd(const void *session);
void sl_tls_untie(const void *session);

#endif
