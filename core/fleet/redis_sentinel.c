/* SPDX-License-Identifier: BSD-2-Clause */
/* redis_sentinel.c - the primary of a Redis run behind Sentinel.
 *
 * The sender (redis.c) asks the sentinels for the primary before every
 * connection (SENTINEL get-master-addr-by-name, one sentinel after the
 * other, the one that answered last first) and checks on connecting that
 * the server says ROLE master; a round that fails (the primary died, or
 * answers READONLY as a demoted replica) drops the connection and so asks
 * again. To notice a failover before a round fails, it keeps one
 * connection subscribed to +switch-master and reconnects at once to the
 * primary announced there. Every exchange has the section's timeout and
 * runs on the sender thread: a program's call never waits on a sentinel.
 *
 * Sentinels must announce numeric addresses (sluice resolves no names);
 * they are asked without AUTH (a sentinel's requirepass is not supported).
 */
#include "redis_sentinel.h"

#include <stdio.h>
#include <string.h>

#include "../clock.h"
#include "hostport.h"

#define SUB_RETRY_NS 1000000000ull /* re-subscribe at most once a second */

void sl_rsentinel_init(struct sl_rsentinel *t, const struct sl_redis *rc, int *mirror,
                       _Atomic uint64_t *beat)
{
    memset(t, 0, sizeof *t);
    t->rc = rc;
    t->sub.fd = -1;
    t->sub.mirror = &mirror[0];
    t->ask_mirror = &mirror[1];
    t->sub.timeout_ns = rc->timeout_ns;
    t->sub.beat = beat;
}

int sl_rsentinel_fd(const struct sl_rsentinel *t)
{
    return t->sub.fd;
}

void sl_rsentinel_free(struct sl_rsentinel *t)
{
    sl_rlink_free(&t->sub);
}

/* ---- replies ---------------------------------------------------------------- */

static bool all_of(const char *s, size_t n, const char *set)
{
    for (size_t i = 0; i < n; i++)
        if (!strchr(set, s[i]) || !s[i]) return false;
    return n > 0;
}

int sl_rsentinel_join(const char *ip, size_t iplen, const char *port, size_t portlen, char *out,
                      size_t len)
{
    if (iplen > 45 || portlen > 5 || !all_of(ip, iplen, "0123456789abcdefABCDEF.:") ||
        !all_of(port, portlen, "0123456789"))
        return -1;
    char text[SL_RADDR_MAX];
    bool v6 = memchr(ip, ':', iplen) != NULL;
    snprintf(text, sizeof text, v6 ? "[%.*s]:%.*s" : "%.*s:%.*s", (int)iplen, ip, (int)portlen,
             port);
    struct sockaddr_storage ss;
    socklen_t sl;
    if (sl_hostport_parse(text, &ss, &sl) || strlen(text) >= len) return -1;
    memcpy(out, text, strlen(text) + 1);
    return 0;
}

int sl_rsentinel_parse_addr(const void *reply, char *out, size_t len)
{
    const redisReply *r = reply;
    if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != 2) return -1;
    const redisReply *ip = r->element[0], *port = r->element[1];
    if (!ip || !port || ip->type != REDIS_REPLY_STRING || port->type != REDIS_REPLY_STRING)
        return -1;
    return sl_rsentinel_join(ip->str, ip->len, port->str, port->len, out, len);
}

int sl_rsentinel_parse_switch(const void *reply, const char *master, char *out, size_t len)
{
    const redisReply *r = reply;
    if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != 3) return -1;
    for (int i = 0; i < 3; i++)
        if (!r->element[i] || r->element[i]->type != REDIS_REPLY_STRING) return -1;
    if (r->element[0]->len != 7 || memcmp(r->element[0]->str, "message", 7) != 0) return -1;
    if (r->element[1]->len != 14 || memcmp(r->element[1]->str, "+switch-master", 14) != 0)
        return -1;
    /* "NAME OLDIP OLDPORT NEWIP NEWPORT" */
    const char *p = r->element[2]->str, *end = p + r->element[2]->len;
    const char *w[5];
    size_t wl[5];
    int n = 0;
    while (p < end && n < 6) {
        while (p < end && *p == ' ')
            p++;
        if (p == end) break;
        const char *s = p;
        while (p < end && *p != ' ')
            p++;
        if (n == 5) return -1; /* a sixth word */
        w[n] = s;
        wl[n++] = (size_t)(p - s);
    }
    if (n != 5 || wl[0] != strlen(master) || memcmp(w[0], master, wl[0]) != 0) return -1;
    return sl_rsentinel_join(w[3], wl[3], w[4], wl[4], out, len);
}

/* ---- asking ----------------------------------------------------------------- */

struct answer {
    char *out;
    size_t len;
    bool got;
};

static int on_addr(struct sl_rlink *l, void *ctx, size_t i, redisReply *r)
{
    struct answer *a = ctx;
    if (r->type == REDIS_REPLY_ERROR) {
        char msg[96];
        snprintf(msg, sizeof msg, "sentinel said: %.80s", r->str);
        return sl_rlink_fail(l, msg, 0);
    }
    if (r->type == REDIS_REPLY_NIL) return sl_rlink_fail(l, "sentinel knows no such master", 0);
    if (sl_rsentinel_parse_addr(r, a->out, a->len) != 0)
        return sl_rlink_fail(l, "sentinel's answer is not IP and port", 0);
    a->got = true;
    return 0;
}

int sl_rsentinel_discover(struct sl_rsentinel *t, char *out, size_t len, char *why, size_t whylen)
{
    const struct sl_redis *rc = t->rc;
    struct sl_rlink l = {
        .fd = -1, .timeout_ns = rc->timeout_ns, .mirror = t->ask_mirror, .beat = t->sub.beat};
    int rc_ = -1;
    for (int k = 0; k < rc->naddrs && rc_ != 0; k++) {
        int i = (t->next + k) % rc->naddrs;
        snprintf(l.addr, sizeof l.addr, "%s", rc->addrs[i]);
        struct answer a = {out, len, false};
        const char *argv[] = {"SENTINEL", "get-master-addr-by-name", rc->master};
        size_t lens[] = {8, 23, strlen(rc->master)};
        if (sl_rlink_connect(&l) == 0 && sl_rlink_append(&l, 3, argv, lens) &&
            sl_rlink_exchange(&l, 1, sl_clock_now() + rc->timeout_ns, on_addr, &a) == 0 && a.got) {
            t->next = i;
            rc_ = 0;
        } else {
            snprintf(why, whylen, "sentinel %s: %s", rc->addrs[i], l.why);
        }
        sl_rlink_drop(&l);
    }
    sl_rlink_free(&l);
    return rc_;
}

/* ---- following +switch-master ----------------------------------------------- */

static int on_message(struct sl_rlink *l, void *ctx, size_t i, redisReply *r)
{
    struct sl_rsentinel *t = ctx;
    char addr[SL_RADDR_MAX];
    if (r->type == REDIS_REPLY_ERROR) return sl_rlink_fail(l, "SUBSCRIBE refused", 0);
    if (sl_rsentinel_parse_switch(r, t->rc->master, addr, sizeof addr) == 0)
        memcpy(t->switched, addr, sizeof addr);
    return 0; /* the subscribe confirmation, other masters' switches */
}

bool sl_rsentinel_watch(struct sl_rsentinel *t, uint64_t now, char *out, size_t len)
{
    const struct sl_redis *rc = t->rc;
    if (t->sub.fd < 0 && now >= t->sub_retry_at) {
        t->sub_retry_at = now + SUB_RETRY_NS;
        snprintf(t->sub.addr, sizeof t->sub.addr, "%s", rc->addrs[t->next % rc->naddrs]);
        const char *argv[] = {"SUBSCRIBE", "+switch-master"};
        size_t lens[] = {9, 14};
        if (sl_rlink_connect(&t->sub) == 0 && sl_rlink_append(&t->sub, 2, argv, lens))
            sl_rlink_exchange(&t->sub, 1, now + rc->timeout_ns, on_message, t);
        if (t->sub.fd < 0) t->next = (t->next + 1) % rc->naddrs; /* the next one, next time */
    }
    if (t->sub.fd >= 0) sl_rlink_drain(&t->sub, on_message, t);
    if (!t->switched[0]) return false;
    snprintf(out, len, "%s", t->switched);
    t->switched[0] = 0;
    return true;
}
