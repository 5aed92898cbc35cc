/* SPDX-License-Identifier: BSD-2-Clause */
/* costread.h - what an answer says a call cost (cost_from, core/limit/cost.h).
 *
 * One response at a time, as core/http/h1resp.h reads it: its header
 * fields, then its body with the chunked framing taken off, split
 * anywhere, then its end. The cost is
 *   header:NAME  the field's value, a decimal integer;
 *   json:a.b.c   the number at that path (object members, or array
 *                places written as digits) of the JSON body, read from
 *                its first SL_COSTREAD_MAX bytes; with Content-Type
 *                text/event-stream, of the last event whose data is JSON
 *                with the path (an OpenAI stream puts `usage` in the
 *                chunk before `data: [DONE]`).
 * A body longer than that, JSON that does not parse or nests deeper than
 * SL_COSTREAD_DEPTH, a number that is negative, not whole or absurd
 * (past SL_COSTREAD_MOST): no cost (the caller charges by the rule of
 * doubt). Bytes are only read. Memory: the buffers grow as the body
 * does, to SL_COSTREAD_MAX each (an event's line and data), and are given
 * back at the response's end. JSON is parsed by libjansson, with
 * sluice's allocator.
 */
#ifndef SL_COSTREAD_H
#define SL_COSTREAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../tokens.h"

#define SL_COSTREAD_MAX   (64 * 1024)  /* bytes of a body (or an event) read */
#define SL_COSTREAD_DEPTH 64           /* JSON nesting read (jansson recurses) */
#define SL_COSTREAD_MOST  (1ull << 40) /* a cost past this is not believed */

struct sl_costread {
    enum sl_cost_from from;
    char name[SL_COST_NAME_MAX];
    /* the response being read */
    bool found, sse, over, after_cr;
    uint64_t cost;
    char *buf; /* JSON: the body; SSE: the current line */
    size_t len, cap;
    char *data; /* SSE: the current event's data lines */
    size_t dlen, dcap;
};

/* What the reader looks for (name: the header's name or the path). */
void sl_costread_init(struct sl_costread *r, enum sl_cost_from from, const char *name);

/* A new response begins. */
void sl_costread_begin(struct sl_costread *r);

/* One header field of its head. */
void sl_costread_header(struct sl_costread *r, const char *name, size_t nlen, const char *value,
                        size_t vlen);

/* n bytes of its body (framing removed). */
void sl_costread_body(struct sl_costread *r, const char *at, size_t n);

/* Its end: true with *cost when one was read. The buffers are freed. */
bool sl_costread_end(struct sl_costread *r, uint64_t *cost);

/* The number at `path` in the JSON text [at, at+n), as json: reads it
 * (tests and the fuzz target). */
bool sl_costread_json(const char *path, const char *at, size_t n, uint64_t *cost);

void sl_costread_fini(struct sl_costread *r);

#endif
