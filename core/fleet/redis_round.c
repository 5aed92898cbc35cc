/* SPDX-License-Identifier: BSD-2-Clause */
/* redis_round.c - one round of the Redis sender: every live key (counted
 * in the last two windows) becomes one EVALSHA of core/fleet/redis.lua ("set":
 * this program's counts of the current and previous window), pipelined;
 * each reply's fleet totals become the key's `rest` word (redis_state.c).
 * A key of a rule with `learn` carries its learned hold too (KEYS[3]),
 * and the reply's, the latest any program wrote, raises the key's own.
 * To one server, all calls go in one write; in a cluster each primary
 * gets its keys' calls (slot of the key's hash tag), all primaries at
 * once (sl_rlink_exchange_all), MOVED refreshes the
 * map, ASK is followed with ASKING, and a key whose calls get no counts is
 * marked so that it alone falls back (docs/redis.md).
 */
#include <stdio.h>
#include <string.h>

#include "../clock.h"
#include "../log.h"
#include "redis_sender.h"
#include "../limit/window.h"

/* ---- one round --------------------------------------------------------------- */

static uint64_t sub0(int64_t a, int64_t b)
{
    return a > b ? (uint64_t)(a - b) : 0;
}

/* Reading one link's replies: calls[cursor] is the next reply's call,
 * calls chained per node by `next`; after ASK, replies come in pairs
 * (ASKING's OK, then the script's). */
struct reading {
    struct sl_rconn *c;
    uint32_t cursor;
    int node;
    bool asking;
};

static int on_counts(struct sl_rlink *l, void *ctx, size_t i, redisReply *r)
{
    struct reading *rd = ctx;
    struct sl_rconn *c = rd->c;
    if (rd->asking && i % 2 == 0) /* ASKING */
        return r->type == REDIS_REPLY_ERROR ? sl_rlink_fail(l, "ASKING refused", 0) : 0;
    struct sl_rcall *x = &c->calls[rd->cursor];
    rd->cursor = x->next;
    struct sl_redis_counts k;
    if (sl_redis_reply_counts(r, &k) != 0) {
        unsigned slot;
        char to[SL_RADDR_MAX];
        int redirect = c->cluster ? sl_rcluster_parse_redirect(r, &slot, to, sizeof to) : 0;
        if (redirect == 1) { /* MOVED: the slot map is old; the key waits a round */
            sl_redis_count(c->s, SL_RC_MOVED, 1);
            c->cluster->stale = true;
            return 0;
        }
        if (redirect == 2) { /* ASK: this call only, at the slot's new node */
            sl_redis_count(c->s, SL_RC_ASK, 1);
            int n = rd->asking ? -1 : sl_rcluster_find(c->cluster, to);
            if (n < 0) { /* asked twice, or a node not in the map: the key waits a round */
                c->cluster->stale = true;
                return 0;
            }
            x->node = (uint8_t)n;
            x->ask = true;
            c->nasks++;
            return 0;
        }
        if (c->cluster && r->type == REDIS_REPLY_ERROR &&
            (strncmp(r->str, "TRYAGAIN", 8) == 0 || strncmp(r->str, "CLUSTERDOWN", 11) == 0)) {
            /* a slot half migrated (the key's two windows not on one side), or no
             * quorum: the key waits, following on_backend_error if it lasts */
            if (r->str[0] == 'C') c->cluster->stale = true;
            return 0;
        }
        sl_redis_count(c->s, SL_RC_BAD_REPLY, 1);
        if (r->type == REDIS_REPLY_ERROR) {
            char msg[96];
            snprintf(msg, sizeof msg, "Redis said: %.80s", r->str); /* NOSCRIPT: reload */
            return sl_rlink_fail(l, msg, 0);
        }
        return 0;
    }
    sl_redis_count(c->s, SL_RC_CALLS, 1);
    atomic_fetch_add_explicit(&c->s->hdr->nodes[rd->node].calls, 1, memory_order_relaxed);
    /* Redis answers: a long round keeps the rules counting with the fleet */
    if ((i & 255) == 255 && !c->cluster && c->rounds_ok >= 1) /* not a connection's first */
        atomic_store_explicit(&c->s->hdr->ok_at, sl_clock_now(), memory_order_release);
    if (atomic_load_explicit(&x->e->tag, memory_order_acquire) != x->tag) return 0; /* reused */
    if (c->cluster) atomic_store_explicit(&x->e->missed, 0, memory_order_relaxed);
    atomic_store_explicit(
        &x->e->rest, sl_win_pack(x->window, sub0(k.prev, k.own_prev), sub0(k.curr, k.own_curr)),
        memory_order_relaxed);
    if (x->learn && k.hold_ms > 0)
        sl_redis_raise_hold(x->e, (uint64_t)k.hold_ms); /* a host's hold */
    return 0;
}

/* The two keys of a call: {hash tag}, so both windows are in one slot, as
 * Redis Cluster needs. */
static void call_keys(const struct sl_rconn *c, const struct sl_rcall *x, char *k1, char *k2,
                      size_t len)
{
    const char *pre = c->s->cfg->redis.prefix;
    snprintf(k1, len, "%s{%s}:%llu", pre, x->e->name, (unsigned long long)x->window);
    snprintf(k2, len, "%s{%s}:%llu", pre, x->e->name, (unsigned long long)(x->window - 1));
}

/* A rule with learn adds its key's hold (KEYS[3], ARGV[8] and [9] of
 * redis.lua): what this program learned, and the reply brings what the
 * fleet did. The key lives until the hold is over, a second more. */
static bool format_call(struct sl_rconn *c, struct sl_rlink *l, const struct sl_rcall *x)
{
    char k1[256], k2[256], k3[256], a3[24], a4[24], ttl[24], held[24], hold_ttl[24];
    call_keys(c, x, k1, k2, sizeof k1);
    snprintf(a3, sizeof a3, "%llu", (unsigned long long)x->oc);
    snprintf(a4, sizeof a4, "%llu", (unsigned long long)x->op);
    snprintf(ttl, sizeof ttl, "%llu",
             (unsigned long long)(2 * atomic_load_explicit(&x->e->period_ns, memory_order_relaxed) /
                                      1000000 +
                                  1000));
    snprintf(k3, sizeof k3, "%s{%s}:hold", c->s->cfg->redis.prefix, x->e->name);
    snprintf(held, sizeof held, "%llu", (unsigned long long)x->held);
    uint64_t wall_ms = sl_redis_wall(c->s, sl_clock_now()) / 1000000;
    snprintf(hold_ttl, sizeof hold_ttl, "%llu",
             (unsigned long long)((x->held > wall_ms ? x->held - wall_ms : 0) + 1000));
    const char *argv[] = {
        "EVALSHA", c->sha,  x->learn ? "3" : "2", k1, k2, k3, c->node, "set", a3, a4, "0", "0", ttl,
        held,      hold_ttl};
    int n = (int)(sizeof argv / sizeof argv[0]);
    if (!x->learn) { /* the five-element call a service makes too: no KEYS[3] */
        memmove(&argv[5], &argv[6], 7 * sizeof argv[0]);
        n -= 3;
    }
    size_t lens[sizeof argv / sizeof argv[0]];
    for (int i = 0; i < n; i++)
        lens[i] = strlen(argv[i]);
    return sl_rlink_append(l, n, argv, lens);
}

/* A live entry (counted in the last two windows) becomes a call. */
static void add_call(struct sl_rconn *c, struct sl_rentry *e, uint64_t wn)
{
    const struct sl_config *cfg = c->s->cfg;
    uint32_t m = atomic_load_explicit(&e->meta, memory_order_acquire);
    uint64_t tag = atomic_load_explicit(&e->tag, memory_order_acquire);
    if (tag < 2 || m == 0 || m > (uint32_t)cfg->nrules) return;
    const struct sl_rule *r = &cfg->rules[m - 1];
    const uint64_t W = atomic_load_explicit(&e->period_ns, memory_order_relaxed);
    if (r->scope != SL_SCOPE_REDIS || !W) return;
    const uint64_t cur = wn / W;
    uint64_t own = atomic_load_explicit(&e->own, memory_order_relaxed);
    uint64_t rest = atomic_load_explicit(&e->rest, memory_order_relaxed);
    bool live = (own && sl_win_diff(cur, sl_win_index(own)) <= 1) ||
                (rest && sl_win_diff(cur, sl_win_index(rest)) <= 1) ||
                atomic_load_explicit(&e->held, memory_order_relaxed) > wn / 1000000;
    if (!live || c->ncalls >= ROUND_MAX) return;
    struct sl_rcall *x = &c->calls[c->ncalls];
    *x = (struct sl_rcall){.e = e,
                           .tag = tag,
                           .window = cur,
                           .learn = r->learn && e->req,
                           .held = atomic_load_explicit(&e->held, memory_order_relaxed)};
    sl_win_counts(own, cur, &x->op, &x->oc);
    c->ncalls++;
    atomic_store_explicit(&e->synced, own, memory_order_relaxed);
}

static int noop_reply(struct sl_rlink *l, void *ctx, size_t i, redisReply *r)
{
    return r->type == REDIS_REPLY_ERROR ? sl_rlink_fail(l, "PING failed", 0) : 0;
}

static void collect(struct sl_rconn *c, uint64_t now)
{
    struct sl_redis_state *s = c->s;
    uint64_t wn = sl_redis_wall(s, now);
    c->ncalls = 0;
    for (int i = 0; i < s->cfg->nrules; i++) {
        add_call(c, &s->ovf[i], wn);
        add_call(c, &s->ovf[i + SL_MAX_RULES], wn);
    }
    for (uint32_t i = 0; i <= s->mask; i++)
        add_call(c, &s->ents[i], wn);
}

static int round_single(struct sl_rconn *c, uint64_t now)
{
    struct sl_rlink *l = &c->link;
    const uint64_t deadline = now + c->s->cfg->redis.timeout_ns;
    l->outlen = 0;
    collect(c, now);
    if (c->ncalls == 0) { /* nothing to say: a PING keeps the state honest */
        const char *argv[] = {"PING"};
        size_t lens[] = {4};
        sl_rlink_append(l, 1, argv, lens);
        return sl_rlink_exchange(l, 1, deadline, noop_reply, c);
    }
    for (size_t i = 0; i < c->ncalls; i++) {
        c->calls[i].next = (uint32_t)i + 1;
        if (!format_call(c, l, &c->calls[i])) return sl_rlink_fail(l, "out of memory", 0);
    }
    struct reading rd = {c, 0, 0, false};
    return sl_rlink_exchange(l, c->ncalls, deadline, on_counts, &rd);
}

/* ---- a round in a cluster ------------------------------------------------------ */

/* A node's link, connected and with the script loaded; NULL while it is
 * down (and then not tried again before its backoff). */
static struct sl_rlink *node_link(struct sl_rconn *c, int n)
{
    struct sl_rcluster *k = c->cluster;
    struct sl_rlink *l = &k->links[n];
    if (l->fd >= 0 && k->ready[n]) return l;
    uint64_t now = sl_clock_now();
    if (now < k->retry_at[n]) return NULL;
    k->ready[n] = sl_rsend_hello(c, l) == 0;
    k->rounds[n] = 0;
    if (k->ready[n]) return l;
    k->retry_at[n] = now + BACKOFF_MIN;
    snprintf(k->why, sizeof k->why, "%.63s: %.90s", l->addr, l->why);
    k->stale = true; /* it may have failed over */
    return NULL;
}

/* Sends each node its calls, pipelined, and reads them back, node after
 * node; then the calls an ASK sent elsewhere, with ASKING. Complete when
 * every node answered every call (a MOVED counts as an answer: the map is
 * refreshed before the next round and the key waits one round). */
static int round_cluster(struct sl_rconn *c, uint64_t now)
{
    struct sl_rcluster *k = c->cluster;
    const uint64_t timeout = c->s->cfg->redis.timeout_ns;
    k->why[0] = 0;
    if (k->stale && now >= k->refresh_at) {
        int fresh = sl_rcluster_refresh(k);
        if (fresh < 0) {
            k->refresh_at = now + BACKOFF_MIN;
            snprintf(c->link.why, sizeof c->link.why, "%.150s", k->why);
            return -1;
        }
        if (fresh) {
            sl_redis_count(c->s, SL_RC_FAILOVERS, (uint64_t)fresh);
            sl_log_state(SL_LOG_INFO, "redis: cluster: %d new primar%s, %u in all (a failover)",
                         fresh, fresh > 1 ? "ies" : "y", k->map.nnodes);
        }
        sl_redis_set_nodes(c->s, (const char(*)[64])k->map.addr, k->map.nnodes);
    }
    if (!k->map.nnodes) return -1;
    collect(c, now);
    c->incomplete = false;
    c->nasks = 0;
    uint32_t head[SL_REDIS_NODES_MAX], tail[SL_REDIS_NODES_MAX], count[SL_REDIS_NODES_MAX] = {0};
    struct sl_rlink *links[SL_REDIS_NODES_MAX] = {NULL};
    for (uint32_t n = 0; n < k->map.nnodes; n++) {
        k->links[n].outlen = 0;
        links[n] = node_link(c, (int)n);
        if (!links[n]) c->incomplete = true;
    }
    for (size_t i = 0; i < c->ncalls; i++) {
        struct sl_rcall *x = &c->calls[i];
        char k1[256], k2[256];
        /* missed until a reply brings its counts (cleared in on_counts) */
        uint64_t none = 0;
        atomic_compare_exchange_strong_explicit(&x->e->missed, &none, now, memory_order_relaxed,
                                                memory_order_relaxed);
        call_keys(c, x, k1, k2, sizeof k1);
        uint8_t n = k->map.node[sl_rcluster_slot(k1, strlen(k1))];
        if (n == SL_NO_NODE || !links[n]) {
            c->incomplete = true;
            if (n == SL_NO_NODE) k->stale = true;
            continue;
        }
        x->node = n;
        x->next = UINT32_MAX;
        atomic_store_explicit(&x->e->node, (uint32_t)n + 1, memory_order_relaxed);
        if (!format_call(c, links[n], x)) return sl_rlink_fail(&c->link, "out of memory", 0);
        if (count[n]++)
            c->calls[tail[n]].next = (uint32_t)i;
        else
            head[n] = (uint32_t)i;
        tail[n] = (uint32_t)i;
    }
    /* every primary at once: the round takes the slowest one's time */
    _Static_assert(SL_REDIS_NODES_MAX <= SL_RX_MAX, "one exchange for every primary");
    struct sl_rx xs[SL_REDIS_NODES_MAX];
    struct reading rds[SL_REDIS_NODES_MAX];
    uint32_t at[SL_REDIS_NODES_MAX], nx = 0;
    const uint64_t start = sl_clock_now();
    for (uint32_t n = 0; n < k->map.nnodes; n++) {
        if (!links[n]) continue;
        if (!count[n]) { /* a PING: a node that died is noticed without traffic */
            const char *argv[] = {"PING"};
            size_t lens[] = {4};
            sl_rlink_append(links[n], 1, argv, lens);
        }
        rds[n] = (struct reading){c, head[n], (int)n, false};
        xs[nx] = (struct sl_rx){.l = links[n],
                                .want = count[n] ? count[n] : 1,
                                .deadline = start + timeout,
                                .fn = count[n] ? on_counts : noop_reply,
                                .ctx = count[n] ? (void *)&rds[n] : (void *)c};
        at[nx++] = n;
    }
    sl_rlink_exchange_all(xs, nx);
    for (uint32_t i = 0; i < nx; i++) {
        uint32_t n = at[i];
        if (xs[i].rc == 0) { /* its keys count with the fleet, whatever the other nodes do, */
            if (k->rounds[n] < 2) k->rounds[n]++;
            if (k->rounds[n] >= 2) /* from the second exchange (redis.c: the first writes) */
                atomic_store_explicit(&c->s->hdr->nodes[n].ok_at, start, memory_order_release);
            continue;
        }
        snprintf(k->why, sizeof k->why, "%.63s: %.90s", links[n]->addr, links[n]->why);
        k->ready[n] = false;
        k->retry_at[n] = sl_clock_now() + BACKOFF_MIN;
        k->stale = true;
        c->incomplete = true;
    }
    for (uint32_t n = 0; c->nasks && n < k->map.nnodes; n++) { /* ASK: one node at a time */
        struct sl_rlink *l = node_link(c, (int)n);
        uint32_t first = UINT32_MAX, last = 0, asked = 0;
        for (size_t i = 0; i < c->ncalls && l; i++) {
            struct sl_rcall *x = &c->calls[i];
            if (!x->ask || x->node != n) continue;
            x->ask = false;
            const char *argv[] = {"ASKING"};
            size_t lens[] = {6};
            sl_rlink_append(l, 1, argv, lens);
            format_call(c, l, x);
            if (asked++)
                c->calls[last].next = (uint32_t)i;
            else
                first = (uint32_t)i;
            last = (uint32_t)i;
        }
        if (!asked) continue;
        struct reading rd = {c, first, (int)n, true};
        if (sl_rlink_exchange(l, 2 * asked, sl_clock_now() + timeout, on_counts, &rd) != 0) {
            k->ready[n] = false;
            c->incomplete = true;
        }
    }
    if (c->incomplete) {
        snprintf(c->link.why, sizeof c->link.why, "%.150s",
                 *k->why ? k->why : "a slot is not served");
        return -1;
    }
    return 0;
}

int sl_rsend_round(struct sl_rconn *c, uint64_t now)
{
    return c->cluster ? round_cluster(c, now) : round_single(c, now);
}
