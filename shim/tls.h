/* tls.h - what the rest of the shim tells tls.c (requests through OpenSSL).
 *
 * A TLS client that drives OpenSSL through a BIO of its own (curl) gives
 * the library no descriptor: while its handshake runs, sl_tls_tying names
 * the session, and the first send it makes ties the session to that
 * socket. shim/gnutls.c ties GnuTLS sessions the same way. */
#ifndef SL_TLS_H
#define SL_TLS_H

extern _Thread_local void *sl_tls_tying;

/* send(): fd is the socket the session being tied writes to. */
void sl_tls_tie(int fd);

/* Ties a session to fd (tlsbio.c: by its ClientHello). */
void sl_tls_tie_to(const void *session, int fd);

/* The socket a session (OpenSSL's SSL, GnuTLS's session) was tied to, or
 * -1; untie forgets it (the session is freed). */
int sl_tls_tied_fd(const void *session);
void sl_tls_untie(const void *session);

#endif
