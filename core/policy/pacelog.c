/* SPDX-License-Identifier: BSD-2-Clause */
/* pacelog.c - lines about paced decisions and, in verbose mode, about
 * every decision (see pacelog.h).
 *
 * The individual lines go through the logger's limiter like denials (a
 * flood of paced requests costs at most its 5 lines a second); a summary
 * is written past it (sl_log_state), since there is at most one per rule
 * and interval, and a denial flood must not swallow it.
 */
#include "pacelog.h"

#include <stdarg.h>
#include <stdio.h>

#include "../log.h"

/* this process's, per rule index, connects [0] and requests [1] apart */
static struct sl_pace paces[SL_MAX_RULES][2];

static void raise_to(_Atomic uint64_t *a, uint64_t v)
{
    uint64_t cur = atomic_load_explicit(a, memory_order_relaxed);
    while (cur < v && !atomic_compare_exchange_weak(a, &cur, v)) {
    }
}

unsigned sl_pace_step(struct sl_pace *p, uint64_t now, uint64_t wait_ns, struct sl_pace_report *r)
{
    unsigned say = 0;
    uint64_t s = atomic_load_explicit(&p->start, memory_order_acquire);
    if (s == 0) {
        atomic_compare_exchange_strong(&p->start, &s, now); /* or another thread did */
    } else if (now >= s + SL_PACE_INTERVAL_NS && /* a thread's older `now` closes nothing */
               atomic_compare_exchange_strong(&p->start, &s, now)) {
        /* this thread closes the interval [s, now) */
        uint64_t n = atomic_exchange(&p->count, 0);
        uint64_t u = atomic_exchange(&p->unlogged, 0);
        uint64_t l = atomic_exchange(&p->longest, 0);
        if (u) {
            *r = (struct sl_pace_report){.count = n, .longest_ns = l, .span_ns = now - s};
            say |= SL_PACE_SUMMARY;
        } else {
            atomic_store(&p->firsts, 0); /* every one was told: a new spell */
        }
    }
    atomic_fetch_add_explicit(&p->count, 1, memory_order_relaxed);
    raise_to(&p->longest, wait_ns);
    if (atomic_load_explicit(&p->firsts, memory_order_relaxed) < SL_PACE_FIRST &&
        atomic_fetch_add(&p->firsts, 1) < SL_PACE_FIRST)
        say |= SL_PACE_LINE;
    else
        atomic_fetch_add_explicit(&p->unlogged, 1, memory_order_relaxed);
    return say;
}

void sl_decision_log(const struct sl_config *c, enum sl_log_level level, const char *fmt, ...)
{
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (sl_decisions_verbose(c))
        sl_log_state(level, "%s", line);
    else
        sl_log(level, "%s", line);
}

void sl_pace_log(const struct sl_config *c, int rule, bool request, const char *what,
                 uint64_t wait_ns, uint64_t now)
{
    if (rule < 0 || rule >= SL_MAX_RULES) return;
    const char *name = c->rules[rule].name;
    struct sl_pace_report r;
    unsigned say = sl_pace_step(&paces[rule][request], now, wait_ns, &r);
    if (say & SL_PACE_SUMMARY)
        sl_log_state(SL_LOG_INFO,
                     "rule \"%s\": %llu %s paced in the last %.0f s, longest wait %.1f s", name,
                     (unsigned long long)r.count, request ? "requests" : "connects",
                     (double)r.span_ns / 1e9, (double)r.longest_ns / 1e9);
    if ((say & SL_PACE_LINE) || sl_decisions_verbose(c))
        sl_decision_log(c, SL_LOG_INFO, "rule \"%s\": paced %s %s (waits %llu ms)", name,
                        request ? "a request" : "a connect", what,
                        (unsigned long long)(wait_ns / 1000000));
}
