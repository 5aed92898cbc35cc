/* SPDX-License-Identifier: BSD-2-Clause */
/* feed.h - how the request fuzz targets show a connection's bytes to
 * sl_req_admit: the input's first byte steers the size of each piece (1
 * to 7 more bytes at a time), the rest is the stream. One step shows the
 * next piece, admits what is shown and not yet passed, and checks that
 * admit never grants more than it was shown. What is passed, and when,
 * stays the target's (fuzz_request.c passes short reads, fuzz_answers.c
 * answers between pieces). */
#ifndef SL_FUZZ_FEED_H
#define SL_FUZZ_FEED_H

#include <stdint.h>
#include <stdlib.h>

#include "../../core/http/request.h"

struct feed {
    uint8_t steer;    /* the input's first byte, stepped each piece */
    const uint8_t *s; /* the stream: the input after that byte */
    size_t len;       /* its length */
    size_t passed;    /* what the target passed on (sl_req_passed) */
    size_t shown;     /* what has been shown so far */
};

/* False for inputs too short to steer anything. */
static inline bool feed_start(struct feed *f, const uint8_t *data, size_t size)
{
    if (size < 2) return false;
    *f = (struct feed){.steer = data[0], .s = data + 1, .len = size - 1};
    return true;
}

/* Shows the next piece and admits what is shown past f->passed. Returns
 * what admit granted (at most that); v holds its verdict. */
static inline size_t feed_admit(struct feed *f, struct sl_req_conn *c, uint64_t now,
                                struct sl_req_verdict *v)
{
    size_t step = (size_t)(f->steer % 7) + 1;
    f->steer = (uint8_t)(f->steer * 13 + 7);
    f->shown = f->shown + step > f->len ? f->len : f->shown + step;
    size_t n = sl_req_admit(c, f->s + f->passed, f->shown - f->passed, now, v);
    if (n > f->shown - f->passed) abort();
    return n;
}

#endif
