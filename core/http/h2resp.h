/* SPDX-License-Identifier: BSD-2-Clause */
/* h2resp.h - reads the response heads of HTTP/2 in what a client reads.
 *
 * The server's side of an HTTP/2 connection, fed in stream order as the
 * program reads it, split anywhere: frames are framed by hand (a 9-byte
 * header and a length, RFC 9113 4.1) and every header block (HEADERS,
 * PUSH_PROMISE and their CONTINUATIONs, padding and priority skipped) is
 * fed to libnghttp2's HPACK inflater, which must see each block once, in
 * order, to keep the server encoder's dynamic table. A block whose first
 * field is `:status` with a final status (200 or more) is a response
 * head: when it has any rate-limit field (learn.h), they are handed to a
 * callback with the stream id (as h1resp.h does with a request's index).
 * Interim heads (1xx), trailers and pushed requests are inflated and not
 * reported.
 *
 * The rule of doubt: what learn reads only ever makes a limit stricter,
 * so a stream sluice cannot read teaches nothing and limits nothing less.
 * A framing error, a block the inflater refuses or memory refused stops
 * the reading for the rest of the connection (sl_h2resp_lost); bytes are
 * never changed. The inflater is allocated (h2mem.h) at the first block.
 * Not thread-safe.
 */
#ifndef SL_H2RESP_H
#define SL_H2RESP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "learn.h"

#define SL_H2RESP_TABLE_MAX 65536 /* the largest dynamic table size update taken */

struct nghttp2_hd_inflater;

struct sl_h2resp {
    uint8_t hdr[9];
    uint8_t hdr_len;   /* bytes of the frame header read */
    uint32_t left;     /* payload bytes of the frame still to come */
    uint8_t type, flags;
    uint32_t stream;
    uint8_t front;     /* bytes to skip before the fragment: pad length, priority, promised id */
    bool want_padlen;  /* the next payload byte is the pad length */
    uint32_t pad;      /* padding at the frame's end */
    bool in_block;     /* a header block is open (CONTINUATION may follow) */
    uint32_t block_stream;
    bool block_first;  /* no field of the block read yet */
    bool block_resp;   /* the block is a final response head */
    bool lost;
    struct nghttp2_hd_inflater *inflater;
    void (*on_head)(void *arg, uint32_t stream, const struct sl_learn_resp *f);
    void *arg;
    struct sl_learn_resp fields;
};

/* Reads from the start of the server's side (its SETTINGS come first);
 * on_head(arg, stream, fields) once per final response head. */
void sl_h2resp_init(struct sl_h2resp *r,
                    void (*on_head)(void *arg, uint32_t stream, const struct sl_learn_resp *f),
                    void *arg);
void sl_h2resp_fini(struct sl_h2resp *r);

/* The program read these n bytes from the server. */
void sl_h2resp_feed(struct sl_h2resp *r, const void *buf, size_t n);

/* Whether reading stopped (see above). */
bool sl_h2resp_lost(const struct sl_h2resp *r);

#endif
