/* SPDX-License-Identifier: BSD-2-Clause */
/* hpack_pre.h - the pre-pass over an HPACK header block that finds its
 * dynamic table size updates (RFC 7541 section 6.3), so that core/http/h2.c can
 * apply them where nginx does.
 *
 * nginx takes a size update anywhere in a block, any number of them;
 * libnghttp2's inflater refuses one after the first header field, and the
 * HPACK state is then lost. The pre-pass walks the block's representations
 * by their lengths alone (integers and string lengths; strings are skipped,
 * never decoded) and splits the byte stream into runs: field bytes, to be
 * fed to the inflater unchanged, and size update bytes, kept out of it and
 * reported by value once complete, so the caller applies each one at the
 * start of a block the inflater will take (see h2.c).
 *
 * Streaming: a block may be split anywhere (frames, reads). Integers longer
 * than SL_HPRE_INT_MAX bits are refused (`bad`), as nginx and nghttp2 refuse
 * them; after `bad` every byte is reported as field bytes, and the inflater
 * will fail on them. No allocation, no state outside the struct.
 */
#ifndef SL_HPACK_PRE_H
#define SL_HPACK_PRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SL_HPRE_INT_MAX 28 /* bits past the prefix: 4 continuation bytes */

enum sl_hpre_run {
    SL_HPRE_FIELD,  /* bytes of header field representations: feed them */
    SL_HPRE_UPDATE, /* bytes of a size update: keep them out of the inflater */
};

struct sl_hpre {
    uint8_t st;      /* where in a representation the next byte falls */
    uint8_t after;   /* what the integer being read is */
    uint8_t strings; /* strings still ahead in this representation */
    uint8_t shift;
    uint32_t val;  /* the integer being read */
    uint32_t left; /* bytes of the string being skipped */
    bool bad;      /* a malformed integer: nothing more is split */
    bool update;   /* the run just returned completed a size update ... */
    uint32_t size; /* ... to this size */
};

/* A new header block begins. */
void sl_hpre_begin(struct sl_hpre *p);

/* Takes the first run of in[0..n) (n > 0): returns its length (at least 1)
 * and its kind in *run. After an SL_HPRE_UPDATE run, p->update says whether
 * the update is complete, its value in p->size. */
size_t sl_hpre_feed(struct sl_hpre *p, const uint8_t *in, size_t n, enum sl_hpre_run *run);

/* True when the block may end here (no representation is half read). */
static inline bool sl_hpre_at_boundary(const struct sl_hpre *p)
{
    return p->st == 0 && !p->bad;
}

#endif
