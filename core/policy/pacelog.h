/* SPDX-License-Identifier: BSD-2-Clause */
/* pacelog.h - what sluice says about the decisions it makes: pacing made
 * visible, and every decision in verbose mode (`log_level = debug`, which
 * `sluice run --verbose` sets).
 *
 * A paced decision (action = delay: a request or connect held for its turn)
 * is logged at info: the first SL_PACE_FIRST of a spell one line each, then
 * one summary per rule and SL_PACE_INTERVAL_NS ("rule "api": 120 requests
 * paced in the last 10 s, longest wait 1.2 s"), written by the first paced
 * decision after the interval ends. An interval with nothing beyond the
 * first lines ends the spell: the next pacing is told line by line again.
 * State is per process and per rule; the step itself takes `now`.
 */
#ifndef SL_PACELOG_H
#define SL_PACELOG_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "../rule.h"

#define SL_PACE_FIRST       10u
#define SL_PACE_INTERVAL_NS 10000000000ull

struct sl_pace {
    _Atomic uint64_t start;    /* when the current interval began (0: none yet) */
    _Atomic uint64_t count;    /* paced in it */
    _Atomic uint64_t unlogged; /* of those, not told line by line */
    _Atomic uint64_t longest;  /* the longest wait in it, ns */
    _Atomic uint32_t firsts;   /* lines written in this spell */
};

struct sl_pace_report {
    uint64_t count, longest_ns, span_ns;
};

enum { SL_PACE_LINE = 1, SL_PACE_SUMMARY = 2 };

/* Counts one decision paced by wait_ns at now; returns SL_PACE_LINE when it
 * deserves a line of its own, with SL_PACE_SUMMARY when the interval before
 * it ended and *r says what it held. Thread-safe: one thread reports an
 * interval (the one whose compare-and-swap moves `start`). */
unsigned sl_pace_step(struct sl_pace *p, uint64_t now, uint64_t wait_ns, struct sl_pace_report *r);

/* Logs a paced decision of rule `rule` (an index of the configuration), a
 * request or a connect, `what` saying which ("from 127.0.0.1 key #3fa9c1"). */
void sl_pace_log(const struct sl_config *c, int rule, bool request, const char *what,
                 uint64_t wait_ns, uint64_t now);

/* Verbose mode: the configuration asks for every decision. */
static inline bool sl_decisions_verbose(const struct sl_config *c)
{
    return c->log_level >= SL_LOG_DEBUG;
}

/* A decision's line at `level`: through the limiter normally, each one
 * written in verbose mode (a first try wants to see them all). */
void sl_decision_log(const struct sl_config *c, enum sl_log_level level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
