/* SPDX-License-Identifier: BSD-2-Clause */
/* h2.h - finds HTTP/2 requests in the client's side of a connection.
 *
 * After the 24-byte connection preface, frames are scanned over a byte
 * stream split anywhere (a frame across several writes, several frames or
 * streams in one write). A request is a HEADERS frame that opens a new
 * client stream (odd id above every earlier one); its header block
 * (HEADERS + CONTINUATION) is decoded with libnghttp2's HPACK inflater for
 * :method, :path, :authority, the configured key and Idempotency-Key, and
 * reported in the same struct sl_h1_head as HTTP/1 heads (http_major 2;
 * start/end span the block's frames, padding included).
 *
 * HPACK is stateful: the inflater's dynamic table must see every header
 * block once, in order (trailers too). So scanning ahead is feeding: feed
 * every byte exactly once, as soon as it is seen, and next time feed only
 * the bytes past sl_h2_pos() (see http1.h). Never feed a copy.
 *
 * HPACK as nginx takes it, through a pre-pass (core/http/hpack_pre.h):
 * dynamic table size updates anywhere in a block and any number of them
 * (libnghttp2 refuses one after the first field) are applied where nginx
 * applies them; a Huffman string is held until it ends (in place when it
 * ends in the same read, else copied to `hold`, allocated at need up to
 * SL_H2_HOLD_MAX) and fed without the whole bytes of padding nginx reads
 * past (8 to 29 bits of ones; libnghttp2 refuses over 7). So the fields
 * of that request and of every later one (the dynamic table as nginx
 * keeps it) are still read. A block over SL_H2_BLOCK_MAX is reported at
 * the frame that crosses it (`odd` LONG, the fields seen so far) and the
 * rest is still inflated.
 *
 * The rule of doubt (http1.h): when the inflater fails all the same (on
 * what nginx refuses too: an index past the table, EOS or a 0 bit in
 * Huffman padding, an integer too long, a truncated block), the HPACK
 * state is lost, but frames are still framed: that request and every
 * later HEADERS frame that opens a client stream are reported, with `odd`
 * set and no fields (no path, host, method or key). Only a stream that does
 * not open with the preface, or a framing error (after which servers end
 * the connection), ends scanning (passthrough). Bytes are never changed. The inflater is
 * allocated (core/mem.h) at the first header block; the dynamic table may
 * grow to SL_H2_TABLE_MAX. Not thread-safe.
 */
#ifndef SL_H2_H
#define SL_H2_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hpack_pre.h"
#include "http1.h"

#define SL_H2_BLOCK_MAX 65536 /* bytes of one header block's frames */
#define SL_H2_TABLE_MAX 65536 /* the largest dynamic table size update accepted */
#define SL_H2_HOLD_MAX  65536 /* the longest Huffman string held (nghttp2's own bound) */

enum sl_h2_event {
    SL_H2_MORE,        /* every byte consumed, no request completed: feed more */
    SL_H2_REQUEST,     /* a request's header block completed: sl_h2_head() holds it */
    SL_H2_PASSTHROUGH, /* nothing more will be reported (all bytes consumed) */
    SL_H2_RESET,       /* the client reset a stream: sl_h2_reset_stream(), ending at sl_h2_pos() */
};

enum sl_h2_state {
    SL_H2_IDLE,    /* bytes so far may pass: no request is being read */
    SL_H2_IN_HEAD, /* inside a frame that may open a request, begun at sl_h2_head_start() */
    SL_H2_PASS,    /* passthrough: no more requests */
};

struct nghttp2_hd_inflater;

struct sl_h2 {
    enum sl_h2_state state;
    enum sl_h1_key_kind key_kind;
    char key_name[SL_H1_NAME_MAX];
    size_t key_name_len;
    uint64_t pos;         /* stream offset of the next byte to feed */
    uint64_t frame_start; /* offset of the current frame's first byte */
    uint64_t head_start;  /* IN_HEAD: where the request's first frame began */
    uint8_t preface;      /* preface bytes seen (24: done) */
    uint8_t hdr[9];       /* the current frame header */
    uint8_t hdr_got;
    uint8_t type, flags;
    uint32_t stream;
    uint32_t remaining;  /* payload bytes of the current frame not yet fed */
    uint32_t skip_front; /* HEADERS: pad length byte + priority bytes still ahead */
    uint32_t pad;        /* padding bytes at the frame's end */
    bool want_padlen;
    bool in_block;      /* a header block is open: CONTINUATION must follow */
    bool block_request; /* the open block opens a new client stream */
    bool block_done;    /* the open block ended inside the current frame */
    uint32_t block_bytes;
    uint32_t block_stream;
    uint32_t last_stream;  /* highest client stream opened */
    bool rst;              /* the current frame is a well-formed RST_STREAM */
    uint32_t reset_stream; /* the stream of the last SL_H2_RESET */
    struct nghttp2_hd_inflater *inflater;
    bool blind; /* the inflater failed: requests are framed, not decoded */
    bool big;   /* the open block is over SL_H2_BLOCK_MAX: decided early */
    bool fed;   /* field bytes reached the inflater since its block began */
    struct sl_hpre hpre;
    uint8_t *hold;     /* a Huffman string's length and bytes, until it ends */
    uint32_t hold_len; /* bytes held */
    uint32_t hold_cap; /* bytes allocated */
    bool hold_pass;    /* the string is fed as it comes (too long, no memory) */
    bool want_cookie;  /* collect cookie fields into head.cookie */
    bool key_cut;      /* the key header's copies were cut (h2.c: missing) */
    struct sl_h1_head head;
};

/* Collect cookie fields into head.cookie (a rule keys on a cookie). */
static inline void sl_h2_want_cookies(struct sl_h2 *s)
{
    s->want_cookie = true;
}

/* Starts a stream at offset `pos` (0 at the start of a connection; after
 * SL_H1_H2, sl_h1_pos() with preface_seen true). kind/name as sl_h1_init. */
void sl_h2_init(struct sl_h2 *s, enum sl_h1_key_kind kind, const char *name, uint64_t pos,
                bool preface_seen);

/* Feeds up to len bytes at sl_h2_pos(s); stops right after the first
 * request that completes. Returns how many bytes were consumed. */
size_t sl_h2_feed(struct sl_h2 *s, const void *buf, size_t len, enum sl_h2_event *ev);

/* The last request (valid after SL_H2_REQUEST until the next feed). */
const struct sl_h1_head *sl_h2_head(const struct sl_h2 *s);

/* The stream id of the last request. */
static inline uint32_t sl_h2_stream(const struct sl_h2 *s)
{
    return s->last_stream;
}

/* The stream the client reset (valid after SL_H2_RESET). */
static inline uint32_t sl_h2_reset_stream(const struct sl_h2 *s)
{
    return s->reset_stream;
}

static inline uint64_t sl_h2_pos(const struct sl_h2 *s)
{
    return s->pos;
}

static inline enum sl_h2_state sl_h2_state(const struct sl_h2 *s)
{
    return s->state;
}

static inline uint64_t sl_h2_head_start(const struct sl_h2 *s)
{
    return s->head_start;
}

/* Frees the inflater and the hold. */
void sl_h2_fini(struct sl_h2 *s);

#endif
