/* SPDX-License-Identifier: BSD-2-Clause */
/* tlsbio.h - OpenSSL sessions over memory BIOs (python asyncio's sslproto,
 * aiohttp, httpx.AsyncClient): the program runs OpenSSL on buffers and
 * sends the records itself, so the session has no descriptor.
 *
 * Tie: after the session's first handshake step its client random is
 * remembered; the ClientHello the program then writes to a socket carries
 * it (bytes 11-42 of the record), and reqout.c asks tie.h whether the
 * record belongs to a remembered session, which is then tied to that
 * socket (tie.h). Count: the plaintext given to SSL_write is read for
 * requests as on any TLS connection. Pace: SSL_write always succeeds (the
 * event loops treat want-write from an SSLObject as fatal); a request that
 * must wait marks the offset in the ciphertext stream where its records
 * begin (BIO_number_written of the session's write BIO), and the socket
 * write of those bytes is held until the turn (reqout.h), the socket
 * reported writable only then. A denied request (reject, and reply, which
 * falls back to reject here) fails the socket write at that offset with
 * the rule's errno.
 */
#ifndef SL_TLSBIO_H
#define SL_TLSBIO_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "gate.h"

/* tls.c: a handshake step of a session with no socket ended. */
void sl_tlsbio_remember(const void *ssl);

/* tls.c: the session reads through a memory BIO (BIO_s_mem). */
bool sl_tlsbio_memory(const void *ssl);

/* tls.c: the session is freed. */
void sl_tlsbio_forget(const void *ssl);

/* tls.c: the transport of a tied session's SSL_write (reqout.h:
 * sl_reqout_tls_write): the library's write into the write BIO, and the
 * ciphertext offset where the next record begins. Its reads are the
 * library's own, as over a socket. */
struct sl_transport sl_tlsbio_transport(void *ssl, int fd);

#endif
