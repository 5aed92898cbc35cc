/* SPDX-License-Identifier: BSD-2-Clause */
/* costs.c - a request rule's token budget (core/limit/cost.h): cost_from
 * says where an answer says what a call cost, cost_rate and cost_burst
 * how many tokens a key may spend. All three make one option: cost_from
 * without cost_rate (or cost_rate without cost_from, or cost_burst
 * without either) is an error.
 *
 * cost_from is `header:NAME` (a decimal integer) or `json:a.b.c` (a
 * number at that path of a JSON body, or of the last server-sent event
 * that has it: core/http/costread.h).
 */
#include <stdio.h>
#include <string.h>

#include "conf_int.h"
#include "../core/limit/limit.h"

const char *conf_parse_cost_from(const char *text, enum sl_cost_from *from, char *name, size_t len)
{
    enum sl_cost_from f;
    const char *v;
    if (strncmp(text, "header:", 7) == 0) {
        f = SL_COST_HEADER;
        v = text + 7;
        if (!*v) return "names no header (header:NAME)";
        for (const char *p = v; *p; p++)
            if (*p <= ' ' || *p >= 0x7f || strchr("()<>@,;:\\\"/[]?={}", *p))
                return "is not a header name (header:NAME)";
    } else if (strncmp(text, "json:", 5) == 0) {
        f = SL_COST_JSON;
        v = text + 5;
        if (!*v || *v == '.' || v[strlen(v) - 1] == '.' || strstr(v, ".."))
            return "is not a path of names joined by dots (json:usage.total_tokens)";
        for (const char *p = v; *p; p++)
            if (*p <= ' ' || *p >= 0x7f) return "has a blank or a byte outside ASCII in its path";
    } else {
        return "is neither header:NAME nor json:PATH";
    }
    if (strlen(v) >= SL_COST_NAME_MAX) return "is too long (at most 63 bytes after the colon)";
    if (from) *from = f;
    if (name) snprintf(name, len, "%s", v);
    return NULL;
}

static bool given(cfg_t *sec, const char *name)
{
    return cfg_size(sec, name) > 0 && cfg_getstr(sec, name) != NULL;
}

int conf_build_costs(cfg_t *sec, struct sl_rule *r, int line)
{
    bool from = given(sec, "cost_from"), rate = given(sec, "cost_rate");
    bool burst = cfg_size(sec, "cost_burst") > 0;
    if (!from && !rate && !burst) return 0;
    if (!from || !rate) {
        const char *opt = from ? "cost_from" : rate ? "cost_rate" : "cost_burst";
        char v[32];
        if (burst && !from && !rate) snprintf(v, sizeof v, "%ld", cfg_getint(sec, "cost_burst"));
        conf_fail(sec, line, opt, burst && !from && !rate ? v : cfg_getstr(sec, opt), "%s",
                  from ? "needs cost_rate: the budget the answers' costs are charged to"
                       : "needs cost_from: where the answers say what a call cost");
        return -1;
    }
    struct sl_cost_rule *c = &r->tokens;
    conf_parse_cost_from(cfg_getstr(sec, "cost_from"), &c->from, c->name, sizeof c->name);
    const char *text = cfg_getstr(sec, "cost_rate");
    uint64_t count, period;
    conf_parse_rate(text, &count, &period);
    uint64_t b = burst ? (uint64_t)cfg_getint(sec, "cost_burst") : count;
    uint64_t most = conf_gcra_max_burst(count, period);
    if (!most) {
        conf_fail(sec, line, "cost_rate", text, "is too fast or too slow to keep");
        return -1;
    }
    if (b > most) {
        char v[32];
        snprintf(v, sizeof v, "%llu", (unsigned long long)b);
        conf_fail(sec, line, "cost_burst", v, "is too large for cost_rate %s (at most %llu)", text,
                  (unsigned long long)most);
        return -1;
    }
    sl_limit_init(&c->limit, SL_ALG_GCRA, count, period, b);
    snprintf(c->rate_text, sizeof c->rate_text, "%s", text);
    if (r->scope == SL_SCOPE_REDIS)
        conf_warn(sec, line, "cost_rate", text,
                  "is kept in this host's table only: scope = redis shares the requests, not "
                  "the tokens");
    return 0;
}

void conf_print_costs(FILE *out, const struct sl_rule *r)
{
    const struct sl_cost_rule *c = &r->tokens;
    if (c->from == SL_COST_NONE) return;
    fprintf(out, "    %-11s = \"%s:%s\"\n", "cost_from",
            c->from == SL_COST_HEADER ? "header" : "json", c->name);
    fprintf(out, "    %-11s = \"%s\"\n", "cost_rate", c->rate_text);
    fprintf(out, "    %-11s = %llu\n", "cost_burst", (unsigned long long)c->limit.burst);
}
