/* SPDX-License-Identifier: BSD-2-Clause */
/* table_denials.c - what readers see of denials and waits: the ring of
 * recent denials `sluice top` reads, each rule's recent turns, from
 * which `sluice stats` and `metrics` count the queue, and how often its
 * keys reached a share of their quota (for alerts).
 *
 * A writer takes the next position with one fetch-add, clears the entry's
 * seq, fills it and publishes seq = position + 1. A reader copies an entry
 * and keeps it only if seq was position + 1 before and after: an entry
 * being rewritten, or already reused for a later position, is skipped.
 * Denials are what a flood is made of, so the cost is one contended add
 * and one cache line; allowed decisions never touch the ring.
 */
#include <stdatomic.h>
#include <string.h>

#include "table_int.h"

void sl_table_note_denial(struct sl_table *t, int rule, const struct sl_key *k, uint64_t now)
{
    uint64_t pos = atomic_fetch_add_explicit(&t->hdr->denials_head, 1, memory_order_relaxed);
    struct sl_denial_slot *d = &t->denials[pos % SL_DENIALS];
    atomic_store_explicit(&d->seq, 0, memory_order_relaxed);
    /* release: a reader that sees any new field sees seq 0 after it */
    atomic_store_explicit(&d->at_ns, now, memory_order_release);
    atomic_store_explicit(&d->rule, (uint64_t)rule, memory_order_release);
    const uint64_t w[4] = {k->rule, k->hi, k->lo, k->extra};
    for (int i = 0; i < 4; i++)
        atomic_store_explicit(&d->w[i], w[i], memory_order_release);
    atomic_store_explicit(&d->seq, pos + 1, memory_order_release);
}

static bool copy(const struct sl_denial_slot *d, uint64_t pos, struct sl_denial *out)
{
    if (atomic_load_explicit(&((struct sl_denial_slot *)d)->seq, memory_order_acquire) != pos + 1)
        return false;
    struct sl_denial_slot *m = (struct sl_denial_slot *)d;
    out->at_ns = atomic_load_explicit(&m->at_ns, memory_order_acquire);
    uint64_t rule = atomic_load_explicit(&m->rule, memory_order_acquire);
    out->rule = (int)(rule & (SL_DENIAL_DRY - 1));
    out->dry = rule & SL_DENIAL_DRY;
    out->key.rule = atomic_load_explicit(&m->w[0], memory_order_acquire);
    out->key.hi = atomic_load_explicit(&m->w[1], memory_order_acquire);
    out->key.lo = atomic_load_explicit(&m->w[2], memory_order_acquire);
    out->key.extra = atomic_load_explicit(&m->w[3], memory_order_acquire);
    return atomic_load_explicit(&m->seq, memory_order_relaxed) == pos + 1; /* after the acquires */
}

size_t sl_table_denials(const struct sl_table *t, uint64_t *from, struct sl_denial *out, size_t max,
                        uint64_t *lost)
{
    uint64_t head = atomic_load_explicit(&t->hdr->denials_head, memory_order_acquire);
    uint64_t pos = *from;
    if (head - pos > SL_DENIALS) { /* overwritten before we came */
        *lost += head - SL_DENIALS - pos;
        pos = head - SL_DENIALS;
    }
    size_t n = 0;
    for (; pos < head && n < max; pos++) {
        if (copy(&t->denials[pos % SL_DENIALS], pos, &out[n]))
            n++;
        else
            (*lost)++; /* being written, or already reused */
    }
    *from = pos;
    return n;
}

void sl_table_count_wait(struct sl_table *t, int rule, uint64_t now, uint64_t wait_ns)
{
    sl_table_count(t, rule, SL_C_DELAYED, 1);
    struct sl_rule_waits *w = &t->waits[rule];
    uint64_t i = atomic_fetch_add_explicit(&w->next, 1, memory_order_relaxed);
    atomic_store_explicit(&w->turn[i % SL_TURNS], now + wait_ns, memory_order_relaxed);
    atomic_fetch_add_explicit(&w->wait_ns_total, wait_ns, memory_order_relaxed);
}

void sl_table_queue(const struct sl_table *t, int rule, uint64_t now, uint32_t *waiting,
                    uint64_t *longest_ns, uint64_t *total_wait_ns)
{
    struct sl_rule_waits *w = &t->waits[rule];
    *waiting = 0;
    *longest_ns = 0;
    for (int i = 0; i < SL_TURNS; i++) {
        uint64_t turn = atomic_load_explicit(&w->turn[i], memory_order_relaxed);
        if (turn <= now) continue;
        (*waiting)++;
        if (turn - now > *longest_ns) *longest_ns = turn - now;
    }
    *total_wait_ns = atomic_load_explicit(&w->wait_ns_total, memory_order_relaxed);
}

unsigned sl_table_quota_marks(uint64_t used, uint64_t cost, uint64_t limit)
{
    static const unsigned pct[3] = {80, 90, 100};
    uint64_t before = used > cost ? used - cost : 0;
    unsigned marks = 0;
    for (int i = 0; i < 3; i++) {
        /* the threshold in requests, rounded up: 100 % is the last one */
        uint64_t at = (limit * pct[i] + 99) / 100;
        if (before < at && used >= at) marks |= 1u << i;
    }
    return marks;
}

void sl_table_note_quota(struct sl_table *t, int rule, uint64_t used, uint64_t cost, uint64_t limit)
{
    unsigned marks = sl_table_quota_marks(used, cost, limit);
    for (int i = 0; i < 3; i++)
        if (marks >> i & 1)
            atomic_fetch_add_explicit(&t->waits[rule].quota_crossed[i], 1, memory_order_relaxed);
}

void sl_table_quota_crossed(const struct sl_table *t, int rule, uint64_t out[3])
{
    struct sl_rule_waits *w = &t->waits[rule];
    for (int i = 0; i < 3; i++)
        out[i] = atomic_load_explicit(&w->quota_crossed[i], memory_order_relaxed);
}
