/* SPDX-License-Identifier: BSD-2-Clause */
/* cluster_map.c - making, opening and closing the cluster state: its
 * layout (a header page, one overflow entry per rule, then a power of two
 * of entries), the named mapping (shm.c; recreated when made for another
 * layout or peer list), and what is derived once from the config: the key
 * hash secret (from the gossip key, so every host hashes a key alike), node
 * ids, the overflow tags and the alone_share limits.
 */
#include <errno.h>
#include <sodium.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include "../clock.h"
#include "cluster_t.h"
#include "../mem.h"
#include "../shm.h"

typedef unsigned __int128 u128;

const char *const sl_cluster_counter_names[SL_CC_NCOUNTERS] = {
    "tx_packets",     "tx_bytes",   "tx_errors",        "tx_test_dropped", "rx_packets",
    "rx_bytes",       "rx_records", "rec_unknown_rule", "rec_old",         "remote_overflow",
    "local_overflow", "reused",     "tx_early",
};

_Static_assert(sizeof(struct sl_chdr) <= 4096, "shm.c reads at most a page of header");

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

struct named {
    const struct sl_config *cfg;
    uint32_t nslots; /* 0: any (attach) */
};

/* A state made for another layout or peer list is stale: recreated by an
 * opener, refused by an attach. */
static enum sl_shm_judgement judge(const void *hdr, size_t len, size_t size, void *arg,
                                   size_t *bytes, char *why, size_t whylen)
{
    const struct named *n = arg;
    const struct sl_chdr *h = hdr;
    snprintf(why, whylen, "is not a sluice cluster state of this version");
    if (len < sizeof *h || !h->ready || h->magic != SL_CLUSTER_MAGIC ||
        h->version != SL_CLUSTER_VERSION || size < layout_bytes(h->nslots))
        return SL_SHM_STALE;
    if (n->cfg && h->fingerprint != fingerprint(n->cfg, n->nslots)) return SL_SHM_STALE;
    *bytes = layout_bytes(h->nslots);
    return SL_SHM_USE;
}

static void init_named(void *map, void *arg)
{
    const struct named *n = arg;
    hdr_init(map, n->cfg, n->nslots);
}

/* Maps the named state, creating it when missing or stale. */
static void *map_named(const struct sl_config *cfg, const char *name, uint32_t nslots, size_t bytes,
                       char *err, size_t errlen)
{
    struct named n = {cfg, nslots};
    struct sl_shm_spec spec = {.name = name,
                               .hdr_len = sizeof(struct sl_chdr),
                               .bytes = bytes,
                               .create = true,
                               .judge = judge,
                               .init = init_named,
                               .arg = &n};
    size_t got;
    bool created;
    return sl_shm_open(&spec, &got, &created, err, errlen);
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
        /* Early share: see sl_cluster_decide. */
        uint64_t e = r->limit.count / (16 * (uint64_t)(g->npeers + 1));
        c->early[i] = e ? e : 1;
        atomic_store_explicit(&c->ovf[i].meta, (uint32_t)i + 1, memory_order_relaxed);
        atomic_store_explicit(&c->ovf[i].tag, c->ovf_tag[i], memory_order_release);
    }
    int64_t off = sl_clock_wall_offset();
    atomic_store_explicit(&c->hdr->offset_ns, off, memory_order_relaxed);
    return c;
}

struct sl_cluster *sl_cluster_attach(const char *shm_name, char *err, size_t errlen)
{
    struct named n = {NULL, 0};
    struct sl_shm_spec spec = {.name = shm_name,
                               .hdr_len = sizeof(struct sl_chdr),
                               .readonly = true,
                               .judge = judge,
                               .arg = &n};
    size_t bytes;
    bool created;
    void *map = sl_shm_open(&spec, &bytes, &created, err, errlen);
    if (!map) return NULL;
    struct sl_cluster *c = sl_alloc(sizeof *c);
    if (!c) {
        munmap(map, bytes);
        snprintf(err, errlen, "cannot map %s", shm_name);
        return NULL;
    }
    wrap(c, map, bytes);
    c->readonly = true;
    c->norig = 1 + (int)c->hdr->npeers;
    c->peer_timeout_ns = atomic_load_explicit(&c->hdr->peer_timeout_ns, memory_order_relaxed);
    return c;
}

void sl_cluster_unmap(struct sl_cluster *c)
{
    if (!c) return;
    munmap(c->hdr, c->bytes);
    sodium_memzero(c->key, sizeof c->key);
    sl_free(c);
}

void sl_cluster_set_offset(struct sl_cluster *c, int64_t offset_ns)
{
    atomic_store_explicit(&c->hdr->offset_ns, offset_ns, memory_order_relaxed);
}
