/* SPDX-License-Identifier: BSD-2-Clause */
/* h1fast_avx2.c - the head scan (h1fast_body.h) with AVX2 (and BMI's
 * tzcnt), as the scan of sl_h1fast_scan_path and of the paths that ask
 * the thread's shapes through the `lines` hook (h1fast.c's reads compile
 * their own, with the shapes' compare inlined). The classifiers are
 * h1fast_vec32.h's. Compiled for AVX2 function by function (the library
 * still runs on any x86-64); h1fast.c calls it only on a CPU that has
 * AVX2 and BMI. */
#include "h1fast_vec32.h"

#if defined(SL_H1FAST_X86)
H1_TARGET bool sl_h1fast_scan_avx2(const char *buf, size_t lim, const struct sl_h1fast_key *k,
                                   struct sl_h1fast *out, sl_h1fast_lines_fn *lines)
{
    return scan_head(buf, lim, k, out, lines);
}
#endif
