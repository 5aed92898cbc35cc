/* SPDX-License-Identifier: BSD-2-Clause */
/* h1resp.h - counts the complete HTTP/1 responses in what a client reads.
 *
 * Outbound `reply` (core/http/request.h, sl_req_swallow) may hand the client a
 * 429 only once it has read every response it is owed for the requests
 * sent before the swallowed one: this counts them. Bytes go in in stream
 * order, as the program reads them, split anywhere. A response to HEAD has
 * no body: the caller says which requests were HEAD (sl_h1resp_sent). 1xx
 * interim responses (100 Continue) are not final and not counted. After a
 * 101, a response to CONNECT, or a malformed response nothing more is
 * counted (sl_h1resp_lost): the caller then never assumes a response has
 * been read. A response delimited by the end of the stream is counted at
 * sl_h1resp_eof.
 *
 * Outbound `learn` (core/http/learn.h): with sl_h1resp_learn, the
 * rate-limit fields of each final response head are read too and handed
 * to a callback with the index of the request the response answers (0 for
 * the first sl_h1resp_sent). The bytes are only read, never changed.
 *
 * Inbound `count_status` (core/http/request.h): with sl_h1resp_statuses,
 * the status of each final response is handed to a callback with the
 * index of the request it answers, whatever its fields (the status line
 * alone is read: no header is copied).
 *
 * Token budgets (`cost_from`, core/http/costread.h): with sl_h1resp_bodies,
 * each final response's header fields (as far as they fit, as `learn`
 * reads them) and its body, the chunked framing taken off, are handed to
 * callbacks with the index of the request it answers; its end is
 * on_done's (sl_h1resp_ends).
 *
 * Common heads (HTTP/1.1, a status 200-599, Content-Length, nothing odd:
 * core/http/h1resp_fast.h) are read in one pass and their bodies skipped
 * by their length, with no parser call per byte, when only statuses and
 * ends are wanted (count_status, req_conns, outbound reply); everything
 * else goes through http-parser, the reference (sl_h1resp_slow_only:
 * tests/fuzz/fuzz_h1resp.c holds the two to the same result).
 *
 * Fixed size, no allocation, not thread-safe.
 */
#ifndef SL_H1RESP_H
#define SL_H1RESP_H

#include <http_parser.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "learn.h"

#define SL_H1RESP_RING 64 /* requests in flight whose methods are remembered */

struct sl_h1resp {
    http_parser parser;
    uint64_t sent;                         /* requests sent */
    uint64_t done;                         /* final responses read */
    uint64_t head[SL_H1RESP_RING / 64];    /* bit i % RING: request i was HEAD */
    uint64_t connect[SL_H1RESP_RING / 64]; /* bit i % RING: request i was CONNECT */
    bool lost;
    /* the fast path: a response read by h1resp_fast.c whose body is being
     * skipped (the parser rests between messages meanwhile) */
    uint64_t body_left; /* its body bytes not yet read */
    bool stale;         /* the stream ended in such a body (the parser's
                           HPE_INVALID_EOF_STATE): more bytes lose the count */
    bool slow_only;     /* tests: http-parser alone (the reference) */
    uint8_t rest;       /* the parser's state between messages (as at init) */
    /* learn: the head being read (a header's name and value as far as they
     * fit; a longer value is read as unreadable) */
    void (*on_head)(void *arg, uint64_t index, const struct sl_learn_resp *f);
    void *arg;
    void (*on_status)(void *arg, uint64_t index, int status); /* count_status */
    void (*on_done)(void *arg, uint64_t index);               /* req_conns */
    /* cost_from: header fields and body bytes of final responses */
    void (*on_field)(void *arg, uint64_t index, const char *name, size_t nlen, const char *value,
                     size_t vlen);
    void (*on_body)(void *arg, uint64_t index, const char *at, size_t n);
    struct sl_learn_resp fields;
    char name[48], value[160];
    uint16_t nlen, vlen;
    bool in_value, name_long, value_long;
};

void sl_h1resp_init(struct sl_h1resp *r);

/* Tests: every byte through http-parser, the fast path's reference. */
static inline void sl_h1resp_slow_only(struct sl_h1resp *r)
{
    r->slow_only = true;
}

/* Reads the rate-limit fields of every final response from now on:
 * on_head(arg, index, fields) once per response head that has any. */
void sl_h1resp_learn(struct sl_h1resp *r,
                     void (*on_head)(void *arg, uint64_t index, const struct sl_learn_resp *f),
                     void *arg);

/* Hands the status of every final response from now on to
 * on_status(arg, index, status) (arg as sl_h1resp_learn's: one for both). */
void sl_h1resp_statuses(struct sl_h1resp *r,
                        void (*on_status)(void *arg, uint64_t index, int status), void *arg);

/* Calls on_done(arg, index) at the end of every final response from now
 * on (req_conns: the request is no longer in flight). */
void sl_h1resp_ends(struct sl_h1resp *r, void (*on_done)(void *arg, uint64_t index), void *arg);

/* Hands every final response's header fields to on_field and its body
 * bytes (framing removed) to on_body from now on (arg as the others'). */
void sl_h1resp_bodies(struct sl_h1resp *r,
                      void (*on_field)(void *arg, uint64_t index, const char *name, size_t nlen,
                                       const char *value, size_t vlen),
                      void (*on_body)(void *arg, uint64_t index, const char *at, size_t n),
                      void *arg);

/* One more request was sent (in order); `method` as in its head. */
void sl_h1resp_sent(struct sl_h1resp *r, const char *method);

/* The program read these n bytes from the server. */
void sl_h1resp_feed(struct sl_h1resp *r, const void *buf, size_t n);

/* Bytes of the stream went by unread: nothing more is counted. */
void sl_h1resp_lose(struct sl_h1resp *r);

/* The program read the end of the stream. */
void sl_h1resp_eof(struct sl_h1resp *r);

/* Requests sent whose final responses the program has not read yet;
 * UINT64_MAX once counting is lost. */
uint64_t sl_h1resp_outstanding(const struct sl_h1resp *r);

#endif
