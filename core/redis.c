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
 * hiredis formats the commands (redisFormatCommandArgv) and parses the
 * replies (redisReader); the socket is this file's own, non-blocking,
 * driven by raw system calls with ppoll deadlines, so no hook of sluice's
 * sees it and no call can block past `timeout`. hiredis's memory comes
 * from sluice's arena (redis_alloc.c).
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
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "hostport.h"
#include "log.h"
#include "mem.h"
#include "redis_int.h"
#include "redis_lua.h" /* generated from core/redis.lua: sl_redis_lua */
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
};

struct conn {
    struct sl_redis_state *s;
    int fd;
    redisReader *reader;
    char sha[41];
    char node[64];
    char *out;
    size_t outlen, outcap;
    struct call *calls;
    size_t ncalls;
    char why[160];        /* the last failure, for the log */
    uint64_t fallback_at; /* SL_RC_FALLBACK when Redis went away */
};

static bool append(struct conn *c, int argc, const char **argv, const size_t *len)
{
    char *cmd;
    int n = redisFormatCommandArgv(&cmd, argc, argv, len);
    if (n < 0) return false;
    if (c->outlen + (size_t)n > c->outcap) {
        size_t cap = c->outcap ? c->outcap : 65536;
        while (cap < c->outlen + (size_t)n)
            cap *= 2;
        char *p = sl_realloc(c->out, cap);
        if (!p) {
            redisFreeCommand(cmd);
            return false;
        }
        c->out = p;
        c->outcap = cap;
    }
    memcpy(c->out + c->outlen, cmd, (size_t)n);
    c->outlen += (size_t)n;
    redisFreeCommand(cmd);
    return true;
}

static void drop(struct conn *c)
{
    if (c->fd >= 0) sl_sys_close(c->fd);
    c->fd = -1;
    c->s->fd = -1;
    if (c->reader) redisReaderFree(c->reader);
    c->reader = NULL;
    c->outlen = 0; /* what was not sent is not sent on the next connection */
}

static int fail(struct conn *c, const char *what, int err)
{
    if (err)
        snprintf(c->why, sizeof c->why, "%s: %s", what, strerror(err));
    else
        snprintf(c->why, sizeof c->why, "%s", what);
    drop(c);
    return -1;
}

static int remaining_ms(uint64_t deadline)
{
    uint64_t now = sl_clock_now();
    return now >= deadline ? 0 : (int)((deadline - now + 999999) / 1000000);
}

static uint64_t progress(uint64_t deadline, uint64_t timeout, uint64_t last)
{
    uint64_t d = sl_clock_now() + timeout;
    return d > last ? last : d > deadline ? d : deadline;
}

static int wait_fd(int fd, short ev, uint64_t deadline)
{
    int ms = remaining_ms(deadline);
    if (ms == 0) return 0;
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};
    struct pollfd p = {.fd = fd, .events = ev};
    int n = sl_sys_ppoll(&p, 1, &ts);
    return n > 0 ? p.revents : n;
}

/* Writes c->out and reads `want` replies, handing each to fn; -1 on any
 * failure, or when Redis makes no progress (reads nothing of ours, answers
 * nothing) until `deadline`, which each piece of progress moves to
 * `timeout` later: a large round is not a slow Redis. At most 8 timeouts
 * in all. */
typedef int (*reply_fn)(struct conn *c, size_t i, redisReply *r);
static int exchange(struct conn *c, size_t want, uint64_t deadline, reply_fn fn)
{
    const uint64_t timeout = c->s->cfg->redis.timeout_ns;
    const uint64_t last = deadline + 7 * timeout;
    size_t sent = 0, got = 0;
    char buf[16384];
    while (got < want) {
        short ev = POLLIN | (sent < c->outlen ? POLLOUT : 0);
        int rev = wait_fd(c->fd, ev, deadline);
        if (rev == 0) return fail(c, "timed out", 0);
        if (rev < 0) {
            if (errno == EINTR) continue;
            return fail(c, "ppoll", errno);
        }
        if ((rev & POLLOUT) && sent < c->outlen) {
            ssize_t n = sl_sys_sendto(c->fd, c->out + sent, c->outlen - sent,
                                      MSG_NOSIGNAL | MSG_DONTWAIT, NULL, 0);
            if (n < 0 && errno != EAGAIN && errno != EINTR) return fail(c, "send", errno);
            if (n > 0) sent += (size_t)n;
            if (n > 0) deadline = progress(deadline, timeout, last);
        }
        if (rev & (POLLIN | POLLHUP | POLLERR)) {
            ssize_t n = sl_sys_recvfrom(c->fd, buf, sizeof buf, MSG_DONTWAIT);
            if (n == 0) return fail(c, "connection closed by Redis", 0);
            if (n < 0) {
                if (errno == EAGAIN || errno == EINTR) continue;
                return fail(c, "recv", errno);
            }
            deadline = progress(deadline, timeout, last);
            if (redisReaderFeed(c->reader, buf, (size_t)n) != REDIS_OK)
                return fail(c, "reply too large", 0);
            for (;;) {
                void *r = NULL;
                if (redisReaderGetReply(c->reader, &r) != REDIS_OK)
                    return fail(c, "malformed reply", 0);
                if (!r) break;
                int rc = got < want ? fn(c, got, r) : -1;
                freeReplyObject(r);
                got++;
                if (rc != 0) return -1; /* fn said why and dropped */
            }
        }
    }
    c->outlen = 0;
    return 0;
}

/* ---- connecting: AUTH, then SCRIPT LOAD ------------------------------------ */

static int on_hello(struct conn *c, size_t i, redisReply *r)
{
    if (r->type == REDIS_REPLY_ERROR) {
        /* an AUTH error names no secret; keep the first words only */
        char msg[96];
        snprintf(msg, sizeof msg, "Redis said: %.80s", r->str);
        return fail(c, msg, 0);
    }
    if (r->type == REDIS_REPLY_STRING && r->len == 40) {
        memcpy(c->sha, r->str, 40);
        c->sha[40] = 0;
    }
    return 0;
}

static int connect_redis(struct conn *c)
{
    const struct sl_redis *rc = &c->s->cfg->redis;
    struct sockaddr_storage ss = {0};
    socklen_t len;
    if (strncmp(rc->address, "unix:", 5) == 0) {
        struct sockaddr_un *un = (struct sockaddr_un *)&ss;
        un->sun_family = AF_UNIX;
        snprintf(un->sun_path, sizeof un->sun_path, "%s", rc->address + 5);
        len = sizeof *un;
    } else if (sl_hostport_parse(rc->address, &ss, &len)) {
        return fail(c, "address is not ADDRESS:PORT", 0);
    }
    c->fd = sl_sys_socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (c->fd < 0) return fail(c, "socket", errno);
    c->s->fd = c->fd;
    uint64_t deadline = sl_clock_now() + rc->timeout_ns;
    if (sl_sys_connect(c->fd, (struct sockaddr *)&ss, len) != 0) {
        if (errno != EINPROGRESS && errno != EAGAIN) return fail(c, "connect", errno);
        int rev = wait_fd(c->fd, POLLOUT, deadline);
        if (rev <= 0) return fail(c, "connect timed out", 0);
        int e = 0;
        socklen_t el = sizeof e;
        sl_sys_getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &e, &el);
        if (e) return fail(c, "connect", e);
    }
    c->reader = redisReaderCreate();
    if (!c->reader) return fail(c, "out of memory", 0);
    size_t want = 1;
    if (*rc->password) {
        const char *argv[3] = {"AUTH", rc->user, rc->password};
        size_t lens[3] = {4, strlen(rc->user), strlen(rc->password)};
        if (*rc->user) {
            append(c, 3, argv, lens);
        } else {
            argv[1] = rc->password;
            lens[1] = lens[2];
            append(c, 2, argv, lens);
        }
        want++;
    }
    const char *argv[3] = {"SCRIPT", "LOAD", sl_redis_lua};
    size_t lens[3] = {6, 4, sizeof sl_redis_lua - 1};
    if (!append(c, 3, argv, lens)) return fail(c, "out of memory", 0);
    c->sha[0] = 0;
    int done = exchange(c, want, deadline, on_hello);
    if (c->out) explicit_bzero(c->out, c->outcap); /* it held the password */
    if (done != 0) return -1;
    if (!c->sha[0]) return fail(c, "SCRIPT LOAD answered no digest", 0);
    sl_redis_count(c->s, SL_RC_CONNECTS, 1);
    return 0;
}

/* ---- one round --------------------------------------------------------------- */

static uint64_t sub0(int64_t a, int64_t b)
{
    return a > b ? (uint64_t)(a - b) : 0;
}

static int on_counts(struct conn *c, size_t i, redisReply *r)
{
    struct sl_redis_counts k;
    if (sl_redis_reply_counts(r, &k) != 0) {
        sl_redis_count(c->s, SL_RC_BAD_REPLY, 1);
        if (r->type == REDIS_REPLY_ERROR) {
            char msg[96];
            snprintf(msg, sizeof msg, "Redis said: %.80s", r->str); /* NOSCRIPT: reload */
            return fail(c, msg, 0);
        }
        return 0;
    }
    sl_redis_count(c->s, SL_RC_CALLS, 1);
    const struct call *x = &c->calls[i];
    /* Redis answers: a long round keeps the rules counting with the fleet */
    if ((i & 255) == 255)
        atomic_store_explicit(&c->s->hdr->ok_at, sl_clock_now(), memory_order_release);
    if (atomic_load_explicit(&x->e->tag, memory_order_acquire) != x->tag) return 0; /* reused */
    atomic_store_explicit(
        &x->e->rest, sl_win_pack(x->window, sub0(k.prev, k.own_prev), sub0(k.curr, k.own_curr)),
        memory_order_relaxed);
    return 0;
}

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
    uint64_t op, oc;
    sl_win_counts(own, cur, &op, &oc);
    char k1[256], k2[256], a3[24], a4[24], ttl[24];
    const char *pre = cfg->redis.prefix;
    /* {hash tag}: both windows of a key in one slot, as Redis Cluster needs */
    snprintf(k1, sizeof k1, "%s{%s}:%llu", pre, e->name, (unsigned long long)cur);
    snprintf(k2, sizeof k2, "%s{%s}:%llu", pre, e->name, (unsigned long long)(cur - 1));
    snprintf(a3, sizeof a3, "%llu", (unsigned long long)oc);
    snprintf(a4, sizeof a4, "%llu", (unsigned long long)op);
    snprintf(ttl, sizeof ttl, "%llu", (unsigned long long)(2 * W / 1000000 + 1000));
    const char *argv[] = {"EVALSHA", c->sha, "2", k1, k2, c->node, "set", a3, a4, "0", "0", ttl};
    size_t lens[sizeof argv / sizeof argv[0]];
    for (size_t i = 0; i < sizeof argv / sizeof argv[0]; i++)
        lens[i] = strlen(argv[i]);
    if (!append(c, (int)(sizeof argv / sizeof argv[0]), argv, lens)) return;
    c->calls[c->ncalls++] = (struct call){e, tag, cur};
    atomic_store_explicit(&e->synced, own, memory_order_relaxed);
}

static int noop_reply(struct conn *c, size_t i, redisReply *r)
{
    return r->type == REDIS_REPLY_ERROR ? fail(c, "PING failed", 0) : 0;
}

static int round_trip(struct conn *c, uint64_t now)
{
    struct sl_redis_state *s = c->s;
    uint64_t wn = sl_redis_wall(s, now);
    c->ncalls = 0;
    c->outlen = 0;
    for (int i = 0; i < s->cfg->nrules; i++) {
        add_call(c, &s->ovf[i], wn);
        add_call(c, &s->ovf[i + SL_MAX_RULES], wn);
    }
    for (uint32_t i = 0; i <= s->mask; i++)
        add_call(c, &s->ents[i], wn);
    if (c->ncalls == 0) { /* nothing to say: a PING keeps the state honest */
        const char *argv[] = {"PING"};
        size_t lens[] = {4};
        append(c, 1, argv, lens);
        c->calls[0] = (struct call){0};
        return exchange(c, 1, now + s->cfg->redis.timeout_ns, noop_reply);
    }
    return exchange(c, c->ncalls, now + s->cfg->redis.timeout_ns, on_counts);
}

/* ---- the thread ------------------------------------------------------------ */

static void say_state(struct conn *c, int *state, int now_ok)
{
    if (*state == now_ok) return;
    const struct sl_redis *rc = &c->s->cfg->redis;
    uint64_t fallback =
        atomic_load_explicit(&c->s->hdr->counters[SL_RC_FALLBACK], memory_order_relaxed);
    char share[48];
    snprintf(share, sizeof share, "%u%% of each limit, on this program's counts",
             rc->local_share_pct);
    if (now_ok && *state < 0)
        sl_log_state(SL_LOG_INFO, "redis: %s connected; redis rules count with the fleet",
                     rc->address);
    else if (now_ok)
        sl_log_state(SL_LOG_INFO,
                     "redis: %s answers; redis rules count with the fleet again (%llu decisions "
                     "made under on_backend_error meanwhile)",
                     rc->address, (unsigned long long)(fallback - c->fallback_at));
    else
        sl_log_state(SL_LOG_WARN, "redis: %s: %s; redis rules: on_backend_error = %s (%s)",
                     rc->address, c->why,
                     rc->on_error == SL_BACKEND_LOCAL  ? "local"
                     : rc->on_error == SL_BACKEND_OPEN ? "open"
                                                       : "closed",
                     rc->on_error == SL_BACKEND_LOCAL  ? share
                     : rc->on_error == SL_BACKEND_OPEN ? "no limit"
                                                       : "everything denied");
    if (!now_ok) c->fallback_at = fallback;
    *state = now_ok;
}

static void *sender(void *arg)
{
    struct sl_redis_state *s = arg;
    const struct sl_redis *rc = &s->cfg->redis;
    struct conn c = {.s = s, .fd = -1};
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
        bool urgent = atomic_load_explicit(&s->hdr->urgent, memory_order_relaxed) &&
                      atomic_exchange_explicit(&s->hdr->urgent, 0, memory_order_relaxed);
        if (urgent) hot_until = now + rc->interval_ns;
        if (now < next && !(urgent && c.fd >= 0)) { /* not yet: sleep, looking at urgent */
            uint64_t wait = next - now;
            if (now < hot_until && wait > HOT_POLL_NS) wait = HOT_POLL_NS;
            struct timespec ts = {(time_t)(wait / SL_NS_PER_SEC), (long)(wait % SL_NS_PER_SEC)};
            sl_sys_ppoll(NULL, 0, &ts);
            continue;
        }
        bool early = now < next;
        if (early) sl_redis_count(s, SL_RC_EARLY, 1);
        atomic_store_explicit(&s->hdr->heartbeat, now, memory_order_relaxed);
        atomic_store_explicit(&s->hdr->offset_ns, sl_clock_wall_offset(), memory_order_relaxed);
        int rc_ = -1;
        if (c.fd < 0 && now >= retry_at) rc_ = connect_redis(&c);
        if (c.fd >= 0) {
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
        if (rc_ != 0 && c.fd < 0 && now >= retry_at) {
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
    drop(&c);
    sl_free(c.out);
    sl_free(c.calls);
    return NULL;
}

static struct sl_redis_state *_Atomic forked_watch;

static void after_fork_child(void)
{
    struct sl_redis_state *s = atomic_load(&forked_watch);
    if (!s || !atomic_load(&s->running)) return;
    /* The thread did not come along; its socket must not either. The
     * parent's reader and buffers stay allocated in this copy (a few KiB). */
    if (s->fd >= 0) sl_sys_close(s->fd);
    s->fd = -1;
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
               rc->address);
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
