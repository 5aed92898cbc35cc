/* SPDX-License-Identifier: BSD-2-Clause */
/* unseen.h - what sluice cannot see in this program, said once.
 *
 * At start (init.c) the program's own ELF file is read (core/elfkind.h):
 * a Go program (cgo: the library is loaded, its calls bypass it) or one
 * with OpenSSL inside its binary gets one warning, unless `sluice run`
 * already said so for this very file (SLUICE_SEEN_EXE). When a connection
 * a request rule matches turns out to speak TLS sluice cannot read
 * (reqout.c), the log line names the likely cause: OpenSSL inside the
 * binary, OpenSSL over memory BIOs (tls.c notes those sessions), or
 * another TLS library.
 */
#ifndef SL_UNSEEN_H
#define SL_UNSEEN_H

#include <stdbool.h>

struct sl_runtime;

/* init.c: the runtime was published. */
void sl_unseen_at_start(const struct sl_runtime *rt);

/* tls.c: the program wrote through an OpenSSL session with no socket. */
void sl_unseen_memory_bio(void);

/* reqout.c: the likely reason a connection's TLS is not read, a phrase. */
const char *sl_unseen_tls_cause(void);

/* The TLS libraries whose calls sluice interposes, by soname (tls.c,
 * gnutls.c). */
#define SL_LIB_OPENSSL "libssl.so.3"
#define SL_LIB_GNUTLS  "libgnutls.so.30"

/* bursts.c, at a ClientHello no interposed library is known to have
 * written: whether none can have (OpenSSL inside the program's binary,
 * or neither library loaded: Java's JSSE, rustls). Its session's requests
 * will then surely be counted from its records. */
bool sl_unseen_tls_certain(void);

#endif
