/* SPDX-License-Identifier: BSD-2-Clause */
/* tlsown.h - inbound OpenSSL sessions with no socket of their own: over
 * the server's own BIO (apache's mod_ssl, haproxy) or over memory BIOs
 * (puma, python's asyncio and uvloop): which socket they read from, for
 * tls.c (tlsown.c; the hello's random is kept by tiein.h). */
#ifndef SL_TLSOWN_H
#define SL_TLSOWN_H

/* The socket a server session with no descriptor reads from (-1: none
 * yet, or never): found by its client random once the library has read
 * the ClientHello, and tied (tie.h); the connection is then read through
 * SSL_read (reqin.h). A server session that matches none is marked untied
 * (looked for once) and the cause kept for the log (tiein.h). */
int sl_tlsown_fd(const void *ssl);

/* tls.c: a request of the session was held (the program is told
 * want-read): over the program's own BIO, a peek reads on to the socket's
 * end (see tlsown.c). */
void sl_tlsown_drain(void *ssl);

#endif
