/* SPDX-License-Identifier: BSD-2-Clause */
/* reload.c - see reload.h. */
#include <errno.h>
#include <stdatomic.h>
#include <string.h>

#include "../conf/conf.h"
#include "../core/log.h"
#include "../core/mem.h"
#include "../core/http/request.h"
#include "../core/limit/table.h"
#include "reload.h"
#include "shim.h"

static char *file, *rules; /* what the process was configured from */
static _Atomic int busy;   /* one thread reloads; the others decide with what they have */

static char *copy(const char *s)
{
    if (!s || !*s) return NULL;
    size_t n = strlen(s) + 1;
    char *c = sl_alloc(n);
    if (c) memcpy(c, s, n);
    return c;
}

void sl_reload_remember(const char *f, const char *r)
{
    file = copy(f);
    rules = copy(r);
}

/* Host addresses learned from the program's lookups stay learned. */
static void keep_learned(struct sl_runtime *nrt, const struct sl_runtime *rt)
{
    for (int i = 0; i < rt->cfg->nrules; i++) {
        const struct sl_rule *a = &rt->cfg->rules[i], *b = &nrt->cfg->rules[i];
        for (int h = 0; h < a->nhosts && h < b->nhosts; h++)
            if (strcmp(a->hosts[h].name, b->hosts[h].name) == 0)
                memcpy(&nrt->learned[nrt->host_base[i] + h], &rt->learned[rt->host_base[i] + h],
                       sizeof *nrt->learned);
    }
}

struct sl_runtime *sl_reload_slow(struct sl_runtime *rt, uint32_t gen)
{
    if (atomic_exchange(&busy, 1)) return rt;
    int saved = errno;
    struct sl_runtime *cur = atomic_load(&sl_runtime_ptr);
    if (cur != rt || __atomic_load_n(&rt->config_gen, __ATOMIC_RELAXED) == gen) goto out;
    __atomic_store_n(&rt->config_gen, gen, __ATOMIC_RELAXED); /* one try per generation */
    char err[1024];
    enum sl_on_error on_error;
    /* no lookups on the program's call path: names keep the addresses the
     * running configuration has, and learn new ones from the program */
    static char published[1024], inline_rules[2048]; /* one thread at a time: busy */
    sl_table_config_path(rt->table, published, sizeof published);
    sl_table_config_rules(rt->table, inline_rules, sizeof inline_rules);
    bool in_table = *published || *inline_rules; /* else the table could not hold ours */
    sl_conf_set_resolver(NULL, NULL);
    struct sl_config *cfg = sl_conf_load(in_table ? (*published ? published : NULL) : file,
                                         in_table ? (*inline_rules ? inline_rules : NULL) : rules,
                                         &on_error, err, sizeof err);
    sl_conf_set_resolver(sl_real.getaddrinfo, sl_real.freeaddrinfo);
    const char *why = !cfg               ? err
                      : cfg->degraded[0] ? cfg->degraded /* keep the plans that work */
                                         : sl_conf_unfit(rt->cfg, cfg);
    struct sl_runtime *nrt = why ? NULL : sl_alloc(sizeof *nrt);
    if (!why && (!nrt || sl_runtime_init(nrt, cfg, rt->table, err, sizeof err) != 0))
        why = nrt ? err : "out of memory";
    if (why) {
        sl_log_state(SL_LOG_ERROR, "reload (generation %u): %s; the running configuration stays",
                     gen, why);
        if (cfg) sl_conf_free(cfg);
        sl_free(nrt);
        goto out;
    }
    for (int i = 0; i < cfg->nrules && i < rt->cfg->nrules; i++) /* resolved at start-up */
        for (int h = 0; h < cfg->rules[i].nhosts && h < rt->cfg->rules[i].nhosts; h++)
            if (strcmp(cfg->rules[i].hosts[h].name, rt->cfg->rules[i].hosts[h].name) == 0) {
                struct sl_host *to = &cfg->rules[i].hosts[h];
                const struct sl_host *from = &rt->cfg->rules[i].hosts[h];
                memcpy(to->addr, from->addr, sizeof to->addr);
                to->naddr = from->naddr;
            }
    keep_learned(nrt, rt);
    nrt->config_gen = gen;
    atomic_store_explicit(&sl_runtime_ptr, nrt, memory_order_release);
    sl_log_state(SL_LOG_INFO, "reloaded the configuration (generation %u) from %s: %d rules", gen,
                 *published ? published
                 : in_table ? "inline rules"
                 : file     ? file
                            : "inline rules",
                 cfg->nrules);
    rt = nrt;
out:
    atomic_store(&busy, 0);
    errno = saved;
    return atomic_load(&sl_runtime_ptr);
}
