/* SPDX-License-Identifier: BSD-2-Clause */
/* learn.h - what a vendor's response head says about its own limits
 * (outbound rules with `learn = yes`, issue 35).
 *
 * The fields read, by header name (case-insensitive):
 *   Retry-After                      delta-seconds or an HTTP-date (RFC 9110 10.2.3:
 *                                    IMF-fixdate, RFC 850, asctime)
 *   retry-after-ms                   milliseconds (OpenAI, Azure), decimals allowed
 *   RateLimit                        draft-ietf-httpapi-ratelimit-headers: `"name";r=0;t=30`
 *                                    (several items: the one with least remaining), or
 *                                    the older `limit=100, remaining=0, reset=30`
 *   RateLimit-Policy                 `"name";q=100;w=60` (read, kept)
 *   RateLimit-Remaining / -Reset     the older drafts' pair, reset in seconds
 *   x-ratelimit-remaining-requests   OpenAI, with x-ratelimit-reset-requests as a Go
 *                                    duration (6m0s, 1.5s, 20ms); Azure's -1 ignored
 *   anthropic-ratelimit-requests-remaining, -requests-reset   Anthropic, RFC 3339 time
 *   x-ratelimit-remaining / x-ratelimit-reset   GitHub, reset in UNIX epoch seconds (a
 *                                    value below 10^9 is read as seconds from now)
 *
 * What is learned (sl_learn_decide): a 429 or 503 with Retry-After (or
 * retry-after-ms) means no call before then; any response saying 0
 * requests remain, with a reset, means none before the reset; a response
 * saying N > 0 remain for T more (the same fields) spreads them: the next
 * call no sooner than T/N after this answer. The latest of these wins.
 *
 * Why a gap from the answer, and not a bucket refilled N over T: the
 * table keeps one word per key, the GCRA time of the rule's own rate, and
 * a hold can only push that time, not change the rate. Every answer
 * carries the vendor's fresh N and T, so a gap per answer tracks the
 * vendor's window as it goes (N-1 for T-T/N after the next call: the same
 * gap again), with no new state; measured from the answer rather than
 * from the call, it is longer by the round trip, never shorter (only ever
 * stricter). Calls already in flight when an answer arrives were let go
 * before it: k processes calling at once go about k at a time per gap.
 * A spread of T/N below the rule's own gap changes nothing.
 *
 * A value that cannot be read, a time in the past, or one more than
 * SL_LEARN_ABSURD_NS ahead (an epoch written as a delay) is ignored and
 * counted; a wait beyond the caller's cap (learn_max) is capped, a
 * spread's as a hold's.
 *
 * Pure functions: no clock, no allocation; the wall time is a parameter.
 */
#ifndef SL_LEARN_H
#define SL_LEARN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define SL_LEARN_ABSURD_NS (366ull * 86400 * 1000000000ull) /* a year and a day */

/* A time a field gave: none, relative to the response, absolute (UNIX
 * ns), or unreadable. */
enum sl_learn_when_kind { SL_WHEN_NONE, SL_WHEN_REL, SL_WHEN_ABS, SL_WHEN_BAD };

struct sl_learn_when {
    enum sl_learn_when_kind kind;
    int64_t ns;
};

/* The families of "N remaining, reset at T" fields. */
enum sl_learn_family {
    SL_FAM_RATELIMIT, /* IETF RateLimit */
    SL_FAM_RL_PAIR,   /* RateLimit-Remaining + RateLimit-Reset */
    SL_FAM_OPENAI,
    SL_FAM_ANTHROPIC,
    SL_FAM_GITHUB,
    SL_FAM_N
};

/* What one response head said, field by field. */
struct sl_learn_resp {
    int status;
    struct sl_learn_when retry_after, retry_after_ms;
    struct {
        int64_t remaining; /* -1: not given (or a placeholder) */
        struct sl_learn_when reset;
    } fam[SL_FAM_N];
    uint64_t policy_q, policy_w; /* RateLimit-Policy (0: none) */
    uint32_t bad;                /* fields read that held no value sluice understands */
    bool any;                    /* some field read */
};

void sl_learn_resp_init(struct sl_learn_resp *f, int status);

/* One header of the response (name and value as on the wire; blanks
 * around the value are trimmed). Returns whether the name is one read. */
bool sl_learn_header(struct sl_learn_resp *f, const char *name, size_t nlen, const char *value,
                     size_t vlen);

/* Why a field taught nothing. */
enum sl_learn_ignored { SL_IGN_NONE, SL_IGN_BAD, SL_IGN_PAST, SL_IGN_ABSURD };

struct sl_learned {
    uint64_t wait_ns;  /* 0: nothing to hold; else how long from now, capped */
    uint64_t asked_ns; /* what the field asked for, before the cap */
    bool capped;
    const char *field; /* the header the wait came from */
    bool spread;       /* the wait is a spread: `left` remain for window_ns, wait = window/left */
    int64_t left;
    uint64_t window_ns;
    uint32_t ignored; /* fields ignored (unreadable, past, absurd) */
    enum sl_learn_ignored why;
    const char *ignored_field; /* one of them, for the log */
};

/* The fields a wait can come from (sl_learned.field names one), as a
 * number the shared table keeps (core/limit/table_learned.h) and readers
 * name again: `sluice stats`, metrics, the live page. */
enum sl_learn_field {
    SL_LF_UNKNOWN,
    SL_LF_RETRY_AFTER,
    SL_LF_RETRY_AFTER_MS,
    SL_LF_RATELIMIT,
    SL_LF_RATELIMIT_REMAINING,
    SL_LF_RATELIMIT_RESET,
    SL_LF_OPENAI_REMAINING,
    SL_LF_OPENAI_RESET,
    SL_LF_ANTHROPIC_REMAINING,
    SL_LF_ANTHROPIC_RESET,
    SL_LF_GITHUB_REMAINING,
    SL_LF_GITHUB_RESET,
    SL_LF_N
};

static inline const char *sl_learn_field_name(unsigned f)
{
    static const char *const names[SL_LF_N] = {
        "?",
        "retry-after",
        "retry-after-ms",
        "ratelimit",
        "ratelimit-remaining",
        "ratelimit-reset",
        "x-ratelimit-remaining-requests",
        "x-ratelimit-reset-requests",
        "anthropic-ratelimit-requests-remaining",
        "anthropic-ratelimit-requests-reset",
        "x-ratelimit-remaining",
        "x-ratelimit-reset",
    };
    return f < SL_LF_N ? names[f] : names[0];
}

/* The number of a field name sl_learn_decide gave (sl_learned.field);
 * SL_LF_UNKNOWN for any other. Runs once per learned hold, not per call. */
static inline enum sl_learn_field sl_learn_field_of(const char *name)
{
    for (unsigned f = 1; name && f < SL_LF_N; f++)
        if (strcmp(sl_learn_field_name(f), name) == 0) return (enum sl_learn_field)f;
    return SL_LF_UNKNOWN;
}

/* What the response teaches at wall time now_wall_ns (UNIX ns), a wait
 * capped at cap_ns. True when out->wait_ns is set (> 0). */
bool sl_learn_decide(const struct sl_learn_resp *f, int64_t now_wall_ns, uint64_t cap_ns,
                     struct sl_learned *out);

/* Whether a spread (o->spread) says more than the rule's own limit does:
 * false when the rule cannot send more than the N left within the T
 * anyway (`at_once` requests at once, its burst or a fresh window's
 * count, then `count` per `period_ns`, each call costing `cost`). Such a
 * spread is not held: a hold gives up the rule's burst, and a vendor
 * saying plenty is left must not make the rule stricter than it is. */
bool sl_learn_spread_needed(const struct sl_learned *o, uint64_t at_once, uint64_t count,
                            uint64_t period_ns, uint64_t cost);

/* The value parsers (tests, fuzzing). Each reads exactly the n bytes. */
bool sl_learn_parse_count(const char *v, size_t n, int64_t *count);
bool sl_learn_parse_delta(const char *v, size_t n, uint64_t *ns);
bool sl_learn_parse_ms(const char *v, size_t n, uint64_t *ns);
bool sl_learn_parse_http_date(const char *v, size_t n, int64_t *unix_ns);
bool sl_learn_parse_go_duration(const char *v, size_t n, uint64_t *ns);
bool sl_learn_parse_rfc3339(const char *v, size_t n, int64_t *unix_ns);
bool sl_learn_parse_epoch(const char *v, size_t n, int64_t *unix_ns);
/* IETF RateLimit: the item with the least remaining (r), its t. */
bool sl_learn_parse_ratelimit(const char *v, size_t n, int64_t *remaining, uint64_t *reset_ns);
/* IETF RateLimit-Policy: the first item's q and w. */
bool sl_learn_parse_policy(const char *v, size_t n, uint64_t *q, uint64_t *w_s);

#endif
