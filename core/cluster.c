/* cluster.c - limits shared by several hosts: per-origin window counts,
 * merged by maximum, summed across origins, decided from local memory.
 *
 * Algorithm. A cluster rule is a sliding window counter (as in limit.c)
 * over the rule's period W, whose counts are the sum over origins (this
 * node and each live peer) of what each origin admitted:
 *     estimate = sum_o prev_o * (W - elapsed) / W + curr_o
 * compared exactly in integers: sum_o (prev_o*(W-el) + curr_o*W) + cost*W
 * <= L*W. Windows are numbered on the realtime clock (wall / W), so hosts
 * agree on them up to their clock skew.
 *
 * State per (key, origin) is one 64-bit word [window:24][prev:20][curr:20]:
 * an origin's counts for its two newest windows. Only origin o ever
 * increments o's counts, and a count for a window only grows, so the word
 * is a join-semilattice under "newest two windows, each count at its
 * maximum" (join() below): commutative, associative and idempotent. A
 * datagram lost, duplicated or delivered out of order therefore leaves
 * the same state once any later datagram with the same or newer counts
 * arrives. This is the difference with HAProxy peers, which overwrite,
 * and with counters that add deltas, which double-count on duplication.
 *
 * Local decisions CAS this node's own word (origin 0) only; the sender
 * thread CAS-joins what peers say into their words and reads our own word
 * to send it. Nothing on the decision path takes a lock or makes a system
 * call. A peer not heard for peer_timeout stops counting; with no peer
 * alive the limit is alone_share percent of the rule's, so a partition of
 * k isolated nodes admits at most k * alone_share% * L.
 *
 * The table: a power of two of 64-byte-aligned entries in one MAP_SHARED
 * mapping (named after the listen address, so `sluice cluster-stats` and a
 * restarted program find it), open addressing over SL_CLUSTER_PROBE
 * entries, claimed by CAS(tag, 0, hash). When no entry is free, an entry
 * whose every origin word is older than the previous window holds nothing
 * and is reused (the race with a straggling update of the old key costs at
 * most one request, as in table.c). Otherwise local keys share the rule's
 * overflow entry (on_full = shared) or are denied/allowed, and remote
 * records are dropped; both are counted. Memory never grows.
 *
 * Memory order: tag is published with release after meta and the words
 * are reset; readers load it with acquire. Words need only atomicity (each
 * CAS depends on nothing but the word it replaces). last_heard is stored
 * with release by the sender and loaded with acquire by deciders. Counters
 * are relaxed.
 */
#include "shm.h"
#include "cluster.h"

#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cluster_t.h"
#include "mem.h"
#include "sys.h"

typedef unsigned __int128 u128;

#define M20   ((1ull << 20) - 1)
#define M24   ((1ull << 24) - 1)
#define NEVER (UINT64_MAX / 4)

const char *const sl_cluster_counter_names[SL_CC_NCOUNTERS] = {
    "tx_packets", "tx_bytes",         "tx_errors", "tx_test_dropped", "rx_packets",     "rx_bytes",
    "rx_records", "rec_unknown_rule", "rec_old",   "remote_overflow", "local_overflow", "reused",
};

/* ---- window words ---------------------------------------------------- */

static uint64_t pack(uint64_t w, uint64_t prev, uint64_t curr)
{
    if (prev > M20) prev = M20;
    if (curr > M20) curr = M20;
    return (w & M24) << 40 | prev << 20 | curr;
}

static uint64_t wwin(uint64_t s)
{
    return s >> 40;
}

static uint64_t wprev(uint64_t s)
{
    return (s >> 20) & M20;
}

static uint64_t wcurr(uint64_t s)
{
    return s & M20;
}

/* a - b for 24-bit window numbers, as a signed distance */
static int64_t wdiff(uint64_t a, uint64_t b)
{
    int64_t d = (int64_t)((a - b) & M24);
    return d >= (1 << 23) ? d - (1 << 24) : d;
}

/* An origin's counts for windows cur-1 and cur. */
static void counts_at(uint64_t s, uint64_t cur, uint64_t *prev, uint64_t *curr)
{
    *prev = *curr = 0;
    if (s == 0) return;
    int64_t d = wdiff(cur, wwin(s));
    if (d == 0) {
        *prev = wprev(s);
        *curr = wcurr(s);
    } else if (d == 1) {
        *prev = wcurr(s);
    } else if (d == -1) {
        *curr = wprev(s); /* the origin's clock is ahead: its prev is our curr */
    }
}

static uint64_t max64(uint64_t a, uint64_t b)
{
    return a > b ? a : b;
}

/* The semilattice join: each window's count at its maximum, newest two
 * windows kept. */
static uint64_t join(uint64_t a, uint64_t b)
{
    if (!a) return b;
    if (!b) return a;
    int64_t d = wdiff(wwin(b), wwin(a));
    if (d == 0) return pack(wwin(a), max64(wprev(a), wprev(b)), max64(wcurr(a), wcurr(b)));
    if (d == 1) return pack(wwin(b), max64(wprev(b), wcurr(a)), wcurr(b));
    if (d == -1) return pack(wwin(a), max64(wprev(a), wcurr(b)), wcurr(a));
    return d > 0 ? b : a;
}

static void join_into(_Atomic uint64_t *w, uint64_t v)
{
    uint64_t old = atomic_load_explicit(w, memory_order_relaxed);
    for (;;) {
        uint64_t next = join(old, v);
        if (next == old) return;
        if (atomic_compare_exchange_weak_explicit(w, &old, next, memory_order_relaxed,
                                                  memory_order_relaxed))
            return;
    }
}

/* ---- the mapping ------------------------------------------------------ */

static size_t hdr_bytes(void)
{
    return (sizeof(struct sl_chdr) + 4095) & ~(size_t)4095;
}

static size_t layout_bytes(uint32_t nslots)
{
    return hdr_bytes() + (size_t)(SL_MAX_RULES + nslots) * sizeof(struct sl_centry);
}

static uint32_t cluster_slots(uint32_t table_slots)
{
    uint32_t want = table_slots / 4, n = 1024;
    while (n < want && n < (1u << 26))
        n <<= 1;
    return n;
}

void sl_cluster_shm_name(const char *listen, char *buf, size_t len)
{
    size_t n = (size_t)snprintf(buf, len, "/sluice-cluster.");
    for (const char *p = listen; *p && n + 1 < len; p++)
        buf[n++] = (char)((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'z') ||
                                  (*p >= 'A' && *p <= 'Z') || *p == '.' || *p == '-'
                              ? *p
                              : '_');
    if (n < len) buf[n] = 0;
}

uint64_t sl_cluster_node_id(const char *addr)
{
    return sl_name_hash(addr);
}

static uint64_t fingerprint(const struct sl_config *cfg, uint32_t nslots)
{
    char buf[64];
    uint64_t h = sl_name_hash(cfg->gossip.listen);
    snprintf(buf, sizeof buf, "%u/%d/%zu/%zu/%zu/%zu", nslots, cfg->gossip.npeers,
             sizeof(struct sl_chdr), offsetof(struct sl_chdr, self),
             offsetof(struct sl_chdr, counters), sizeof(struct sl_centry));
    h = h * 31 + sl_name_hash(buf);
    for (int i = 0; i < cfg->gossip.npeers; i++)
        h = h * 31 + sl_name_hash(cfg->gossip.peers[i]);
    return h | 1;
}

static void wrap(struct sl_cluster *c, void *map, size_t bytes)
{
    c->hdr = map;
    c->ovf = (struct sl_centry *)((char *)map + hdr_bytes());
    c->ents = c->ovf + SL_MAX_RULES;
    c->mask = c->hdr->nslots - 1;
    c->bytes = bytes;
    c->fd = -1;
}

static void hdr_init(struct sl_chdr *h, const struct sl_config *cfg, uint32_t nslots)
{
    h->magic = SL_CLUSTER_MAGIC;
    h->version = SL_CLUSTER_VERSION;
    h->nslots = nslots;
    h->fingerprint = fingerprint(cfg, nslots);
    h->npeers = (uint32_t)cfg->gossip.npeers;
    snprintf(h->self, sizeof h->self, "%s", cfg->gossip.listen);
    for (int i = 0; i < cfg->gossip.npeers; i++)
        snprintf(h->peers[i], sizeof h->peers[i], "%s", cfg->gossip.peers[i]);
    atomic_store_explicit(&h->ready, 1, memory_order_release);
}

/* Maps the named state, creating it when missing or when the existing one
 * was made for another layout or peer list. */
static void *map_named(const struct sl_config *cfg, const char *name, uint32_t nslots, size_t bytes,
                       char *err, size_t errlen)
{
    uint64_t fp = fingerprint(cfg, nslots);
    for (int attempt = 0; attempt < 2; attempt++) {
        int fd = sl_sys_shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
        bool creator = fd >= 0;
        if (!creator) {
            if (errno != EEXIST) break;
            fd = sl_sys_shm_open(name, O_RDWR, 0);
            if (fd < 0) break;
            struct sl_chdr h;
            struct timespec pause = {0, 1000000};
            int i;
            for (i = 0; i < 2000; i++) {
                if (sl_sys_pread(fd, &h, sizeof h, 0) == (ssize_t)sizeof h && h.ready) break;
                nanosleep(&pause, NULL);
            }
            struct stat st;
            if (i == 2000 || h.magic != SL_CLUSTER_MAGIC || h.version != SL_CLUSTER_VERSION ||
                h.fingerprint != fp || sl_sys_fstat(fd, &st) != 0 || (size_t)st.st_size < bytes) {
                sl_sys_close(fd);
                sl_sys_shm_unlink(name); /* stale: users of the old one keep their mapping */
                continue;
            }
        }
        void *map = sl_shm_map(fd, name, bytes, creator, err, errlen);
        if (!map) return NULL;
        if (creator) hdr_init(map, cfg, nslots);
        return map;
    }
    snprintf(err, errlen, "shm_open %s: %s", name, strerror(errno));
    return NULL;
}

struct sl_cluster *sl_cluster_create(const struct sl_config *cfg, const char *shm_name, char *err,
                                     size_t errlen)
{
    const struct sl_gossip *g = &cfg->gossip;
    if (!g->enabled) {
        snprintf(err, errlen, "cluster rules need a gossip section");
        return NULL;
    }
    if (g->npeers < 1 || g->npeers > SL_MAX_PEERS) {
        snprintf(err, errlen, "gossip: %d peers (1..%d)", g->npeers, SL_MAX_PEERS);
        return NULL;
    }
    if (sodium_init() < 0) {
        snprintf(err, errlen, "libsodium cannot initialise");
        return NULL;
    }
    struct sl_cluster *c = sl_alloc(sizeof *c);
    if (!c) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    uint32_t nslots = cluster_slots(cfg->table_slots);
    size_t bytes = layout_bytes(nslots);
    void *map;
    if (shm_name) {
        map = map_named(cfg, shm_name, nslots, bytes, err, errlen);
    } else {
        map = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        if (map == MAP_FAILED) {
            snprintf(err, errlen, "mmap %zu bytes: %s", bytes, strerror(errno));
            map = NULL;
        } else {
            hdr_init(map, cfg, nslots);
        }
    }
    if (!map) {
        sl_free(c);
        return NULL;
    }
    c->cfg = cfg;
    wrap(c, map, bytes);

    memcpy(c->key, g->key, sizeof c->key);
    uint8_t derived[32];
    static const char ctx[] = "sluice cluster key hash v1";
    crypto_generichash(derived, sizeof derived, (const uint8_t *)ctx, sizeof ctx - 1, g->key,
                       sizeof g->key);
    memcpy(c->secret, derived, sizeof c->secret);
    sodium_memzero(derived, sizeof derived);

    c->self_id = sl_cluster_node_id(g->listen);
    c->norig = 1 + g->npeers;
    c->peer_timeout_ns = g->peer_timeout_ns ? g->peer_timeout_ns : 10 * g->interval_ns;
    atomic_store_explicit(&c->hdr->peer_timeout_ns, c->peer_timeout_ns, memory_order_relaxed);
    for (int i = 0; i < g->npeers; i++)
        c->peer_id[1 + i] = sl_cluster_node_id(g->peers[i]);
    uint32_t share = g->alone_share_pct;
    if (share == 0 || share > 100) share = (100 + (uint32_t)g->npeers) / (uint32_t)(g->npeers + 1);
    for (int i = 0; i < cfg->nrules; i++) {
        const struct sl_rule *r = &cfg->rules[i];
        struct sl_key k = {.rule = r->id, .hi = ~0ull, .lo = ~0ull, .extra = ~0ull};
        c->ovf_tag[i] = sl_key_hash(&k, c->secret);
        uint64_t a = (uint64_t)((u128)r->limit.count * share / 100);
        c->alone[i] = a ? a : 1;
        atomic_store_explicit(&c->ovf[i].meta, (uint32_t)i + 1, memory_order_relaxed);
        atomic_store_explicit(&c->ovf[i].tag, c->ovf_tag[i], memory_order_release);
    }
    struct timespec rt, mono;
    clock_gettime(CLOCK_REALTIME, &rt);
    clock_gettime(CLOCK_MONOTONIC, &mono);
    int64_t off = ((int64_t)rt.tv_sec - (int64_t)mono.tv_sec) * 1000000000ll +
                  ((int64_t)rt.tv_nsec - (int64_t)mono.tv_nsec);
    atomic_store_explicit(&c->hdr->offset_ns, off, memory_order_relaxed);
    return c;
}

struct sl_cluster *sl_cluster_attach(const char *shm_name, char *err, size_t errlen)
{
    int fd = sl_sys_shm_open(shm_name, O_RDONLY, 0);
    if (fd < 0) {
        snprintf(err, errlen, "shm_open %s: %s", shm_name, strerror(errno));
        return NULL;
    }
    struct sl_chdr h;
    struct stat st;
    if (sl_sys_pread(fd, &h, sizeof h, 0) != (ssize_t)sizeof h || !h.ready ||
        h.magic != SL_CLUSTER_MAGIC || h.version != SL_CLUSTER_VERSION ||
        sl_sys_fstat(fd, &st) != 0 || (size_t)st.st_size < layout_bytes(h.nslots)) {
        sl_sys_close(fd);
        snprintf(err, errlen, "%s: not a sluice cluster state of this version", shm_name);
        return NULL;
    }
    size_t bytes = layout_bytes(h.nslots);
    void *map = mmap(NULL, bytes, PROT_READ, MAP_SHARED, fd, 0);
    sl_sys_close(fd);
    struct sl_cluster *c = map != MAP_FAILED ? sl_alloc(sizeof *c) : NULL;
    if (!c) {
        if (map != MAP_FAILED) munmap(map, bytes);
        snprintf(err, errlen, "cannot map %s", shm_name);
        return NULL;
    }
    wrap(c, map, bytes);
    c->readonly = true;
    c->norig = 1 + (int)h.npeers;
    c->peer_timeout_ns = atomic_load_explicit(&c->hdr->peer_timeout_ns, memory_order_relaxed);
    return c;
}

void sl_cluster_close(struct sl_cluster *c)
{
    if (!c) return;
    sl_gossip_stop(c);
    munmap(c->hdr, c->bytes);
    sodium_memzero(c->key, sizeof c->key);
    sl_free(c);
}

void sl_cluster_set_offset(struct sl_cluster *c, int64_t offset_ns)
{
    atomic_store_explicit(&c->hdr->offset_ns, offset_ns, memory_order_relaxed);
}

static uint64_t wall(const struct sl_cluster *c, uint64_t now)
{
    return now + (uint64_t)atomic_load_explicit(&c->hdr->offset_ns, memory_order_relaxed);
}

static void count(struct sl_cluster *c, enum sl_cluster_counter k, uint64_t n)
{
    atomic_fetch_add_explicit(&c->hdr->counters[k], n, memory_order_relaxed);
}

/* ---- entries ----------------------------------------------------------- */

static bool entry_idle(const struct sl_cluster *c, struct sl_centry *e, uint64_t wallnow)
{
    uint32_t m = atomic_load_explicit(&e->meta, memory_order_acquire);
    if (m == 0 || m > (uint32_t)c->cfg->nrules) return false;
    uint64_t cur = wallnow / c->cfg->rules[m - 1].limit.period_ns;
    for (int o = 0; o < c->norig; o++) {
        uint64_t s = atomic_load_explicit(&e->w[o], memory_order_relaxed);
        if (s && wdiff(cur, wwin(s)) <= 1) return false;
    }
    return true;
}

/* Finds the key's entry, claiming a free or idle one when `claim`. */
static struct sl_centry *find(struct sl_cluster *c, int rule, uint64_t hash, uint64_t wallnow,
                              bool claim)
{
    struct sl_centry *idle = NULL;
    uint64_t idle_tag = 0;
    for (uint32_t i = 0; i < SL_CLUSTER_PROBE; i++) {
        struct sl_centry *e = &c->ents[(hash + i) & c->mask];
        uint64_t t = atomic_load_explicit(&e->tag, memory_order_acquire);
        if (t == hash) return e;
        if (t == 0) {
            if (!claim) return NULL;
            if (atomic_compare_exchange_strong_explicit(&e->tag, &t, 1, memory_order_acquire,
                                                        memory_order_acquire)) {
                atomic_store_explicit(&e->meta, (uint32_t)rule + 1, memory_order_relaxed);
                atomic_store_explicit(&e->tag, hash, memory_order_release);
                return e;
            }
            if (t == hash) return e;
        }
        if (claim && !idle && t > 1 && entry_idle(c, e, wallnow)) {
            idle = e;
            idle_tag = t;
        }
    }
    if (!idle) return NULL;
    /* Reuse: take the tag away from the old key first (1 = being set up). */
    if (!atomic_compare_exchange_strong_explicit(&idle->tag, &idle_tag, 1, memory_order_acquire,
                                                 memory_order_relaxed))
        return NULL;
    atomic_store_explicit(&idle->meta, 0, memory_order_relaxed);
    for (int o = 0; o < SL_CLUSTER_ORIGINS; o++)
        atomic_store_explicit(&idle->w[o], 0, memory_order_relaxed);
    atomic_store_explicit(&idle->sent, 0, memory_order_relaxed);
    atomic_store_explicit(&idle->meta, (uint32_t)rule + 1, memory_order_relaxed);
    atomic_store_explicit(&idle->tag, hash, memory_order_release);
    count(c, SL_CC_REUSED, 1);
    return idle;
}

/* ---- deciding ---------------------------------------------------------- */

/* A peer is judged as of the last time the sender read every datagram
 * (rx_at), not as of now: a receiver starved of CPU (its host flooded) has
 * not heard its peers because it has not read, not because they fell
 * silent, and must not drop to alone_share for that. */
static bool peer_alive(const struct sl_cluster *c, int o, uint64_t now)
{
    uint64_t h = atomic_load_explicit(&c->hdr->peer[o].last_heard, memory_order_acquire);
    uint64_t seen = atomic_load_explicit(&c->hdr->rx_at, memory_order_acquire);
    uint64_t ref = seen && seen < now ? seen : now;
    return h && (ref < h || ref - h <= c->peer_timeout_ns);
}

/* Sums the live peers' counts for windows cur-1 and cur; returns how many
 * peers are alive. */
static int remote_sums(const struct sl_cluster *c, const struct sl_centry *e, uint64_t now,
                       uint64_t cur, uint64_t *P, uint64_t *C)
{
    int alive = 0;
    *P = *C = 0;
    for (int o = 1; o < c->norig; o++) {
        if (!peer_alive(c, o, now)) continue;
        alive++;
        uint64_t p, q;
        counts_at(atomic_load_explicit(&e->w[o], memory_order_relaxed), cur, &p, &q);
        *P += p;
        *C += q;
    }
    return alive;
}

uint64_t sl_cluster_limit_now(struct sl_cluster *c, const struct sl_rule *r, uint64_t now)
{
    for (int o = 1; o < c->norig; o++)
        if (peer_alive(c, o, now)) return r->limit.count;
    return c->alone[r - c->cfg->rules];
}

static uint64_t hash_key(const struct sl_cluster *c, const struct sl_key *k)
{
    return sl_key_hash(k, c->secret);
}

static struct sl_centry *entry_for(struct sl_cluster *c, int rule, const struct sl_key *k,
                                   uint64_t wallnow, bool claim, bool *overflow)
{
    struct sl_centry *e = find(c, rule, hash_key(c, k), wallnow, claim);
    *overflow = !e;
    return e ? e : &c->ovf[rule];
}

void sl_cluster_decide(struct sl_cluster *c, int rule, const struct sl_rule *r,
                       const struct sl_key *k, uint64_t now, uint64_t cost, struct sl_verdict *v)
{
    if (c->elect) sl_gossip_check(c, now);
    const uint64_t W = r->limit.period_ns;
    uint64_t wn = wall(c, now);
    uint64_t cur = wn / W, el = wn % W;
    bool overflow;
    struct sl_centry *e = entry_for(c, rule, k, wn, true, &overflow);
    if (overflow) {
        count(c, SL_CC_LOCAL_OVERFLOW, 1);
        if (c->cfg->on_full != SL_FULL_SHARED) {
            bool ok = c->cfg->on_full == SL_FULL_ALLOW;
            *v =
                (struct sl_verdict){.allowed = ok, .limit = r->limit.count, .retry_ns = ok ? 0 : W};
            return;
        }
    }
    uint64_t P, C;
    int alive = remote_sums(c, e, now, cur, &P, &C);
    const uint64_t n = alive ? r->limit.count : c->alone[rule];
    const u128 cap = (u128)n * W;

    uint64_t own = atomic_load_explicit(&e->w[0], memory_order_relaxed);
    uint64_t op, oc, ocur;
    for (;;) {
        /* A clock that stepped back: keep counting into our newest window. */
        ocur = own && wdiff(wwin(own), cur) > 0 ? cur + (uint64_t)wdiff(wwin(own), cur) : cur;
        counts_at(own, ocur, &op, &oc);
        u128 used = (u128)(P + op) * (W - el) + (u128)(C + oc) * W;
        if (used + (u128)cost * W > cap || oc + cost > M20) break;
        uint64_t next = pack(ocur, op, oc + cost);
        if (atomic_compare_exchange_weak_explicit(&e->w[0], &own, next, memory_order_relaxed,
                                                  memory_order_relaxed)) {
            used += (u128)cost * W;
            *v = (struct sl_verdict){.allowed = true,
                                     .remaining = (uint64_t)((cap - used) / W),
                                     .limit = n,
                                     .reset_ns = (W - el) + W};
            return;
        }
    }
    /* Denied: when would it pass, if nothing else happened? */
    uint64_t prev = P + op, curr = C + oc;
    *v = (struct sl_verdict){.allowed = false, .limit = n};
    if (cost > n) {
        v->retry_ns = NEVER;
    } else if (curr + cost <= n && prev) {
        uint64_t at = W - (uint64_t)((u128)(n - curr - cost) * W / prev);
        v->retry_ns = at > el ? at - el : 1;
    } else {
        uint64_t at = curr ? W - (uint64_t)((u128)(n > cost ? n - cost : 0) * W / curr) : 0;
        v->retry_ns = (W - el) + at;
    }
    v->reset_ns = curr ? (W - el) + W : prev ? W - el : 0;
}

void sl_cluster_refund(struct sl_cluster *c, int rule, const struct sl_rule *r,
                       const struct sl_key *k, uint64_t now, uint64_t cost)
{
    uint64_t wn = wall(c, now), cur = wn / r->limit.period_ns;
    bool overflow;
    struct sl_centry *e = entry_for(c, rule, k, wn, false, &overflow);
    if (overflow && c->cfg->on_full != SL_FULL_SHARED) return;
    uint64_t own = atomic_load_explicit(&e->w[0], memory_order_relaxed);
    for (;;) {
        if (!own || wdiff(wwin(own), cur) < 0) return; /* its window is gone */
        uint64_t q = wcurr(own);
        uint64_t next = pack(wwin(own), wprev(own), q > cost ? q - cost : 0);
        if (atomic_compare_exchange_weak_explicit(&e->w[0], &own, next, memory_order_relaxed,
                                                  memory_order_relaxed))
            return;
    }
}

void sl_cluster_estimate(struct sl_cluster *c, int rule, const struct sl_rule *r,
                         const struct sl_key *k, uint64_t now, uint64_t *own, uint64_t *fleet)
{
    const uint64_t W = r->limit.period_ns;
    uint64_t wn = wall(c, now), cur = wn / W, el = wn % W;
    bool overflow;
    struct sl_centry *e = entry_for(c, rule, k, wn, false, &overflow);
    uint64_t P, C, op, oc;
    remote_sums(c, e, now, cur, &P, &C);
    counts_at(atomic_load_explicit(&e->w[0], memory_order_relaxed), cur, &op, &oc);
    *own = (uint64_t)(((u128)op * (W - el) + (u128)oc * W) / W);
    *fleet = (uint64_t)(((u128)(P + op) * (W - el) + (u128)(C + oc) * W) / W);
}

/* ---- gossip: building and merging datagrams ------------------------------ */

static int rule_by_wire_id(const struct sl_cluster *c, uint32_t id)
{
    for (int i = 0; i < c->cfg->nrules; i++)
        if (c->cfg->rules[i].scope == SL_SCOPE_CLUSTER && (uint32_t)c->cfg->rules[i].id == id)
            return i;
    return -1;
}

enum sl_wire_status sl_cluster_receive(struct sl_cluster *c, const uint8_t *buf, size_t len,
                                       uint64_t now)
{
    struct sl_wire_hdr h;
    enum sl_wire_status st = sl_wire_decode(buf, len, c->key, &h);
    int o = 0;
    if (st == SL_WIRE_OK) {
        for (int i = 1; i < c->norig; i++)
            if (c->peer_id[i] == h.node) o = i;
        if (!o) st = SL_WIRE_UNKNOWN_PEER;
    }
    uint64_t wn = wall(c, now), wms = wn / 1000000;
    struct sl_cpeer *p = &c->hdr->peer[o];
    if (st == SL_WIRE_OK) {
        uint64_t d = h.ts_ms > wms ? h.ts_ms - wms : wms - h.ts_ms;
        if (d > SL_CLUSTER_TS_WINDOW_MS) st = SL_WIRE_STALE;
    }
    if (st == SL_WIRE_OK) {
        /* Replay: per boot, a 64-datagram sliding window of sequence
         * numbers (as IPsec); a new boot must be newer than all we heard. */
        if (h.boot != p->boot) {
            if (p->boot && h.ts_ms <= p->last_ts_ms) {
                st = SL_WIRE_REPLAYED;
            } else {
                p->boot = h.boot;
                p->maxseq = h.seq;
                p->bitmap = 1;
            }
        } else if (h.seq > p->maxseq) {
            uint64_t shift = h.seq - p->maxseq;
            p->bitmap = shift >= 64 ? 1 : p->bitmap << shift | 1;
            p->maxseq = h.seq;
        } else {
            uint64_t d = p->maxseq - h.seq;
            if (d >= 64 || (p->bitmap >> d & 1))
                st = SL_WIRE_REPLAYED;
            else
                p->bitmap |= 1ull << d;
        }
    }
    if (st != SL_WIRE_OK) {
        atomic_fetch_add_explicit(&c->hdr->drops[st], 1, memory_order_relaxed);
        return st;
    }
    if (h.ts_ms > p->last_ts_ms) p->last_ts_ms = h.ts_ms;
    atomic_store_explicit(&p->last_heard, now ? now : 1, memory_order_release);
    atomic_fetch_add_explicit(&p->packets, 1, memory_order_relaxed);
    count(c, SL_CC_RX_PACKETS, 1);
    count(c, SL_CC_RX_BYTES, len);

    for (size_t i = 0; i < h.nrec; i++) {
        struct sl_wire_rec r;
        sl_wire_rec_at(buf, i, &r);
        int rule = rule_by_wire_id(c, r.rule);
        if (rule < 0) {
            count(c, SL_CC_REC_UNKNOWN_RULE, 1);
            continue;
        }
        uint64_t cur = wn / c->cfg->rules[rule].limit.period_ns;
        int64_t d = (int32_t)(r.window - (uint32_t)cur);
        if (d > 1 || d < -2) {
            count(c, SL_CC_REC_OLD, 1);
            continue;
        }
        struct sl_centry *e =
            r.hash == c->ovf_tag[rule] ? &c->ovf[rule] : find(c, rule, r.hash, wn, true);
        if (!e) {
            count(c, SL_CC_REMOTE_OVERFLOW, 1);
            continue;
        }
        join_into(&e->w[o], pack(cur + (uint64_t)d, r.prev, r.curr));
        count(c, SL_CC_RX_RECORDS, 1);
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

static void add_entry(struct builder *b, struct sl_centry *e, uint64_t wn, bool full)
{
    const struct sl_config *cfg = b->c->cfg;
    uint32_t m = atomic_load_explicit(&e->meta, memory_order_acquire);
    if (m == 0 || m > (uint32_t)cfg->nrules) return;
    const struct sl_rule *r = &cfg->rules[m - 1];
    if (r->scope != SL_SCOPE_CLUSTER) return;
    uint64_t tag = atomic_load_explicit(&e->tag, memory_order_acquire);
    uint64_t own = atomic_load_explicit(&e->w[0], memory_order_relaxed);
    if (tag < 2 || own == 0) return;
    uint64_t cur = wn / r->limit.period_ns;
    int64_t d = wdiff(cur, wwin(own));
    if (d > 1) return; /* nothing current to say */
    if (!full && own == atomic_load_explicit(&e->sent, memory_order_relaxed)) return;
    b->recs[b->n++] = (struct sl_wire_rec){
        .hash = tag,
        .rule = (uint32_t)r->id,
        .window = (uint32_t)(cur - (uint64_t)d),
        .prev = (uint32_t)wprev(own),
        .curr = (uint32_t)wcurr(own),
    };
    atomic_store_explicit(&e->sent, own, memory_order_relaxed);
    if (b->n == SL_WIRE_MAX_RECS) flush(b);
}

size_t sl_cluster_build(struct sl_cluster *c, uint64_t now, bool full, sl_cluster_emit_fn emit,
                        void *arg)
{
    static __thread struct builder b; /* 1.1 KiB: off the sender's stack */
    uint64_t wn = wall(c, now);
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
    for (int i = 0; i < c->cfg->nrules; i++)
        add_entry(&b, &c->ovf[i], wn, full);
    for (uint32_t i = 0; i <= c->mask; i++)
        add_entry(&b, &c->ents[i], wn, full);
    if (b.n || b.packets == 0) flush(&b);
    return b.packets;
}

/* ---- readers ------------------------------------------------------------ */

uint64_t sl_cluster_counter(const struct sl_cluster *c, enum sl_cluster_counter k)
{
    return atomic_load_explicit(&c->hdr->counters[k], memory_order_relaxed);
}

uint64_t sl_cluster_drops(const struct sl_cluster *c, enum sl_wire_status why)
{
    return atomic_load_explicit(&c->hdr->drops[why], memory_order_relaxed);
}

int sl_cluster_npeers(const struct sl_cluster *c)
{
    return c->norig - 1;
}

void sl_cluster_peer(const struct sl_cluster *c, int i, uint64_t now,
                     struct sl_cluster_peer_info *out)
{
    const struct sl_cpeer *p = &c->hdr->peer[1 + i];
    uint64_t h = atomic_load_explicit(&p->last_heard, memory_order_acquire);
    snprintf(out->name, sizeof out->name, "%s", c->hdr->peers[i]);
    out->heard = h != 0;
    out->age_ns = h && now > h ? now - h : 0;
    out->alive = peer_alive(c, 1 + i, now);
    out->packets = atomic_load_explicit(&p->packets, memory_order_relaxed);
}

const char *sl_cluster_self(const struct sl_cluster *c)
{
    return c->hdr->self;
}

uint32_t sl_cluster_slots(const struct sl_cluster *c)
{
    return c->mask + 1;
}

uint32_t sl_cluster_used(const struct sl_cluster *c)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i <= c->mask; i++)
        n += atomic_load_explicit(&c->ents[i].tag, memory_order_relaxed) > 1;
    return n;
}

uint64_t sl_cluster_sender_age(const struct sl_cluster *c, uint64_t now, int *pid)
{
    uint64_t h = atomic_load_explicit(&c->hdr->heartbeat, memory_order_relaxed);
    *pid = atomic_load_explicit(&c->hdr->sender_pid, memory_order_relaxed);
    return h && now > h ? now - h : 0;
}
