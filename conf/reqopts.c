/* SPDX-License-Identifier: BSD-2-Clause */
/* reqopts.c - the request options of a rule (core/http/request.h): their values,
 * the rule fields they fill, and how `sluice check` prints them. The rows
 * are in options.c's table. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "../core/mem.h"
#include "../core/limit/plan.h"
#include "../core/limit/quota.h"
#include "conf_int.h"

static const char *const req_per_prefix[] = {NULL, "header:", "query:", "cookie:"};
const char *const conf_per_missing_names[] = {"peer", "rule", "deny", NULL};
/* In the order of enum sl_per_copy. */
const char *const conf_per_copy_names[] = {"each", "first", "last", NULL};
const char *const conf_on_odd_names[] = {"count", "deny", NULL};

bool conf_req_per(const char *text, enum sl_req_per *kind, const char **name)
{
    for (int k = SL_REQ_PER_HEADER; k <= SL_REQ_PER_COOKIE; k++) {
        size_t n = strlen(req_per_prefix[k]);
        if (strncasecmp(text, req_per_prefix[k], n) == 0) {
            *kind = (enum sl_req_per)k;
            *name = text + n;
            return true;
        }
    }
    return false;
}

const char *conf_parse_req_per_name(const char *name)
{
    if (!*name) return "needs a name after the colon (header:X-API-Key)";
    if (strlen(name) >= SL_REQ_NAME_MAX) return "names a key too long (at most 63 bytes)";
    for (const char *p = name; *p; p++)
        if (*p <= ' ' || *p == ';' || *p == '=' || *p == ',' || *p >= 0x7f)
            return "has a character a key name cannot hold";
    return NULL;
}

const char *conf_parse_quota(const char *text, uint64_t *n, enum sl_quota_window *w)
{
    const char *slash = strchr(text, '/');
    if (!slash || slash == text) return "is not N/d or N/month";
    uint64_t v = 0;
    for (const char *p = text; p < slash; p++) {
        if (*p < '0' || *p > '9' || v > SL_QUOTA_MAX) return "is not N/d or N/month";
        v = v * 10 + (uint64_t)(*p - '0');
    }
    if (v == 0 || v > SL_QUOTA_MAX) return "must be 1..268435455 per window";
    const char *unit = slash + 1;
    if (strcmp(unit, "d") == 0 || strcmp(unit, "day") == 0)
        *w = SL_QUOTA_DAY;
    else if (strcmp(unit, "month") == 0 || strcmp(unit, "mo") == 0)
        *w = SL_QUOTA_MONTH;
    else
        return "has a window other than d (a UTC day) or month";
    *n = v;
    return NULL;
}

const char *conf_parse_utc_offset(const char *text, int32_t *seconds)
{
    const char *p = text;
    int sign = 1;
    if (*p == '+' || *p == '-') sign = *p++ == '-' ? -1 : 1;
    long h = 0, m = 0;
    int digits = 0;
    for (; *p >= '0' && *p <= '9' && digits < 2; p++, digits++)
        h = h * 10 + (*p - '0');
    if (!digits) return "is not an offset from UTC (+5:30, -8, 0)";
    if (*p == ':') {
        p++;
        if (!(p[0] >= '0' && p[0] <= '5' && p[1] >= '0' && p[1] <= '9')) return "has bad minutes";
        m = (p[0] - '0') * 10 + (p[1] - '0');
        p += 2;
    } else if (*p == 'h') {
        p++;
    }
    if (*p) return "is not an offset from UTC (+5:30, -8, 0)";
    if (h * 60 + m > 14 * 60) return "is more than 14 hours from UTC";
    *seconds = (int32_t)(sign * (h * 3600 + m * 60));
    return NULL;
}

const char *conf_parse_route(const char *text)
{
    if (text[0] != '/' && text[0] != '*') return "is not a path (it starts with / or *)";
    if (strlen(text) >= SL_ROUTE_MAX) return "is longer than 127 bytes";
    return NULL;
}

const char *conf_parse_method(const char *text)
{
    if (!*text || strlen(text) >= SL_METHOD_MAX) return "is not a method";
    for (const char *p = text; *p; p++)
        if (!((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || *p == '-'))
            return "is not a method";
    return NULL;
}

const char *conf_parse_req_host(const char *text)
{
    if (!*text || strlen(text) >= SL_HOST_MAX) return "is not a host name";
    for (const char *p = text; *p; p++)
        if (*p <= ' ' || *p == '/' || *p >= 0x7f) return "is not a host name";
    return NULL;
}

static bool given(cfg_t *sec, const char *name)
{
    /* one lookup, not two: paid by every process at start-up (lookup.c) */
    const cfg_opt_t *o = conf_opt(sec, name);
    return o && o->nvalues > 0 && (o->flags & CFGF_MODIFIED);
}

bool conf_is_request_rule(cfg_t *sec)
{
    static const char *const opts[] = {
        "req_rate",     "req_burst", "cost",      "route",     "method",    "host",
        "per_missing",  "quota",     "ramp_to",   "ramp_from", "ramp_over", "per_copy",
        "count_status", "req_conns", "cost_from", "cost_rate", "cost_burst"};
    /* one pass over the section's options, each given one looked for in
     * the list (paid by every process at start-up: a lookup by name is a
     * pass of its own) */
    for (const cfg_opt_t *o = sec->opts; sec->opts && !(sec->flags & CFGF_NOCASE) && o->name; o++) {
        if (!o->nvalues || !(o->flags & CFGF_MODIFIED)) continue;
        for (size_t i = 0; i < sizeof opts / sizeof *opts; i++)
            if (o->name[0] == opts[i][0] && strcmp(o->name, opts[i]) == 0) return true;
    }
    if (!sec->opts || (sec->flags & CFGF_NOCASE))
        for (size_t i = 0; i < sizeof opts / sizeof *opts; i++)
            if (given(sec, opts[i])) return true;
    const char *per = cfg_getstr(sec, "per");
    enum sl_req_per k;
    const char *name;
    return per && conf_req_per(per, &k, &name);
}

/* One "name=value" word of a plan line into p; NULL or the words of an error. */
static const char *plan_word(char *w, struct sl_plan *p, uint64_t *burst)
{
    char *eq = strchr(w, '=');
    if (!eq) return "has a word that is not name=value";
    *eq++ = 0;
    if (strcmp(w, "req_rate") == 0) {
        uint64_t count, period;
        const char *bad = conf_parse_rate(eq, &count, &period);
        if (bad) return bad;
        snprintf(p->req_rate_text, sizeof p->req_rate_text, "%s", eq);
        p->req_limit.count = count;
        p->req_limit.period_ns = period;
        return NULL;
    }
    if (strcmp(w, "req_burst") == 0) {
        long v;
        if (conf_parse_whole(eq, &v) || v < 1) return "has a req_burst that is not 1 or more";
        *burst = (uint64_t)v;
        return NULL;
    }
    if (strcmp(w, "quota") == 0) {
        snprintf(p->quota_text, sizeof p->quota_text, "%s", eq);
        return conf_parse_quota(eq, &p->quota, &p->quota_window);
    }
    return "has an option other than req_rate, req_burst or quota";
}

/* The plans file:
 *   plan NAME [req_rate=N/s] [req_burst=N] [quota=N/d]
 * (a plan without req_rate has the rule's, with its own req_burst if given)
 *   key NAME VALUE          (VALUE: the rest of the line, blanks trimmed)
 * '#' starts a comment line. Returns NULL or the words of an error, with
 * *lineno the line. */
static const char *parse_plans(char *text, struct sl_plans *ps, const struct sl_limit *rule,
                               uint64_t cost, int *lineno)
{
    static __thread char msg[128];
    *lineno = 0;
    for (char *line = text, *next; line; line = next) {
        ++*lineno;
        next = strchr(line, '\n');
        if (next) *next++ = 0;
        size_t n = strlen(line);
        while (n && (line[n - 1] == '\r' || line[n - 1] == ' ' || line[n - 1] == '\t'))
            line[--n] = 0;
        while (*line == ' ' || *line == '\t')
            line++;
        if (!*line || *line == '#') continue;
        char *save = NULL, *verb = strtok_r(line, " \t", &save);
        char *name = strtok_r(NULL, " \t", &save);
        if (!name) return "has a line without a plan name";
        if (strcmp(verb, "plan") == 0) {
            struct sl_plan p = {0};
            uint64_t burst = 0;
            snprintf(p.name, sizeof p.name, "%s", name);
            for (char *w; (w = strtok_r(NULL, " \t", &save));) {
                const char *bad = plan_word(w, &p, &burst);
                if (bad) return bad;
            }
            if (!p.req_limit.count && burst && rule->count) { /* the rule's rate, its own burst */
                p.req_limit.count = rule->count;
                p.req_limit.period_ns = rule->period_ns;
            }
            if (p.req_limit.count) { /* burst and cost must fit (conf_gcra_max_burst) */
                uint64_t most = conf_gcra_max_burst(p.req_limit.count, p.req_limit.period_ns);
                if (!most) return "has a req_rate that cannot work";
                if (burst > most || cost > most) {
                    snprintf(msg, sizeof msg,
                             burst > most ? "has a req_burst too large for its req_rate (at most "
                                            "%" PRIu64 ")"
                                          : "has a req_rate too slow for the rule's cost (cost at "
                                            "most %" PRIu64 ")",
                             most);
                    return msg;
                }
                sl_limit_init(&p.req_limit, SL_ALG_GCRA, p.req_limit.count, p.req_limit.period_ns,
                              burst ? burst : p.req_limit.count);
            }
            if (sl_plans_add(ps, &p) < 0) return "names a plan twice, or more than 64 plans";
        } else if (strcmp(verb, "key") == 0) {
            char *value = save;
            while (value && (*value == ' ' || *value == '\t'))
                value++;
            if (!value || !*value) return "has a key line without a value";
            int idx = -1;
            for (int i = 0; i < sl_plans_count(ps); i++)
                if (strcmp(sl_plans_get(ps, i)->name, name) == 0) idx = i;
            if (idx < 0) return "gives a key a plan not defined above";
            if (sl_plans_add_key(ps, idx, value, strlen(value), (uint32_t)*lineno) < 0)
                return "cannot be read: out of memory";
        } else {
            return "has a line that is neither plan nor key";
        }
    }
    uint32_t twice = sl_plans_seal(ps);
    if (twice) {
        *lineno = (int)twice;
        return "gives one key value two plans";
    }
    return NULL;
}

/* A request rule's GCRA (its own rate, or a ramp's slowest step) must keep
 * its burst and a request's cost: burst x interval and cost x interval
 * past 2^62 ns would refuse every request (issue 31, defect 9).
 * `rate_opt` and `rate` name the rate in the message. Returns 0, or -1
 * after conf_fail(). */
static int gcra_fits(cfg_t *sec, int line, const char *rate_opt, const char *rate, uint64_t count,
                     uint64_t period, uint64_t burst)
{
    uint64_t most = conf_gcra_max_burst(count, period);
    if (!most) {
        conf_fail(sec, line, rate_opt, rate, "is too fast or too slow to keep");
        return -1;
    }
    uint64_t cost = (uint64_t)cfg_getint(sec, "cost");
    const char *opt = burst > most ? "req_burst" : cost > most ? "cost" : NULL;
    if (!opt) return 0;
    char v[32];
    snprintf(v, sizeof v, "%" PRIu64, burst > most ? burst : cost);
    conf_fail(sec, line, opt, v, "is too large for %s %s (at most %" PRIu64 ")", rate_opt, rate,
              most);
    return -1;
}

/* ramp_to, ramp_from, ramp_over, ramp_every: all or none (ramp_every has
 * a default), on a rule with a req_rate. */
static int build_ramp(cfg_t *sec, struct sl_rule *r, int line)
{
    const char *to = cfg_getstr(sec, "ramp_to"), *from = cfg_getstr(sec, "ramp_from");
    const char *over = cfg_getstr(sec, "ramp_over"), *every = cfg_getstr(sec, "ramp_every");
    if (!to && !from && !over) return 0;
    const char *missing = !r->req_limit.count ? "req_rate"
                          : !to               ? "ramp_to"
                          : !from             ? "ramp_from"
                          : !over             ? "ramp_over"
                                              : NULL;
    if (missing) {
        conf_fail(sec, line, NULL, NULL,
                  "has a ramp without %s (a ramp needs req_rate, ramp_to, "
                  "ramp_from and ramp_over)",
                  missing);
        return -1;
    }
    if (r->scope != SL_SCOPE_LOCAL) {
        conf_fail(sec, line, "ramp_to", to, "works on local rules only");
        return -1;
    }
    uint64_t count, period, over_ns, every_ns;
    conf_parse_rate(to, &count, &period);
    conf_parse_duration(over, &over_ns);
    conf_parse_duration(every, &every_ns);
    if (every_ns == 0 || over_ns < every_ns || over_ns / every_ns > 100000) {
        conf_fail(sec, line, "ramp_over", over, "must be one to 100000 times ramp_every (%s)",
                  every);
        return -1;
    }
    /* the final N in the start rate's period, rounded, at least 1 */
    long double n = (long double)count * r->req_limit.period_ns / period;
    /* core/limit/ramp.c steps in int64_t: (final - start) x steps must fit,
     * and the fastest step must keep an interval of a picosecond at least */
    uint64_t start = r->req_limit.count;
    if (n > (long double)(INT64_MAX / 100000) ||
        !conf_gcra_max_burst(n < start ? start : (uint64_t)(n + 0.5L), r->req_limit.period_ns)) {
        conf_fail(sec, line, "ramp_to", to, "is too fast to keep");
        return -1;
    }
    r->ramp.to_count = n < 1 ? 1 : (uint64_t)(n + 0.5L);
    /* every step lies between the two rates: the slowest must keep the
     * burst (a given req_burst stays; without one, each step's N fits) */
    uint64_t slowest = r->ramp.to_count < start ? r->ramp.to_count : start;
    if (gcra_fits(sec, line, "ramp_to", to, slowest, r->req_limit.period_ns,
                  cfg_size(sec, "req_burst") ? r->req_limit.burst : slowest) != 0)
        return -1;
    conf_parse_utc_time(from, &r->ramp.from_s);
    r->ramp.every_ns = every_ns;
    r->ramp.steps = (uint32_t)(over_ns / every_ns);
    r->ramp.burst_given = cfg_size(sec, "req_burst") > 0;
    snprintf(r->ramp_to_text, sizeof r->ramp_to_text, "%s", to);
    snprintf(r->ramp_from_text, sizeof r->ramp_from_text, "%s", from);
    r->ramp_over_ns = over_ns;
    return 0;
}

/* learn, learn_max (outbound only: options.c refuses them inbound). A
 * learned hold moves the key's GCRA bucket in this host's table
 * (core/http/learn.h), so a local rule needs one; with scope = redis it
 * is kept beside the key's counts, for every host (core/fleet/redis.h). */
static int conf_build_learn(cfg_t *sec, struct sl_rule *r, int line)
{
    if (conf_section_dir(sec) != SL_OUT || !cfg_getbool(sec, "learn")) return 0;
    const char *why = NULL;
    if (!r->request || !cfg_getstr(sec, "req_rate"))
        why = "needs req_rate: what is learned holds the key's requests";
    else if (r->scope == SL_SCOPE_LOCAL && strcmp(cfg_getstr(sec, "algorithm"), "gcra") != 0)
        why = "needs algorithm = gcra (the hold moves the key's bucket)";
    else if (r->scope != SL_SCOPE_LOCAL && r->scope != SL_SCOPE_REDIS)
        why = "needs scope = local or redis (where the hold is kept)";
    if (why) {
        conf_fail(sec, line, "learn", "yes", "%s", why);
        return -1;
    }
    r->learn = true;
    conf_parse_duration(cfg_getstr(sec, "learn_max"), &r->learn_max_ns);
    return 0;
}

int conf_build_request(cfg_t *sec, struct sl_rule *r, int line)
{
    r->request = conf_is_request_rule(sec);
    if (conf_build_learn(sec, r, line) != 0) return -1;
    if (!r->request) return 0;
    const char *rate = cfg_getstr(sec, "req_rate");
    if (rate) {
        uint64_t count, period;
        conf_parse_rate(rate, &count, &period);
        snprintf(r->req_rate_text, sizeof r->req_rate_text, "%s", rate);
        uint64_t burst =
            cfg_size(sec, "req_burst") ? (uint64_t)cfg_getint(sec, "req_burst") : count;
        /* a fleet shares window counts (core/fleet/redis_state.c): a sliding window */
        bool fleet = r->scope == SL_SCOPE_REDIS;
        if (fleet && count > SL_SLIDING_MAX_COUNT) {
            conf_fail(sec, line, "req_rate", rate,
                      "is too many for one sliding window (at most %u)", SL_SLIDING_MAX_COUNT);
            return -1;
        }
        bool log = strcmp(cfg_getstr(sec, "algorithm"), "log") == 0; /* options.c: log_fits */
        if (log && cfg_size(sec, "req_burst"))
            conf_warn(sec, line, "req_burst", cfg_getstr(sec, "req_rate"),
                      "is ignored: algorithm log admits req_rate's N in any rolling period");
        if (!log && !fleet && gcra_fits(sec, line, "req_rate", rate, count, period, burst) != 0)
            return -1;
        sl_limit_init(&r->req_limit,
                      log     ? SL_ALG_LOG
                      : fleet ? SL_ALG_SLIDING
                              : SL_ALG_GCRA,
                      count, period, burst);
    }
    if (build_ramp(sec, r, line) != 0) return -1;
    r->cost = (uint32_t)cfg_getint(sec, "cost");
    for (unsigned i = 0; i < cfg_size(sec, "route") && i < SL_MAX_ROUTES; i++)
        snprintf(r->routes[r->nroutes++], SL_ROUTE_MAX, "%s", cfg_getnstr(sec, "route", i));
    for (unsigned i = 0; i < cfg_size(sec, "method") && i < SL_MAX_METHODS; i++) {
        char *m = r->methods[r->nmethods++];
        snprintf(m, SL_METHOD_MAX, "%s", cfg_getnstr(sec, "method", i));
        for (; *m; m++)
            if (*m >= 'a' && *m <= 'z') *m = (char)(*m - 32);
    }
    for (unsigned i = 0; i < cfg_size(sec, "host") && i < SL_MAX_REQ_HOSTS; i++) {
        char *h = r->req_hosts[r->nreq_hosts++];
        snprintf(h, SL_HOST_MAX, "%s", cfg_getnstr(sec, "host", i));
        for (; *h; h++)
            if (*h >= 'A' && *h <= 'Z') *h = (char)(*h + 32);
    }
    const char *per = cfg_getstr(sec, "per"), *name;
    if (per && conf_req_per(per, &r->req_per, &name))
        snprintf(r->req_per_name, sizeof r->req_per_name, "%s", name);
    if (r->scope == SL_SCOPE_REDIS && r->action == SL_ACT_DELAY) {
        conf_fail(sec, line, "action", "delay",
                  "is not available for requests with scope = redis (a fleet's turn cannot be "
                  "reserved locally)");
        return -1;
    }
    int pm = 0;
    conf_parse_enum(cfg_getstr(sec, "per_missing"), conf_per_missing_names, &pm);
    r->per_missing = (enum sl_per_missing)pm;
    int pc = 0;
    conf_parse_enum(cfg_getstr(sec, "per_copy"), conf_per_copy_names, &pc);
    r->per_copy = (enum sl_per_copy)pc;
    int oo = 0;
    conf_parse_enum(cfg_getstr(sec, "on_odd"), conf_on_odd_names, &oo);
    r->on_odd = (enum sl_on_odd)oo;
    const char *quota = cfg_getstr(sec, "quota");
    if (quota) {
        conf_parse_quota(quota, &r->quota, &r->quota_window);
        snprintf(r->quota_text, sizeof r->quota_text, "%s", quota);
    }
    if (cfg_getstr(sec, "quota_offset"))
        conf_parse_utc_offset(cfg_getstr(sec, "quota_offset"), &r->quota_offset_s);
    const char *plans = cfg_getstr(sec, "plans");
    if (plans) {
        char *text = NULL;
        size_t len;
        const char *bad = conf_read_whole(plans, &text, &len, r->plans_path, sizeof r->plans_path);
        struct sl_plans *ps = bad ? NULL : sl_plans_new();
        int pline = 0;
        if (!bad && !ps) bad = "cannot be read: out of memory";
        if (!bad) bad = parse_plans(text, ps, &r->req_limit, r->cost, &pline);
        if (text) {
            explicit_bzero(text, len);
            sl_free(text);
        }
        if (bad) { /* on_error = open: the rule's own limits, not none (issue 18.8) */
            sl_plans_free(ps);
            bool kept = pline ? conf_degrade(sec, line, "plans", plans, "line %d %s", pline, bad)
                              : conf_degrade(sec, line, "plans", plans, "%s", bad);
            return kept ? 0 : -1;
        }
        r->plans = ps;
    }
    if (conf_build_answers(sec, r, line) != 0) return -1;
    return conf_build_costs(sec, r, line);
}

static void put(FILE *out, const char *key)
{
    fprintf(out, "    %-11s = ", key);
}

static void put_list(FILE *out, const char *key, const char *items, size_t stride, int n)
{
    if (n == 0) return;
    put(out, key);
    fputc('{', out);
    for (int i = 0; i < n; i++)
        fprintf(out, "%s\"%s\"", i ? ", " : "", items + (size_t)i * stride);
    fputs("}\n", out);
}

void conf_print_request(FILE *out, const struct sl_rule *r)
{
    if (!r->request) return;
    if (r->req_limit.count) {
        put(out, "req_rate");
        fprintf(out, "\"%s\"\n", r->req_rate_text);
        if (r->req_limit.alg == SL_ALG_LOG) {
            put(out, "algorithm");
            fprintf(out, "log\n");
        } else if (!r->ramp.steps || r->ramp.burst_given) { /* a ramp's burst follows its rate */
            put(out, "req_burst");
            fprintf(out, "%llu\n", (unsigned long long)r->req_limit.burst);
        }
    }
    if (r->ramp.steps) {
        char d[32];
        put(out, "ramp_to");
        fprintf(out, "\"%s\"\n", r->ramp_to_text);
        put(out, "ramp_from");
        fprintf(out, "\"%s\"\n", r->ramp_from_text);
        conf_format_duration(r->ramp_over_ns, d, sizeof d);
        put(out, "ramp_over");
        fprintf(out, "%s\n", d);
        conf_format_duration(r->ramp.every_ns, d, sizeof d);
        put(out, "ramp_every");
        fprintf(out, "%s\n", d);
    }
    put(out, "cost");
    fprintf(out, "%u\n", r->cost);
    put_list(out, "route", &r->routes[0][0], SL_ROUTE_MAX, r->nroutes);
    put_list(out, "method", &r->methods[0][0], SL_METHOD_MAX, r->nmethods);
    put_list(out, "host", &r->req_hosts[0][0], SL_HOST_MAX, r->nreq_hosts);
    put(out, "per_missing");
    fprintf(out, "%s\n", conf_per_missing_names[r->per_missing]);
    put(out, "per_copy");
    fprintf(out, "%s\n", conf_per_copy_names[r->per_copy]);
    put(out, "on_odd");
    fprintf(out, "%s\n", conf_on_odd_names[r->on_odd]);
    if (r->learn) {
        char d[32];
        conf_format_duration(r->learn_max_ns, d, sizeof d);
        put(out, "learn");
        fprintf(out, "yes\n");
        put(out, "learn_max");
        fprintf(out, "%s\n", d);
    }
    if (r->quota) {
        put(out, "quota");
        fprintf(out, "\"%s\"\n", r->quota_text);
    }
    if (r->quota_offset_s) {
        int32_t o = r->quota_offset_s < 0 ? -r->quota_offset_s : r->quota_offset_s;
        put(out, "quota_offset");
        fprintf(out, "\"%c%d:%02d\"\n", r->quota_offset_s < 0 ? '-' : '+', o / 3600, o % 3600 / 60);
    }
    if (r->plans) { /* key values are never printed: the file and counts only */
        put(out, "plans");
        fprintf(out, "\"%s\"\n", r->plans_path);
        for (int i = 0; i < sl_plans_count(r->plans); i++)
            fprintf(out, "    # plan %s: %u keys\n", sl_plans_get(r->plans, i)->name,
                    sl_plans_keys(r->plans, i));
    }
    conf_print_answers(out, r);
    conf_print_costs(out, r);
}

/* `per` as printed: a request key, or the address enumeration. */
const char *conf_per_text(const struct sl_rule *r, char *buf, size_t len)
{
    if (r->req_per == SL_REQ_PER_ADDRESS) return conf_per_names[r->per];
    snprintf(buf, len, "\"%s%s\"", req_per_prefix[r->req_per], r->req_per_name);
    return buf;
}
