/* SPDX-License-Identifier: BSD-2-Clause */
/* redis_hello.c - making a link of the Redis sender ready for rounds:
 * connect (redis_link.c), AUTH when a password is set, ROLE behind
 * Sentinel (a demoted primary must not be written to), then SCRIPT LOAD of
 * core/fleet/redis.lua, whose digest the rounds' EVALSHA name. Every node
 * of a cluster gets the script: the same digest. Called by the thread
 * (redis.c) for the server or the primary, and by a cluster round
 * (redis_round.c) for each primary's link.
 */
#include <hiredis/hiredis.h>
#include <stdio.h>
#include <string.h>

#include "../clock.h"
#include "redis_lua.h" /* generated from core/fleet/redis.lua: sl_redis_lua */
#include "redis_sender.h"

static int on_hello(struct sl_rlink *l, void *ctx, size_t i, redisReply *r)
{
    struct sl_rconn *c = ctx;
    if (r->type == REDIS_REPLY_ERROR) {
        /* an AUTH error names no secret; keep the first words only */
        char msg[96];
        snprintf(msg, sizeof msg, "Redis said: %.80s", r->str);
        return sl_rlink_fail(l, msg, 0);
    }
    if (r->type == REDIS_REPLY_ARRAY) { /* ROLE: a demoted primary must not be written to */
        const redisReply *e = r->elements ? r->element[0] : NULL;
        if (!e || e->type != REDIS_REPLY_STRING || strcmp(e->str, "master") != 0)
            return sl_rlink_fail(l, "is not the primary (ROLE)", 0);
    }
    if (r->type == REDIS_REPLY_STRING && r->len == 40) {
        memcpy(c->sha, r->str, 40);
        c->sha[40] = 0;
    }
    return 0;
}

int sl_rsend_hello(struct sl_rconn *c, struct sl_rlink *l)
{
    const struct sl_redis *rc = &c->s->cfg->redis;
    if (sl_rlink_connect(l) != 0) return -1;
    uint64_t deadline = sl_clock_now() + rc->timeout_ns;
    size_t want = 1;
    if (*rc->password) {
        const char *argv[3] = {"AUTH", rc->user, rc->password};
        size_t lens[3] = {4, strlen(rc->user), strlen(rc->password)};
        if (*rc->user) {
            sl_rlink_append(l, 3, argv, lens);
        } else {
            argv[1] = rc->password;
            lens[1] = lens[2];
            sl_rlink_append(l, 2, argv, lens);
        }
        want++;
    }
    if (c->sentinel_mode) {
        const char *argv[] = {"ROLE"};
        size_t lens[] = {4};
        sl_rlink_append(l, 1, argv, lens);
        want++;
    }
    const char *argv[3] = {"SCRIPT", "LOAD", sl_redis_lua};
    size_t lens[3] = {6, 4, sizeof sl_redis_lua - 1};
    if (!sl_rlink_append(l, 3, argv, lens)) return sl_rlink_fail(l, "out of memory", 0);
    c->sha[0] = 0;
    int done = sl_rlink_exchange(l, want, deadline, on_hello, c);
    if (l->out) explicit_bzero(l->out, l->outcap); /* it held the password */
    if (done != 0) return -1;
    if (!c->sha[0]) return sl_rlink_fail(l, "SCRIPT LOAD answered no digest", 0);
    sl_redis_count(c->s, SL_RC_CONNECTS, 1);
    return 0;
}
