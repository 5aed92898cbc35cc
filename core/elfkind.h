/* SPDX-License-Identifier: BSD-2-Clause */
/* elfkind.h - what a program's ELF file says about the calls sluice can
 * see, read before it runs (`sluice run`, `sluice check`) or from
 * /proc/self/exe (the library, once).
 *
 * A program without PT_INTERP is statically linked: LD_PRELOAD is never
 * loaded. A Go program (a .go.buildinfo or .note.go.buildid section) makes
 * its system calls itself even when dynamically linked (cgo). An
 * executable whose dynamic symbol table defines SSL_write carries OpenSSL
 * inside it (node's own binary): its connections are seen, its requests
 * over TLS are not.
 */
#ifndef SL_ELFKIND_H
#define SL_ELFKIND_H

#include <stdbool.h>
#include <stddef.h>

struct sl_elf_kind {
    bool elf;        /* a 64-bit little-endian ELF file was read; nothing below otherwise */
    bool dynamic;    /* it has an interpreter (PT_INTERP) */
    bool go;         /* a Go program */
    bool tls_inside; /* it defines SSL_write or SSL_write_ex itself */
};

/* From the file's bytes (any bytes: bounds are checked). */
void sl_elf_kind_of(const unsigned char *p, size_t n, struct sl_elf_kind *k);

/* From a file (mapped read-only); k->elf false when it cannot be read. */
void sl_elf_kind_file(const char *path, struct sl_elf_kind *k);

/* One sentence on what sluice cannot see in such a program, or NULL when
 * it sees everything it limits (requests: whether a rule counts them). */
const char *sl_elf_kind_unseen(const struct sl_elf_kind *k, bool requests);

#endif
