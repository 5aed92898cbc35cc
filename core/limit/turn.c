/* SPDX-License-Identifier: BSD-2-Clause */
/* turn.c - a connection's turn at its key's byte budget (see turn.h). */
#include "turn.h"

uint64_t sl_turn_take(struct sl_table *t, int rule, const struct sl_key *k,
                      const struct sl_limit *l, uint64_t quantum, struct sl_turn *turn,
                      uint64_t now, uint64_t want, uint64_t *at)
{
    uint64_t held = atomic_exchange_explicit(&turn->bytes, 0, memory_order_acquire);
    if (held) {
        /* pairs with the release store below: `at` is that reservation's */
        uint64_t when = atomic_load_explicit(&turn->at, memory_order_relaxed);
        if (when > now) {
            uint64_t none = 0;
            /* not yet: put it back, unless another thread of the program
             * queued on this descriptor meanwhile (then one place is enough) */
            if (!atomic_compare_exchange_strong_explicit(
                    &turn->bytes, &none, held, memory_order_release, memory_order_relaxed))
                sl_table_refund(t, rule, k, l, now, held);
            *at = when;
            return 0;
        }
        if (held > want) sl_table_refund(t, rule, k, l, now, held - want);
        return held < want ? held : want;
    }
    uint64_t wait;
    uint64_t got = sl_table_take(t, rule, k, l, now, want, quantum, &wait);
    if (got == 0 || wait == 0) {
        *at = now + wait;
        return got;
    }
    atomic_store_explicit(&turn->at, now + wait, memory_order_relaxed);
    uint64_t none = 0;
    if (!atomic_compare_exchange_strong_explicit(&turn->bytes, &none, got, memory_order_release,
                                                 memory_order_relaxed))
        sl_table_refund(t, rule, k, l, now, got); /* another thread holds a place already */
    *at = now + wait;
    return 0;
}

void sl_turn_drop(struct sl_table *t, int rule, const struct sl_key *k, const struct sl_limit *l,
                  struct sl_turn *turn, uint64_t now)
{
    uint64_t held = atomic_exchange_explicit(&turn->bytes, 0, memory_order_relaxed);
    if (held) sl_table_refund(t, rule, k, l, now, held);
}
