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

#include "../clock.h"

/* How long a prober waits for an entry being set up. It was a count of
 * yields (4,096, about 2 ms), which a setter preempted by another busy
 * thread on its CPU outlasted: test_cluster's four claimers on two CPUs
 * then gave a key two entries in 2% of runs. Those setters were met off
 * CPU for up to 9.4 ms (the longest wait of each of 100 runs: median 4.1
 * ms, 99th 8.7 ms); none in 400 runs since. Bounded all the same: a setter
 * that died leaves `busy` for good, and each prober passing that entry
 * then waits this long. */
#define SL_SETTLE_NS (20 * 1000 * 1000ull)

static inline uint64_t sl_settled_tag(_Atomic uint64_t *tag, uint64_t busy)
{
    uint64_t t = atomic_load_explicit(tag, memory_order_acquire);
    for (int spins = 0; t == busy && spins < 64; spins++)
        t = atomic_load_explicit(tag, memory_order_acquire);
    if (t != busy) return t;
    uint64_t until = sl_clock_now() + SL_SETTLE_NS;
    /* the one setting it up is off CPU: a time slice, or the bound (and a
     * count, should the clock stand still: libfaketime may stop it) */
    for (int yields = 0; t == busy && yields < 65536 && sl_clock_now() < until; yields++) {
        sched_yield();
        t = atomic_load_explicit(tag, memory_order_acquire);
    }
    return t;
}

#endif
