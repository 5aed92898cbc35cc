/* SPDX-License-Identifier: BSD-2-Clause */
/* redis_link.h - one connection of the Redis sender to one server: a
 * non-blocking socket driven by raw system calls with deadlines, hiredis
 * formatting the commands and parsing the replies. redis.c (rounds),
 * redis_sentinel.c (discovery) and redis_cluster.c (one link per node)
 * use it; it is only ever used on the sender thread, so it never blocks a
 * program's call.
 */
#ifndef SL_REDIS_LINK_H
#define SL_REDIS_LINK_H

#include <hiredis/hiredis.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SL_RADDR_MAX 64 /* "host:port", "[v6]:port" */

struct sl_rlink {
    int fd;                 /* -1: not connected */
    int *mirror;            /* where the fd is published for the fork handler; may be NULL */
    _Atomic uint64_t *beat; /* the sender's heartbeat, kept fresh while waiting; may be NULL */
    redisReader *reader;
    char *out;
    size_t outlen, outcap;
    uint64_t timeout_ns; /* connect; an exchange without progress */
    char addr[256];      /* what it connects to: "host:port" or "unix:/path" */
    char why[160];       /* the last failure, for the log */
};

/* A reply handed to an exchange's callback; non-zero stops the exchange
 * and drops the link (the callback says why with sl_rlink_fail). */
typedef int (*sl_rlink_fn)(struct sl_rlink *l, void *ctx, size_t i, redisReply *r);

/* Connects to l->addr within timeout_ns (TCP or unix:); 0 or -1 with why. */
int sl_rlink_connect(struct sl_rlink *l);

/* Appends one command to the output; false when out of memory. */
bool sl_rlink_append(struct sl_rlink *l, int argc, const char **argv, const size_t *len);

/* Writes the output and reads `want` replies, each to fn; -1 on failure or
 * when the server makes no progress until deadline (each piece of
 * progress moves it timeout_ns later, at most 8 timeouts in all). */
int sl_rlink_exchange(struct sl_rlink *l, size_t want, uint64_t deadline, sl_rlink_fn fn,
                      void *ctx);

/* One link's part of an exchange on several links at once: its output,
 * the replies it waits for (to fn), its deadline; rc after it: 0 every
 * reply came, -1 the link failed and was dropped (why says how). */
#define SL_RX_MAX 16
struct sl_rx {
    struct sl_rlink *l;
    size_t want;
    uint64_t deadline;
    sl_rlink_fn fn;
    void *ctx;
    /* the exchange's own */
    size_t sent, got;
    uint64_t last;
    int rc;
};

/* sl_rlink_exchange on up to SL_RX_MAX links at once (the primaries of a
 * cluster): every output is written as its socket takes it and every
 * reply read as it comes, so the servers work in parallel and a round
 * takes the slowest server's time, not the sum; each link has its own
 * deadline and fails alone. 0 when every link got all its replies. */
int sl_rlink_exchange_all(struct sl_rx *xs, size_t n);

/* Reads whatever has arrived without waiting (a subscription), each reply
 * to fn; -1 when the connection failed or closed. */
int sl_rlink_drain(struct sl_rlink *l, sl_rlink_fn fn, void *ctx);

/* Closes the connection; the output not yet sent is dropped. */
void sl_rlink_drop(struct sl_rlink *l);

/* Records why (with strerror(err) when err), drops, returns -1. */
int sl_rlink_fail(struct sl_rlink *l, const char *what, int err);

/* Frees the buffers (after drop). */
void sl_rlink_free(struct sl_rlink *l);

#endif
