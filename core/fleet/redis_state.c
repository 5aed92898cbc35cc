/* SPDX-License-Identifier: BSD-2-Clause */
/* redis_state.c - the Redis backend's entry table and its decisions.
 *
 * Algorithm. A redis rule is a sliding window counter (as in limit.c and
 * cluster.c) over the rule's period W, windows numbered on the realtime
 * clock (wall / W) so that every program, and any other service counting
 * with core/fleet/redis.lua, agrees on them. Each key holds two window words
 * (window.h): `own`, what this program admitted, incremented by CAS on the
 * decision path, and `rest`, what the rest of the fleet admitted as Redis
 * last reported it (totals minus this program's own fields), stored by the
 * sender thread (redis.c). A decision passes when, exactly in integers,
 *     (own_prev + rest_prev) * (W - el) + (own_curr + rest_curr + cost) * W <= L * W
 * so it needs no lock, no system call and no network: Redis is only ever
 * talked to by the sender. How stale `rest` may be, and what that costs in
 * accuracy, is docs/redis.md's bound.
 *
 * When the sender has had no complete round for stale_ns (Redis down,
 * slow, unreachable, or the sender not yet connected), the rule's
 * on_backend_error decides: local (own counts only, against local_share %
 * of L), open or closed. Each such decision is counted.
 *
 * The table: a power of two of 128-byte entries in one anonymous
 * MAP_SHARED mapping made at start-up, before the program can fork, so
 * every process of the program counts into one entry per key (they are
 * one node to Redis). Open addressing over SL_REDIS_PROBE entries, claimed
 * by CAS(tag, 0, 1), the key's name written, then the hash published with
 * release. An entry whose words are both older than the previous window
 * holds nothing and is reused; with none, keys share the rule's overflow
 * entry (on_full = shared) or on_full decides. Memory never grows.
 *
 * Learned holds (rules with `learn`, core/http/learn.h): a key's `held`
 * word, UNIX ms, raised by CAS (sl_redis_hold here, the sender from a
 * reply); a decision of such a rule refuses the key until then, before
 * the counts, so a program whose Redis is silent keeps the holds it has.
 *
 * Memory order: tag is published with release after meta and name, and
 * loaded with acquire; the words need atomicity only. ok_at is stored with
 * release by the sender after the round's rest words, loaded with acquire.
 */
#include "redis.h"

#include <errno.h>
#include <sodium.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>

#include "../clock.h"
#include "../limit/key.h"
#include "../mem.h"
#include "entries.h"
#include "redis_int.h"
#include "../shm.h"
#include "../sys.h"
#include "../limit/window.h"

uint64_t sl_redis_wall(const struct sl_redis_state *s, uint64_t now)
{
    return now + (uint64_t)atomic_load_explicit(&s->hdr->offset_ns, memory_order_relaxed);
}

/* ---- key names ----------------------------------------------------------- */

static bool is_req(const struct sl_key *k)
{
    return (k->extra & SL_REQ_KEY_BUCKET) != 0;
}

/* "RULE:KEY" as docs/redis.md lays it out: the peer address, the prefix
 * in CIDR form, the destination with its port, or "*" for per = rule;
 * request counts are "RULE:req:KEY". */
static void key_name(const struct sl_redis_state *s, const struct sl_rule *r,
                     const struct sl_redis_what *w, const struct sl_key *k, char *buf, size_t len)
{
    if (w->value) { /* "RULE:req:#" and 32 hex digits: BLAKE2b-128 under the fleet's key */
        uint8_t h[16];
        crypto_generichash(h, sizeof h, (const uint8_t *)w->value, w->value_len, s->cfg->redis.key,
                           sizeof s->cfg->redis.key);
        int n = snprintf(buf, len, "%s:req:#", r->name);
        for (size_t i = 0; i < sizeof h && n > 0 && (size_t)n + 2 < len; i++)
            n += snprintf(buf + n, len - (size_t)n, "%02x", h[i]);
        return;
    }
    uint8_t a[16];
    memcpy(a, &k->hi, 8);
    memcpy(a + 8, &k->lo, 8);
    unsigned plen = (unsigned)(k->extra & 0xff);
    unsigned port = (unsigned)(k->extra >> 8 & 0xffff);
    static const uint8_t v4mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    bool v4 = memcmp(a, v4mapped, 12) == 0 && plen >= 96;
    char addr[64], rule[SL_NAME_MAX + 8];
    sl_addr_format(a, addr, sizeof addr);
    snprintf(rule, sizeof rule, is_req(k) ? "%s:req" : "%s", r->name);
    if (plen == 0)
        snprintf(buf, len, "%s:*", rule);
    else if (port)
        snprintf(buf, len, v4 ? "%s:%s:%u" : "%s:[%s]:%u", rule, addr, port);
    else if (plen == 128)
        snprintf(buf, len, "%s:%s", rule, addr);
    else
        snprintf(buf, len, "%s:%s/%u", rule, addr, v4 ? plen - 96 : plen);
}

/* ---- entries --------------------------------------------------------------- */

static bool entry_idle(const struct sl_redis_state *s, struct sl_rentry *e, uint64_t wn)
{
    uint32_t m = atomic_load_explicit(&e->meta, memory_order_acquire);
    if (m == 0 || m > (uint32_t)s->cfg->nrules) return false;
    uint64_t p = atomic_load_explicit(&e->period_ns, memory_order_relaxed);
    if (p == 0) return false; /* being set up */
    uint64_t cur = wn / p;
    uint64_t w[2] = {atomic_load_explicit(&e->own, memory_order_relaxed),
                     atomic_load_explicit(&e->rest, memory_order_relaxed)};
    for (int i = 0; i < 2; i++)
        if (w[i] && sl_win_diff(cur, sl_win_index(w[i])) <= 1) return false;
    /* a learned hold still to come keeps its key */
    return atomic_load_explicit(&e->held, memory_order_relaxed) <= wn / 1000000;
}

static void setup(const struct sl_redis_state *s, struct sl_rentry *e, int rule,
                  const struct sl_rule *r, const struct sl_redis_what *w, const struct sl_key *k,
                  uint64_t hash)
{
    atomic_store_explicit(&e->own, 0, memory_order_relaxed);
    atomic_store_explicit(&e->rest, 0, memory_order_relaxed);
    atomic_store_explicit(&e->node, 0, memory_order_relaxed);
    atomic_store_explicit(&e->missed, 0, memory_order_relaxed);
    atomic_store_explicit(&e->held, 0, memory_order_relaxed);
    e->req = is_req(k);
    atomic_store_explicit(&e->period_ns, w->limit->period_ns, memory_order_relaxed);
    key_name(s, r, w, k, e->name, sizeof e->name);
    atomic_store_explicit(&e->meta, (uint32_t)rule + 1, memory_order_relaxed);
    atomic_store_explicit(&e->tag, hash, memory_order_release);
}

struct probing {
    struct sl_redis_state *s;
    int rule;
    const struct sl_rule *r;
    const struct sl_redis_what *w;
    const struct sl_key *k;
    uint64_t hash, wn;
};

static bool probe_idle(void *ctx, void *entry)
{
    const struct probing *p = ctx;
    return entry_idle(p->s, entry, p->wn);
}

static void probe_setup(void *ctx, void *entry, bool reused)
{
    const struct probing *p = ctx;
    if (reused) atomic_store_explicit(&((struct sl_rentry *)entry)->meta, 0, memory_order_relaxed);
    setup(p->s, entry, p->rule, p->r, p->w, p->k, p->hash);
}

/* The key's entry, claiming a free or idle one when `claim` (entries.h). */
static struct sl_rentry *find(struct sl_redis_state *s, int rule, const struct sl_rule *r,
                              const struct sl_redis_what *w, const struct sl_key *k, uint64_t wn,
                              bool claim)
{
    struct probing p = {
        .s = s, .rule = rule, .r = r, .w = w, .k = k, .hash = sl_key_hash(k, s->secret), .wn = wn};
    struct sl_entries x = {.ents = (char *)s->ents,
                           .stride = sizeof *s->ents,
                           .mask = s->mask,
                           .probe = SL_REDIS_PROBE,
                           .idle = probe_idle,
                           .setup = probe_setup,
                           .ctx = &p};
    return sl_entries_find(&x, p.hash, claim);
}

/* ---- deciding ------------------------------------------------------------- */

/* Redis answered lately: the whole round, or in a cluster the primary
 * that holds this key (a lost node leaves the keys of the others counting
 * with the fleet), and this key's calls got counts (not a redirection or
 * TRYAGAIN round after round, as in a slot half migrated). */
static bool backend_ok(const struct sl_redis_state *s, const struct sl_rentry *e, uint64_t now)
{
    uint32_t n = atomic_load_explicit(&e->node, memory_order_relaxed);
    uint64_t missed = atomic_load_explicit(&e->missed, memory_order_relaxed);
    if (missed && now > missed && now - missed > s->stale_ns) return false; /* MOVED, TRYAGAIN... */
    uint64_t ok = n && n <= SL_REDIS_NODES_MAX
                      ? atomic_load_explicit(&s->hdr->nodes[n - 1].ok_at, memory_order_acquire)
                      : atomic_load_explicit(&s->hdr->ok_at, memory_order_acquire);
    return ok && (now < ok || now - ok <= s->stale_ns);
}

/* Early rounds. Synced only on the sender's tick, a program's admissions
 * reach the fleet up to two intervals late, and under a flood every
 * program admits its view of the room in that time. So when a key's own
 * count in this window runs ahead of what the sender last sent by its
 * share of what the limit admits in a quarter of an interval (its share:
 * own / (own + the rest of the fleet's), as the counts stand; at least 1),
 * the decision raises the urgent word and the sender, polling it every
 * millisecond while keys are hot, syncs at once: what the fleet has not
 * seen is then bounded by admissions, not by the clock, and a program
 * makes at most about four early rounds an interval. */
static void sync_early(struct sl_redis_state *s, struct sl_rentry *e, uint64_t win, uint64_t count,
                       uint64_t rest, const struct sl_limit *l)
{
    uint64_t sy = atomic_load_explicit(&e->synced, memory_order_relaxed);
    uint64_t sent =
        sy && sl_win_index(sy) == sl_win_index(sl_win_pack(win, 0, 0)) ? sl_win_curr(sy) : 0;
    uint64_t share = (uint64_t)((sl_u128)l->count * s->cfg->redis.interval_ns * count /
                                (4 * (sl_u128)l->period_ns * (count + rest)));
    if (count < sent + (share ? share : 1) ||
        atomic_load_explicit(&s->hdr->urgent, memory_order_relaxed))
        return;
    atomic_store_explicit(&s->hdr->urgent, 1, memory_order_relaxed);
}

void sl_redis_decide(struct sl_redis_state *s, int rule, const struct sl_rule *r,
                     const struct sl_redis_what *w, const struct sl_key *k, uint64_t now,
                     uint64_t cost, struct sl_verdict *v)
{
    sl_sender_check(&s->snd, now);
    const struct sl_limit *l = w->limit;
    const uint64_t W = l->period_ns;
    uint64_t wn = sl_redis_wall(s, now), cur = wn / W, el = wn % W;
    uint64_t n = l->count, P = 0, C = 0;
    struct sl_rentry *e = find(s, rule, r, w, k, wn, true);
    if (!e) {
        sl_redis_count(s, SL_RC_OVERFLOW, 1);
        if (s->cfg->on_full != SL_FULL_SHARED) {
            bool ok = s->cfg->on_full == SL_FULL_ALLOW;
            *v = (struct sl_verdict){.allowed = ok, .limit = n, .retry_ns = ok ? 0 : W};
            return;
        }
        e = &s->ovf[rule + (is_req(k) ? SL_MAX_RULES : 0)];
    }
    if (r->learn) { /* a learned hold (sl_redis_hold): refused until its time, whatever Redis */
        uint64_t held = atomic_load_explicit(&e->held, memory_order_relaxed) * 1000000;
        if (held > wn) {
            *v = (struct sl_verdict){
                .allowed = false, .limit = n, .retry_ns = held - wn, .reset_ns = held - wn};
            return;
        }
    }
    if (backend_ok(s, e, now)) {
        sl_win_counts(atomic_load_explicit(&e->rest, memory_order_relaxed), cur, &P, &C);
    } else {
        sl_redis_count(s, SL_RC_FALLBACK, 1);
        switch (s->cfg->redis.on_error) {
        case SL_BACKEND_OPEN:
            *v = (struct sl_verdict){.allowed = true, .limit = n};
            return;
        case SL_BACKEND_CLOSED:
            *v = (struct sl_verdict){.allowed = false, .limit = n, .retry_ns = s->stale_ns};
            return;
        case SL_BACKEND_LOCAL:
            n = (n * s->cfg->redis.local_share_pct + 99) / 100;
            break;
        }
    }
    uint64_t win, count;
    if (sl_win_take_fleet(&e->own, cur, P, C, el, W, n, cost, v, &win, &count))
        sync_early(s, e, win, count, C, l);
}

void sl_redis_refund(struct sl_redis_state *s, int rule, const struct sl_rule *r,
                     const struct sl_redis_what *w, const struct sl_key *k, uint64_t now,
                     uint64_t cost)
{
    uint64_t wn = sl_redis_wall(s, now), cur = wn / w->limit->period_ns;
    struct sl_rentry *e = find(s, rule, r, w, k, wn, false);
    if (!e) {
        if (s->cfg->on_full != SL_FULL_SHARED) return;
        e = &s->ovf[rule + (is_req(k) ? SL_MAX_RULES : 0)];
    }
    uint64_t own = atomic_load_explicit(&e->own, memory_order_relaxed);
    for (;;) {
        if (!own || sl_win_diff(sl_win_index(own), cur) < 0) return; /* its window is gone */
        uint64_t q = sl_win_curr(own);
        uint64_t next = sl_win_pack(sl_win_index(own), sl_win_prev(own), q > cost ? q - cost : 0);
        if (atomic_compare_exchange_weak_explicit(&e->own, &own, next, memory_order_relaxed,
                                                  memory_order_relaxed))
            return;
    }
}

bool sl_redis_hold(struct sl_redis_state *s, int rule, const struct sl_rule *r,
                   const struct sl_key *k, uint64_t now, uint64_t until)
{
    /* the entry its request was decided in: found, never claimed (a claim
     * would need the key's value to name it) */
    const struct sl_redis_what w = {.limit = &r->req_limit};
    struct sl_rentry *e = find(s, rule, r, &w, k, sl_redis_wall(s, now), false);
    if (!e) return false;
    uint64_t wall = sl_redis_wall(s, until);
    if (!sl_redis_raise_hold(e, (wall + 999999) / 1000000)) return false;
    atomic_store_explicit(&s->hdr->urgent, 1, memory_order_relaxed); /* the fleet hears it now */
    return true;
}

/* ---- how stale the counts are ---------------------------------------------- */

/* A decision reads the counts of the last complete round: in the gap
 * since that round's start (a sender late under load stretches it past
 * the interval) plus the round's own time. The sums are for `sluice
 * metrics` (docs/redis.md: the bound with the measured interval); a gap
 * counts at most timeout + 2 intervals, past which decisions fall back. */
void sl_redis_round_timing(struct sl_redis_state *s, uint64_t *last_ok, uint64_t start,
                           uint64_t end)
{
    if (*last_ok && start > *last_ok) {
        uint64_t gap = (start - *last_ok) / 1000;
        if (gap > s->stale_ns / 1000) gap = s->stale_ns / 1000;
        sl_redis_count(s, SL_RC_GAP_US, gap);
        sl_redis_count(s, SL_RC_GAP_US2, gap * gap);
    }
    sl_redis_count(s, SL_RC_ROUND_US, end > start ? (end - start) / 1000 : 0);
    *last_ok = start;
}

/* ---- what the sender publishes ---------------------------------------------- */

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

/* ---- the mapping ----------------------------------------------------------- */

const char *const sl_redis_counter_names[SL_RC_NCOUNTERS] = {
    "syncs", "calls",     "failures", "connects", "fallback", "overflow", "bad_reply",
    "early", "failovers", "moved",    "ask",      "gap_us",   "gap_us2",  "round_us",
};

void sl_redis_unmap(struct sl_redis_state *s)
{
    if (!s) return;
    munmap(s->hdr, s->bytes);
    sl_free(s);
}

struct sl_redis_state *sl_redis_map(const struct sl_config *cfg, char *err, size_t errlen)
{
    uint32_t n = 1024;
    while (n < cfg->table_slots / 4 && n < (1u << 22))
        n <<= 1;
    /* overflow entries: connections [0, SL_MAX_RULES), requests after */
    size_t bytes =
        sizeof(struct sl_rhdr) + (size_t)(2 * SL_MAX_RULES + n) * sizeof(struct sl_rentry);
    /* a memory file, so `sluice metrics` can read the sender's counters
     * through /proc/PID/fd (named for cli/locate.c); anonymous without one */
    int fd;
    void *map = sl_shm_unnamed("sluice-redis", bytes, true, &fd, err, errlen);
    if (!map) return NULL;
    struct sl_redis_state *s = sl_alloc(sizeof *s);
    if (!s) {
        munmap(map, bytes);
        if (fd >= 0) sl_sys_close(fd);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    s->cfg = cfg;
    s->hdr = map;
    s->ovf = (struct sl_rentry *)((char *)map + sizeof(struct sl_rhdr));
    s->ents = s->ovf + 2 * SL_MAX_RULES;
    s->mask = n - 1;
    s->bytes = bytes;
    for (int i = 0; i < SL_REDIS_FDS; i++)
        s->fds[i] = -1;
    if (getrandom(s->secret, sizeof s->secret, 0) != (ssize_t)sizeof s->secret) {
        uint64_t t = sl_clock_now();
        for (int i = 0; i < 4; i++)
            s->secret[i] = sl_key_mum(t + (uint64_t)i, 0x9e3779b97f4a7c15ull + (uint64_t)map);
    }
    const struct sl_redis *rc = &cfg->redis;
    s->stale_ns = rc->timeout_ns + 2 * rc->interval_ns;
    atomic_store(&s->hdr->offset_ns, sl_clock_wall_offset());
    for (int i = 0; i < cfg->nrules; i++) {
        const struct sl_rule *r = &cfg->rules[i];
        for (int q = 0; q < 2; q++) {
            struct sl_rentry *e = &s->ovf[i + q * SL_MAX_RULES];
            snprintf(e->name, sizeof e->name, q ? "%s:req:overflow" : "%s:overflow", r->name);
            e->req = (uint32_t)q;
            e->period_ns = q ? r->req_limit.period_ns : r->limit.period_ns;
            atomic_store(&e->meta, (uint32_t)i + 1);
            atomic_store(&e->tag, 2);
        }
    }
    return s;
}
