/* SPDX-License-Identifier: BSD-2-Clause */
/* redis.c - the Redis backend's sender: one thread per program, the only
 * code that talks to Redis.
 *
 * Every `interval` it sends, for each live key, one EVALSHA of
 * core/fleet/redis.lua ("set": this program's counts of the current and previous
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
 * Life of the thread, as gossip.c's sender (sender.c starts, elects and
 * forks both; sl_redis_sender hands it this thread): started by the first
 * decision of a redis rule (so a program that inherits the config through
 * exec and never decides, a shell or `uname`, never connects); all
 * signals blocked; forked children close the sockets and have no thread;
 * if the sender's process dies, its heartbeat goes stale (3 intervals,
 * the timeout and 200 ms) and the next decision in another process of the
 * program (at most once a second) starts one. When Redis fails, the
 * thread reconnects with a backoff from 100 ms doubling to 2 s, and logs
 * once per change of state.
 *
 * Below it: a round (redis_round.c), connecting a link (redis_hello.c),
 * Sentinel and Cluster (redis_sentinel.c, redis_cluster.c), the links
 * (redis_link.c) and the state it writes (redis_state.c).
 */
#include <hiredis/hiredis.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../clock.h"
#include "../log.h"
#include "../mem.h"
#include "redis_sender.h"
#include "../sys.h"
#include "../limit/window.h"

/* ---- the thread ------------------------------------------------------------ */

/* What the log calls the backend: the address, or the master's name and
 * the primary the sentinels gave. */
static const char *target(const struct sl_rconn *c, char *buf, size_t len)
{
    const struct sl_redis *rc = &c->s->cfg->redis;
    if (c->cluster) return "cluster";
    if (!c->sentinel_mode) return rc->address;
    snprintf(buf, len, "master %.63s (%.63s)", rc->master,
             *c->link.addr ? c->link.addr : "unknown");
    return buf;
}

static void say_state(struct sl_rconn *c, int *state, int now_ok)
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

/* A new primary, from the sentinels or their +switch-master: the next
 * connection goes there. The first one is no failover. */
static void new_primary(struct sl_rconn *c, const char *addr, const char *how)
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
static int connect_backend(struct sl_rconn *c)
{
    if (c->sentinel_mode) {
        char addr[SL_RADDR_MAX], why[160];
        if (sl_rsentinel_discover(&c->sentinel, addr, sizeof addr, why, sizeof why) != 0) {
            snprintf(c->link.why, sizeof c->link.why, "%s", why);
            return -1;
        }
        new_primary(c, addr, "the sentinels say");
    }
    return sl_rsend_hello(c, &c->link);
}

/* Sleeps until `wait` ns have passed, or a sentinel speaks. */
static void nap(struct sl_rconn *c, uint64_t wait)
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
    struct sl_rconn c = {.s = s};
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
    uint64_t last_ok = 0; /* start of the last complete round */
    while (!sl_sender_stopping(&s->snd)) {
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
        if (!c.cluster && c.link.fd < 0 && now >= retry_at) {
            rc_ = connect_backend(&c);
            c.rounds_ok = 0;
        }
        if (c.cluster || c.link.fd >= 0) {
            uint64_t start = sl_clock_now();
            rc_ = sl_rsend_round(&c, start);
            if (rc_ == 0) {
                sl_redis_round_timing(s, &last_ok, start, sl_clock_now());
                sl_redis_count(s, SL_RC_SYNCS, 1);
                backoff = BACKOFF_MIN;
                /* The first round on a connection writes this program's counts
                 * back; the others' made while they could not sync are written
                 * by their own first rounds, so only the second round's replies
                 * hold the fleet's counts: until then decisions stay on
                 * on_backend_error (the first program back after a failover
                 * otherwise saw an empty fleet and admitted its whole view of
                 * the room in an interval: 52 of 60 in one window). */
                if (c.cluster || ++c.rounds_ok >= 2) {
                    if (start > atomic_load_explicit(&s->hdr->ok_at, memory_order_relaxed))
                        atomic_store_explicit(&s->hdr->ok_at, start, memory_order_release);
                    say_state(&c, &state, 1);
                }
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

void sl_redis_sender(struct sl_redis_state *s)
{
    const struct sl_redis *rc = &s->cfg->redis;
    s->snd = (struct sl_sender){
        .name = "redis",
        .verb = "syncs with",
        .target = rc->mode == SL_REDIS_SINGLE     ? rc->address
                  : rc->mode == SL_REDIS_SENTINEL ? rc->master
                                                  : "the cluster",
        .heartbeat = &s->hdr->heartbeat,
        .elect_ns = &s->hdr->elect_ns,
        .pid = &s->hdr->sender_pid,
        .stale_ns = 3 * rc->interval_ns + rc->timeout_ns + 200000000ull,
        .running = &s->running,
        .fds = s->fds,
        .nfds = SL_REDIS_FDS,
        .run = sender,
        .arg = s,
    };
}
