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

struct sl_runtime;

/* init.c: the runtime was published. */
void sl_unseen_at_start(const struct sl_runtime *rt);

/* tls.c: the program wrote through an OpenSSL session with no socket. */
void sl_unseen_memory_bio(void);

/* reqout.c: the likely reason a connection's TLS is not read, a phrase. */
const char *sl_unseen_tls_cause(void);

#endif
