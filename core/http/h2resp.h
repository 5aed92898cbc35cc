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
 * Pairing (count_status, req_conns, cost_from over HTTP/2): with
 * sl_h2resp_pair, every final head's status and header fields are handed
 * over by stream, so are the DATA frames' payloads (padding taken off),
 * and each stream's end as the responder ends it: END_STREAM on a HEADERS
 * or DATA frame, or its RST_STREAM. A GOAWAY says the streams past its
 * last id will never be answered.
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

/* What pairs responses with their requests wants to be told, by stream
 * (each may be NULL; arg is sl_h2resp's). */
struct sl_h2resp_pairs {
    void (*status)(void *arg, uint32_t stream, int status); /* a final head's */
    void (*field)(void *arg, uint32_t stream, const char *name, size_t nlen, const char *value,
                  size_t vlen); /* its fields, before status */
    void (*data)(void *arg, uint32_t stream, const uint8_t *p, size_t n); /* its body */
    void (*end)(void *arg, uint32_t stream);  /* the responder ended it */
    void (*goaway)(void *arg, uint32_t last); /* streams past last are not answered */
};

struct sl_h2resp {
    uint8_t hdr[9];
    uint8_t hdr_len; /* bytes of the frame header read */
    uint32_t left;   /* payload bytes of the frame still to come */
    uint8_t type, flags;
    uint32_t stream;
    uint8_t front;    /* bytes to skip before the fragment: pad length, priority, promised id */
    bool want_padlen; /* the next payload byte is the pad length */
    uint32_t pad;     /* padding at the frame's end */
    bool in_block;    /* a header block is open (CONTINUATION may follow) */
    uint32_t block_stream;
    bool block_first;  /* no field of the block read yet */
    bool block_resp;   /* the block is a final response head */
    bool block_end;    /* the block's HEADERS ended its stream */
    uint8_t goaway[4]; /* a GOAWAY's last stream id, as far as read */
    uint8_t goaway_len;
    bool lost;
    struct nghttp2_hd_inflater *inflater;
    void (*on_head)(void *arg, uint32_t stream, const struct sl_learn_resp *f);
    void *arg;
    const struct sl_h2resp_pairs *pairs; /* sl_h2resp_pair */
    struct sl_learn_resp fields;
};

/* Reads from the start of the server's side (its SETTINGS come first);
 * on_head(arg, stream, fields) once per final response head. */
void sl_h2resp_init(struct sl_h2resp *r,
                    void (*on_head)(void *arg, uint32_t stream, const struct sl_learn_resp *f),
                    void *arg);
void sl_h2resp_fini(struct sl_h2resp *r);

/* Reports every final head and every stream's end from now on (pairs
 * outlives r). */
void sl_h2resp_pair(struct sl_h2resp *r, const struct sl_h2resp_pairs *pairs);

/* The program read these n bytes from the server. */
void sl_h2resp_feed(struct sl_h2resp *r, const void *buf, size_t n);

/* Stops the reading: bytes the program wrote were not shown. */
void sl_h2resp_lose(struct sl_h2resp *r);

/* Whether reading stopped (see above). */
bool sl_h2resp_lost(const struct sl_h2resp *r);

#endif
