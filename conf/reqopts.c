/* reqopts.c - the request options of a rule (core/request.h): their values,
 * the rule fields they fill, and how `sluice check` prints them. The rows
 * are in options.c's table. */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "../core/quota.h"
#include "conf_int.h"

static const char *const req_per_prefix[] = {NULL, "header:", "query:", "cookie:"};
const char *const conf_per_missing_names[] = {"peer", "rule", "deny", NULL};

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
    return cfg_size(sec, name) > 0 && (cfg_getopt(sec, name)->flags & CFGF_MODIFIED);
}

bool conf_is_request_rule(cfg_t *sec)
{
    static const char *const opts[] = {"req_rate", "req_burst", "cost",        "route",
                                       "method",   "host",      "per_missing", "quota"};
    for (size_t i = 0; i < sizeof opts / sizeof *opts; i++)
        if (given(sec, opts[i])) return true;
    const char *per = cfg_getstr(sec, "per");
    enum sl_req_per k;
    const char *name;
    return per && conf_req_per(per, &k, &name);
}

void conf_build_request(cfg_t *sec, struct sl_rule *r)
{
    r->request = conf_is_request_rule(sec);
    if (!r->request) return;
    const char *rate = cfg_getstr(sec, "req_rate");
    if (rate) {
        uint64_t count, period;
        conf_parse_rate(rate, &count, &period);
        snprintf(r->req_rate_text, sizeof r->req_rate_text, "%s", rate);
        uint64_t burst =
            cfg_size(sec, "req_burst") ? (uint64_t)cfg_getint(sec, "req_burst") : count;
        sl_limit_init(&r->req_limit, SL_ALG_GCRA, count, period, burst);
    }
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
    int pm = 0;
    conf_parse_enum(cfg_getstr(sec, "per_missing"), conf_per_missing_names, &pm);
    r->per_missing = (enum sl_per_missing)pm;
    const char *quota = cfg_getstr(sec, "quota");
    if (quota) {
        conf_parse_quota(quota, &r->quota, &r->quota_window);
        snprintf(r->quota_text, sizeof r->quota_text, "%s", quota);
    }
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
        put(out, "req_burst");
        fprintf(out, "%llu\n", (unsigned long long)r->req_limit.burst);
    }
    put(out, "cost");
    fprintf(out, "%u\n", r->cost);
    put_list(out, "route", &r->routes[0][0], SL_ROUTE_MAX, r->nroutes);
    put_list(out, "method", &r->methods[0][0], SL_METHOD_MAX, r->nmethods);
    put_list(out, "host", &r->req_hosts[0][0], SL_HOST_MAX, r->nreq_hosts);
    put(out, "per_missing");
    fprintf(out, "%s\n", conf_per_missing_names[r->per_missing]);
    if (r->quota) {
        put(out, "quota");
        fprintf(out, "\"%s\"\n", r->quota_text);
    }
}

/* `per` as printed: a request key, or the address enumeration. */
const char *conf_per_text(const struct sl_rule *r, char *buf, size_t len)
{
    if (r->req_per == SL_REQ_PER_ADDRESS) return conf_per_names[r->per];
    snprintf(buf, len, "\"%s%s\"", req_per_prefix[r->req_per], r->req_per_name);
    return buf;
}
