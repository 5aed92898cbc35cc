/* SPDX-License-Identifier: BSD-2-Clause */
/* table.c - a lock-free open-addressing table of rate-limit buckets in
 * shared memory.
 *
 * Layout of the mapping: a header page, the rule directory (one 64-byte
 * entry per rule), the counters ([rule][stripe], one cache line each, so two
 * threads counting never share a line), the slots (16 bytes: tag and state,
 * four to a cache line, all a decision touches), the side entries (meta and
 * the concurrency count, touched only by claims, reuses and conns limits),
 * then the connection records, and last what `learn` rules learned
 * (table_learned.c, 4 KB). 32 bytes per slot in all; at the 80% load
 * the probing below sustains, 40 bytes per tracked key.
 *
 * Slot protocol. tag is 0 (never used) or the key's hash. A key is looked
 * for on SL_PROBE slots: 16 buckets of 4 (a cache line each) chosen by
 * double hashing, so a key is almost always found in its first cache line
 * and a table 80% full still finds room for a new key with probability
 * 1 - 0.8^64:
 *   - tag == hash: the key's slot;
 *   - tag == 0: the key is not further on (slots never return to 0), so it
 *     claims this one with CAS(tag, 0, hash); a loser re-reads the tag;
 *   - otherwise, another key's slot: go on.
 * If neither the key nor an empty slot is found, a second pass looks for
 * the first slot whose bucket is idle (meta and cap, in the side array,
 * tell the occupant's algorithm, period and limit; a lookup never reads
 * them), and reuses it: CAS(tag, old, REUSING) makes the reuser exclusive,
 * CAS(state, s, 0) confirms the bucket is still the one it judged (else
 * the tag goes back), then meta is written and the tag is published as the
 * new hash. An idle bucket is equivalent to a fresh one. A step of the old
 * key racing the reuse may fall on the new key's state: the stepper then
 * reads the tag again (still_held) and looks for its key's slot anew, so
 * that request counts for both keys, never for neither; a give-back (a
 * refund) reads the tag before its exchange instead, and gives nothing
 * once the slot is gone (give_back_h). The pass reads a
 * slot's tag again after its state: a slot taken meanwhile for the same
 * key (by another thread, and spent already) is the key's, not a busy
 * one to pass on the way to a second slot for it.
 *
 * Eviction. Without an idle slot, the same pass evicts the slot whose key
 * has used the smallest share of its limit, among those whose next request
 * would still pass (the second chance: a key at its limit, or holding a
 * connection place, is never evicted, so a flood of new keys buys no
 * amnesty for a key that is being limited). A flood of one-off keys (one
 * request each, a daily quota word each) thus evicts its own kind first:
 * an honest new key still gets a slot and its whole budget, and what an
 * eviction forgives is the least any key nearby had used. Only when every
 * slot of the key's probe sequence holds a key at its limit is the table
 * full for that key, and the on_full policy applies; memory never grows.
 *
 * The bucket itself is state, updated by CAS in a loop: read, compute the
 * next state with sl_limit_step, publish. Denials publish nothing but a
 * GCRA state clamped after a backward clock step.
 *
 * Memory order: tag is published with release after state and meta are
 * reset, and read with acquire. A step's exchange of state, its read of
 * the tag after it and the reuser's exchanges are seq_cst (still_held's
 * argument; on x86-64 the same instructions as relaxed ones). Counters are
 * relaxed: readers want totals, not ordering.
 */
#include "table.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "limit_gcra.h"
#include "../clock.h"
#include "../mem.h"
#include "quota.h"
#include "settle.h"
#include "../shm.h"
#include "../sys.h"
#include "table_int.h"
#include "window.h"

const char *const sl_counter_names[SL_NCOUNTERS] = {
    "allowed", "limited",   "delayed", "would_limit",  "overflow",     "reused",        "claimed",
    "errors",  "odd_heads", "learned", "learn_spread", "learn_capped", "learn_ignored",
};

static uint32_t conn_records(uint32_t nslots)
{
    return nslots / 4 < 64 ? 64 : nslots / 4;
}

size_t sl_table_layout_bytes(uint32_t nslots)
{
    size_t regions = SL_HDR + SL_MAX_RULES * sizeof(struct sl_rule_entry) +
                     (size_t)SL_MAX_RULES * SL_STRIPES * sizeof(struct sl_stripe) +
                     SL_DENIALS * sizeof(struct sl_denial_slot) +
                     SL_MAX_RULES * sizeof(struct sl_rule_waits) + SL_LOG_WORDS * sizeof(uint64_t) +
                     SL_TABLE_PLANS * (sizeof(struct sl_plan_entry) +
                                       SL_STRIPES * sizeof(struct sl_plan_stripe)) +
                     (size_t)nslots * (sizeof(struct sl_slot) + sizeof(struct sl_side)) +
                     (size_t)conn_records(nslots) * sizeof(struct sl_conn_rec);
    return (regions + 63) / 64 * 64 + SL_TABLE_LEARNED_BYTES;
}

static struct sl_table *wrap(void *map, size_t bytes, enum sl_on_full on_full)
{
    struct sl_table *t = sl_alloc(sizeof *t);
    if (!t) return NULL;
    char *p = map;
    t->hdr = map;
    t->rules = (void *)(p + SL_HDR);
    t->stripes = (void *)(p + SL_HDR + SL_MAX_RULES * sizeof(struct sl_rule_entry));
    t->denials =
        (void *)((char *)t->stripes + (size_t)SL_MAX_RULES * SL_STRIPES * sizeof(struct sl_stripe));
    t->waits = (void *)(t->denials + SL_DENIALS);
    t->logs = (void *)(t->waits + SL_MAX_RULES);
    t->plans = (void *)(t->logs + SL_LOG_WORDS);
    t->plan_stripes = (void *)(t->plans + SL_TABLE_PLANS);
    t->slots = (void *)(t->plan_stripes + SL_STRIPES * SL_TABLE_PLANS);
    t->nbuckets = t->hdr->nslots / SL_BUCKET;
    t->side = (void *)(t->slots + t->hdr->nslots);
    t->recs = (void *)(t->side + t->hdr->nslots);
    t->nrecs = conn_records(t->hdr->nslots);
    memcpy(t->secret, t->hdr->secret, sizeof t->secret);
    t->bytes = bytes;
    t->on_full = on_full;
    return t;
}

static void header_init(struct sl_header *h, uint32_t nslots)
{
    h->magic = SL_MAGIC;
    h->version = SL_VERSION;
    h->nslots = nslots;
    if (getrandom(h->secret, sizeof h->secret, GRND_NONBLOCK) != sizeof h->secret) {
        uint64_t seed = sl_clock_now() ^ (uint64_t)getpid() << 32 ^ (uintptr_t)h;
        for (int i = 0; i < 4; i++)
            h->secret[i] = seed = seed * 6364136223846793005ull + 1;
    }
    atomic_store_explicit(&h->ready, 1, memory_order_release);
}

static bool prime(uint32_t n)
{
    if (n < 2) return false;
    for (uint32_t d = 2; (uint64_t)d * d <= n; d++)
        if (n % d == 0) return false;
    return true;
}

/* Slots come in buckets of four; the number of buckets is a prime, so that
 * every probe stride visits every bucket, and the table is as large as
 * asked, not the next power of two. */
static uint32_t round_slots(uint32_t slots)
{
    if (slots > (1u << 30)) slots = 1u << 30;
    uint32_t buckets = (slots + SL_BUCKET - 1) / SL_BUCKET;
    if (buckets < 16) buckets = 16;
    while (!prime(buckets))
        buckets++;
    return buckets * SL_BUCKET;
}

static void shm_name(char *buf, size_t len, const char *shared)
{
    snprintf(buf, len, "/sluice.%s", shared);
}

static enum sl_shm_judgement judge(const void *hdr, size_t len, size_t size, void *arg,
                                   size_t *bytes, char *why, size_t whylen)
{
    const struct sl_header *h = hdr;
    if (len < sizeof *h || size < SL_HDR) {
        snprintf(why, whylen, "is %s, not a sluice table", size ? "too small" : "empty");
        return SL_SHM_BAD;
    }
    if (h->magic != SL_MAGIC || h->version != SL_VERSION || !h->ready) {
        snprintf(why, whylen, "is not a sluice table of this version");
        return SL_SHM_BAD;
    }
    *bytes = sl_table_layout_bytes(h->nslots);
    if (size < *bytes) {
        snprintf(why, whylen, "is %zu bytes, smaller than its %u slots need", size, h->nslots);
        return SL_SHM_BAD;
    }
    return SL_SHM_USE;
}

static void init_named(void *map, void *arg)
{
    header_init(map, *(uint32_t *)arg);
}

static struct sl_table *open_named(uint32_t nslots, const char *shared, enum sl_on_full on_full,
                                   bool create, bool writable, char *err, size_t errlen)
{
    char name[128];
    shm_name(name, sizeof name, shared);
    struct sl_shm_spec spec = {.name = name,
                               .hdr_len = sizeof(struct sl_header),
                               .bytes = sl_table_layout_bytes(nslots),
                               .create = create,
                               .readonly = !create && !writable,
                               .judge = judge,
                               .init = init_named,
                               .arg = &nslots};
    size_t bytes;
    bool created;
    void *map = sl_shm_open(&spec, &bytes, &created, err, errlen);
    if (!map) return NULL;
    struct sl_table *t = wrap(map, bytes, on_full);
    if (!t) {
        munmap(map, bytes);
        snprintf(err, errlen, "out of memory");
    }
    return t;
}

/* A table in a memory file of its own, so that `sluice ps` finds it in
 * /proc/PID/fd of its processes (a private anonymous mapping would be
 * anonymous there too). The descriptor stays open above the program's own
 * numbers; children started with exec inherit it when `inherit` says so.
 * Falls back to an anonymous mapping if the kernel has no memfd. */
static struct sl_table *open_unnamed(uint32_t nslots, enum sl_on_full on_full, bool inherit,
                                     int *fd_out, char *err, size_t errlen)
{
    size_t bytes = sl_table_layout_bytes(nslots);
    int fd;
    void *map = sl_shm_unnamed("sluice-table", bytes, !inherit, &fd, err, errlen);
    if (!map) return NULL;
    header_init(map, nslots);
    struct sl_table *t = wrap(map, bytes, on_full);
    if (!t) {
        munmap(map, bytes);
        if (fd >= 0) sl_sys_close(fd);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    *fd_out = fd;
    return t;
}

struct sl_table *sl_table_open(uint32_t slots, const char *shared, enum sl_on_full on_full,
                               char *err, size_t errlen)
{
    uint32_t nslots = round_slots(slots);
    if (shared && *shared) return open_named(nslots, shared, on_full, true, true, err, errlen);
    int fd;
    return open_unnamed(nslots, on_full, false, &fd, err, errlen);
}

/* A descriptor that holds a table of this version (inherited, or opened
 * by `sluice` through /proc). */
static struct sl_table *open_fd(int fd, enum sl_on_full on_full, bool writable)
{
    struct stat st;
    struct sl_header h;
    if (sl_sys_fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size < SL_HDR ||
        sl_sys_pread(fd, &h, sizeof h, 0) != (ssize_t)sizeof h || h.magic != SL_MAGIC ||
        h.version != SL_VERSION || !h.ready || (off_t)sl_table_layout_bytes(h.nslots) != st.st_size)
        return NULL;
    size_t bytes = (size_t)st.st_size;
    void *map = mmap(NULL, bytes, writable ? PROT_READ | PROT_WRITE : PROT_READ, MAP_SHARED, fd, 0);
    if (map == MAP_FAILED) return NULL;
    struct sl_table *t = wrap(map, bytes, on_full);
    if (!t) munmap(map, bytes);
    return t;
}

/* The table at `path` (/proc/PID/fd/N), mapped read-write through a new
 * open of its memory file (shm.h: the descriptor children inherit is
 * read-only, the file 0600), or NULL: with *foreign set (and *owner) when
 * the kernel refused this process access (it runs as another user than
 * the table's). Only an unlinked regular file named as sluice names its
 * table is opened: a number the program reused for something else (a
 * FIFO, a device) is never opened. */
static struct sl_table *open_table_path(const char *path, enum sl_on_full on_full, bool *foreign,
                                        unsigned *owner)
{
    struct stat st;
    char link[64] = "";
    static const char name[] = "/memfd:sluice-table";
    if (sl_sys_stat(path, &st) != 0) {
        *foreign = *foreign || errno == EACCES || errno == EPERM;
        return NULL;
    }
    if (!S_ISREG(st.st_mode) || st.st_nlink != 0 ||
        sl_sys_readlink(path, link, sizeof link - 1) < (ssize_t)sizeof name - 1 ||
        memcmp(link, name, sizeof name - 1) != 0)
        return NULL;
    *owner = (unsigned)st.st_uid;
    int rw = sl_sys_open(path, O_RDWR | O_CLOEXEC, 0);
    if (rw < 0) {
        *foreign = *foreign || errno == EACCES || errno == EPERM;
        return NULL;
    }
    struct sl_table *t = open_fd(rw, on_full, true);
    sl_sys_close(rw); /* the mapping stays */
    return t;
}

/* A read-only descriptor of the table the process mapped from `path`, for
 * its own children, above the program's numbers; -1 when none. */
static int inheritable_from(const char *path)
{
    int ro = sl_sys_open(path, O_RDONLY | O_CLOEXEC, 0);
    if (ro < 0) return -1;
    int high = sl_sys_dupfd(ro, 512, false);
    sl_sys_close(ro);
    return high;
}

struct sl_table *sl_table_open_inherited(uint32_t slots, enum sl_on_full on_full, int inherited,
                                         int holder, int *fd_out, char *note, size_t notelen,
                                         char *err, size_t errlen)
{
    bool foreign = false;
    unsigned owner = 0;
    char path[64];
    *note = 0;
    if (inherited >= 0) {
        snprintf(path, sizeof path, "/proc/self/fd/%d", inherited);
        struct sl_table *t = open_table_path(path, on_full, &foreign, &owner);
        if (t) {
            *fd_out = inherited;
            return t;
        }
        /* closed before exec (python's spawn, apt's methods): the process
         * that handed it down still holds it */
        snprintf(path, sizeof path, "/proc/%d/fd/%d", holder, inherited);
        t = holder > 0 && holder != (int)getpid() && !foreign
                ? open_table_path(path, on_full, &foreign, &owner)
                : NULL;
        if (t) {
            *fd_out = inheritable_from(path);
            return t;
        }
    }
    if (foreign) {
        snprintf(note, notelen,
                 "the table inherited from the program (its user: uid %u) is not writable by "
                 "this process (uid %u, effective %u): it counts in a table of its own",
                 owner, (unsigned)getuid(), (unsigned)geteuid());
        struct stat st;
        if (sl_sys_fstat(inherited, &st) == 0 && S_ISREG(st.st_mode) && st.st_nlink == 0)
            sl_sys_close(inherited); /* read-only, but nothing of this process's reads it */
    }
    return open_unnamed(round_slots(slots), on_full, true, fd_out, err, errlen);
}

struct sl_table *sl_table_attach_fd(int fd, bool writable, char *err, size_t errlen)
{
    struct sl_table *t = open_fd(fd, SL_FULL_SHARED, writable);
    if (!t) snprintf(err, errlen, "not a sluice table of this version, or %s", strerror(errno));
    return t;
}

struct sl_table *sl_table_attach(const char *shared, char *err, size_t errlen)
{
    return open_named(0, shared, SL_FULL_SHARED, false, false, err, errlen);
}

struct sl_table *sl_table_attach_rw(const char *shared, char *err, size_t errlen)
{
    return open_named(0, shared, SL_FULL_SHARED, false, true, err, errlen);
}

void sl_table_close(struct sl_table *t)
{
    if (!t) return;
    munmap(t->hdr, t->bytes);
    sl_free(t);
}

uint32_t sl_table_config_gen(const struct sl_table *t)
{
    return atomic_load_explicit(&t->hdr->config_gen, memory_order_acquire);
}

static bool put(char *to, size_t size, const char *text)
{
    size_t n = text ? strlen(text) : 0;
    if (n >= size) return false;
    memcpy(to, text ? text : "", n);
    to[n] = 0;
    return true;
}

uint32_t sl_table_config_publish(struct sl_table *t, const char *path, const char *rules)
{
    if (!put(t->hdr->config_path, sizeof t->hdr->config_path, path) ||
        !put(t->hdr->config_rules, sizeof t->hdr->config_rules, rules))
        return 0;
    return atomic_fetch_add_explicit(&t->hdr->config_gen, 1, memory_order_acq_rel) + 1;
}

void sl_table_config_path(const struct sl_table *t, char *out, size_t len)
{
    snprintf(out, len, "%.*s", (int)sizeof t->hdr->config_path, t->hdr->config_path);
}

void sl_table_config_rules(const struct sl_table *t, char *out, size_t len)
{
    snprintf(out, len, "%.*s", (int)sizeof t->hdr->config_rules, t->hdr->config_rules);
}

void sl_table_describe(struct sl_table *t, int pid, const char *command, const char *path,
                       const char *rules)
{
    uint32_t zero = 0;
    if (!atomic_compare_exchange_strong(&t->hdr->stamped, &zero, 1)) return;
    struct sl_header *h = t->hdr;
    h->origin_pid = pid;
    snprintf(h->origin_command, sizeof h->origin_command, "%s", command ? command : "");
    if (!put(h->config_path, sizeof h->config_path, path)) h->config_path[0] = 0;
    if (!put(h->config_rules, sizeof h->config_rules, rules)) h->config_rules[0] = 0;
    atomic_store_explicit(&h->stamped, 2, memory_order_release);
}

bool sl_table_origin(const struct sl_table *t, int *pid, char *command, size_t len)
{
    if (atomic_load_explicit(&t->hdr->stamped, memory_order_acquire) != 2) return false;
    *pid = t->hdr->origin_pid;
    snprintf(command, len, "%.*s", (int)sizeof t->hdr->origin_command, t->hdr->origin_command);
    return true;
}

uint32_t sl_table_slots(const struct sl_table *t)
{
    return t->hdr->nslots;
}

size_t sl_table_bytes(const struct sl_table *t)
{
    return t->bytes;
}

int sl_table_rule(struct sl_table *t, uint64_t id, const char *name)
{
    for (int i = 0; i < SL_MAX_RULES; i++) {
        struct sl_rule_entry *e = &t->rules[i];
        uint64_t cur = atomic_load_explicit(&e->id, memory_order_acquire);
        if (cur == 0) {
            uint64_t zero = 0;
            if (atomic_compare_exchange_strong(&e->id, &zero, id)) {
                snprintf(e->name, sizeof e->name, "%s", name);
                return i;
            }
            cur = zero;
        }
        if (cur == id) return i;
    }
    return -1;
}

bool sl_table_rule_info(const struct sl_table *t, int rule, uint64_t *id, char *name,
                        size_t namelen)
{
    if (rule < 0 || rule >= SL_MAX_RULES) return false;
    const struct sl_rule_entry *e = &t->rules[rule];
    *id = atomic_load_explicit(&e->id, memory_order_acquire);
    if (*id == 0) return false;
    snprintf(name, namelen, "%.*s", (int)sizeof e->name, e->name);
    return true;
}

/* Each thread counts on its own stripe (threads of other processes may
 * share it: the adds are atomic either way). */
static __thread unsigned stripe_of_thread __attribute__((tls_model("initial-exec"))) = ~0u;
static _Atomic unsigned next_stripe;

static inline unsigned my_stripe(void)
{
    if (__builtin_expect(stripe_of_thread == ~0u, 0))
        stripe_of_thread =
            atomic_fetch_add_explicit(&next_stripe, 1, memory_order_relaxed) % SL_STRIPES;
    return stripe_of_thread;
}

unsigned sl_table_stripe(void)
{
    return my_stripe();
}

void sl_table_count(struct sl_table *t, int rule, enum sl_counter c, uint64_t n)
{
    if (rule < 0) return;
    struct sl_stripe *s = &t->stripes[rule * SL_STRIPES + my_stripe()];
    atomic_fetch_add_explicit(&s->v[c], n, memory_order_relaxed);
}

uint64_t sl_table_counter(const struct sl_table *t, int rule, enum sl_counter c)
{
    uint64_t sum = 0;
    for (int i = 0; i < SL_STRIPES; i++)
        sum += atomic_load_explicit(&t->stripes[rule * SL_STRIPES + i].v[c], memory_order_relaxed);
    return sum;
}

/* meta, the side entry's word: what the state word is. GCRA: burst_ns << 2
 * (idleness needs no period: a TAT in the past is a full bucket); a
 * window: period_ns << 2 | alg; a quota word (core/limit/quota.h): META_QUOTA,
 * idle like a GCRA state once its window has ended. Never 0 (unknown). */
#define META_QUOTA 3ull /* alg bits free: a log never lives in a slot */

static inline uint64_t meta_of(const struct sl_limit *l, uint64_t quota)
{
    if (quota) return 1ull << 2 | META_QUOTA;
    if (l->alg == SL_ALG_GCRA) return l->burst_ns << 2;
    return l->period_ns << 2 | (uint64_t)l->alg;
}

/* cap, beside it: the key's limit in requests (the quota, the burst, the
 * window's count), by which a full table judges how much a key has used. */
static inline uint32_t cap_of(const struct sl_limit *l, uint64_t quota)
{
    uint64_t c = quota ? quota : l->alg == SL_ALG_GCRA ? l->burst : l->count;
    return c > UINT32_MAX ? UINT32_MAX : c == 0 ? 1 : (uint32_t)c;
}

static inline void side_claimed(struct sl_table *t, int64_t at, const struct sl_limit *l,
                                uint64_t quota)
{
    atomic_store_explicit(&t->side[at].cap, cap_of(l, quota), memory_order_relaxed);
    atomic_store_explicit(&t->side[at].meta, meta_of(l, quota), memory_order_release);
}

#define REUSING 1          /* tag while a slot changes hands; hashes are never 0 or 1 */
#define FULL    UINT32_MAX /* a share: the key is at its limit, never evicted */

/* How much of its limit the key in slot i has used, in 1/1024ths, from its
 * state (*state, as read): 0 when idle, FULL when its next request would
 * be denied, it holds a connection place, or its side entry is not
 * written yet. */
static uint32_t slot_share(struct sl_table *t, uint64_t i, uint64_t now, uint64_t *state)
{
    uint64_t meta = atomic_load_explicit(&t->side[i].meta, memory_order_acquire);
    uint64_t cap = atomic_load_explicit(&t->side[i].cap, memory_order_relaxed);
    if (meta == 0 || atomic_load_explicit(&t->side[i].conns, memory_order_relaxed) != 0)
        return FULL;
    uint64_t s = *state = atomic_load_explicit(&t->slots[i].state, memory_order_relaxed);
    uint64_t alg = meta & 3, used;
    if (s == 0) return 0;
    if (alg == SL_ALG_GCRA) s &= ~SL_GCRA_HELD; /* a learned hold: the TAT (limit_gcra.h) */
    if (alg == SL_ALG_GCRA || alg == META_QUOTA) {
        if (s <= now) return 0; /* a TAT or a window end in the past: idle */
        if (alg == META_QUOTA) {
            used = s & SL_QUOTA_MAX;
        } else { /* ahead of now: burst_ns * used share; one more needs burst_ns / cap */
            uint64_t burst_ns = meta >> 2, ahead = s - now;
            if (cap == 0 || ahead + burst_ns / cap > burst_ns) return FULL;
            return (uint32_t)((sl_u128)ahead * 1024 / burst_ns);
        }
    } else {
        struct sl_limit l = {.alg = (enum sl_alg)alg, .period_ns = meta >> 2};
        if (sl_limit_idle(&l, s, now)) return 0;
        if (alg == SL_ALG_FIXED) {
            used = s & 0xffffffffull;
        } else { /* the sliding window's weighted count, rounded up */
            uint64_t prev, curr, W = l.period_ns, el = now % W;
            sl_win_counts(s, now / W, &prev, &curr);
            used = curr + (uint64_t)(((sl_u128)prev * (W - el) + W - 1) / W);
        }
    }
    if (cap == 0 || used + 1 > cap) return FULL;
    return (uint32_t)(used * 1024 / cap);
}

/* The i-th slot of a key's probe sequence: buckets by double hashing (an
 * odd stride visits every bucket, and keys that share a first bucket part
 * ways at once, so no clusters form), slots in order within a bucket. */
struct probe {
    uint64_t bucket, stride, n, h;
    unsigned left; /* slots still to look at */
};

/* The stride is worked out only when the first bucket is left behind: most
 * lookups end in it (a key's slot is among its first four), and the stride
 * is a 128-bit multiply. */
static inline struct probe probe_start(const struct sl_table *t, uint64_t h)
{
    uint64_t n = t->nbuckets;
    struct probe p = {.n = n, .h = h, .left = SL_PROBE};
    p.bucket = (uint64_t)(((unsigned __int128)h * n) >> 64);
    return p;
}

/* The next slot of the sequence, or -1 when it is exhausted. No division:
 * the next bucket is one stride on, wrapped once. */
static inline int64_t probe_next(struct probe *p)
{
    if (p->left == 0) return -1;
    unsigned i = SL_PROBE - p->left--;
    if (i && i % SL_BUCKET == 0) {
        if (i == SL_BUCKET)
            p->stride =
                1 + (uint64_t)(((unsigned __int128)(p->h ^ (p->h >> 29)) * (p->n - 1)) >> 64);
        p->bucket += p->stride;
        if (p->bucket >= p->n) p->bucket -= p->n;
    }
    return (int64_t)(p->bucket * SL_BUCKET + i % SL_BUCKET);
}

/* The slot of the key's probe sequence to give it when every one is taken:
 * the first idle one, else the one whose key used the smallest share of
 * its limit, never one at its limit (slot_share); -1 when there is none;
 * or the key's own slot if it meets it (another thread reused one for it
 * meanwhile): then *tag is h. Only looked for when the whole sequence is
 * taken: reading the side entry costs a cache miss, which a lookup must
 * not pay. */
static int64_t find_room(struct sl_table *t, uint64_t h, uint64_t now, uint64_t *tag,
                         uint64_t *state)
{
    struct probe p = probe_start(t, h);
    int64_t best = -1;
    uint32_t best_share = FULL;
    for (int64_t at; (at = probe_next(&p)) >= 0;) {
        uint64_t tg = sl_settled_tag(&t->slots[at].tag, REUSING), st;
        uint32_t share = FULL;
        /* the share read for the tag read: a slot given to another key
         * meanwhile (this key's, by another thread, maybe stepped on
         * already) is looked at again */
        for (int again = 0; tg != h && tg != REUSING && again < 4; again++) {
            share = slot_share(t, (uint64_t)at, now, &st);
            uint64_t now_tg = sl_settled_tag(&t->slots[at].tag, REUSING);
            if (now_tg == tg) break;
            tg = now_tg;
            share = FULL;
        }
        if (tg == h) {
            *tag = h;
            return at;
        }
        if (tg == REUSING || share >= best_share) continue;
        best = at;
        best_share = share;
        *tag = tg;
        *state = st;
        if (share == 0) break; /* idle: as good as empty */
    }
    return best;
}

/* Whether slot i still holds key h once a step on its state is done. A
 * thread that finds the key's probe sequence full gives another key an
 * idle slot (find_room), and a slot just claimed and not yet stepped on,
 * or one whose key came back after long idleness, is idle: taken between
 * the lookup and the step, the step fell on the new key's state. Then it
 * counts for that key (one use more: never fewer admissions than due) and
 * the caller looks again, so its own key is counted too. Every access in
 * the race is seq_cst (on x86-64 the same instructions as relaxed ones):
 * either this load comes first in their one order, and then the reuser's
 * exchange of the state, after its tag's, meets the step and gives the
 * slot back; or the load sees the reuser's tag. */
static __attribute__((noinline, cold)) bool held_once_settled(struct sl_table *t, int64_t i,
                                                              uint64_t h)
{
    return sl_settled_tag(&t->slots[i].tag, REUSING) == h;
}

static inline bool still_held(struct sl_table *t, int64_t i, uint64_t h)
{
    uint64_t tag = atomic_load(&t->slots[i].tag);
    return tag == h || (tag == REUSING && held_once_settled(t, i, h));
}

static int64_t find_slot_h(struct sl_table *t, int rule, uint64_t h, const struct sl_limit *l,
                           uint64_t quota, uint64_t now);

int64_t sl_table_find_slot(struct sl_table *t, int rule, const struct sl_key *k,
                           const struct sl_limit *l, uint64_t quota, uint64_t now)
{
    return find_slot_h(t, rule, sl_key_hash(k, t->secret), l, quota, now);
}

/* The decisions' lookup, inline: a key met before is in its first bucket
 * nearly always, found there as find_slot_h would find it (the same slots in
 * the same order, stopping where it would stop: at the key's tag). Anything
 * else (an empty slot to claim, a slot being reused, a later bucket) is
 * left to find_slot_h. */
static inline int64_t in_first_bucket(const struct sl_table *t, uint64_t h)
{
    uint64_t at = (uint64_t)(((unsigned __int128)h * t->nbuckets) >> 64) * SL_BUCKET;
    for (unsigned j = 0; j < SL_BUCKET; j++) {
        uint64_t tag = atomic_load_explicit(&t->slots[at + j].tag, memory_order_acquire);
        if (tag == h) return (int64_t)(at + j);
        if (tag == 0) break;
    }
    return -1;
}

static inline int64_t find_slot_fast(struct sl_table *t, int rule, uint64_t h,
                                     const struct sl_limit *l, uint64_t now)
{
    int64_t i = in_first_bucket(t, h);
    return i >= 0 ? i : find_slot_h(t, rule, h, l, 0, now);
}

static int64_t find_slot_h(struct sl_table *t, int rule, uint64_t h, const struct sl_limit *l,
                           uint64_t quota, uint64_t now)
{
    for (int attempt = 0; attempt < 2; attempt++) {
        struct probe p = probe_start(t, h);
        for (int64_t at; (at = probe_next(&p)) >= 0;) {
            struct sl_slot *s = &t->slots[at];
            uint64_t tag = sl_settled_tag(&s->tag, REUSING);
            if (tag == h) return at;
            if (tag != 0) continue;
            if (atomic_compare_exchange_strong_explicit(&s->tag, &tag, h, memory_order_acq_rel,
                                                        memory_order_acquire)) {
                side_claimed(t, at, l, quota);
                sl_table_count(t, rule, SL_C_CLAIMED, 1);
                return at;
            }
            if (tag == h) return at;
        }
        uint64_t old_tag, old_state;
        int64_t room = find_room(t, h, now, &old_tag, &old_state);
        if (room < 0 || old_tag == h) return room;
        struct sl_slot *s = &t->slots[room];
        /* The tag is the exclusive step: REUSING keeps a second reuser out
         * while state and meta are reset. */
        if (!atomic_compare_exchange_strong(&s->tag, &old_tag, REUSING)) /* seq_cst: still_held */
            continue;
        /* a connection place taken since find_room looked (after its own
         * look at the tag: sl_table_conn_acquire) keeps the slot */
        if (atomic_load(&t->side[room].conns) != 0 ||
            !atomic_compare_exchange_strong(&s->state, &old_state, 0)) {
            atomic_store_explicit(&s->tag, old_tag, memory_order_release);
            continue;
        }
        side_claimed(t, room, l, quota);
        atomic_store_explicit(&s->tag, h, memory_order_release);
        sl_table_count(t, rule, SL_C_REUSED, 1);
        return room;
    }
    return -1;
}

/* `remaining`: a constant at each call, see sl_gcra_step_ex */
static inline __attribute__((always_inline)) void
decide_word(_Atomic uint64_t *w, const struct sl_limit *l, uint64_t now, uint64_t cost,
            uint64_t slack, struct sl_verdict *v, bool remaining)
{
    uint64_t s = atomic_load(w); /* seq_cst, as the exchange: still_held */
    for (;;) {
        uint64_t next;
        if (l->alg == SL_ALG_GCRA) /* the common case, inline */
            sl_gcra_step_ex(l, s, now, cost, slack, &next, v, remaining);
        else
            sl_limit_step(l, s, now, cost, slack, &next, v);
        if (next == s || atomic_compare_exchange_weak(w, &s, next)) return;
    }
}

/* decide_word's GCRA step for a rule of cost 1 whose cost1_ns is set (the
 * caller looked, in its own copy of the limit): without decide_word's
 * other algorithms (sl_limit_step) and the general cost's division, the
 * decision makes no call. */
static inline __attribute__((always_inline)) void decide_gcra1(_Atomic uint64_t *w,
                                                               const struct sl_limit *l,
                                                               uint64_t now, uint64_t slack,
                                                               struct sl_verdict *v)
{
    uint64_t s = atomic_load(w); /* seq_cst, as decide_word's */
    for (;;) {
        uint64_t next;
        sl_gcra_step_ex(l, s, now, 1, slack, &next, v, false);
        if (next == s || atomic_compare_exchange_weak(w, &s, next)) return;
    }
}

static void refund_word(_Atomic uint64_t *w, const struct sl_limit *l, uint64_t now, uint64_t cost)
{
    uint64_t s = atomic_load_explicit(w, memory_order_relaxed);
    while (!atomic_compare_exchange_weak_explicit(w, &s, sl_limit_refund(l, s, now, cost),
                                                  memory_order_relaxed, memory_order_relaxed))
        ;
}

/* What a full table does for a key it cannot hold (rare: out of line). */
static __attribute__((noinline)) void decide_full(struct sl_table *t, int rule,
                                                  const struct sl_limit *l, uint64_t now,
                                                  uint64_t cost, uint64_t slack,
                                                  struct sl_verdict *v)
{
    sl_table_count(t, rule, SL_C_OVERFLOW, 1);
    switch (t->on_full) {
    case SL_FULL_SHARED:
        decide_word(&t->rules[rule].overflow_state, l, now, cost, slack, v, true);
        return;
    case SL_FULL_DENY:
        *v = (struct sl_verdict){.allowed = false,
                                 .retry_ns = SL_NS_PER_SEC,
                                 .limit = l->alg == SL_ALG_GCRA ? l->burst : l->count};
        return;
    case SL_FULL_ALLOW:
        *v = (struct sl_verdict){.allowed = true,
                                 .limit = l->alg == SL_ALG_GCRA ? l->burst : l->count};
        return;
    }
}

/* remaining: a constant at each call, as decide_word's */
static inline __attribute__((always_inline)) void decide(struct sl_table *t, int rule, uint64_t h,
                                                         const struct sl_limit *l, uint64_t now,
                                                         uint64_t cost, uint64_t slack,
                                                         struct sl_verdict *v, bool remaining)
{
    for (int tries = 0; tries < SL_TABLE_TRIES; tries++) {
        int64_t i = find_slot_fast(t, rule, h, l, now);
        if (__builtin_expect(i < 0, 0)) break;
        decide_word(&t->slots[i].state, l, now, cost, slack, v, remaining);
        if (__builtin_expect(still_held(t, i, h), 1)) return;
    }
    decide_full(t, rule, l, now, cost, slack, v);
}

void sl_table_decide(struct sl_table *t, int rule, const struct sl_key *k, const struct sl_limit *l,
                     uint64_t now, uint64_t cost, uint64_t slack, struct sl_verdict *v)
{
    decide(t, rule, sl_key_hash(k, t->secret), l, now, cost, slack, v, true);
}

void sl_table_decide_lean(struct sl_table *t, int rule, const struct sl_key *k,
                          const struct sl_limit *l, uint64_t now, uint64_t cost, uint64_t slack,
                          struct sl_verdict *v)
{
    decide(t, rule, sl_key_hash(k, t->secret), l, now, cost, slack, v, false);
}

/* sl_table_decide_lean_h past its common case (reqdecide.c's single rule:
 * a key in its first bucket, GCRA, cost 1): the same decision as decide(). */
static __attribute__((noinline)) void decide_lean_h_slow(struct sl_table *t, int rule, uint64_t h,
                                                         const struct sl_limit *l, uint64_t now,
                                                         uint64_t cost, uint64_t slack,
                                                         struct sl_verdict *v)
{
    decide(t, rule, h, l, now, cost, slack, v, false);
}

/* Out of line, as decide() is for the rest: a key met before, in its
 * first bucket, of a GCRA rule with cost 1 is decided here with no call
 * (the others are a tail call), so the common decision saves no
 * registers (issue 32); and a slot given to another key under the step
 * is told to the caller (false: call again), which holds the arguments
 * anyway, rather than decided again here, which would keep them all live
 * across the step. */
bool sl_table_decide_lean_h(struct sl_table *t, int rule, uint64_t h, const struct sl_limit *l,
                            uint64_t now, uint64_t cost, uint64_t slack, struct sl_verdict *v)
{
    /* a copy (the configuration's, which does not change): what the step
     * reads of it stays known across the atomic loads, cost1_ns set */
    const struct sl_limit lc = *l;
    if (__builtin_expect(cost == 1 && lc.alg == SL_ALG_GCRA && lc.cost1_ns, 1)) {
        int64_t i = in_first_bucket(t, h); /* the slot find_slot_h would return */
        if (__builtin_expect(i >= 0, 1)) {
            decide_gcra1(&t->slots[i].state, &lc, now, slack, v);
            return still_held(t, i, h);
        }
    }
    decide_lean_h_slow(t, rule, h, l, now, cost, slack, v);
    return true;
}

void sl_table_decide_lean_at(struct sl_table *t, int rule, uint64_t h, int64_t *at,
                             const struct sl_limit *l, uint64_t now, struct sl_verdict *v)
{
    int64_t i = *at;
    for (int tries = 0; tries < SL_TABLE_TRIES; tries++) {
        /* a tag names one key: the slot is the one find_slot_fast would return */
        if (i < 0 || atomic_load_explicit(&t->slots[i].tag, memory_order_acquire) != h)
            *at = i = find_slot_fast(t, rule, h, l, now);
        if (__builtin_expect(i < 0, 0)) break;
        decide_word(&t->slots[i].state, l, now, 1, 0, v, false);
        if (__builtin_expect(still_held(t, i, h), 1)) return;
        *at = i = -1;
    }
    decide_full(t, rule, l, now, 1, 0, v);
}

static uint64_t take_word(_Atomic uint64_t *w, const struct sl_limit *l, uint64_t now,
                          uint64_t want, uint64_t quantum, uint64_t *wait_ns)
{
    uint64_t old = atomic_load(w); /* seq_cst, as decide_word's */
    for (;;) {
        uint64_t next, got = sl_limit_take(l, old, now, want, quantum, &next, wait_ns);
        if (got == 0 || atomic_compare_exchange_weak(w, &old, next)) return got;
    }
}

uint64_t sl_table_take(struct sl_table *t, int rule, const struct sl_key *k,
                       const struct sl_limit *l, uint64_t now, uint64_t want, uint64_t quantum,
                       uint64_t *wait_ns)
{
    uint64_t h = sl_key_hash(k, t->secret);
    for (int tries = 0; tries < SL_TABLE_TRIES; tries++) {
        int64_t i = find_slot_h(t, rule, h, l, 0, now);
        if (i < 0) break;
        uint64_t got = take_word(&t->slots[i].state, l, now, want, quantum, wait_ns);
        if (still_held(t, i, h)) return got;
    }
    sl_table_count(t, rule, SL_C_OVERFLOW, 1);
    if (t->on_full == SL_FULL_ALLOW) return *wait_ns = 0, want;
    if (t->on_full == SL_FULL_DENY) return *wait_ns = SL_NS_PER_SEC / 10, 0;
    return take_word(&t->rules[rule].overflow_state, l, now, want, quantum, wait_ns);
}

enum given { GIVEN, GONE, NO_SLOT };

/* `step` on key h's state word while the slot is the key's, never after:
 * what gives back (a refund) must not fall on a key given the slot
 * meanwhile (it would pass a request more), as a step that takes may
 * (still_held). So the tag is read after the state and before the
 * exchange, every access seq_cst (still_held's argument): a reuse in
 * between exchanges the state (the reuser's CAS from the state it judged
 * idle), so this exchange fails and the tag read again says the slot is
 * gone. Then nothing is given back: what the old key took went with its
 * slot. Never claims a slot. */
static enum given give_back_h(struct sl_table *t, uint64_t h, uint64_t (*step)(uint64_t, void *),
                              void *arg)
{
    struct probe p = probe_start(t, h);
    for (int64_t at; (at = probe_next(&p)) >= 0;) {
        uint64_t tag = sl_settled_tag(&t->slots[at].tag, REUSING);
        if (tag == 0) return NO_SLOT;
        if (tag != h) continue;
        _Atomic uint64_t *w = &t->slots[at].state;
        uint64_t s = atomic_load(w);
        while (still_held(t, at, h))
            if (atomic_compare_exchange_weak(w, &s, step(s, arg))) return GIVEN;
        return GONE;
    }
    return NO_SLOT;
}

bool sl_table_give_back(struct sl_table *t, const struct sl_key *k,
                        uint64_t (*step)(uint64_t old, void *arg), void *arg)
{
    return give_back_h(t, sl_key_hash(k, t->secret), step, arg) == GIVEN;
}

struct refund {
    const struct sl_limit *l;
    uint64_t now, cost;
};

static uint64_t refund_step(uint64_t old, void *arg)
{
    const struct refund *r = arg;
    return sl_limit_refund(r->l, old, r->now, r->cost);
}

void sl_table_refund(struct sl_table *t, int rule, const struct sl_key *k, const struct sl_limit *l,
                     uint64_t now, uint64_t cost)
{
    struct refund r = {.l = l, .now = now, .cost = cost};
    if (give_back_h(t, sl_key_hash(k, t->secret), refund_step, &r) == NO_SLOT &&
        t->on_full == SL_FULL_SHARED)
        refund_word(&t->rules[rule].overflow_state, l, now, cost);
}

bool sl_table_hold(struct sl_table *t, int rule, uint64_t h, const struct sl_limit *l,
                   uint64_t until, uint64_t gap_ns, uint64_t now)
{
    for (int tries = 0; tries < SL_TABLE_TRIES; tries++) {
        int64_t i = find_slot_h(t, rule, h, l, 0, now);
        if (i < 0) return false; /* a full table: the hold is not kept (fail open) */
        _Atomic uint64_t *w = &t->slots[i].state;
        uint64_t s = atomic_load(w), next; /* seq_cst, as decide_word's */
        bool held;
        do {
            held = (next = sl_gcra_hold(s, until, gap_ns)) != s;
        } while (held && !atomic_compare_exchange_weak(w, &s, next));
        if (still_held(t, i, h)) return held;
    }
    return false;
}

/* Replaces the state word of key h's slot by step(old, arg), atomically;
 * false when the key has no slot (a full table). */
static bool apply_h(struct sl_table *t, int rule, uint64_t h, const struct sl_limit *l,
                    uint64_t quota, uint64_t now, uint64_t (*step)(uint64_t old, void *arg),
                    void *arg)
{
    for (int tries = 0; tries < SL_TABLE_TRIES; tries++) {
        int64_t i = find_slot_h(t, rule, h, l, quota, now);
        if (i < 0) return false;
        _Atomic uint64_t *w = &t->slots[i].state;
        uint64_t s = atomic_load(w); /* seq_cst, as decide_word's */
        while (!atomic_compare_exchange_weak(w, &s, step(s, arg)))
            ;
        if (still_held(t, i, h)) return true;
    }
    return false;
}

bool sl_table_apply(struct sl_table *t, int rule, const struct sl_key *k, const struct sl_limit *l,
                    uint64_t quota, uint64_t now, uint64_t (*step)(uint64_t old, void *arg),
                    void *arg)
{
    return apply_h(t, rule, sl_key_hash(k, t->secret), l, quota, now, step, arg);
}

bool sl_table_apply_h(struct sl_table *t, int rule, uint64_t h, const struct sl_limit *l,
                      uint64_t now, uint64_t (*step)(uint64_t old, void *arg), void *arg)
{
    return apply_h(t, rule, h, l, 0, now, step, arg);
}

bool sl_table_still_held(struct sl_table *t, int64_t i, const struct sl_key *k)
{
    return still_held(t, i, sl_key_hash(k, t->secret));
}

const uint64_t *sl_table_secret(const struct sl_table *t)
{
    return t->secret;
}

uint32_t sl_table_used(const struct sl_table *t)
{
    uint32_t n = 0;
    for (uint64_t i = 0; i < t->hdr->nslots; i++)
        n += atomic_load_explicit(&t->slots[i].tag, memory_order_relaxed) != 0;
    return n;
}
