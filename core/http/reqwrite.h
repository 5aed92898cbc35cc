/* SPDX-License-Identifier: BSD-2-Clause */
/* reqwrite.h - an outbound write of the program's bytes decided in one
 * call: what the shim does with them next (write some now, report some
 * written without sending them, wait, or fail), the bytes it is told to
 * write counted as passed in the same call. The shim's TLS transports
 * (shim/reqout.c over OpenSSL, GnuTLS and memory BIOs) carry the plan
 * out; the one exception they report back is a library write that sent
 * fewer bytes than the plan said (sl_req_unwritten).
 *
 * Built on request.h: sl_req_admit's verdict, sl_req_passed's position
 * and sl_req_swallow's outbound `reply`, for a connection whose runtime
 * may have been reloaded since its last write.
 */
#ifndef SLUICE_REQWRITE_H
#define SLUICE_REQWRITE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "request.h"

enum sl_req_do {
    SL_REQ_WRITE, /* write n bytes now: they count as passed already */
    SL_REQ_SKIP,  /* n bytes of a swallowed request (outbound `reply`): report them
                     written, send none; a 429 is queued for the program to read */
    SL_REQ_WAIT,  /* nothing now: ask again after wait_ns (0: soon, a swallowed
                     request's 429 waits for the answers before it) */
    SL_REQ_FAIL,  /* nothing, ever: the write fails with errno err (reject, or a
                     reply whose 429 can no longer be put in order) */
};

struct sl_req_write {
    enum sl_req_do what;
    size_t n;
    uint64_t wait_ns;
    int err;       /* FAIL; WAIT at a swallowed request: the errno if the caller gives up */
    bool announce; /* SKIP: a 429 was queued, the program should be told it can read */
};

/* A write through a TLS library is whole: it goes, waits or fails as one
 * (a client writes one request at a time), so no part of it is written
 * before a wait or a failure. Without it (memory BIOs, whose records are
 * held at their offsets) the part before a head that waits is written. */
#define SL_REQ_WRITE_WHOLE 1u

/* A write whose bytes cannot be taken back once given (memory BIOs: the
 * library has encrypted them into the stream): a request `reply` would
 * swallow fails (SL_REQ_FAIL) instead, with nothing queued. */
#define SL_REQ_WRITE_NO_SKIP 2u

/* The len bytes at buf, at the connection's stream position, written by
 * the program at time now under the runtime rt (a reloaded configuration
 * rebinds the connection first; NULL: none yet): what to do next, in *w. */
void sl_req_write(struct sl_req_conn *c, struct sl_runtime *rt, const void *buf, size_t len,
                  uint64_t now, unsigned flags, struct sl_req_write *w);

/* Of the last SL_REQ_WRITE's n bytes, the last `unsent` were not sent (the
 * library wrote fewer, or failed): they are not passed, and are decided
 * again when the program writes them again. */
void sl_req_unwritten(struct sl_req_conn *c, size_t unsent);

#endif
