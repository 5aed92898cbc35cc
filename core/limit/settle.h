/* SPDX-License-Identifier: BSD-2-Clause */
/* settle.h - a shared table's tag as it is once whoever is setting the
 * entry up is done (a few stores), for core/limit/table.c's slots and
 * core/fleet/cluster.c's entries alike.
 *
 * A prober that went past an entry being set up for its own key would
 * claim a second entry for it, whose count the first never sees: one
 * admission over the limit each time (four threads claiming fresh keys at
 * once met thousands a run). The wait is bounded: a process that died
 * between its claim and its tag leaves `busy` for good, and that entry is
 * then passed as before. */
#ifndef SL_SETTLE_H
#define SL_SETTLE_H

#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>

static inline uint64_t sl_settled_tag(_Atomic uint64_t *tag, uint64_t busy)
{
    uint64_t t = atomic_load_explicit(tag, memory_order_acquire);
    for (int spins = 0; t == busy && spins < 4096; spins++) {
        if (spins >= 64) sched_yield(); /* the one setting it up may be off CPU */
        t = atomic_load_explicit(tag, memory_order_acquire);
    }
    return t;
}

#endif
