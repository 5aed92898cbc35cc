/* SPDX-License-Identifier: BSD-2-Clause */
/* h1fast_scan.h - inside h1fast: the scan of one head, once per instruction
 * set (h1fast_body.h is the algorithm; h1fast_avx2.c, h1fast_sse2.c and
 * h1fast_plain.c compile it with their classifiers), and what they share.
 * h1fast.c picks one at its first read by what the CPU has. */
#ifndef SL_H1FAST_SCAN_H
#define SL_H1FAST_SCAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "h1fast.h"

/* A header name byte, lowercased; 0: not one the fast path reads. */
static const uint8_t sl_h1fast_name_chr[256] = {
    ['-'] = '-', ['_'] = '_', ['0'] = '0', ['1'] = '1', ['2'] = '2', ['3'] = '3', ['4'] = '4',
    ['5'] = '5', ['6'] = '6', ['7'] = '7', ['8'] = '8', ['9'] = '9',
#define L(u, l) [u] = l, [l] = l
    L('A', 'a'), L('B', 'b'), L('C', 'c'), L('D', 'd'), L('E', 'e'), L('F', 'f'), L('G', 'g'),
    L('H', 'h'), L('I', 'i'), L('J', 'j'), L('K', 'k'), L('L', 'l'), L('M', 'm'), L('N', 'n'),
    L('O', 'o'), L('P', 'p'), L('Q', 'q'), L('R', 'r'), L('S', 's'), L('T', 't'), L('U', 'u'),
    L('V', 'v'), L('W', 'w'), L('X', 'x'), L('Y', 'y'), L('Z', 'z'),
#undef L
};

/* The header lines of the head at buf, from ls (its request line read
 * into out, an HTTP/1.1 one; get: its method is GET or HEAD), read from a
 * memory of such lines (h1fast.c's shapes): true, out filled as the scan
 * would fill it; false, out untouched: the scan reads them. */
typedef bool sl_h1fast_lines_fn(const char *buf, size_t lim, size_t ls, bool get,
                                const struct sl_h1fast_key *k, struct sl_h1fast *out);

/* The head at buf (lim <= SL_H1FAST_MAX bytes, the 32 before buf + lim
 * readable) into out; false: declined (h1fast_body.h). lines (NULL:
 * none) may read its header lines once its request line is read. One per
 * instruction set; each gives the same result for the same bytes. */
bool sl_h1fast_scan_plain(const char *buf, size_t lim, const struct sl_h1fast_key *k,
                          struct sl_h1fast *out, sl_h1fast_lines_fn *lines);
#if defined(__x86_64__) && defined(__SSE2__)
#define SL_H1FAST_X86 1
bool sl_h1fast_scan_sse2(const char *buf, size_t lim, const struct sl_h1fast_key *k,
                         struct sl_h1fast *out, sl_h1fast_lines_fn *lines);
bool sl_h1fast_scan_avx2(const char *buf, size_t lim, const struct sl_h1fast_key *k,
                         struct sl_h1fast *out, sl_h1fast_lines_fn *lines);
#endif

#endif
