/* SPDX-License-Identifier: BSD-2-Clause */
/* cluster.c - limits shared by several hosts: per-origin window counts,
 * merged by maximum, summed across origins, decided from local memory.
 *
 * Where the parts live: the window word and its exact test are window.h's
 * (shared with limit.c); the named mapping is made and judged by shm.c;
 * datagrams, the replay window and the sender thread are gossip.c's, the
 * one fleet backend so far (cluster_t.h says what a backend may call),
 * started and elected by sender.c, which a decision calls through
 * sl_sender_check and sl_sender_wake; opening and closing, the top, are
 * cluster_open.c's.
 * Here: the entry table, the decision and its refund. Making and mapping
 * the state (layout, key derivation) is cluster_map.c's; the readers
 * (counters, peers, for `sluice cluster-stats`) are cluster_stats.c's.
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
 * to send it. Nothing on the decision path takes a lock; the one system
 * call is the sender's wake-up, a non-blocking sendto once per early share
 * of a key (send_early), in the sender's process only. A peer not heard for peer_timeout stops
 * counting; with no peer alive the limit is alone_share percent of the rule's, so a partition of k
 * isolated nodes admits at most k * alone_share% * L.
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
#include "cluster.h"

#include <stddef.h>

#include "cluster_t.h"
#include "entries.h"
#include "../limit/window.h"

typedef sl_u128 u128;

/* ---- window words (window.h), as an origin sees them ------------------- */

/* An origin's counts for windows cur-1 and cur. Unlike one host's word, a
 * peer's may be a window ahead (its clock is): its prev is our curr. */
static void counts_at(uint64_t s, uint64_t cur, uint64_t *prev, uint64_t *curr)
{
    if (s && sl_win_diff(cur, sl_win_index(s)) == -1) {
        *prev = 0;
        *curr = sl_win_prev(s);
        return;
    }
    sl_win_counts(s, cur, prev, curr);
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
    int64_t d = sl_win_diff(sl_win_index(b), sl_win_index(a));
    if (d == 0)
        return sl_win_pack(sl_win_index(a), max64(sl_win_prev(a), sl_win_prev(b)),
                           max64(sl_win_curr(a), sl_win_curr(b)));
    if (d == 1)
        return sl_win_pack(sl_win_index(b), max64(sl_win_prev(b), sl_win_curr(a)), sl_win_curr(b));
    if (d == -1)
        return sl_win_pack(sl_win_index(a), max64(sl_win_prev(a), sl_win_curr(b)), sl_win_curr(a));
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
        if (s && sl_win_diff(cur, sl_win_index(s)) <= 1) return false;
    }
    return true;
}

struct probing {
    struct sl_cluster *c;
    int rule;
    uint64_t hash, wallnow;
};

static bool probe_idle(void *ctx, void *entry)
{
    const struct probing *p = ctx;
    return entry_idle(p->c, entry, p->wallnow);
}

/* A claimed entry gets its rule; a reused one has its counts reset first. */
static void probe_setup(void *ctx, void *entry, bool reused)
{
    const struct probing *p = ctx;
    struct sl_centry *e = entry;
    if (reused) {
        atomic_store_explicit(&e->meta, 0, memory_order_relaxed);
        for (int o = 0; o < SL_CLUSTER_ORIGINS; o++)
            atomic_store_explicit(&e->w[o], 0, memory_order_relaxed);
        atomic_store_explicit(&e->sent, 0, memory_order_relaxed);
        count(p->c, SL_CC_REUSED, 1);
    }
    atomic_store_explicit(&e->meta, (uint32_t)p->rule + 1, memory_order_relaxed);
    atomic_store_explicit(&e->tag, p->hash, memory_order_release);
}

/* Finds the key's entry, claiming a free or idle one when `claim`
 * (entries.h). */
static struct sl_centry *find(struct sl_cluster *c, int rule, uint64_t hash, uint64_t wallnow,
                              bool claim)
{
    struct probing p = {.c = c, .rule = rule, .hash = hash, .wallnow = wallnow};
    struct sl_entries x = {.ents = (char *)c->ents,
                           .stride = sizeof *c->ents,
                           .mask = c->mask,
                           .probe = SL_CLUSTER_PROBE,
                           .idle = probe_idle,
                           .setup = probe_setup,
                           .ctx = &p};
    return sl_entries_find(&x, hash, claim);
}

/* ---- deciding ---------------------------------------------------------- */

/* A peer is judged as of the last time the sender read every datagram
 * (rx_at), not as of now: a receiver starved of CPU (its host flooded) has
 * not heard its peers because it has not read, not because they fell
 * silent, and must not drop to alone_share for that. */
bool sl_cluster_peer_alive(const struct sl_cluster *c, int o, uint64_t now)
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
        if (!sl_cluster_peer_alive(c, o, now)) continue;
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
        if (sl_cluster_peer_alive(c, o, now)) return r->limit.count;
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

/* Early sends. Sent only on the sender's tick, a node's admissions reach
 * its peers up to one interval late, and under a flood a node admits a
 * whole limit in less than that: every node did, in the first window, when
 * none had heard the others. So when a key's own count in this window is
 * c->early[rule] (L / (16 n), at least 1) ahead of what was last sent, the
 * decision flags the urgent word and the sender sends at once: what a peer
 * has not heard is then bounded by admissions, not by the clock. Only the
 * decision that raises the flag wakes the sender, so a flood costs one
 * wake-up per early share, not one per connection. */
static void send_early(struct sl_cluster *c, struct sl_centry *e, int rule, uint64_t ocur,
                       uint64_t curr)
{
    uint64_t s = atomic_load_explicit(&e->sent, memory_order_relaxed);
    uint64_t sent =
        s && sl_win_index(s) == sl_win_index(sl_win_pack(ocur, 0, 0)) ? sl_win_curr(s) : 0;
    if (curr < sent + c->early[rule]) return;
    if (atomic_load_explicit(&c->hdr->urgent, memory_order_relaxed)) return;
    if (atomic_exchange_explicit(&c->hdr->urgent, 1, memory_order_relaxed)) return;
    sl_sender_wake(&c->snd);
}

void sl_cluster_decide(struct sl_cluster *c, int rule, const struct sl_rule *r,
                       const struct sl_key *k, uint64_t now, uint64_t cost, struct sl_verdict *v)
{
    sl_sender_check(&c->snd, now);
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

    uint64_t win, count;
    if (sl_win_take_fleet(&e->w[0], cur, P, C, el, W, n, cost, v, &win, &count))
        send_early(c, e, rule, win, count);
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
        if (!own || sl_win_diff(sl_win_index(own), cur) < 0) return; /* its window is gone */
        uint64_t q = sl_win_curr(own);
        uint64_t next = sl_win_pack(sl_win_index(own), sl_win_prev(own), q > cost ? q - cost : 0);
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

/* ---- for fleet backends (cluster_t.h) ------------------------------------ */

bool sl_cluster_take_urgent(struct sl_cluster *c)
{
    return atomic_load_explicit(&c->hdr->urgent, memory_order_relaxed) &&
           atomic_exchange_explicit(&c->hdr->urgent, 0, memory_order_relaxed);
}

uint64_t sl_cluster_wall(const struct sl_cluster *c, uint64_t now)
{
    return wall(c, now);
}

void sl_cluster_count(struct sl_cluster *c, enum sl_cluster_counter k, uint64_t n)
{
    count(c, k, n);
}

void sl_cluster_heard(struct sl_cluster *c, int origin, uint64_t now)
{
    struct sl_cpeer *p = &c->hdr->peer[origin];
    atomic_store_explicit(&p->last_heard, now ? now : 1, memory_order_release);
    atomic_fetch_add_explicit(&p->packets, 1, memory_order_relaxed);
}

int sl_cluster_origin(const struct sl_cluster *c, uint64_t node)
{
    /* A node listed in its own peers hears itself: never a peer
     * (docs/gossip-wire.txt, check 8). */
    if (node == c->self_id) return 0;
    for (int i = 1; i < c->norig; i++)
        if (c->peer_id[i] == node) return i;
    return 0;
}

static int rule_by_wire_id(const struct sl_cluster *c, uint32_t id)
{
    for (int i = 0; i < c->cfg->nrules; i++)
        if (c->cfg->rules[i].scope == SL_SCOPE_CLUSTER && (uint32_t)c->cfg->rules[i].id == id)
            return i;
    return -1;
}

void sl_cluster_merge(struct sl_cluster *c, int origin, const struct sl_cluster_rec *r, uint64_t wn)
{
    int rule = rule_by_wire_id(c, r->rule);
    if (rule < 0) {
        count(c, SL_CC_REC_UNKNOWN_RULE, 1);
        return;
    }
    uint64_t cur = wn / c->cfg->rules[rule].limit.period_ns;
    int64_t d = (int32_t)(r->window - (uint32_t)cur);
    if (d > 1 || d < -2) {
        count(c, SL_CC_REC_OLD, 1);
        return;
    }
    struct sl_centry *e =
        r->hash == c->ovf_tag[rule] ? &c->ovf[rule] : find(c, rule, r->hash, wn, true);
    if (!e) {
        count(c, SL_CC_REMOTE_OVERFLOW, 1);
        return;
    }
    join_into(&e->w[origin], sl_win_pack(cur + (uint64_t)d, r->prev, r->curr));
    count(c, SL_CC_RX_RECORDS, 1);
}

static void own_record(struct sl_cluster *c, struct sl_centry *e, uint64_t wn, bool full,
                       sl_cluster_own_fn fn, void *arg)
{
    const struct sl_config *cfg = c->cfg;
    uint32_t m = atomic_load_explicit(&e->meta, memory_order_acquire);
    if (m == 0 || m > (uint32_t)cfg->nrules) return;
    const struct sl_rule *r = &cfg->rules[m - 1];
    if (r->scope != SL_SCOPE_CLUSTER) return;
    uint64_t tag = atomic_load_explicit(&e->tag, memory_order_acquire);
    uint64_t own = atomic_load_explicit(&e->w[0], memory_order_relaxed);
    if (tag < 2 || own == 0) return;
    uint64_t cur = wn / r->limit.period_ns;
    int64_t d = sl_win_diff(cur, sl_win_index(own));
    if (d > 1) return; /* nothing current to say */
    if (!full && own == atomic_load_explicit(&e->sent, memory_order_relaxed)) return;
    struct sl_cluster_rec rec = {
        .hash = tag,
        .rule = (uint32_t)r->id,
        .window = (uint32_t)(cur - (uint64_t)d),
        .prev = (uint32_t)sl_win_prev(own),
        .curr = (uint32_t)sl_win_curr(own),
    };
    atomic_store_explicit(&e->sent, own, memory_order_relaxed);
    fn(arg, &rec);
}

void sl_cluster_each_own(struct sl_cluster *c, uint64_t wn, bool full, sl_cluster_own_fn fn,
                         void *arg)
{
    for (int i = 0; i < c->cfg->nrules; i++)
        own_record(c, &c->ovf[i], wn, full, fn, arg);
    for (uint32_t i = 0; i <= c->mask; i++)
        own_record(c, &c->ents[i], wn, full, fn, arg);
}
