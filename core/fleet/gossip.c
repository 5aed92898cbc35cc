/* SPDX-License-Identifier: BSD-2-Clause */
/* gossip.c - the one gossip sender per host: a thread in the program.
 *
 * Why a thread, and how it is started, elected again when its process
 * dies, stopped and left behind by fork, is sender.c's (sender.h), shared
 * with the Redis sender; sl_gossip_sender hands it this file's parts:
 *   - exactly one per host: the UDP bind of the `listen` address is the
 *     lock (bind_listen). Only the process that binds it starts the
 *     thread; others get EADDRINUSE. The socket is CLOEXEC and closed in
 *     forked children (sender.c's fork handler), so a child never holds it
 *     and never has the thread.
 *   - re-election: if the sender's process dies (nginx's master, say),
 *     the heartbeat in shared memory goes stale (3 intervals and 200 ms);
 *     the next decision in any process of the program, at most once a
 *     second per host, tries to bind and start the thread itself.
 *   - nothing held across fork: the thread takes no lock the deciders or
 *     the host could wait on; it allocates nothing after start; it uses raw
 *     system calls for its I/O so no hook of sluice's (or of another
 *     preloaded library) sees them; every signal is blocked in it, so the
 *     host's handlers never run on it.
 *
 * Each interval the thread sends what changed (and every second all live
 * counts, so a restarted peer converges), then waits in ppoll for
 * datagrams until the next send. Between ticks it sends early when a
 * decision raised the urgent word (a key's count ran its early share ahead
 * of what was sent, cluster.c): a decision in this process wakes it with
 * an empty datagram to its own socket; for deciders in other processes it
 * looks at the word every millisecond, but only within an interval of its
 * last early send (keys are hot), so an idle host is not woken.
 *
 * This file is the gossip backend of cluster.c (see cluster_t.h for what a
 * backend may use): datagrams built from this node's words and merged into
 * the peers' words, with the checks of docs/gossip-wire.txt, the replay
 * window among them; and the thread that sends and receives them.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <sodium.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../clock.h"
#include "cluster_t.h"
#include "gossip.h"
#include "hostport.h"
#include "udpowner.h"
#include "../log.h"
#include "../sys.h"

/* ---- datagrams (docs/gossip-wire.txt) ------------------------------------ */

/* Replay protection, per peer and boot: a 64-datagram sliding window of
 * sequence numbers (as IPsec's, RFC 4303 3.4.3); a new boot must be newer
 * than everything heard from the peer's previous one. Returns whether the
 * datagram is new, and records it. */
static bool replay_accept(struct sl_cpeer *p, const struct sl_wire_hdr *h)
{
    if (h->boot != p->boot) {
        if (p->boot && h->ts_ms <= p->last_ts_ms) return false;
        p->boot = h->boot;
        p->maxseq = h->seq;
        p->bitmap = 1;
        return true;
    }
    if (h->seq > p->maxseq) {
        uint64_t shift = h->seq - p->maxseq;
        p->bitmap = shift >= 64 ? 1 : p->bitmap << shift | 1;
        p->maxseq = h->seq;
        return true;
    }
    uint64_t d = p->maxseq - h->seq;
    if (d >= 64 || (p->bitmap >> d & 1)) return false;
    p->bitmap |= 1ull << d;
    return true;
}

enum sl_wire_status sl_cluster_receive(struct sl_cluster *c, const uint8_t *buf, size_t len,
                                       uint64_t now)
{
    struct sl_wire_hdr h;
    enum sl_wire_status st = sl_wire_decode(buf, len, c->key, &h);
    int o = 0;
    if (st == SL_WIRE_OK && !(o = sl_cluster_origin(c, h.node))) st = SL_WIRE_UNKNOWN_PEER;
    uint64_t wn = sl_cluster_wall(c, now), wms = wn / 1000000;
    struct sl_cpeer *p = &c->hdr->peer[o];
    if (st == SL_WIRE_OK) {
        uint64_t d = h.ts_ms > wms ? h.ts_ms - wms : wms - h.ts_ms;
        if (d > SL_CLUSTER_TS_WINDOW_MS) st = SL_WIRE_STALE;
    }
    if (st == SL_WIRE_OK && !replay_accept(p, &h)) st = SL_WIRE_REPLAYED;
    if (st != SL_WIRE_OK) {
        atomic_fetch_add_explicit(&c->hdr->drops[st], 1, memory_order_relaxed);
        return st;
    }
    if (h.ts_ms > p->last_ts_ms) p->last_ts_ms = h.ts_ms;
    sl_cluster_heard(c, o, now);
    sl_cluster_count(c, SL_CC_RX_PACKETS, 1);
    sl_cluster_count(c, SL_CC_RX_BYTES, len);
    for (size_t i = 0; i < h.nrec; i++) {
        struct sl_wire_rec w;
        sl_wire_rec_at(buf, i, &w);
        struct sl_cluster_rec r = {
            .hash = w.hash, .rule = w.rule, .window = w.window, .prev = w.prev, .curr = w.curr};
        sl_cluster_merge(c, o, &r, wn);
    }
    return SL_WIRE_OK;
}

struct builder {
    struct sl_cluster *c;
    struct sl_wire_hdr h;
    struct sl_wire_rec recs[SL_WIRE_MAX_RECS];
    size_t n, packets;
    sl_cluster_emit_fn emit;
    void *arg;
};

static void flush(struct builder *b)
{
    uint8_t pkt[SL_WIRE_MAX];
    b->h.seq = ++b->c->seq;
    size_t len = sl_wire_encode(pkt, &b->h, b->recs, b->n, b->c->key);
    b->emit(b->arg, pkt, len);
    b->n = 0;
    b->packets++;
}

static void add_record(void *arg, const struct sl_cluster_rec *r)
{
    struct builder *b = arg;
    b->recs[b->n++] = (struct sl_wire_rec){
        .hash = r->hash, .rule = r->rule, .window = r->window, .prev = r->prev, .curr = r->curr};
    if (b->n == SL_WIRE_MAX_RECS) flush(b);
}

size_t sl_cluster_build(struct sl_cluster *c, uint64_t now, bool full, sl_cluster_emit_fn emit,
                        void *arg)
{
    static __thread struct builder b; /* 1.1 KiB: off the sender's stack */
    uint64_t wn = sl_cluster_wall(c, now);
    if (!c->boot) {
        randombytes_buf(&c->boot, sizeof c->boot);
        c->boot |= 1;
        c->seq = 0;
    }
    b = (struct builder){.c = c, .emit = emit, .arg = arg};
    b.h = (struct sl_wire_hdr){.type = SL_WIRE_TYPE_COUNTS,
                               .flags = full ? SL_WIRE_FLAG_FULL : 0,
                               .node = c->self_id,
                               .boot = c->boot,
                               .ts_ms = wn / 1000000};
    sl_cluster_each_own(c, wn, full, add_record, &b);
    if (b.n || b.packets == 0) flush(&b);
    return b.packets;
}

/* ---- the sender thread ------------------------------------------------------ */

static uint64_t xorshift(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *s = x;
}

static void send_all(void *arg, const uint8_t *pkt, size_t len)
{
    struct sl_cluster *c = arg;
    for (int i = 0; i < c->norig - 1; i++) {
        if (c->drop_pct && xorshift(&c->rng) % 100 < c->drop_pct) {
            atomic_fetch_add_explicit(&c->hdr->counters[SL_CC_TX_TEST_DROPPED], 1,
                                      memory_order_relaxed);
            continue;
        }
        long n = sl_sys_sendto(c->fd, pkt, len, MSG_DONTWAIT | MSG_NOSIGNAL,
                               (const struct sockaddr *)&c->peer_sa[i], c->peer_salen[i]);
        enum sl_cluster_counter k = n == (long)len ? SL_CC_TX_PACKETS : SL_CC_TX_ERRORS;
        atomic_fetch_add_explicit(&c->hdr->counters[k], 1, memory_order_relaxed);
        if (n == (long)len)
            atomic_fetch_add_explicit(&c->hdr->counters[SL_CC_TX_BYTES], len, memory_order_relaxed);
    }
}

/* A decision in this process raised the urgent word: an empty datagram to
 * our own socket ends the thread's wait (non-blocking, one system call,
 * errno kept). */
static void wake(void *arg)
{
    struct sl_cluster *c = arg;
    if (c->fd < 0) return;
    int saved = errno;
    static const uint8_t none[1];
    sl_sys_sendto(c->fd, none, 0, MSG_DONTWAIT | MSG_NOSIGNAL, (const struct sockaddr *)&c->self_sa,
                  c->self_salen);
    errno = saved;
}

#define HOT_POLL_NS 1000000ull /* how often a hot sender looks at the urgent word */

static void *sender(void *arg)
{
    struct sl_cluster *c = arg;
    const uint64_t interval = c->cfg->gossip.interval_ns ? c->cfg->gossip.interval_ns : 20000000ull;
    const uint64_t full_every = interval >= SL_NS_PER_SEC ? 1 : SL_NS_PER_SEC / interval;
    static uint8_t buf[SL_WIRE_MAX + 1];
    uint64_t next = sl_clock_now(), tick = 0, hot_until = 0;
    while (!sl_sender_stopping(&c->snd)) {
        uint64_t now = sl_clock_now();
        bool urgent = sl_cluster_take_urgent(c);
        if (now >= next) {
            atomic_store_explicit(&c->hdr->offset_ns, sl_clock_wall_offset(), memory_order_relaxed);
            sl_cluster_build(c, now, tick % full_every == 0, send_all, c);
            tick++;
            next += interval;
            if (next <= now) next = now + interval;
            atomic_store_explicit(&c->hdr->heartbeat, now, memory_order_relaxed);
        } else if (urgent) {
            sl_cluster_build(c, now, false, send_all, c);
            sl_cluster_count(c, SL_CC_TX_EARLY, 1);
        }
        if (urgent) hot_until = now + interval;
        uint64_t wait = next > now ? next - now : 0;
        if (now < hot_until && wait > HOT_POLL_NS) wait = HOT_POLL_NS;
        struct timespec ts = {(time_t)(wait / SL_NS_PER_SEC), (long)(wait % SL_NS_PER_SEC)};
        struct pollfd pfd = {.fd = c->fd, .events = POLLIN};
        sl_sys_ppoll(&pfd, 1, &ts);
        uint64_t drain_start = sl_clock_now();
        for (int i = 0; i < 256; i++) {
            long n = sl_sys_recvfrom(c->fd, buf, sizeof buf, MSG_DONTWAIT | MSG_TRUNC);
            if (n < 0) { /* drained: our view of the peers is complete up to drain_start */
                atomic_store_explicit(&c->hdr->rx_at, drain_start, memory_order_release);
                break;
            }
            if (n == 0) continue; /* a wake-up (wake()): send early, at the loop's top */
            /* MSG_TRUNC: n is the datagram's real length, so an oversized
             * one is seen as such (the decoder reads nothing past 1200). */
            sl_cluster_receive(c, buf, (size_t)n, sl_clock_now());
        }
    }
    return NULL;
}

/* EADDRINUSE on the listen address while no process of the program sends
 * (the shared heartbeat is stale): another program holds it, a local
 * user's squatter perhaps. Never silent: said once per process, naming
 * the holder's user; the cluster rules count on this host alone, and the
 * bind is tried again at the next election. */
static void say_squatted(struct sl_cluster *c, const struct sockaddr_storage *ss)
{
    uint64_t hb = atomic_load_explicit(&c->hdr->heartbeat, memory_order_relaxed);
    if (hb && sl_clock_now() < hb + c->snd.stale_ns) return; /* ours sends */
    static _Atomic bool told;
    if (atomic_exchange(&told, true)) return;
    unsigned port = ntohs(ss->ss_family == AF_INET6 ? ((const struct sockaddr_in6 *)ss)->sin6_port
                                                    : ((const struct sockaddr_in *)ss)->sin_port);
    long uid = sl_udp_owner(ss->ss_family == AF_INET6 ? "/proc/net/udp6" : "/proc/net/udp", port);
    char who[48] = "a user sluice could not tell";
    if (uid >= 0) snprintf(who, sizeof who, "uid %ld", uid);
    sl_log(SL_LOG_ERROR,
           "gossip: %s is bound by another program (%s), not by a process of this one: this "
           "host neither sends its counts nor hears its peers, and cluster rules count on this "
           "host alone until it is free (tried again at most once a second; said once)",
           c->cfg->gossip.listen, who);
}

/* The sender's prepare (sender.h): parses the addresses and binds the
 * listen address, the lock. 0 bound, 1 another process holds it, -1. */
static int bind_listen(void *arg, char *err, size_t errlen)
{
    struct sl_cluster *c = arg;
    const struct sl_gossip *g = &c->cfg->gossip;
    struct sockaddr_storage ss;
    socklen_t len;
    if (sl_hostport_parse(g->listen, &ss, &len)) {
        snprintf(err, errlen, "gossip: listen '%s' is not ADDRESS:PORT", g->listen);
        return -1;
    }
    for (int i = 0; i < g->npeers; i++) {
        if (sl_hostport_parse(g->peers[i], &c->peer_sa[i], &c->peer_salen[i])) {
            snprintf(err, errlen, "gossip: peer '%s' is not ADDRESS:PORT", g->peers[i]);
            return -1;
        }
    }
    c->self_sa = ss;
    c->self_salen = len;
    int fd = sl_sys_socket(ss.ss_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        snprintf(err, errlen, "gossip: socket: %s", strerror(errno));
        return -1;
    }
    if (sl_sys_bind(fd, (struct sockaddr *)&ss, len) != 0) {
        int e = errno;
        sl_sys_close(fd);
        if (e == EADDRINUSE) {
            say_squatted(c, &ss);
            return 1;
        }
        snprintf(err, errlen, "gossip: bind %s: %s", g->listen, strerror(e));
        return -1;
    }
    const char *drop = getenv("SLUICE_TEST_GOSSIP_DROP");
    c->drop_pct = drop ? (uint32_t)atoi(drop) : 0;
    c->rng = (uint64_t)getpid() * 0x9e3779b97f4a7c15ull | 1;
    c->fd = fd;
    c->boot = 0; /* a new boot id at the first build */
    return 0;
}

void sl_gossip_sender(struct sl_cluster *c)
{
    const struct sl_gossip *g = &c->cfg->gossip;
    uint64_t interval = g->interval_ns ? g->interval_ns : 20000000ull;
    c->snd = (struct sl_sender){
        .name = "gossip",
        .verb = "sends for",
        .target = g->listen,
        .tell_first = true,
        .heartbeat = &c->hdr->heartbeat,
        .elect_ns = &c->hdr->elect_ns,
        .pid = &c->hdr->sender_pid,
        .stale_ns = 3 * interval + 200000000ull,
        .running = &c->running,
        .fds = &c->fd,
        .nfds = 1,
        .prepare = bind_listen,
        .run = sender,
        .wake = wake,
        .arg = c,
    };
}
