/* SPDX-License-Identifier: BSD-2-Clause */
/* bench_redis.c - what one decision costs with the Redis backend
 * (sl_redis_decide: the entry table, the rest-of-fleet word, the sliding
 * window test) beside the local table (sl_table_decide) with the same
 * sliding-window rule, one thread, `now` given. Redis is not involved: no
 * decision ever talks to it (the sender is another thread; here none runs
 * and the state says Redis answered a moment ago). Prints a markdown table.
 *
 * Usage: bench_redis [SECONDS per case, default 0.3] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../core/clock.h"
#include "../core/limit/key.h"
#include "../core/fleet/redis_int.h"
#include "../core/limit/table.h"

static double cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static struct sl_key key_of(const struct sl_rule *r, uint64_t i)
{
    struct sl_key k = {
        .rule = r->id, .hi = 0, .lo = 0xffff00000000ull | (i & 0xffffffffu), .extra = 128};
    return k;
}

int main(int argc, char **argv)
{
    double secs = argc > 1 ? atof(argv[1]) : 0.3;
    static struct sl_config cfg;
    cfg.table_slots = 1u << 20;
    cfg.on_full = SL_FULL_SHARED;
    cfg.nrules = 1;
    struct sl_rule *r = &cfg.rules[0];
    snprintf(r->name, sizeof r->name, "bench");
    r->id = sl_name_hash(r->name);
    r->scope = SL_SCOPE_REDIS;
    r->per = SL_PER_PEER;
    sl_limit_init(&r->limit, SL_ALG_SLIDING, 1000000, 1000000000ull, 0);
    cfg.redis = (struct sl_redis){
        .enabled = true, .interval_ns = 20000000, .timeout_ns = 200000000, .local_share_pct = 50};
    char err[256];
    struct sl_redis_state *s = sl_redis_map(&cfg, err, sizeof err);
    struct sl_table *t = sl_table_open(cfg.table_slots, "", SL_FULL_SHARED, err, sizeof err);
    if (!s || !t) {
        fprintf(stderr, "bench_redis: %s\n", err);
        return 1;
    }
    atomic_store(&s->running, 1);                 /* no sender: decisions must not start one */
    atomic_store(&s->hdr->ok_at, UINT64_MAX / 2); /* "Redis answered": never stale here */
    int tr = sl_table_rule(t, r->id, r->name);
    const struct sl_redis_what w = {.limit = &r->limit};
    const size_t nkeys[] = {1, 100000};
    printf("| keys | sluice local table ns/decision | scope = redis ns/decision | ratio |\n");
    printf("|---|---:|---:|---:|\n");
    for (size_t c = 0; c < sizeof nkeys / sizeof nkeys[0]; c++) {
        double ns[2];
        for (int which = 0; which < 2; which++) {
            uint64_t now = sl_clock_now(), n = 0;
            double t0 = cpu_s(), el;
            do {
                for (int j = 0; j < 4096; j++, n++) {
                    struct sl_key k = key_of(r, n % nkeys[c]);
                    struct sl_verdict v;
                    now += 1000; /* 1 us apart: a flood of a million a second */
                    if (which == 0)
                        sl_table_decide(t, tr, &k, &r->limit, now, 1, 0, &v);
                    else
                        sl_redis_decide(s, 0, r, &w, &k, now, 1, &v);
                }
                el = cpu_s() - t0;
            } while (el < secs);
            ns[which] = el * 1e9 / (double)n;
        }
        printf("| %zu | %.1f | %.1f | %.2fx |\n", nkeys[c], ns[0], ns[1], ns[1] / ns[0]);
    }
    printf(
        "\n_One thread, CPU time per decision, `now` given; the same sliding-window rule in both. "
        "The redis decision reads one more word (the rest of the fleet's counts) and whether Redis "
        "answered lately; it never waits for Redis._\n");
    return 0;
}
