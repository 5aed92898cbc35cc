/* SPDX-License-Identifier: BSD-2-Clause */
/* hpack_pre.h - the pre-pass over an HPACK header block that puts it in the
 * shape libnghttp2's inflater takes, where nginx reads what the inflater
 * would refuse: dynamic table size updates (RFC 7541 section 6.3) so that
 * core/http/h2.c can apply them where nginx does, and Huffman strings, so
 * that h2.c can drop the padding nginx reads past.
 *
 * nginx takes a size update anywhere in a block, any number of them;
 * libnghttp2's inflater refuses one after the first header field, and the
 * HPACK state is then lost. The pre-pass walks the block's representations
 * by their lengths alone (integers and string lengths; strings are skipped,
 * never decoded) and splits the byte stream into runs: field bytes, to be
 * fed to the inflater unchanged; size update bytes, kept out of it and
 * reported by value once complete, so the caller applies each one at the
 * start of a block the inflater will take (see h2.c); and Huffman-coded
 * strings (length prefix and bytes), which the caller holds until the
 * string ends, then feeds as sl_hpre_huff_len() says nginx reads them.
 *
 * Huffman padding (RFC 7541 section 5.2): at most 7 bits, the high bits
 * of EOS (all ones). nghttp2 refuses more; nginx 1.22 reads any run of
 * ones after the last symbol up to 29 bits (30 ones are EOS, which both
 * refuse, as both refuse a 0 bit in the padding; measured). So a string
 * whose last 1 to 3 bytes are padding alone is the same string without
 * them, for nginx and for the dynamic table (whose entries count decoded
 * octets).
 *
 * Streaming: a block may be split anywhere (frames, reads). Integers are
 * read as nghttp2 reads them: continuation bytes at shifts up to
 * SL_HPRE_INT_MAX, the value within 32 bits; longer ones are refused
 * (`bad`; nginx refuses from a fourth continuation byte on, and ends the
 * connection); after `bad` every byte is reported as field bytes, and the
 * inflater will fail on them. No allocation, no state outside the struct.
 */
#ifndef SL_HPACK_PRE_H
#define SL_HPACK_PRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SL_HPRE_INT_MAX 28 /* the last shift of a continuation byte: 5 of them */

enum sl_hpre_run {
    SL_HPRE_FIELD,  /* bytes of header field representations: feed them */
    SL_HPRE_UPDATE, /* bytes of a size update: keep them out of the inflater */
    SL_HPRE_HUFF,   /* bytes of a Huffman string, its length first: hold them */
};

struct sl_hpre {
    uint8_t st;      /* where in a representation the next byte falls */
    uint8_t after;   /* what the integer being read is */
    uint8_t strings; /* strings still ahead in this representation */
    uint8_t shift;
    uint32_t val;      /* the integer being read */
    uint32_t left;     /* bytes of the string being skipped */
    bool bad;          /* a malformed integer: nothing more is split */
    bool update;       /* the run just returned completed a size update ... */
    uint32_t size;     /* ... to this size */
    bool huff;         /* the string being read is Huffman-coded */
    bool huff_known;   /* its length is read: huff_len */
    bool huff_end;     /* the run just returned ended it */
    uint32_t huff_len; /* its length in bytes, after the length prefix */
};

/* A new header block begins. */
void sl_hpre_begin(struct sl_hpre *p);

/* Takes the first run of in[0..n) (n > 0): returns its length (at least 1)
 * and its kind in *run. After an SL_HPRE_UPDATE run, p->update says whether
 * the update is complete, its value in p->size. After an SL_HPRE_HUFF run
 * (one string's bytes at most), p->huff_end says whether the string is
 * complete, p->huff_len its length once p->huff_known. */
size_t sl_hpre_feed(struct sl_hpre *p, const uint8_t *in, size_t n, enum sl_hpre_run *run);

/* The length nginx reads the Huffman string s[0..len) at: len, or less
 * when its last bytes are padding alone (8 to 29 bits of ones after the
 * last symbol, which nghttp2 refuses): the string without them, padded as
 * RFC 7541 says. A string both refuse (EOS, a 0 bit in the padding) is
 * left as it is. */
size_t sl_hpre_huff_len(const uint8_t *s, size_t len);

/* True when the block may end here (no representation is half read). */
static inline bool sl_hpre_at_boundary(const struct sl_hpre *p)
{
    return p->st == 0 && !p->bad;
}

#endif
