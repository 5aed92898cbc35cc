/* SPDX-License-Identifier: BSD-2-Clause */
/* redis_cluster.c - Redis Cluster for the Redis sender.
 *
 * Every key sluice writes carries a hash tag, PREFIX{RULE:KEY}:WINDOW
 * (docs/redis.md), so both windows a script call touches hash to one slot
 * and the call is legal in a cluster. The slot map comes from CLUSTER
 * SLOTS (asked of the primaries known, then of the seed nodes); a MOVED
 * reply or a node that fails marks it stale and the sender refreshes it
 * before its next round; an ASK (a slot being migrated) is followed for
 * that call only, with ASKING. Only the primaries are written to. All of
 * it runs on the sender thread, each exchange within the timeout: a
 * program's call never waits on the cluster.
 */
#include "redis_cluster.h"

#include <stdio.h>
#include <string.h>

#include "../clock.h"
#include "redis_sentinel.h" /* sl_rsentinel_join: "ip" and "port" as an address */

uint16_t sl_crc16(const void *buf, size_t len)
{
    const uint8_t *p = buf;
    uint16_t crc = 0;
    for (size_t i = 0; i < len; i++) {
        crc ^= (uint16_t)(p[i] << 8);
        for (int b = 0; b < 8; b++)
            crc = (uint16_t)(crc & 0x8000 ? (crc << 1) ^ 0x1021 : crc << 1);
    }
    return crc;
}

unsigned sl_rcluster_slot(const char *key, size_t len)
{
    const char *open = memchr(key, '{', len);
    if (open) {
        size_t rest = len - (size_t)(open - key) - 1;
        const char *close = memchr(open + 1, '}', rest);
        if (close && close > open + 1) {
            key = open + 1;
            len = (size_t)(close - open - 1);
        }
    }
    return sl_crc16(key, len) & (SL_SLOTS - 1);
}

int sl_rcluster_parse_slots(const void *reply, struct sl_rslots *m)
{
    const redisReply *r = reply;
    memset(m->node, SL_NO_NODE, sizeof m->node);
    m->nnodes = 0;
    if (!r || r->type != REDIS_REPLY_ARRAY) return -1;
    for (size_t i = 0; i < r->elements; i++) {
        const redisReply *e = r->element[i];
        if (!e || e->type != REDIS_REPLY_ARRAY || e->elements < 3) return -1;
        const redisReply *lo = e->element[0], *hi = e->element[1], *p = e->element[2];
        if (!lo || !hi || !p || lo->type != REDIS_REPLY_INTEGER ||
            hi->type != REDIS_REPLY_INTEGER || lo->integer < 0 || hi->integer >= SL_SLOTS ||
            lo->integer > hi->integer || p->type != REDIS_REPLY_ARRAY || p->elements < 2)
            return -1;
        const redisReply *ip = p->element[0], *port = p->element[1];
        if (!ip || !port || ip->type != REDIS_REPLY_STRING || port->type != REDIS_REPLY_INTEGER)
            return -1;
        char portbuf[24], addr[64];
        snprintf(portbuf, sizeof portbuf, "%lld", port->integer);
        if (port->integer <= 0 || port->integer > 65535 ||
            sl_rsentinel_join(ip->str, ip->len, portbuf, strlen(portbuf), addr, sizeof addr))
            continue; /* no address we can reach ("?", a host name): those slots stay unknown */
        uint32_t n = 0;
        while (n < m->nnodes && strcmp(m->addr[n], addr) != 0)
            n++;
        if (n == m->nnodes) {
            if (n == SL_REDIS_NODES_MAX) return -1;
            memcpy(m->addr[m->nnodes++], addr, sizeof addr);
        }
        memset(m->node + lo->integer, (int)n, (size_t)(hi->integer - lo->integer + 1));
    }
    return m->nnodes ? 0 : -1;
}

int sl_rcluster_parse_redirect(const void *reply, unsigned *slot, char *addr, size_t len)
{
    const redisReply *r = reply;
    if (!r || r->type != REDIS_REPLY_ERROR || !r->str) return 0;
    int kind = strncmp(r->str, "MOVED ", 6) == 0 ? 1 : strncmp(r->str, "ASK ", 4) == 0 ? 2 : 0;
    if (!kind) return 0;
    const char *p = r->str + (kind == 1 ? 6 : 4), *end = r->str + r->len;
    unsigned s = 0;
    int digits = 0;
    while (p < end && *p >= '0' && *p <= '9' && digits < 6) {
        s = s * 10 + (unsigned)(*p++ - '0');
        digits++;
    }
    if (!digits || s >= SL_SLOTS || p == end || *p++ != ' ') return 0;
    const char *colon = NULL;
    for (const char *q = p; q < end; q++)
        if (*q == ':') colon = q; /* the last one: an IPv6 address has several */
    if (!colon) return 0;
    const char *ip = p;
    size_t iplen = (size_t)(colon - p);
    if (iplen >= 2 && ip[0] == '[' && ip[iplen - 1] == ']') {
        ip++;
        iplen -= 2;
    }
    if (sl_rsentinel_join(ip, iplen, colon + 1, (size_t)(end - colon - 1), addr, len) != 0)
        return 0;
    *slot = s;
    return kind;
}

/* ---- the map and its links --------------------------------------------------- */

void sl_rcluster_init(struct sl_rcluster *k, const struct sl_redis *rc, int *mirrors,
                      _Atomic uint64_t *beat)
{
    memset(k, 0, sizeof *k);
    k->rc = rc;
    k->beat = beat;
    k->mirrors = mirrors;
    k->ask_mirror = &mirrors[SL_REDIS_NODES_MAX];
    memset(k->map.node, SL_NO_NODE, sizeof k->map.node);
    for (int i = 0; i < SL_REDIS_NODES_MAX; i++) {
        k->links[i].fd = -1;
        k->links[i].mirror = &mirrors[i];
        k->links[i].timeout_ns = rc->timeout_ns;
        k->links[i].beat = k->beat;
    }
    k->stale = true;
}

int sl_rcluster_find(const struct sl_rcluster *k, const char *addr)
{
    for (uint32_t i = 0; i < k->map.nnodes; i++)
        if (strcmp(k->map.addr[i], addr) == 0) return (int)i;
    return -1;
}

struct asking {
    struct sl_rslots *m;
    size_t want; /* the last reply is the map; an AUTH's comes before it */
};

static int on_slots(struct sl_rlink *l, void *ctx, size_t i, redisReply *r)
{
    struct asking *a = ctx;
    if (r->type == REDIS_REPLY_ERROR) {
        char msg[96];
        snprintf(msg, sizeof msg, "Redis said: %.70s", r->str);
        return sl_rlink_fail(l, msg, 0);
    }
    if (i + 1 < a->want) return 0;
    if (sl_rcluster_parse_slots(r, a->m) != 0)
        return sl_rlink_fail(l, "CLUSTER SLOTS answered no usable map", 0);
    return 0;
}

/* Asks one address for the map (AUTH first when the section has a password). */
static int ask(struct sl_rcluster *k, const char *addr, struct sl_rslots *m)
{
    const struct sl_redis *rc = k->rc;
    struct sl_rlink l = {
        .fd = -1, .timeout_ns = rc->timeout_ns, .mirror = k->ask_mirror, .beat = k->beat};
    snprintf(l.addr, sizeof l.addr, "%s", addr);
    struct asking a = {m, 1};
    int ok = sl_rlink_connect(&l);
    if (ok == 0) {
        if (*rc->password) {
            const char *argv[3] = {"AUTH", *rc->user ? rc->user : rc->password, rc->password};
            size_t lens[3] = {4, strlen(argv[1]), strlen(rc->password)};
            sl_rlink_append(&l, *rc->user ? 3 : 2, argv, lens);
            a.want++;
        }
        const char *argv[] = {"CLUSTER", "SLOTS"};
        size_t lens[] = {7, 5};
        sl_rlink_append(&l, 2, argv, lens);
        ok = sl_rlink_exchange(&l, a.want, sl_clock_now() + rc->timeout_ns, on_slots, &a);
    }
    if (ok != 0) snprintf(k->why, sizeof k->why, "%.63s: %.90s", addr, l.why);
    sl_rlink_free(&l);
    return ok;
}

int sl_rcluster_refresh(struct sl_rcluster *k)
{
    struct sl_rslots *const mp = &k->scratch;
#define m (*mp)
    int ok = -1;
    for (uint32_t i = 0; i < k->map.nnodes && ok != 0; i++)
        ok = ask(k, k->map.addr[i], &m);
    for (int i = 0; i < k->rc->naddrs && ok != 0; i++)
        ok = ask(k, k->rc->addrs[i], &m);
    if (ok != 0) return -1;
    /* keep the links of primaries that stay primaries, in their new places */
    struct sl_rlink old[SL_REDIS_NODES_MAX];
    bool was_ready[SL_REDIS_NODES_MAX];
    uint64_t was_retry[SL_REDIS_NODES_MAX];
    memcpy(old, k->links, sizeof old);
    memcpy(was_ready, k->ready, sizeof was_ready);
    memcpy(was_retry, k->retry_at, sizeof was_retry);
    bool kept[SL_REDIS_NODES_MAX] = {false};
    for (uint32_t n = 0; n < SL_REDIS_NODES_MAX; n++) {
        struct sl_rlink *l = &k->links[n];
        int from = -1;
        for (uint32_t o = 0; n < m.nnodes && o < k->map.nnodes; o++)
            if (!kept[o] && strcmp(k->map.addr[o], m.addr[n]) == 0) from = (int)o;
        if (from >= 0) {
            *l = old[from];
            kept[from] = true;
            k->ready[n] = was_ready[from];
            k->retry_at[n] = was_retry[from];
        } else {
            *l = (struct sl_rlink){.fd = -1, .timeout_ns = k->rc->timeout_ns, .beat = k->beat};
            if (n < m.nnodes) snprintf(l->addr, sizeof l->addr, "%s", m.addr[n]);
            k->ready[n] = false;
            k->retry_at[n] = 0;
        }
        l->mirror = &k->mirrors[n];
        *l->mirror = l->fd;
    }
    for (uint32_t o = 0; o < SL_REDIS_NODES_MAX; o++) {
        if (kept[o]) continue;
        old[o].mirror = NULL; /* its place now mirrors another link */
        sl_rlink_free(&old[o]);
    }
    int fresh = 0; /* primaries that were not: a replica promoted (or a node added) */
    for (uint32_t n = 0; k->map.nnodes && n < m.nnodes; n++)
        fresh += sl_rcluster_find(k, m.addr[n]) < 0;
    memcpy(&k->map, &m, sizeof m);
#undef m
    k->stale = false;
    return fresh;
}

void sl_rcluster_free(struct sl_rcluster *k)
{
    for (int i = 0; i < SL_REDIS_NODES_MAX; i++)
        sl_rlink_free(&k->links[i]);
}
