/* SPDX-License-Identifier: BSD-2-Clause */
/* reqrule.h - a request rule as the request tests and the request fuzz
 * target build it (reqworld.h, tests/fuzz/fuzz_request.c): named, one
 * cost a request, of a direction and an action; no cmocka, no clock. */
#ifndef SL_REQRULE_H
#define SL_REQRULE_H

#include <string.h>

#include "../../core/limit/key.h"
#include "../../core/rule.h"

/* The next rule of cfg, filled in; the caller adds its limit. */
static inline struct sl_rule *req_rule_add(struct sl_config *cfg, const char *name, enum sl_dir dir,
                                           enum sl_action action)
{
    struct sl_rule *r = &cfg->rules[cfg->nrules++];
    strcpy(r->name, name);
    r->id = sl_name_hash(r->name);
    r->dir = dir;
    r->request = true;
    r->cost = 1;
    r->action = action;
    return r;
}

#endif
