/* SPDX-License-Identifier: BSD-2-Clause */
/* table_plans.c - quota use per plan (see table_plans.h), in the table's
 * plan region: SL_TABLE_PLANS entries, found by open addressing on a hash
 * of (rule entry, plan name), and each thread's stripe of counters.
 *
 * An entry is made as a rule entry is (table.c): CAS its key from 0 to 1
 * (being made), fill it, publish the key (release); a decision then finds
 * it in the first line it reads, which only changes once per window.
 *
 * The current window's counts are words tagged with their window (the low
 * 16 bits of its end in wall seconds, which differ between a window and
 * the next for days and months alike): the first request of a new window
 * on a stripe replaces the old count in the same CAS that adds to it, so
 * no request is lost or counted twice at a renewal and nothing has to
 * reset the counts. A reader adds the words whose tag is the latest
 * window's, and none once that window has ended.
 */
#include "table_plans.h"

#include <stdatomic.h>
#include <stdio.h>

#include "table_int.h"

#define TAG_SHIFT   48
#define COUNT_MASK  ((1ull << TAG_SHIFT) - 1)
#define MAKING      1ull
#define MAKING_SPIN 1000 /* reads of an entry being made before it is passed by */

static uint64_t entry_key(int rule, uint64_t id)
{
    uint64_t h = (id ^ ((uint64_t)rule + 1) * 0x9e3779b97f4a7c15ull) * 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    return h > MAKING ? h : h + 2; /* never free (0) nor being made (1) */
}

int sl_table_plan_entries(void)
{
    return SL_TABLE_PLANS;
}

int sl_table_plan(struct sl_table *t, int rule, uint64_t id, const char *name, uint64_t quota,
                  enum sl_quota_window window)
{
    if (rule < 0) return -1;
    uint64_t key = entry_key(rule, id);
    for (uint32_t n = 0; n < SL_TABLE_PLANS; n++) {
        uint32_t i = (uint32_t)((key + n) % SL_TABLE_PLANS);
        struct sl_plan_entry *e = &t->plans[i];
        uint64_t cur = atomic_load_explicit(&e->key, memory_order_acquire);
        if (cur == 0) {
            if (atomic_compare_exchange_strong(&e->key, &cur, MAKING)) {
                atomic_store_explicit(&e->rule, (uint32_t)rule, memory_order_relaxed);
                atomic_store_explicit(&e->window, (uint32_t)window, memory_order_relaxed);
                atomic_store_explicit(&e->quota, quota, memory_order_relaxed);
                snprintf(e->name, sizeof e->name, "%s", name);
                atomic_store_explicit(&e->key, key, memory_order_release);
                return (int)i;
            }
        }
        /* another process is making it: its own key, most likely */
        for (int s = 0; cur == MAKING && s < MAKING_SPIN; s++)
            cur = atomic_load_explicit(&e->key, memory_order_acquire);
        if (cur != key) continue;
        /* a reload may change the plan's quota: readers show the latest */
        if (atomic_load_explicit(&e->quota, memory_order_relaxed) != quota)
            atomic_store_explicit(&e->quota, quota, memory_order_relaxed);
        if (atomic_load_explicit(&e->window, memory_order_relaxed) != (uint32_t)window)
            atomic_store_explicit(&e->window, (uint32_t)window, memory_order_relaxed);
        return (int)i;
    }
    return -1;
}

/* Adds n to a word of window `tag`, or starts it at n for that window. */
static void tagged_add(_Atomic uint64_t *w, uint64_t tag, uint64_t n)
{
    uint64_t old = atomic_load_explicit(w, memory_order_relaxed), next;
    do
        next = old >> TAG_SHIFT == tag ? old + n : tag << TAG_SHIFT | n;
    while (!atomic_compare_exchange_weak_explicit(w, &old, next, memory_order_relaxed,
                                                  memory_order_relaxed));
}

static uint64_t tagged_count(const _Atomic uint64_t *w, uint64_t tag)
{
    uint64_t v = atomic_load_explicit((_Atomic uint64_t *)w, memory_order_relaxed);
    return v >> TAG_SHIFT == tag ? v & COUNT_MASK : 0;
}

static uint64_t tag_of(uint64_t window_end_s)
{
    return window_end_s & 0xffff;
}

static struct sl_plan_stripe *my_stripe(struct sl_table *t, int plan)
{
    return &t->plan_stripes[sl_table_stripe() * SL_TABLE_PLANS + (unsigned)plan];
}

void sl_table_plan_admit(struct sl_table *t, int plan, uint64_t used, uint64_t cost, uint64_t limit,
                         uint64_t window_end_s)
{
    if (plan < 0 || plan >= SL_TABLE_PLANS) return;
    struct sl_plan_entry *e = &t->plans[plan];
    struct sl_plan_stripe *s = my_stripe(t, plan);
    atomic_fetch_add_explicit(&s->admitted, 1, memory_order_relaxed);
    uint64_t latest = atomic_load_explicit(&e->win_end_s, memory_order_relaxed);
    while (window_end_s > latest &&
           !atomic_compare_exchange_weak_explicit(&e->win_end_s, &latest, window_end_s,
                                                  memory_order_relaxed, memory_order_relaxed))
        ;
    bool current = window_end_s >= latest; /* else an older window's: counted ever only */
    uint64_t tag = tag_of(window_end_s);
    if (current) tagged_add(&s->used, tag, cost);
    unsigned marks = sl_table_quota_marks(used, cost, limit);
    for (int i = 0; i < 3; i++) {
        if (!(marks >> i & 1)) continue;
        atomic_fetch_add_explicit(&e->reached[i], 1, memory_order_relaxed);
        if (current) tagged_add(&e->win_reached[i], tag, 1);
    }
}

void sl_table_plan_refuse(struct sl_table *t, int plan)
{
    if (plan < 0 || plan >= SL_TABLE_PLANS) return;
    atomic_fetch_add_explicit(&my_stripe(t, plan)->refused, 1, memory_order_relaxed);
}

bool sl_table_plan_use(const struct sl_table *t, int i, uint64_t wall_s, struct sl_plan_use *out)
{
    if (i < 0 || i >= SL_TABLE_PLANS) return false;
    struct sl_plan_entry *e = &t->plans[i];
    if (atomic_load_explicit(&e->key, memory_order_acquire) <= MAKING) return false;
    *out = (struct sl_plan_use){
        .rule = (int)atomic_load_explicit(&e->rule, memory_order_relaxed),
        .quota = atomic_load_explicit(&e->quota, memory_order_relaxed),
        .window = (enum sl_quota_window)atomic_load_explicit(&e->window, memory_order_relaxed),
        .window_end_s = atomic_load_explicit(&e->win_end_s, memory_order_relaxed),
    };
    snprintf(out->name, sizeof out->name, "%.*s", (int)sizeof e->name, e->name);
    bool live = out->window_end_s > wall_s;
    uint64_t tag = tag_of(out->window_end_s);
    for (unsigned s = 0; s < SL_STRIPES; s++) {
        struct sl_plan_stripe *ps = &t->plan_stripes[s * SL_TABLE_PLANS + (unsigned)i];
        out->admitted += atomic_load_explicit(&ps->admitted, memory_order_relaxed);
        out->refused += atomic_load_explicit(&ps->refused, memory_order_relaxed);
        if (live) out->used += tagged_count(&ps->used, tag);
    }
    for (int k = 0; k < 3; k++) {
        out->reached[k] = atomic_load_explicit(&e->reached[k], memory_order_relaxed);
        if (live) out->keys[k] = tagged_count(&e->win_reached[k], tag);
    }
    return true;
}
