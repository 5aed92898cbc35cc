/* SPDX-License-Identifier: BSD-2-Clause */
/* table_learned.c - what `learn` rules learned, for readers (see
 * table_learned.h): SL_TABLE_LEARNED entries of one cache line, the last
 * bytes of the table's mapping.
 *
 * Each entry is a sequence lock that any process may write: seq is 0
 * while the entry was never written, odd while a writer fills it, even
 * once it is whole. A writer chooses its entry (the key's own, a free one,
 * or the one ending first), takes it with CAS(seq, even s, s + 1), writes
 * the fields and publishes s + 2; a writer that loses the CAS chooses
 * again. A reader copies an entry and keeps it only when seq was the same
 * even number before and after. Two processes learning about one new key
 * at once may take two entries: readers keep the later (at_ns).
 *
 * Cost: a learned hold comes with a vendor's answer, not with a decision:
 * the writer reads the 64 entries' seq and identity (64 cache lines) and
 * writes one. Decisions never touch the entries.
 */
#include "table_learned.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>

#include "table_int.h"

#define CHOOSE_TRIES 4 /* writers that keep taking the chosen entry first: give up */
#define COPY_TRIES   4 /* a reader's tries at an entry being rewritten */

struct entry {
    _Atomic uint64_t seq;  /* writers: CAS to odd, then store even (release) */
    _Atomic uint64_t hash; /* the rest: the writer holding seq odd */
    _Atomic uint64_t what; /* rule entry | field << 32 */
    _Atomic uint64_t key;  /* the short hash's 6 characters and NUL */
    _Atomic uint64_t at_ns, until_ns, gap_ns;
    _Atomic uint64_t left;
};
_Static_assert(sizeof(struct entry) * SL_TABLE_LEARNED == SL_TABLE_LEARNED_BYTES,
               "an entry is one cache line, as table.c lays them out");

static struct entry *entries(const struct sl_table *t)
{
    return (struct entry *)((char *)t->hdr + t->bytes - SL_TABLE_LEARNED_BYTES);
}

/* Entry e whole in out, and the seq it had (*seq, also when false): false
 * when it was never written or a writer is at it. */
static bool copy(struct entry *e, struct sl_learned_hold *out, uint64_t *seq)
{
    uint64_t s = *seq = atomic_load_explicit(&e->seq, memory_order_acquire);
    if (s == 0 || s & 1) return false;
    uint64_t what = atomic_load_explicit(&e->what, memory_order_relaxed);
    uint64_t key = atomic_load_explicit(&e->key, memory_order_relaxed);
    out->rule = (int)(uint32_t)what;
    out->field = (unsigned)(what >> 32);
    memcpy(out->key, &key, sizeof out->key);
    out->key[sizeof out->key - 1] = 0;
    out->hash = atomic_load_explicit(&e->hash, memory_order_relaxed);
    out->at_ns = atomic_load_explicit(&e->at_ns, memory_order_relaxed);
    out->until_ns = atomic_load_explicit(&e->until_ns, memory_order_relaxed);
    out->gap_ns = atomic_load_explicit(&e->gap_ns, memory_order_relaxed);
    out->left = (int64_t)atomic_load_explicit(&e->left, memory_order_relaxed);
    /* pairs with the writer's release fence: a field of a newer write means seq moved */
    atomic_thread_fence(memory_order_acquire);
    return atomic_load_explicit(&e->seq, memory_order_relaxed) == s;
}

/* The entry for (rule, hash): its own, else a free one, else the one
 * whose time ends first; -1 when every entry is being written. */
static int choose(struct entry *v, int rule, uint64_t hash, uint64_t *seq)
{
    int best = -1;
    uint64_t best_until = UINT64_MAX;
    for (int i = 0; i < SL_TABLE_LEARNED; i++) {
        struct sl_learned_hold h;
        uint64_t s;
        if (!copy(&v[i], &h, &s)) {
            if (s == 0 && best_until > 0) { /* free: before any written one */
                best = i;
                best_until = 0;
                *seq = 0;
            }
            continue;
        }
        if (h.rule == rule && h.hash == hash) {
            *seq = s;
            return i;
        }
        if (h.until_ns < best_until || best < 0) {
            best = i;
            best_until = h.until_ns;
            *seq = s;
        }
    }
    return best;
}

void sl_table_note_learned(struct sl_table *t, const struct sl_learned_hold *h)
{
    struct entry *v = entries(t);
    uint64_t key = 0;
    memcpy(&key, h->key, sizeof h->key < sizeof key ? sizeof h->key : sizeof key);
    for (int tries = 0; tries < CHOOSE_TRIES; tries++) {
        uint64_t s;
        int i = choose(v, h->rule, h->hash, &s);
        if (i < 0) return;
        struct entry *e = &v[i];
        if (!atomic_compare_exchange_strong_explicit(&e->seq, &s, s + 1, memory_order_acquire,
                                                     memory_order_relaxed))
            continue; /* another writer took it: choose again */
        /* a reader that sees any field below sees seq odd after it (copy's fence) */
        atomic_thread_fence(memory_order_release);
        atomic_store_explicit(&e->hash, h->hash, memory_order_relaxed);
        atomic_store_explicit(&e->what, (uint64_t)(uint32_t)h->rule | (uint64_t)h->field << 32,
                              memory_order_relaxed);
        atomic_store_explicit(&e->key, key, memory_order_relaxed);
        atomic_store_explicit(&e->at_ns, h->at_ns, memory_order_relaxed);
        atomic_store_explicit(&e->until_ns, h->until_ns, memory_order_relaxed);
        atomic_store_explicit(&e->gap_ns, h->gap_ns, memory_order_relaxed);
        atomic_store_explicit(&e->left, (uint64_t)h->left, memory_order_relaxed);
        atomic_store_explicit(&e->seq, s + 2, memory_order_release);
        return;
    }
}

size_t sl_table_learned(const struct sl_table *t, struct sl_learned_hold *out, size_t max)
{
    struct entry *v = entries(t);
    size_t n = 0;
    for (int i = 0; i < SL_TABLE_LEARNED && n < max; i++) {
        struct sl_learned_hold h;
        uint64_t s;
        bool whole = false;
        for (int k = 0; k < COPY_TRIES && !whole; k++)
            whole = copy(&v[i], &h, &s) || s == 0;
        if (!whole || s == 0) continue;
        size_t j = 0;
        while (j < n && !(out[j].rule == h.rule && out[j].hash == h.hash))
            j++;
        if (j == n)
            out[n++] = h;
        else if (h.at_ns > out[j].at_ns)
            out[j] = h; /* two entries for one key: the later */
    }
    return n;
}
