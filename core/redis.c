/* redis.c - the Redis backend's sender: one thread per program, the only
 * code that talks to Redis.
 *
 * Every `interval` it sends, for each live key, one EVALSHA of
 * core/redis.lua ("set": this program's counts of the current and previous
 * window, each kept at its maximum in Redis) and reads back the fleet's
 * totals, which become the key's `rest` word (redis_state.c). All the
 * calls of a round go in one pipelined write; the round succeeds when
 * every reply came within `timeout`. Counts are absolute, not deltas, so a
 * round that timed out and is sent again cannot count anything twice, and
 * after a restart of Redis the next round writes every live count back:
 * only what other services counted in the lost windows is gone.
 *
 * Where the calls go: the one server (`address`); behind Sentinel, the
 * primary the sentinels name (redis_sentinel.c: asked before every
 * connection, +switch-master followed); in a Redis Cluster, each key's
 * primary by its hash tag's slot, one pipelined exchange per primary,
 * MOVED and ASK followed (redis_cluster.c), each key falling back alone
 * when its calls get no counts. The sockets are redis_link.c's:
 * non-blocking, raw system calls with ppoll deadlines, so no hook of
 * sluice's sees them and nothing waits past `timeout`.
 *
 * Life of the thread, as gossip.c's sender: started by the first decision
 * of a redis rule (so a program that inherits the config through exec and
 * never decides, a shell or `uname`, never connects); all signals blocked; forked children
 * close the socket and have no thread (pthread_atfork); if the sender's
 * process dies, its heartbeat goes stale and the next decision in another
 * process of the program (at most once a second, CAS on elect_ns) starts
 * one. When Redis fails, the thread reconnects with a backoff from
 * 100 ms doubling to 2 s, and logs once per change of state.
 */
#include <errno.h>
#include <hiredis/hiredis.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "log.h"
#include "mem.h"
#include "redis_cluster.h"
#include "redis_int.h"
#include "redis_link.h"
#include "redis_lua.h" /* generated from core/redis.lua: sl_redis_lua */
#include "redis_sentinel.h"
#include "sys.h"
#include "window.h"

#define BACKOFF_MIN 100000000ull  /* 100 ms */
#define BACKOFF_MAX 2000000000ull /* 2 s */
#define ROUND_MAX   65536         /* keys synced per round */
#define HOT_POLL_NS 1000000ull    /* how often a hot sender looks at the urgent word */

/* One call of a round: which entry, as it was, for which window. */
struct call {
    struct sl_rentry *e;
    uint64_t tag, window;
    uint64_t oc, op; /* this program's counts sent: this window, the previous one */
    uint32_t next;   /* the next call on the same link (its replies' order) */
    uint8_t node;    /* cluster: the primary it went to */
    bool ask;        /* cluster: ASK sent it to `node`; sent again with ASKING */
};

struct conn {
    struct sl_redis_state *s;
    struct sl_rlink link; /* the server (single) or the primary (sentinel) */
    struct sl_rsentinel sentinel;
    char sha[41];
    char node[64];
    struct call *calls;
    size_t ncalls;
    uint64_t fallback_at; /* SL_RC_FALLBACK when Redis went away */
    bool sentinel_mode;
    struct sl_rcluster *cluster; /* cluster mode; then link is unused */
    size_t nasks;                /* this round's calls redirected by ASK */
    bool incomplete;             /* this round missed a node or a slot */
};

/* ---- connecting: AUTH, ROLE (behind Sentinel), then SCRIPT LOAD ------------ */

static int on_hello(struct sl_rlink *l, void *ctx, size_t i, redisReply *r)
{
    struct conn *c = ctx;
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

/* Connects l and makes it ready for rounds: AUTH, ROLE (behind Sentinel),
 * SCRIPT LOAD (every node of a cluster gets the script: same digest). */
static int hello(struct conn *c, struct sl_rlink *l)
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

/* ---- one round --------------------------------------------------------------- */

static uint64_t sub0(int64_t a, int64_t b)
{
    return a > b ? (uint64_t)(a - b) : 0;
}

/* Reading one link's replies: calls[cursor] is the next reply's call,
 * calls chained per node by `next`; after ASK, replies come in pairs
 * (ASKING's OK, then the script's). */
struct reading {
    struct conn *c;
    uint32_t cursor;
    int node;
    bool asking;
};

static int on_counts(struct sl_rlink *l, void *ctx, size_t i, redisReply *r)
{
    struct reading *rd = ctx;
    struct conn *c = rd->c;
    if (rd->asking && i % 2 == 0) /* ASKING */
        return r->type == REDIS_REPLY_ERROR ? sl_rlink_fail(l, "ASKING refused", 0) : 0;
    struct call *x = &c->calls[rd->cursor];
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
    if ((i & 255) == 255 && !c->cluster)
        atomic_store_explicit(&c->s->hdr->ok_at, sl_clock_now(), memory_order_release);
    if (atomic_load_explicit(&x->e->tag, memory_order_acquire) != x->tag) return 0; /* reused */
    if (c->cluster) atomic_store_explicit(&x->e->missed, 0, memory_order_relaxed);
    atomic_store_explicit(
        &x->e->rest, sl_win_pack(x->window, sub0(k.prev, k.own_prev), sub0(k.curr, k.own_curr)),
        memory_order_relaxed);
    return 0;
}

/* The two keys of a call: {hash tag}, so both windows are in one slot, as
 * Redis Cluster needs. */
static void call_keys(const struct conn *c, const struct call *x, char *k1, char *k2, size_t len)
{
    const char *pre = c->s->cfg->redis.prefix;
    snprintf(k1, len, "%s{%s}:%llu", pre, x->e->name, (unsigned long long)x->window);
    snprintf(k2, len, "%s{%s}:%llu", pre, x->e->name, (unsigned long long)(x->window - 1));
}

static bool format_call(struct conn *c, struct sl_rlink *l, const struct call *x)
{
    char k1[256], k2[256], a3[24], a4[24], ttl[24];
    call_keys(c, x, k1, k2, sizeof k1);
    snprintf(a3, sizeof a3, "%llu", (unsigned long long)x->oc);
    snprintf(a4, sizeof a4, "%llu", (unsigned long long)x->op);
    snprintf(ttl, sizeof ttl, "%llu", (unsigned long long)(2 * x->e->period_ns / 1000000 + 1000));
    const char *argv[] = {"EVALSHA", c->sha, "2", k1, k2, c->node, "set", a3, a4, "0", "0", ttl};
    size_t lens[sizeof argv / sizeof argv[0]];
    for (size_t i = 0; i < sizeof argv / sizeof argv[0]; i++)
        lens[i] = strlen(argv[i]);
    return sl_rlink_append(l, (int)(sizeof argv / sizeof argv[0]), argv, lens);
}

/* A live entry (counted in the last two windows) becomes a call. */
static void add_call(struct conn *c, struct sl_rentry *e, uint64_t wn)
{
    const struct sl_config *cfg = c->s->cfg;
    uint32_t m = atomic_load_explicit(&e->meta, memory_order_acquire);
    uint64_t tag = atomic_load_explicit(&e->tag, memory_order_acquire);
    if (tag < 2 || m == 0 || m > (uint32_t)cfg->nrules) return;
    const struct sl_rule *r = &cfg->rules[m - 1];
    if (r->scope != SL_SCOPE_REDIS || !e->period_ns) return;
    const uint64_t W = e->period_ns, cur = wn / W;
    uint64_t own = atomic_load_explicit(&e->own, memory_order_relaxed);
    uint64_t rest = atomic_load_explicit(&e->rest, memory_order_relaxed);
    bool live = (own && sl_win_diff(cur, sl_win_index(own)) <= 1) ||
                (rest && sl_win_diff(cur, sl_win_index(rest)) <= 1);
    if (!live || c->ncalls >= ROUND_MAX) return;
    struct call *x = &c->calls[c->ncalls];
    *x = (struct call){.e = e, .tag = tag, .window = cur};
    sl_win_counts(own, cur, &x->op, &x->oc);
    c->ncalls++;
    atomic_store_explicit(&e->synced, own, memory_order_relaxed);
}

static int noop_reply(struct sl_rlink *l, void *ctx, size_t i, redisReply *r)
{
    return r->type == REDIS_REPLY_ERROR ? sl_rlink_fail(l, "PING failed", 0) : 0;
}

static void collect(struct conn *c, uint64_t now)
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

static int round_single(struct conn *c, uint64_t now)
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
static struct sl_rlink *node_link(struct conn *c, int n)
{
    struct sl_rcluster *k = c->cluster;
    struct sl_rlink *l = &k->links[n];
    if (l->fd >= 0 && k->ready[n]) return l;
    uint64_t now = sl_clock_now();
    if (now < k->retry_at[n]) return NULL;
    k->ready[n] = hello(c, l) == 0;
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
static int round_cluster(struct conn *c, uint64_t now)
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
        struct call *x = &c->calls[i];
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
    for (uint32_t n = 0; n < k->map.nnodes; n++) {
        if (!links[n]) continue;
        const uint64_t start = sl_clock_now();
        struct reading rd = {c, head[n], (int)n, false};
        int ok;
        if (count[n]) {
            ok = sl_rlink_exchange(links[n], count[n], sl_clock_now() + timeout, on_counts, &rd);
        } else { /* a PING: a node that died is noticed without traffic */
            const char *argv[] = {"PING"};
            size_t lens[] = {4};
            sl_rlink_append(links[n], 1, argv, lens);
            ok = sl_rlink_exchange(links[n], 1, sl_clock_now() + timeout, noop_reply, c);
        }
        if (ok == 0) /* its keys count with the fleet, whatever the other nodes do */
            atomic_store_explicit(&c->s->hdr->nodes[n].ok_at, start, memory_order_release);
        if (ok != 0) {
            snprintf(k->why, sizeof k->why, "%.63s: %.90s", links[n]->addr, links[n]->why);
            k->ready[n] = false;
            k->retry_at[n] = sl_clock_now() + BACKOFF_MIN;
            k->stale = true;
            c->incomplete = true;
        }
    }
    for (uint32_t n = 0; c->nasks && n < k->map.nnodes; n++) { /* ASK: one node at a time */
        struct sl_rlink *l = node_link(c, (int)n);
        uint32_t first = UINT32_MAX, last = 0, asked = 0;
        for (size_t i = 0; i < c->ncalls && l; i++) {
            struct call *x = &c->calls[i];
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

static int round_trip(struct conn *c, uint64_t now)
{
    return c->cluster ? round_cluster(c, now) : round_single(c, now);
}

/* ---- the thread ------------------------------------------------------------ */

/* What the log calls the backend: the address, or the master's name and
 * the primary the sentinels gave. */
static const char *target(const struct conn *c, char *buf, size_t len)
{
    const struct sl_redis *rc = &c->s->cfg->redis;
    if (c->cluster) return "cluster";
    if (!c->sentinel_mode) return rc->address;
    snprintf(buf, len, "master %.63s (%.63s)", rc->master,
             *c->link.addr ? c->link.addr : "unknown");
    return buf;
}

static void say_state(struct conn *c, int *state, int now_ok)
{
    if (*state == now_ok) return;
    const struct sl_redis *rc = &c->s->cfg->redis;
    uint64_t fallback =
        atomic_load_explicit(&c->s->hdr->counters[SL_RC_FALLBACK], memory_order_relaxed);
    char share[48], t[160];
    snprintf(share, sizeof share, "%u%% of each limit, on this program's counts",
             rc->local_share_pct);
    if (now_ok && *state < 0)
        sl_log_state(SL_LOG_INFO, "redis: %s connected; redis rules count with the fleet",
                     target(c, t, sizeof t));
    else if (now_ok)
        sl_log_state(SL_LOG_INFO,
                     "redis: %s answers; redis rules count with the fleet again (%llu decisions "
                     "made under on_backend_error meanwhile)",
                     target(c, t, sizeof t), (unsigned long long)(fallback - c->fallback_at));
    else
        sl_log_state(SL_LOG_WARN, "redis: %s: %s; redis rules%s: on_backend_error = %s (%s)",
                     target(c, t, sizeof t), c->link.why,
                     c->cluster ? " (keys of the nodes that do not answer)" : "",
                     rc->on_error == SL_BACKEND_LOCAL  ? "local"
                     : rc->on_error == SL_BACKEND_OPEN ? "open"
                                                       : "closed",
                     rc->on_error == SL_BACKEND_LOCAL  ? share
                     : rc->on_error == SL_BACKEND_OPEN ? "no limit"
                                                       : "everything denied");
    if (!now_ok) c->fallback_at = fallback;
    *state = now_ok;
}

void sl_redis_set_nodes(struct sl_redis_state *s, const char (*addrs)[64], uint32_t n)
{
    struct sl_rhdr *h = s->hdr;
    if (n > SL_REDIS_NODES_MAX) n = SL_REDIS_NODES_MAX;
    atomic_fetch_add_explicit(&h->addr_seq, 1, memory_order_acq_rel); /* odd: rewriting */
    for (uint32_t i = 0; i < n; i++) {
        if (strcmp(h->nodes[i].addr, addrs[i]) != 0) { /* another node in this place */
            atomic_store_explicit(&h->nodes[i].calls, 0, memory_order_relaxed);
            atomic_store_explicit(&h->nodes[i].ok_at, 0, memory_order_relaxed);
        }
        snprintf(h->nodes[i].addr, sizeof h->nodes[i].addr, "%s", addrs[i]);
    }
    h->nnodes = n;
    atomic_fetch_add_explicit(&h->addr_seq, 1, memory_order_release);
}

/* A new primary, from the sentinels or their +switch-master: the next
 * connection goes there. The first one is no failover. */
static void new_primary(struct conn *c, const char *addr, const char *how)
{
    if (strcmp(c->link.addr, addr) == 0) return;
    if (*c->link.addr) {
        sl_redis_count(c->s, SL_RC_FAILOVERS, 1);
        sl_log_state(SL_LOG_INFO, "redis: master %s: %s -> %s (%s)", c->s->cfg->redis.master,
                     c->link.addr, addr, how);
    }
    sl_rlink_drop(&c->link);
    snprintf(c->link.addr, sizeof c->link.addr, "%s", addr);
    char one[1][64];
    snprintf(one[0], sizeof one[0], "%s", addr);
    sl_redis_set_nodes(c->s, (const char(*)[64])one, 1);
}

/* Connects to the server, or behind Sentinel to the primary the sentinels
 * name now (asked again before every connection: a failed round may be a
 * failover). */
static int connect_backend(struct conn *c)
{
    if (c->sentinel_mode) {
        char addr[SL_RADDR_MAX], why[160];
        if (sl_rsentinel_discover(&c->sentinel, addr, sizeof addr, why, sizeof why) != 0) {
            snprintf(c->link.why, sizeof c->link.why, "%s", why);
            return -1;
        }
        new_primary(c, addr, "the sentinels say");
    }
    return hello(c, &c->link);
}

/* Sleeps until `wait` ns have passed, or a sentinel speaks. */
static void nap(struct conn *c, uint64_t wait)
{
    struct timespec ts = {(time_t)(wait / SL_NS_PER_SEC), (long)(wait % SL_NS_PER_SEC)};
    int fd = c->sentinel_mode ? sl_rsentinel_fd(&c->sentinel) : -1;
    struct pollfd p = {.fd = fd, .events = POLLIN};
    sl_sys_ppoll(fd >= 0 ? &p : NULL, fd >= 0 ? 1 : 0, &ts);
}

static void *sender(void *arg)
{
    struct sl_redis_state *s = arg;
    const struct sl_redis *rc = &s->cfg->redis;
    struct conn c = {.s = s};
    c.link.fd = -1;
    c.link.mirror = &s->fds[0];
    c.link.timeout_ns = rc->timeout_ns;
    c.link.beat = &s->hdr->heartbeat;
    c.sentinel_mode = rc->mode == SL_REDIS_SENTINEL;
    if (c.sentinel_mode) {
        sl_rsentinel_init(&c.sentinel, rc, &s->fds[1], &s->hdr->heartbeat);
    } else if (rc->mode == SL_REDIS_CLUSTER) {
        c.cluster = sl_alloc(sizeof *c.cluster);
        if (!c.cluster) return NULL;
        sl_rcluster_init(c.cluster, rc, &s->fds[2], &s->hdr->heartbeat);
    } else {
        new_primary(&c, rc->address, "");
    }
    uint64_t rnd = 0; /* tells this program's field from a restarted one's with its pid */
    if (getentropy(&rnd, sizeof rnd) != 0) rnd = sl_clock_now() ^ (uint64_t)(uintptr_t)&c;
    char host[32] = "";
    gethostname(host, sizeof host - 1);
    snprintf(c.node, sizeof c.node, "%s:%d:%08llx", host, (int)getpid(),
             (unsigned long long)(rnd & 0xffffffffu));
    c.calls = sl_alloc(ROUND_MAX * sizeof *c.calls);
    if (!c.calls) return NULL;
    int state = -1; /* unknown, then 0 down, 1 up */
    uint64_t backoff = BACKOFF_MIN, retry_at = 0, next = sl_clock_now(), hot_until = 0;
    while (atomic_load_explicit(&s->running, memory_order_relaxed)) {
        uint64_t now = sl_clock_now();
        char addr[SL_RADDR_MAX];
        if (c.sentinel_mode && sl_rsentinel_watch(&c.sentinel, now, addr, sizeof addr) &&
            strcmp(addr, c.link.addr) != 0) {
            new_primary(&c, addr, "+switch-master");
            retry_at = now; /* reconnect at once, whatever the backoff */
            backoff = BACKOFF_MIN;
        }
        bool urgent = atomic_load_explicit(&s->hdr->urgent, memory_order_relaxed) &&
                      atomic_exchange_explicit(&s->hdr->urgent, 0, memory_order_relaxed);
        if (urgent) hot_until = now + rc->interval_ns;
        if (now < next &&
            !(urgent && (c.cluster || c.link.fd >= 0))) { /* not yet: sleep, looking at urgent */
            uint64_t wait = next - now;
            if (now < hot_until && wait > HOT_POLL_NS) wait = HOT_POLL_NS;
            nap(&c, wait);
            continue;
        }
        bool early = now < next;
        if (early) sl_redis_count(s, SL_RC_EARLY, 1);
        atomic_store_explicit(&s->hdr->heartbeat, now, memory_order_relaxed);
        atomic_store_explicit(&s->hdr->offset_ns, sl_clock_wall_offset(), memory_order_relaxed);
        int rc_ = -1;
        if (!c.cluster && c.link.fd < 0 && now >= retry_at) rc_ = connect_backend(&c);
        if (c.cluster || c.link.fd >= 0) {
            uint64_t start = sl_clock_now();
            rc_ = round_trip(&c, start);
            if (rc_ == 0) {
                if (start > atomic_load_explicit(&s->hdr->ok_at, memory_order_relaxed))
                    atomic_store_explicit(&s->hdr->ok_at, start, memory_order_release);
                sl_redis_count(s, SL_RC_SYNCS, 1);
                backoff = BACKOFF_MIN;
                say_state(&c, &state, 1);
            }
        }
        if (rc_ != 0 && (c.cluster || (c.link.fd < 0 && now >= retry_at))) {
            sl_redis_count(s, SL_RC_FAILURES, 1);
            say_state(&c, &state, 0);
            retry_at = sl_clock_now() + backoff;
            backoff = backoff * 2 > BACKOFF_MAX ? BACKOFF_MAX : backoff * 2;
        }
        if (early) continue; /* the tick stays where it was */
        next += rc->interval_ns;
        now = sl_clock_now();
        if (next <= now) next = now + rc->interval_ns / 4;
    }
    sl_rlink_free(&c.link);
    if (c.sentinel_mode) sl_rsentinel_free(&c.sentinel);
    if (c.cluster) sl_rcluster_free(c.cluster);
    sl_free(c.cluster);
    sl_free(c.calls);
    return NULL;
}

static struct sl_redis_state *_Atomic forked_watch;

static void after_fork_child(void)
{
    struct sl_redis_state *s = atomic_load(&forked_watch);
    if (!s || !atomic_load(&s->running)) return;
    /* The thread did not come along; its sockets must not either. The
     * parent's readers and buffers stay allocated in this copy (a few KiB). */
    for (int i = 0; i < SL_REDIS_FDS; i++) {
        if (s->fds[i] >= 0) sl_sys_close(s->fds[i]);
        s->fds[i] = -1;
    }
    atomic_store(&s->running, 0);
}

int sl_redis_start(struct sl_redis_state *s, char *err, size_t errlen)
{
    atomic_store(&s->running, 1);
    atomic_store_explicit(&s->hdr->heartbeat, sl_clock_now(), memory_order_relaxed);
    atomic_store_explicit(&s->hdr->sender_pid, (int32_t)getpid(), memory_order_relaxed);
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(&s->thread, NULL, sender, s);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        atomic_store(&s->running, 0);
        snprintf(err, errlen, "redis: pthread_create: %s", strerror(rc));
        return -1;
    }
    pthread_detach(s->thread);
    return 0;
}

void sl_redis_check(struct sl_redis_state *s, uint64_t now)
{
    if (atomic_load_explicit(&s->running, memory_order_relaxed)) return;
    const struct sl_redis *rc = &s->cfg->redis;
    uint64_t hb = atomic_load_explicit(&s->hdr->heartbeat, memory_order_relaxed);
    if (now < hb + 3 * rc->interval_ns + rc->timeout_ns + 200000000ull) return;
    uint64_t e = atomic_load_explicit(&s->hdr->elect_ns, memory_order_relaxed);
    if (e && now < e + SL_NS_PER_SEC) return;
    if (!atomic_compare_exchange_strong(&s->hdr->elect_ns, &e, now)) return;
    int saved = errno; /* on the program's call path: leave errno as it was */
    char err[128];
    if (sl_redis_start(s, err, sizeof err) != 0)
        sl_log(SL_LOG_WARN, "%s", err);
    else if (hb) /* a sender before us died */
        sl_log(SL_LOG_INFO, "redis: this process (%d) now syncs with %s", (int)getpid(),
               rc->mode == SL_REDIS_SINGLE     ? rc->address
               : rc->mode == SL_REDIS_SENTINEL ? rc->master
                                               : "the cluster");
    errno = saved;
}

struct sl_redis_state *sl_redis_open(const struct sl_config *cfg, char *err, size_t errlen)
{
    struct sl_redis_state *s = sl_redis_map(cfg, err, errlen);
    if (!s) return NULL;
    struct sl_redis_state *expected = NULL;
    if (atomic_compare_exchange_strong(&forked_watch, &expected, s))
        pthread_atfork(NULL, NULL, after_fork_child);
    return s; /* the first decision starts the sender (sl_redis_check) */
}
