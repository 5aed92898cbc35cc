/* SPDX-License-Identifier: BSD-2-Clause */
/* redis_sentinel.h - finding the primary of a Redis behind Sentinel:
 * asking the sentinels (SENTINEL get-master-addr-by-name) and following
 * their +switch-master announcements, on the sender thread only.
 */
#ifndef SL_REDIS_SENTINEL_H
#define SL_REDIS_SENTINEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "redis_link.h"
#include "../rule.h"

struct sl_rsentinel {
    const struct sl_redis *rc;
    struct sl_rlink sub; /* subscribed to +switch-master on one sentinel */
    int *ask_mirror;     /* where a connection asking a sentinel publishes its fd */
    int next;            /* the sentinel to ask first: the last that answered */
    uint64_t sub_retry_at;
    char switched[SL_RADDR_MAX]; /* a +switch-master's new primary, until taken */
};

/* Sets up (no I/O); the subscription's socket and the one asking are
 * published in mirror[0] and mirror[1] for the fork handler. */
void sl_rsentinel_init(struct sl_rsentinel *t, const struct sl_redis *rc, int *mirror,
                       _Atomic uint64_t *beat);

/* Asks the sentinels in turn, each within rc->timeout_ns, for the primary's
 * "host:port"; 0, or -1 with why (the last sentinel's failure). */
int sl_rsentinel_discover(struct sl_rsentinel *t, char *out, size_t len, char *why, size_t whylen);

/* Keeps the subscription (re-subscribing at most every second) and reads
 * what it has; true when a +switch-master for our primary arrived since
 * the last call, its new address in out. Never waits but to (re)connect. */
bool sl_rsentinel_watch(struct sl_rsentinel *t, uint64_t now, char *out, size_t len);

/* The subscription's socket, for the sender's sleep to wake on; -1 none. */
int sl_rsentinel_fd(const struct sl_rsentinel *t);

void sl_rsentinel_free(struct sl_rsentinel *t);

/* Reading replies (pure; unit tested and fuzzed): the answer to
 * get-master-addr-by-name, an array of two strings (ip, port), as
 * "ip:port" or "[ip]:port"; a pub/sub message on +switch-master for
 * `master`, "NAME OLDIP OLDPORT NEWIP NEWPORT", as the new "ip:port".
 * 0, or -1 when it is not that. */
int sl_rsentinel_parse_addr(const void *reply, char *out, size_t len);
int sl_rsentinel_parse_switch(const void *reply, const char *master, char *out, size_t len);

/* "ip" and "port" as an address sluice connects to; -1 when either is not
 * a numeric address or a port. */
int sl_rsentinel_join(const char *ip, size_t iplen, const char *port, size_t portlen, char *out,
                      size_t len);

#endif
