/* SPDX-License-Identifier: BSD-2-Clause */
/* limit.c - GCRA, sliding window counter and fixed window.
 *
 * GCRA (the Generic Cell Rate Algorithm, ITU-T I.371) is a token bucket
 * kept as one number: the theoretical arrival time (TAT) of the next
 * request if requests came exactly at the rate. A request of cost c passes
 * when TAT' = max(TAT, now) + c*T is no further ahead of now than the
 * burst allows: TAT' - now <= burst*T. T is kept in picoseconds so that
 * rates such as 3/s or 50/m do not drift by a whole nanosecond per request;
 * TAT is in nanoseconds of CLOCK_MONOTONIC, which every process on the host
 * shares.
 *
 * A clock that steps backwards (or a state written by a process whose
 * clock read was later than ours) must not cost more than an empty bucket:
 * a TAT further ahead than burst + slack is clamped to that.
 *
 * The sliding window counter (as in Cloudflare's and nginx's descriptions)
 * weights the previous window's count by the part of it still inside the
 * sliding window. We compare exactly in integers:
 *   prev*(W - elapsed) + (curr + cost)*W <= count*W
 * so no rounding lets an extra request through. The word and the test are
 * window.h's, shared with the cluster's fleet-wide counter. The fixed window keeps
 * [window:32][count:32] and permits the well-known double burst at the window edge; it is here
 * because operators ask for the semantics they know.
 */
#include "limit.h"
#include "limit_log.h"
#include "limit_gcra.h"
#include "window.h"

typedef sl_u128 u128;

#define M32 0xffffffffull

int sl_limit_init(struct sl_limit *l, enum sl_alg alg, uint64_t count, uint64_t period_ns,
                  uint64_t burst)
{
    if (count == 0 || period_ns == 0) return -1;
    l->alg = alg;
    l->count = count;
    l->period_ns = period_ns;
    l->burst = burst;
    l->interval_ps = 0;
    l->burst_ns = 0;
    l->cost1_ns = 0;
    switch (alg) {
    case SL_ALG_GCRA: {
        if (burst == 0) return -1;
        u128 ips = (u128)period_ns * 1000 / count;
        if (ips == 0 || ips > UINT64_MAX) return -1;
        l->interval_ps = (uint64_t)ips;
        u128 bns = (u128)burst * ips / 1000;
        if (bns == 0) bns = 1; /* see sl_gcra_cost_ns */
        if (bns > UINT64_MAX / 4) return -1;
        l->burst_ns = (uint64_t)bns;
        l->cost1_ns = ips >= 1000 ? (uint64_t)(ips / 1000) : 1;
        u128 q = ((u128)1000 << 64) / ips; /* < 2^74: ips >= 1 */
        l->per_ns_int = (uint64_t)(q >> 64);
        l->per_ns_frac = (uint64_t)q;
        return 0;
    }
    case SL_ALG_SLIDING:
        return count <= SL_SLIDING_MAX_COUNT ? 0 : -1;
    case SL_ALG_FIXED:
        return count <= SL_FIXED_MAX_COUNT ? 0 : -1;
    case SL_ALG_LOG:
        return count <= SL_LOG_MAX_COUNT ? 0 : -1;
    }
    return -1;
}

static void sliding_unpack(const struct sl_limit *l, uint64_t s, uint64_t now, uint64_t *prev,
                           uint64_t *curr)
{
    sl_win_counts(s, now / l->period_ns, prev, curr);
}

static void sliding_step(const struct sl_limit *l, uint64_t s, uint64_t now, uint64_t cost,
                         uint64_t *next, struct sl_verdict *v)
{
    const uint64_t W = l->period_ns, n = l->count, el = now % W;
    uint64_t prev, curr;
    sliding_unpack(l, s, now, &prev, &curr);
    v->limit = n;
    v->wait_ns = 0;
    v->retry_ns = 0;
    v->remaining = 0;
    v->allowed = sl_win_fits(prev, curr, el, W, n, cost, &v->remaining);
    if (v->allowed) {
        curr += cost;
        *next = sl_win_pack(now / W, prev, curr);
    } else {
        *next = s;
        v->retry_ns = sl_win_retry_ns(prev, curr, el, W, n, cost);
    }
    v->reset_ns = sl_win_reset_ns(prev, curr, el, W);
}

static void fixed_step(const struct sl_limit *l, uint64_t s, uint64_t now, uint64_t cost,
                       uint64_t *next, struct sl_verdict *v)
{
    const uint64_t W = l->period_ns;
    uint64_t cur = (now / W) & M32;
    uint64_t used = (s != 0 && (s >> 32) == cur) ? (s & M32) : 0;
    uint64_t left = W - now % W;

    v->limit = l->count;
    v->wait_ns = 0;
    if (used + cost <= l->count) {
        used += cost;
        v->allowed = true;
        v->retry_ns = 0;
        *next = cur << 32 | used;
    } else {
        v->allowed = false;
        v->retry_ns = cost > l->count ? UINT64_MAX / 4 : left;
        *next = s;
    }
    v->remaining = l->count - used;
    v->reset_ns = used ? left : 0;
}

void sl_limit_step(const struct sl_limit *l, uint64_t old, uint64_t now, uint64_t cost,
                   uint64_t slack_ns, uint64_t *next, struct sl_verdict *v)
{
    switch (l->alg) {
    case SL_ALG_GCRA:
        sl_gcra_step(l, old, now, cost, slack_ns, next, v);
        return;
    case SL_ALG_SLIDING:
        sliding_step(l, old, now, cost, next, v);
        return;
    case SL_ALG_FIXED:
        fixed_step(l, old, now, cost, next, v);
        return;
    case SL_ALG_LOG: /* decided on its log, never on a slot: a caller's mistake passes */
        *next = old;
        *v = (struct sl_verdict){.allowed = true, .limit = l->count};
        return;
    }
}

uint64_t sl_limit_take(const struct sl_limit *l, uint64_t tat, uint64_t now, uint64_t want,
                       uint64_t quantum, uint64_t *next, uint64_t *wait_ns)
{
    uint64_t horizon = now + l->burst_ns;
    uint64_t base = tat > now ? tat : now;
    /* base is past the horizon while earlier callers hold places in the
     * queue (see limit.h): nothing is there now */
    u128 avail = base < horizon ? (u128)(horizon - base) * 1000 / l->interval_ps : 0;
    uint64_t granted = avail < want ? (uint64_t)avail : want;
    uint64_t need = want < quantum ? want : quantum;
    if (need > l->burst) need = l->burst ? l->burst : 1;
    if (need == 0) need = 1;
    *wait_ns = 0;
    if (granted < need) {
        /* queue: take `need` at the far end now, usable once the bucket
         * has refilled up to it */
        *next = base + sl_gcra_cost_ns(l, need);
        *wait_ns = *next > horizon ? *next - horizon : 1;
        return need;
    }
    /* charge whole picoseconds rounded up, so grants never exceed the rate */
    u128 cost_ps = (u128)granted * l->interval_ps;
    *next = base + (uint64_t)((cost_ps + 999) / 1000);
    return granted;
}

uint64_t sl_limit_refund(const struct sl_limit *l, uint64_t s, uint64_t now, uint64_t cost)
{
    switch (l->alg) {
    case SL_ALG_GCRA: { /* a held TAT stays held (the bit is far above c) */
        uint64_t c = sl_gcra_cost_ns(l, cost);
        return (s & ~SL_GCRA_HELD) > c ? s - c : 0;
    }
    case SL_ALG_SLIDING: {
        uint64_t prev, curr;
        sliding_unpack(l, s, now, &prev, &curr);
        if (s == 0 || sl_win_diff(now / l->period_ns, sl_win_index(s)) != 0) return s;
        curr = curr > cost ? curr - cost : 0;
        return sl_win_pack(sl_win_index(s), prev, curr);
    }
    case SL_ALG_FIXED: {
        if (s == 0 || (s >> 32) != ((now / l->period_ns) & M32)) return s;
        uint64_t used = s & M32;
        used = used > cost ? used - cost : 0;
        return (s >> 32) << 32 | used;
    }
    case SL_ALG_LOG:
        return s;
    }
    return s;
}

bool sl_limit_idle(const struct sl_limit *l, uint64_t s, uint64_t now)
{
    if (s == 0) return true;
    switch (l->alg) {
    case SL_ALG_GCRA:
        return (s & ~SL_GCRA_HELD) <= now;
    case SL_ALG_SLIDING: {
        int64_t d = sl_win_diff(now / l->period_ns, sl_win_index(s));
        return d != 0 && d != 1;
    }
    case SL_ALG_FIXED:
        return (s >> 32) != ((now / l->period_ns) & M32);
    case SL_ALG_LOG:
        return true;
    }
    return false;
}
