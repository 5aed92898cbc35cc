/* SPDX-License-Identifier: BSD-2-Clause */
/* learn.c - a vendor's rate-limit fields (see learn.h).
 *
 * Every number is read with saturating arithmetic: a value too large for
 * 64 bits becomes a time far beyond SL_LEARN_ABSURD_NS, which decide
 * then ignores, so no input overflows. Times are kept as signed ns, at
 * most SAT (about 73 years from the epoch or from now): what lies beyond
 * is absurd anyway.
 */
#include "learn.h"

#include <string.h>
#include <strings.h>

#define NS  1000000000ll
#define SAT (INT64_MAX / 4)

static const char *skip_ows(const char *p, const char *end)
{
    while (p < end && (*p == ' ' || *p == '\t'))
        p++;
    return p;
}

/* 1 or more digits at *p (at most max of them when max > 0), saturating
 * at SAT. */
static bool digits(const char **p, const char *end, int64_t *v, int max)
{
    const char *s = *p;
    int64_t x = 0;
    while (*p < end && **p >= '0' && **p <= '9' && (max <= 0 || *p - s < max)) {
        x = x > SAT / 10 ? SAT : x * 10 + (**p - '0');
        if (x > SAT) x = SAT;
        (*p)++;
    }
    *v = x;
    return *p > s;
}

/* Up to 9 fraction digits after a '.', as ns of one unit of `unit` ns;
 * further digits are read and dropped. */
static int64_t fraction(const char **p, const char *end, int64_t unit)
{
    int64_t f = 0, scale = 1;
    for (; *p < end && **p >= '0' && **p <= '9'; (*p)++)
        if (scale < NS) {
            f = f * 10 + (**p - '0');
            scale *= 10;
        }
    return (int64_t)((__int128)f * unit / scale);
}

static int64_t sat_add(int64_t a, int64_t b)
{
    return a > SAT - b ? SAT : a + b;
}

static int64_t sat_mul(int64_t a, int64_t b)
{
    return b && a > SAT / b ? SAT : a * b;
}

bool sl_learn_parse_count(const char *v, size_t n, int64_t *count)
{
    const char *p = v, *end = v + n;
    return digits(&p, end, count, 0) && p == end;
}

bool sl_learn_parse_delta(const char *v, size_t n, uint64_t *ns)
{
    const char *p = v, *end = v + n;
    int64_t s;
    if (!digits(&p, end, &s, 0) || p != end) return false;
    *ns = (uint64_t)sat_mul(s, NS);
    return true;
}

bool sl_learn_parse_ms(const char *v, size_t n, uint64_t *ns)
{
    const char *p = v, *end = v + n;
    int64_t ms;
    if (!digits(&p, end, &ms, 0)) return false;
    int64_t x = sat_mul(ms, 1000000);
    if (p < end && *p == '.') {
        p++;
        x = sat_add(x, fraction(&p, end, 1000000));
    }
    if (p != end) return false;
    *ns = (uint64_t)x;
    return true;
}

/* Days from 1970-01-01 to y-m-d (proleptic Gregorian; Howard Hinnant's
 * days_from_civil). */
static int64_t days_from_civil(int64_t y, int64_t m, int64_t d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

static bool valid_date(int64_t y, int64_t mo, int64_t d)
{
    static const int mdays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (y < 1970 || y > 9999 || mo < 1 || mo > 12 || d < 1 || d > mdays[mo - 1]) return false;
    bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    return mo != 2 || d <= 28 || leap;
}

/* UNIX ns of a date and time of day; false when out of range. */
static bool unix_ns(int64_t y, int64_t mo, int64_t d, int64_t h, int64_t mi, int64_t s,
                    int64_t *out)
{
    if (!valid_date(y, mo, d) || h > 23 || mi > 59 || s > 60) return false;
    int64_t secs = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + s;
    *out = sat_mul(secs, NS);
    return true;
}

static bool lit(const char **p, const char *end, const char *s)
{
    size_t n = strlen(s);
    if ((size_t)(end - *p) < n || strncasecmp(*p, s, n) != 0) return false;
    *p += n;
    return true;
}

static bool num(const char **p, const char *end, int width, int64_t *v)
{
    const char *s = *p;
    return digits(p, end, v, width) && *p - s == width;
}

static int month_of(const char **p, const char *end)
{
    static const char *const names[] = {"jan", "feb", "mar", "apr", "may", "jun",
                                        "jul", "aug", "sep", "oct", "nov", "dec"};
    for (int i = 0; i < 12; i++)
        if (lit(p, end, names[i])) return i + 1;
    return 0;
}

static bool clock_of(const char **p, const char *end, int64_t *h, int64_t *mi, int64_t *s)
{
    return num(p, end, 2, h) && lit(p, end, ":") && num(p, end, 2, mi) && lit(p, end, ":") &&
           num(p, end, 2, s);
}

bool sl_learn_parse_http_date(const char *v, size_t n, int64_t *out)
{
    const char *p = v, *end = v + n, *name = p;
    while (p < end && ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z')))
        p++;
    if (p - name < 3 || p - name > 9) return false;
    int64_t y, mo, d, h, mi, s;
    if (lit(&p, end, ",")) {
        if (!lit(&p, end, " ") || !num(&p, end, 2, &d)) return false;
        if (lit(&p, end, " ")) { /* IMF-fixdate: Sun, 06 Nov 1994 08:49:37 GMT */
            if (!(mo = month_of(&p, end)) || !lit(&p, end, " ") || !num(&p, end, 4, &y))
                return false;
        } else if (lit(&p, end, "-")) { /* RFC 850: Sunday, 06-Nov-94 08:49:37 GMT */
            if (!(mo = month_of(&p, end)) || !lit(&p, end, "-") || !num(&p, end, 2, &y))
                return false;
            y += y < 70 ? 2000 : 1900;
        } else {
            return false;
        }
        if (!lit(&p, end, " ") || !clock_of(&p, end, &h, &mi, &s) || !lit(&p, end, " GMT"))
            return false;
    } else { /* asctime: Sun Nov  6 08:49:37 1994 */
        if (!lit(&p, end, " ") || !(mo = month_of(&p, end)) || !lit(&p, end, " ")) return false;
        if (lit(&p, end, " ")) {
            if (!num(&p, end, 1, &d)) return false;
        } else if (!num(&p, end, 2, &d)) {
            return false;
        }
        if (!lit(&p, end, " ") || !clock_of(&p, end, &h, &mi, &s) || !lit(&p, end, " ") ||
            !num(&p, end, 4, &y))
            return false;
    }
    return p == end && unix_ns(y, mo, d, h, mi, s, out);
}

bool sl_learn_parse_rfc3339(const char *v, size_t n, int64_t *out)
{
    const char *p = v, *end = v + n;
    int64_t y, mo, d, h, mi, s, t;
    if (!num(&p, end, 4, &y) || !lit(&p, end, "-") || !num(&p, end, 2, &mo) || !lit(&p, end, "-") ||
        !num(&p, end, 2, &d))
        return false;
    if (!lit(&p, end, "T") && !lit(&p, end, " ")) return false;
    if (!clock_of(&p, end, &h, &mi, &s)) return false;
    int64_t frac = 0;
    if (lit(&p, end, ".")) {
        const char *f = p;
        frac = fraction(&p, end, NS);
        if (p == f) return false;
    }
    int64_t off = 0;
    if (!lit(&p, end, "Z")) {
        if (p >= end || (*p != '+' && *p != '-')) return false;
        int sign = *p++ == '-' ? -1 : 1;
        int64_t oh, om;
        if (!num(&p, end, 2, &oh) || !lit(&p, end, ":") || !num(&p, end, 2, &om) || oh > 23 ||
            om > 59)
            return false;
        off = sign * (oh * 3600 + om * 60) * NS;
    }
    if (p != end || !unix_ns(y, mo, d, h, mi, s, &t)) return false;
    t = t + frac - off;
    *out = t < 0 ? 0 : t > SAT ? SAT : t; /* before 1970: in the past all the same */
    return true;
}

bool sl_learn_parse_epoch(const char *v, size_t n, int64_t *out)
{
    const char *p = v, *end = v + n;
    int64_t s;
    if (!digits(&p, end, &s, 0)) return false;
    int64_t x = sat_mul(s, NS);
    if (p < end && *p == '.') {
        p++;
        x = sat_add(x, fraction(&p, end, NS));
    }
    if (p != end) return false;
    *out = x;
    return true;
}

bool sl_learn_parse_go_duration(const char *v, size_t n, uint64_t *ns)
{
    static const struct {
        const char *name;
        int64_t ns;
    } units[] = {
        /* longest first: "ms" before "m" */
        {"ns", 1},       {"us", 1000}, {"\xc2\xb5s", 1000}, {"\xce\xbcs", 1000},
        {"ms", 1000000}, {"s", NS},    {"m", 60 * NS},      {"h", 3600 * NS},
    };
    const char *p = v, *end = v + n;
    if (p < end && *p == '+') p++;
    if (end - p == 1 && *p == '0') { /* Go's one unitless duration */
        *ns = 0;
        return true;
    }
    int64_t total = 0;
    if (p == end) return false;
    while (p < end) {
        int64_t whole = 0;
        bool pre = digits(&p, end, &whole, 0);
        const char *fs = p, *fe = p;
        if (lit(&p, end, ".")) {
            fs = p;
            while (p < end && *p >= '0' && *p <= '9')
                p++;
            fe = p;
        }
        if (!pre && fe == fs) return false; /* no digits */
        int64_t unit = 0;
        for (size_t i = 0; i < sizeof units / sizeof *units && !unit; i++)
            if (lit(&p, end, units[i].name)) unit = units[i].ns;
        if (!unit) return false;
        const char *q = fs;
        total = sat_add(total, sat_add(sat_mul(whole, unit), fe > fs ? fraction(&q, fe, unit) : 0));
    }
    *ns = (uint64_t)total;
    return true;
}

/* A structured-field string ("...") at *p, skipped. */
static bool skip_string(const char **p, const char *end)
{
    if (*p >= end || **p != '"') return false;
    for ((*p)++; *p < end; (*p)++) {
        if (**p == '\\') {
            if (++*p >= end) return false;
        } else if (**p == '"') {
            (*p)++;
            return true;
        }
    }
    return false;
}

static bool token_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-' || c == '.' || c == '*';
}

/* One list member's parameters (`;k=v`, integers only read): r, t, q, w,
 * and the older draft's dictionary members remaining=, reset=. */
struct item {
    int64_t r, t, q, w; /* -1: not given */
};

/* Reads the member at *p up to its ',' (or the end): false when it is
 * not one that can be read. */
static bool member(const char **p, const char *end, struct item *it)
{
    *it = (struct item){-1, -1, -1, -1};
    *p = skip_ows(*p, end);
    const char *key = *p;
    if (*p < end && **p == '"') {
        if (!skip_string(p, end)) return false;
    } else {
        while (*p < end && token_char(**p))
            (*p)++;
        if (*p == key) return false;
    }
    size_t klen = (size_t)(*p - key);
    if (*p < end && **p == '=') { /* draft-07: remaining=0 or reset=30 */
        (*p)++;
        int64_t val;
        if (!digits(p, end, &val, 0)) return false;
        if (klen == 9 && strncasecmp(key, "remaining", 9) == 0) it->r = val;
        if (klen == 5 && strncasecmp(key, "reset", 5) == 0) it->t = val;
        if (klen == 5 && strncasecmp(key, "limit", 5) == 0) it->q = val;
    }
    while ((*p = skip_ows(*p, end)) < end && **p == ';') {
        *p = skip_ows(*p + 1, end);
        const char *k = *p;
        while (*p < end && token_char(**p))
            (*p)++;
        size_t kl = (size_t)(*p - k);
        if (kl == 0) return false;
        int64_t val = -1;
        if (*p < end && **p == '=') {
            (*p)++;
            if (*p < end && **p == '"') {
                if (!skip_string(p, end)) return false;
            } else if (*p < end && **p == ':') { /* a byte sequence, :base64: */
                const char *close = memchr(*p + 1, ':', (size_t)(end - *p - 1));
                if (!close) return false;
                *p = close + 1;
            } else {
                if (*p < end && **p == '?') (*p)++; /* a boolean */
                digits(p, end, &val, 0);
                while (*p < end && token_char(**p)) /* a token, or a decimal's rest */
                    (*p)++;
            }
        }
        if (kl == 1 && *k == 'r') it->r = val;
        if (kl == 1 && *k == 't') it->t = val;
        if (kl == 1 && *k == 'q') it->q = val;
        if (kl == 1 && *k == 'w') it->w = val;
    }
    *p = skip_ows(*p, end);
    if (*p < end && **p != ',') return false;
    if (*p < end) (*p)++;
    return true;
}

bool sl_learn_parse_ratelimit(const char *v, size_t n, int64_t *remaining, uint64_t *reset_ns)
{
    const char *p = v, *end = v + n;
    int64_t best_r = -1, best_t = -1, dict_r = -1, dict_t = -1;
    int members = 0;
    while (p < end && members++ < 64) {
        struct item it;
        if (!member(&p, end, &it)) return false;
        if (it.r >= 0 && it.t < 0 && it.q < 0) dict_r = it.r; /* remaining=N alone */
        if (it.t >= 0 && it.r < 0) dict_t = it.t;
        if (it.r < 0 || it.t < 0) continue;
        if (best_r < 0 || it.r < best_r || (it.r == best_r && it.t > best_t)) {
            best_r = it.r;
            best_t = it.t;
        }
    }
    if (best_r < 0 && dict_r >= 0 && dict_t >= 0) best_r = dict_r, best_t = dict_t;
    if (best_r < 0) return false;
    *remaining = best_r;
    *reset_ns = (uint64_t)sat_mul(best_t, NS);
    return true;
}

bool sl_learn_parse_policy(const char *v, size_t n, uint64_t *q, uint64_t *w_s)
{
    const char *p = v, *end = v + n;
    struct item it;
    if (!member(&p, end, &it) || it.q <= 0 || it.w <= 0) return false;
    *q = (uint64_t)it.q;
    *w_s = (uint64_t)it.w;
    return true;
}

/* ---- the fields ------------------------------------------------------- */

enum slot {
    RETRY_AFTER,
    RETRY_AFTER_MS,
    RATELIMIT,
    POLICY,
    REMAINING, /* of fam */
    RESET,     /* of fam */
};

enum reader { R_NONE, R_RETRY, R_MS, R_IETF, R_POLICY, R_COUNT, R_DELTA, R_GO, R_3339, R_GITHUB };

static const struct field {
    const char *name;
    enum slot slot;
    enum sl_learn_family fam;
    enum reader read;
} fields[] = {
    {"retry-after", RETRY_AFTER, 0, R_RETRY},
    {"retry-after-ms", RETRY_AFTER_MS, 0, R_MS},
    {"ratelimit", RATELIMIT, SL_FAM_RATELIMIT, R_IETF},
    {"ratelimit-policy", POLICY, 0, R_POLICY},
    {"ratelimit-remaining", REMAINING, SL_FAM_RL_PAIR, R_COUNT},
    {"ratelimit-reset", RESET, SL_FAM_RL_PAIR, R_DELTA},
    {"x-ratelimit-remaining-requests", REMAINING, SL_FAM_OPENAI, R_COUNT},
    {"x-ratelimit-reset-requests", RESET, SL_FAM_OPENAI, R_GO},
    {"anthropic-ratelimit-requests-remaining", REMAINING, SL_FAM_ANTHROPIC, R_COUNT},
    {"anthropic-ratelimit-requests-reset", RESET, SL_FAM_ANTHROPIC, R_3339},
    {"x-ratelimit-remaining", REMAINING, SL_FAM_GITHUB, R_COUNT},
    {"x-ratelimit-reset", RESET, SL_FAM_GITHUB, R_GITHUB},
};

#define NFIELDS (sizeof fields / sizeof *fields)

/* The field names a wait came from, per family's reset or remaining
 * count (for the log). */
static const char *const fam_reset_name[SL_FAM_N] = {
    "ratelimit", "ratelimit-reset", "x-ratelimit-reset-requests",
    "anthropic-ratelimit-requests-reset", "x-ratelimit-reset"};
static const char *const fam_remaining_name[SL_FAM_N] = {
    "ratelimit", "ratelimit-remaining", "x-ratelimit-remaining-requests",
    "anthropic-ratelimit-requests-remaining", "x-ratelimit-remaining"};

void sl_learn_resp_init(struct sl_learn_resp *f, int status)
{
    memset(f, 0, sizeof *f);
    f->status = status;
    for (int i = 0; i < SL_FAM_N; i++)
        f->fam[i].remaining = -1;
}

static struct sl_learn_when rel(uint64_t ns)
{
    return (struct sl_learn_when){SL_WHEN_REL, ns > (uint64_t)SAT ? SAT : (int64_t)ns};
}

static struct sl_learn_when when_of(const struct field *fd, const char *v, size_t n)
{
    uint64_t u;
    int64_t s;
    switch (fd->read) {
    case R_RETRY:
        if (sl_learn_parse_delta(v, n, &u)) return rel(u);
        if (sl_learn_parse_http_date(v, n, &s)) return (struct sl_learn_when){SL_WHEN_ABS, s};
        break;
    case R_MS:
        if (sl_learn_parse_ms(v, n, &u)) return rel(u);
        break;
    case R_DELTA:
        if (sl_learn_parse_delta(v, n, &u)) return rel(u);
        break;
    case R_GO:
        if (sl_learn_parse_go_duration(v, n, &u)) return rel(u);
        break;
    case R_3339:
        if (sl_learn_parse_rfc3339(v, n, &s)) return (struct sl_learn_when){SL_WHEN_ABS, s};
        break;
    case R_GITHUB: /* epoch seconds; below 10^9 (2001) only a delay makes sense */
        if (sl_learn_parse_epoch(v, n, &s))
            return s < 1000000000 * NS ? rel((uint64_t)s) : (struct sl_learn_when){SL_WHEN_ABS, s};
        break;
    default:
        break;
    }
    return (struct sl_learn_when){SL_WHEN_BAD, 0};
}

bool sl_learn_header(struct sl_learn_resp *f, const char *name, size_t nlen, const char *value,
                     size_t vlen)
{
    const struct field *fd = NULL;
    for (size_t i = 0; i < NFIELDS && !fd; i++)
        if (strlen(fields[i].name) == nlen && strncasecmp(fields[i].name, name, nlen) == 0)
            fd = &fields[i];
    if (!fd) return false;
    const char *end = value + vlen, *v = skip_ows(value, end);
    while (end > v && (end[-1] == ' ' || end[-1] == '\t'))
        end--;
    size_t n = (size_t)(end - v);
    f->any = true;
    bool ok = true;
    switch (fd->slot) {
    case RETRY_AFTER:
        f->retry_after = when_of(fd, v, n);
        ok = f->retry_after.kind != SL_WHEN_BAD;
        break;
    case RETRY_AFTER_MS:
        f->retry_after_ms = when_of(fd, v, n);
        ok = f->retry_after_ms.kind != SL_WHEN_BAD;
        break;
    case RATELIMIT: {
        int64_t r;
        uint64_t t;
        if ((ok = sl_learn_parse_ratelimit(v, n, &r, &t))) {
            f->fam[fd->fam].remaining = r;
            f->fam[fd->fam].reset = rel(t);
        }
        break;
    }
    case POLICY:
        ok = sl_learn_parse_policy(v, n, &f->policy_q, &f->policy_w);
        break;
    case REMAINING: {
        int64_t r;
        if (n == 2 && v[0] == '-' && v[1] == '1') return true; /* Azure's placeholder */
        if ((ok = sl_learn_parse_count(v, n, &r))) f->fam[fd->fam].remaining = r;
        break;
    }
    case RESET:
        if (n == 2 && v[0] == '-' && v[1] == '1') return true;
        f->fam[fd->fam].reset = when_of(fd, v, n);
        ok = f->fam[fd->fam].reset.kind != SL_WHEN_BAD;
        break;
    }
    if (!ok) {
        f->bad++;
    }
    return true;
}

/* One candidate time: kept in o when later than the one there. */
static void consider(struct sl_learned *o, const struct sl_learn_when *w, int64_t now,
                     const char *field)
{
    if (w->kind != SL_WHEN_REL && w->kind != SL_WHEN_ABS) return; /* BAD: counted in f->bad */
    /* ns is within [0, SAT] (the parsers saturate): no overflow */
    int64_t ahead = w->kind == SL_WHEN_REL ? w->ns : w->ns - (now > 0 ? now : 0);
    enum sl_learn_ignored why = SL_IGN_NONE;
    if (ahead <= 0 && w->kind == SL_WHEN_ABS) why = SL_IGN_PAST;
    if (ahead > (int64_t)SL_LEARN_ABSURD_NS) why = SL_IGN_ABSURD;
    if (why) {
        o->ignored++;
        o->why = why;
        o->ignored_field = field;
        return;
    }
    if (ahead > 0 && (uint64_t)ahead > o->asked_ns) {
        o->asked_ns = (uint64_t)ahead;
        o->field = field;
        o->spread = false;
    }
}

/* N left until a reset: the next call no sooner than T/N from now, so
 * the N are spread over the T instead of going at once (learn.h). Kept
 * when it asks for more than the candidates already in o; a hold (nothing
 * left, Retry-After) asks for more whenever both apply, as it should. */
static void spread(struct sl_learned *o, int64_t left, const struct sl_learn_when *w, int64_t now,
                   const char *field)
{
    struct sl_learned one = {0};
    consider(&one, w, now, field);
    o->ignored += one.ignored;
    if (one.ignored) {
        o->why = one.why;
        o->ignored_field = one.ignored_field;
    }
    if (!one.asked_ns) return;
    uint64_t gap = one.asked_ns / (uint64_t)left;
    if (gap > o->asked_ns) {
        o->asked_ns = gap;
        o->field = field;
        o->spread = true;
        o->left = left;
        o->window_ns = one.asked_ns;
    }
}

bool sl_learn_spread_needed(const struct sl_learned *o, uint64_t at_once, uint64_t count,
                            uint64_t period_ns, uint64_t cost)
{
    if (!o->spread || o->left <= 0) return o->spread;
    unsigned __int128 can = at_once;
    if (period_ns) can += (unsigned __int128)o->window_ns * count / period_ns;
    return can / (cost ? cost : 1) > (uint64_t)o->left;
}

bool sl_learn_decide(const struct sl_learn_resp *f, int64_t now_wall_ns, uint64_t cap_ns,
                     struct sl_learned *out)
{
    *out = (struct sl_learned){.ignored = f->bad, .why = f->bad ? SL_IGN_BAD : SL_IGN_NONE};
    if (f->bad) out->ignored_field = "a rate-limit field";
    if (f->status == 429 || f->status == 503) {
        if (f->retry_after_ms.kind == SL_WHEN_REL)
            consider(out, &f->retry_after_ms, now_wall_ns, "retry-after-ms");
        else
            consider(out, &f->retry_after, now_wall_ns, "retry-after");
    }
    for (int i = 0; i < SL_FAM_N; i++) {
        if (f->fam[i].remaining == 0)
            consider(out, &f->fam[i].reset, now_wall_ns, fam_reset_name[i]);
        else if (f->fam[i].remaining > 0)
            spread(out, f->fam[i].remaining, &f->fam[i].reset, now_wall_ns, fam_remaining_name[i]);
    }
    out->wait_ns = out->asked_ns;
    if (out->wait_ns > cap_ns) {
        out->wait_ns = cap_ns;
        out->capped = true;
    }
    return out->wait_ns > 0;
}
