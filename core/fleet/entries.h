/* SPDX-License-Identifier: BSD-2-Clause */
/* entries.h - how a key finds its entry in core/fleet's two shared tables
 * of keys (cluster.c's gossip entries, redis_state.c's), written once: the
 * Redis table's own copy missed the cluster's fixes and gave a key two
 * entries when threads met it at once.
 *
 * Open addressing over `probe` entries from the key's hash; an entry's
 * first member is its tag: 0 never used, 1 being set up, else its key's
 * hash. A free entry is claimed by CAS(tag, 0, 1); with none free, the
 * first idle one (the table's own judgement) is reused, its tag taken
 * away from the old key first. An entry being set up may be the key's
 * (another thread claiming it): its tag is waited for (settle.h), and an
 * idle entry's tag is read again after its counts, so an entry reused
 * meanwhile for the same key is found, not passed for a second one. What
 * differs between the tables (the entry's type and stride, its idleness,
 * its set-up) comes as callbacks, inlined at each table's one call. */
#ifndef SL_FLEET_ENTRIES_H
#define SL_FLEET_ENTRIES_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../limit/settle.h"

#define SL_ENTRY_BUSY 1 /* a tag being set up */

struct sl_entries {
    char *ents; /* mask + 1 entries of `stride` bytes, each beginning with its tag */
    size_t stride;
    uint32_t mask, probe;
    bool (*idle)(void *ctx, void *entry);               /* holds nothing: may be reused */
    void (*setup)(void *ctx, void *entry, bool reused); /* then publishes the tag */
    void *ctx;
};

static inline _Atomic uint64_t *sl_entry_tag(void *entry)
{
    return (_Atomic uint64_t *)entry;
}

/* The key's entry, claiming a free or idle one when `claim`; NULL: none
 * (or, without claim, the key has none). */
static inline __attribute__((always_inline)) void *sl_entries_find(const struct sl_entries *x,
                                                                   uint64_t hash, bool claim)
{
    void *idle = NULL;
    uint64_t idle_tag = 0;
    for (uint32_t i = 0; i < x->probe; i++) {
        void *e = x->ents + ((hash + i) & x->mask) * x->stride;
        uint64_t t = sl_settled_tag(sl_entry_tag(e), SL_ENTRY_BUSY);
        if (t == hash) return e;
        if (t == 0) {
            if (!claim) return NULL;
            if (atomic_compare_exchange_strong_explicit(sl_entry_tag(e), &t, SL_ENTRY_BUSY,
                                                        memory_order_acquire,
                                                        memory_order_acquire)) {
                x->setup(x->ctx, e, false);
                return e;
            }
            if ((t = sl_settled_tag(sl_entry_tag(e), SL_ENTRY_BUSY)) == hash) return e;
        }
        if (claim && !idle && t > SL_ENTRY_BUSY) {
            /* the counts read for the tag read: an entry reused meanwhile
             * for this key (by another thread, and counted in) is its own,
             * not a busy one to pass for a second entry */
            bool was_idle = x->idle(x->ctx, e);
            uint64_t again = sl_settled_tag(sl_entry_tag(e), SL_ENTRY_BUSY);
            if (again == hash) return e;
            if (was_idle && again == t) {
                idle = e;
                idle_tag = t;
            }
        }
    }
    if (!idle) return NULL;
    /* reuse: take the tag away from the old key first */
    if (!atomic_compare_exchange_strong_explicit(sl_entry_tag(idle), &idle_tag, SL_ENTRY_BUSY,
                                                 memory_order_acquire, memory_order_relaxed))
        return sl_settled_tag(sl_entry_tag(idle), SL_ENTRY_BUSY) == hash
                   ? idle
                   : NULL; /* another took it, maybe for this key */
    x->setup(x->ctx, idle, true);
    return idle;
}

#endif
