/* SPDX-License-Identifier: BSD-2-Clause */
/* tiein.h - which socket an inbound TLS session without a descriptor of
 * its own reads from (tiein.c), for reqin.c and tls.c.
 *
 * A server that runs OpenSSL over a BIO of its own (apache's mod_ssl over
 * bucket brigades, haproxy's BIO methods) or over memory BIOs (puma's
 * MiniSSL, python's ssl.MemoryBIO under asyncio and uvicorn) reads the
 * socket itself and hands the ciphertext to the library: SSL_get_rfd is
 * -1. The client random is in the ClientHello, the first record the
 * server reads from the socket: reqin.c remembers it for the socket (of a
 * connection an inbound request rule matches), and tls.c, once the
 * library has read the hello (SSL_get_client_random no longer zero), finds
 * the socket by it and ties the session there (tie.h), the inbound
 * analogue of tlsbio.h's outbound tie. */
#ifndef SL_TIEIN_H
#define SL_TIEIN_H

#include <stdbool.h>
#include <stddef.h>

#include "tie.h"

/* reqin.c: the first SL_TIEIN_HEAD bytes read from fd, an inbound request
 * connection (gathered over as many reads as the program made of them);
 * when they are a ClientHello's, its random is remembered for fd. */
#define SL_TIEIN_HEAD (11 + SL_TLS_RANDOM_LEN) /* record 5, handshake 4, version 2, random */
void sl_tiein_hello(int fd, const void *buf, size_t n);

/* reqin.c: fd's connection ends (or a library reads it over the socket). */
void sl_tiein_forget(int fd);

/* tls.c: the socket whose ClientHello carried random, or -1 (not seen, or
 * not remembered); found, it is forgotten. */
int sl_tiein_find(const unsigned char random[SL_TLS_RANDOM_LEN]);

/* tls.c: a server session over a BIO that is not a socket could not be
 * tied (why: what the log says); reqin.c then names that as the cause of
 * counting the connection's TLS records (said once). */
void sl_tiein_untied(const char *why);
const char *sl_tiein_why(void);

#endif
