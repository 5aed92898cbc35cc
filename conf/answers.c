/* SPDX-License-Identifier: BSD-2-Clause */
/* answers.c - the request options that read the server's answers:
 * count_status (inbound: only responses of these statuses take from the
 * key's req_rate bucket, core/http/reqdecide.h) and req_conns (requests
 * in flight per key, both directions).
 *
 * The list is written as every list option is, {401, 403}: statuses
 * 100 to 599, each a number of three digits.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf_int.h"

const char *conf_parse_status(const char *text, uint16_t *status)
{
    if (strlen(text) != 3 || text[0] < '1' || text[0] > '5' || text[1] < '0' || text[1] > '9' ||
        text[2] < '0' || text[2] > '9')
        return "is not an HTTP status (100 to 599)";
    if (status) *status = (uint16_t)atoi(text);
    return NULL;
}

/* Why a rule cannot count statuses, or NULL. The response's charge moves
 * the key's GCRA bucket in this host's table, at the rule's own rate. */
static const char *count_status_unfit(cfg_t *sec, const struct sl_rule *r)
{
    if (!cfg_getstr(sec, "req_rate")) return "needs req_rate: the statuses take from its budget";
    if (strcmp(cfg_getstr(sec, "algorithm"), "gcra") != 0)
        return "needs algorithm = gcra (the response takes from the key's bucket)";
    if (r->scope != SL_SCOPE_LOCAL)
        return "needs scope = local (the count is kept in this host's table)";
    if (cfg_getstr(sec, "quota") || cfg_getstr(sec, "plans") || cfg_getstr(sec, "ramp_to"))
        return "cannot be combined with quota, plans or ramp_to (they count requests)";
    return NULL;
}

int conf_build_answers(cfg_t *sec, struct sl_rule *r, int line)
{
    if (cfg_size(sec, "req_conns")) {
        r->req_conns = (uint32_t)cfg_getint(sec, "req_conns");
        if (r->req_conns && r->scope == SL_SCOPE_REDIS) {
            char v[16];
            snprintf(v, sizeof v, "%u", (unsigned)r->req_conns);
            conf_fail(sec, line, "req_conns", v,
                      "needs scope = local (requests in flight are counted in this host's table)");
            return -1;
        }
    }
    unsigned n = cfg_size(sec, "count_status");
    if (n == 0 || conf_section_dir(sec) != SL_IN) return 0; /* options.c refuses it outbound */
    const char *why = count_status_unfit(sec, r);
    if (why) {
        conf_fail(sec, line, "count_status", cfg_getnstr(sec, "count_status", 0), "%s", why);
        return -1;
    }
    for (unsigned i = 0; i < n && i < SL_MAX_STATUSES; i++)
        conf_parse_status(cfg_getnstr(sec, "count_status", i),
                          &r->count_status[r->ncount_status++]);
    return 0;
}

void conf_print_answers(FILE *out, const struct sl_rule *r)
{
    if (r->req_conns) fprintf(out, "    %-11s = %u\n", "req_conns", (unsigned)r->req_conns);
    if (!r->ncount_status) return;
    fprintf(out, "    %-11s = {", "count_status");
    for (int i = 0; i < r->ncount_status; i++)
        fprintf(out, "%s%u", i ? ", " : "", (unsigned)r->count_status[i]);
    fputs("}\n", out);
}
