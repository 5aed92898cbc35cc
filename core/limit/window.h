/* SPDX-License-Identifier: BSD-2-Clause */
/* window.h - the sliding window counter's word and its exact test, shared
 * by limit.c (one host), cluster.c and redis_state.c (counts summed over a
 * fleet).
 *
 * A word is [window:24][prev:20][curr:20]: the index of the newest window
 * it counts (mod 2^24) and the counts of that window and the one before.
 * 0 is a fresh word. The estimate over a sliding window of length W at
 * `el` ns into the current window is prev*(W-el)/W + curr; a request of
 * `cost` passes when, compared exactly in integers,
 *     prev*(W - el) + (curr + cost)*W <= n*W
 * so no rounding ever lets an extra request through.
 */
#ifndef SL_WINDOW_H
#define SL_WINDOW_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "../verdict.h"

#define SL_WIN_COUNT_MASK ((1ull << 20) - 1)
#define SL_WIN_INDEX_MASK ((1ull << 24) - 1)
#define SL_WIN_NEVER      (UINT64_MAX / 4) /* retry_ns of a request that can never pass */

typedef unsigned __int128 sl_u128;

/* Counts above 2^20-1 are clamped (limits are at most that). */
static inline uint64_t sl_win_pack(uint64_t window, uint64_t prev, uint64_t curr)
{
    if (prev > SL_WIN_COUNT_MASK) prev = SL_WIN_COUNT_MASK;
    if (curr > SL_WIN_COUNT_MASK) curr = SL_WIN_COUNT_MASK;
    return (window & SL_WIN_INDEX_MASK) << 40 | prev << 20 | curr;
}

static inline uint64_t sl_win_index(uint64_t s)
{
    return s >> 40;
}

static inline uint64_t sl_win_prev(uint64_t s)
{
    return (s >> 20) & SL_WIN_COUNT_MASK;
}

static inline uint64_t sl_win_curr(uint64_t s)
{
    return s & SL_WIN_COUNT_MASK;
}

/* a - b for 24-bit window indexes, as a signed distance. */
static inline int64_t sl_win_diff(uint64_t a, uint64_t b)
{
    int64_t d = (int64_t)((a - b) & SL_WIN_INDEX_MASK);
    return d >= (1 << 23) ? d - (1 << 24) : d;
}

/* The word's counts for windows cur-1 and cur (0 for windows it does not
 * hold; a word for a later window than cur counts nothing). */
static inline void sl_win_counts(uint64_t s, uint64_t cur, uint64_t *prev, uint64_t *curr)
{
    *prev = *curr = 0;
    if (s == 0) return;
    int64_t d = sl_win_diff(cur, sl_win_index(s));
    if (d == 0) {
        *prev = sl_win_prev(s);
        *curr = sl_win_curr(s);
    } else if (d == 1) {
        *prev = sl_win_curr(s);
    }
}

/* The exact test above; on success *remaining is what could still pass. */
static inline bool sl_win_fits(uint64_t prev, uint64_t curr, uint64_t el, uint64_t W, uint64_t n,
                               uint64_t cost, uint64_t *remaining)
{
    sl_u128 used = (sl_u128)prev * (W - el) + (sl_u128)(curr + cost) * W;
    sl_u128 cap = (sl_u128)n * W;
    if (used > cap) return false;
    *remaining = (uint64_t)((cap - used) / W);
    return true;
}

/* A denied request: how long until it would pass, if nothing else came. */
static inline uint64_t sl_win_retry_ns(uint64_t prev, uint64_t curr, uint64_t el, uint64_t W,
                                       uint64_t n, uint64_t cost)
{
    if (cost > n) return SL_WIN_NEVER;
    if (curr + cost <= n && prev) { /* later in this window, as prev's weight decays */
        uint64_t at = W - (uint64_t)((sl_u128)(n - curr - cost) * W / prev);
        return at > el ? at - el : 1;
    }
    /* the next window, where curr becomes prev */
    uint64_t at = curr ? W - (uint64_t)((sl_u128)(n - cost) * W / curr) : 0;
    return (W - el) + at;
}

/* How long until the counts are all out of the sliding window. */
static inline uint64_t sl_win_reset_ns(uint64_t prev, uint64_t curr, uint64_t el, uint64_t W)
{
    return curr ? (W - el) + W : prev ? W - el : 0;
}

/* A fleet's decision on this host's own word *word, given the rest of the
 * fleet's counts P and C for windows cur-1 and cur, `el` ns into window
 * cur of W ns, n allowed: takes `cost` into the word with a compare-and-
 * swap loop when the sum fits (a word a window ahead, after the clock
 * stepped back, keeps counting into its own window). Returns true with the
 * window counted into and its new count in *win and *count; false for a
 * denial. *v is the verdict either way. */
static inline bool sl_win_take_fleet(_Atomic uint64_t *word, uint64_t cur, uint64_t P, uint64_t C,
                                     uint64_t el, uint64_t W, uint64_t n, uint64_t cost,
                                     struct sl_verdict *v, uint64_t *win, uint64_t *count)
{
    uint64_t own = atomic_load_explicit(word, memory_order_relaxed);
    uint64_t op, oc, ocur, remaining;
    for (;;) {
        ocur = own && sl_win_diff(sl_win_index(own), cur) > 0
                   ? cur + (uint64_t)sl_win_diff(sl_win_index(own), cur)
                   : cur;
        sl_win_counts(own, ocur, &op, &oc);
        if (oc + cost > SL_WIN_COUNT_MASK ||
            !sl_win_fits(P + op, C + oc, el, W, n, cost, &remaining))
            break;
        uint64_t next = sl_win_pack(ocur, op, oc + cost);
        if (atomic_compare_exchange_weak_explicit(word, &own, next, memory_order_relaxed,
                                                  memory_order_relaxed)) {
            *v = (struct sl_verdict){
                .allowed = true, .remaining = remaining, .limit = n, .reset_ns = (W - el) + W};
            *win = ocur;
            *count = oc + cost;
            return true;
        }
    }
    /* denied: when would it pass, if nothing else happened? */
    uint64_t prev = P + op, curr = C + oc;
    *v = (struct sl_verdict){.allowed = false,
                             .limit = n,
                             .retry_ns = sl_win_retry_ns(prev, curr, el, W, n, cost),
                             .reset_ns = sl_win_reset_ns(prev, curr, el, W)};
    return false;
}

#endif
