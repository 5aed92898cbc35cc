/* SPDX-License-Identifier: BSD-2-Clause */
/* metrics.c - a running program's table in the Prometheus text
 * exposition format (version 0.0.4), what `sluice metrics` prints once or
 * serves at /metrics (metrics_http.c). Counters are the table's per-rule
 * counters (what `sluice stats` prints) as sluice_connections_total (a
 * rule's connection decisions) and sluice_requests_total (its `<rule>:req`
 * row), with rule, direction (from the configuration, when given with -c)
 * and outcome labels; then queues, quotas and plans per rule, and what
 * `learn` rules hold now (sluice_learned_hold_seconds); gauges give
 * the table's size and use; the gossip node's peers and the Redis sender's
 * counters follow when the program has them. Everything read comes from
 * the source (metrics_source.c).
 */
#include "metrics.h"

#include <stdatomic.h>
#include <string.h>

#include "../core/clock.h"
#include "../core/http/learn.h"
#include "../core/limit/cost.h"
#include "../core/limit/table.h"
#include "../core/limit/table_plans.h"
#include "learned.h"

/* Label values are rule names: escape as the format asks. */
static void label(FILE *out, const char *v)
{
    for (; *v; v++) {
        if (*v == '\\' || *v == '"')
            fprintf(out, "\\%c", *v);
        else if (*v == '\n')
            fputs("\\n", out);
        else
            fputc(*v, out);
    }
}

/* The gossip node's view of its peers (core/fleet/cluster_stats.c): whether each
 * is alive and how old its data is, datagrams and drops. Nothing when the
 * configuration has no gossip section or the node is not running. */
static void expose_gossip(FILE *out, const struct sl_config *cfg)
{
    struct sl_cluster *c = sl_metrics_gossip(cfg);
    if (!c) return;
    uint64_t now = sl_clock_now();
    fputs("# HELP sluice_gossip_peer_up 1 when the peer was heard within its dead time.\n"
          "# TYPE sluice_gossip_peer_up gauge\n",
          out);
    for (int i = 0; i < sl_cluster_npeers(c); i++) {
        struct sl_cluster_peer_info p;
        sl_cluster_peer(c, i, now, &p);
        fputs("sluice_gossip_peer_up{peer=\"", out);
        label(out, p.name);
        fprintf(out, "\"} %d\n", p.alive ? 1 : 0);
    }
    fputs("# HELP sluice_gossip_peer_age_seconds Age of the newest data from the peer (-1: never "
          "heard).\n# TYPE sluice_gossip_peer_age_seconds gauge\n",
          out);
    for (int i = 0; i < sl_cluster_npeers(c); i++) {
        struct sl_cluster_peer_info p;
        sl_cluster_peer(c, i, now, &p);
        fputs("sluice_gossip_peer_age_seconds{peer=\"", out);
        label(out, p.name);
        fprintf(out, "\"} %.3f\n", p.heard ? (double)p.age_ns / 1e9 : -1.0);
    }
    fputs("# HELP sluice_gossip_events_total Gossip datagrams and events, by kind.\n"
          "# TYPE sluice_gossip_events_total counter\n",
          out);
    for (int k = 0; k < SL_CC_NCOUNTERS; k++)
        fprintf(out, "sluice_gossip_events_total{kind=\"%s\"} %llu\n", sl_cluster_counter_names[k],
                (unsigned long long)sl_cluster_counter(c, (enum sl_cluster_counter)k));
    fputs("# HELP sluice_gossip_dropped_total Datagrams dropped, by reason.\n"
          "# TYPE sluice_gossip_dropped_total counter\n",
          out);
    for (int k = 1; k < SL_WIRE_NSTATUS; k++)
        fprintf(out, "sluice_gossip_dropped_total{reason=\"%s\"} %llu\n", sl_wire_status_names[k],
                (unsigned long long)sl_cluster_drops(c, (enum sl_wire_status)k));
    sl_cluster_unmap(c);
}

/* Decisions waiting for their turn (action = delay), per rule: how many
 * hold a turn still to come, the longest of their waits, and the time
 * waited in total (with the delayed outcome: the average wait). */
/* What outbound request rules with `learn` took from the vendor's answers
 * (core/http/learn.h), per rule: holds (a 429's Retry-After, nothing
 * left before a reset), spreads (N left for T), waits cut to learn_max,
 * values ignored (unreadable, in the past, absurd). */
static void expose_learned(FILE *out, const struct sl_table *t)
{
    static const char *const what[] = {"hold", "spread", "capped", "ignored"};
    fputs("# HELP sluice_learned_total What learn rules took from the vendor's answers: holds, "
          "spreads, waits capped at learn_max, values ignored.\n"
          "# TYPE sluice_learned_total counter\n",
          out);
    uint64_t id;
    char rule[SL_NAME_MAX];
    for (int r = 0; sl_table_rule_info(t, r, &id, rule, sizeof rule); r++) {
        if (!sl_metrics_req_name(rule)) continue;
        for (int c = SL_C_LEARNED; c <= SL_C_LEARN_IGNORED; c++) {
            fputs("sluice_learned_total{rule=\"", out);
            label(out, rule);
            fprintf(out, "\",what=\"%s\"} %llu\n", what[c - SL_C_LEARNED],
                    (unsigned long long)sl_table_counter(t, r, (enum sl_counter)c));
        }
    }
}

/* What learn rules hold now (core/limit/table_learned.h), per rule and the
 * field that said it: the longest time still to go (a spread: until the
 * vendor's window ends) and how many keys. A rule and field the table
 * remembers stay at 0 once ended, until other keys take their entries. */
static void expose_learned_holds(FILE *out, const struct sl_table *t)
{
    struct sl_learned_view w; /* 5 KB */
    uint64_t now = sl_clock_now();
    sl_learned_read(t, now, &w);
    static const char *const name[2] = {"sluice_learned_hold_seconds", "sluice_learned_keys"};
    fputs("# HELP sluice_learned_hold_seconds The longest hold still to go that learn rules took "
          "from a vendor's answer, by the field that said it (a spread: until its window "
          "ends).\n# TYPE sluice_learned_hold_seconds gauge\n",
          out);
    for (int m = 0; m < 2; m++) {
        if (m)
            fputs("# HELP sluice_learned_keys Keys held or spread now by what learn rules took "
                  "from a vendor's answer, by the field that said it.\n"
                  "# TYPE sluice_learned_keys gauge\n",
                  out);
        for (size_t i = 0; i < w.n; i++) {
            bool first = true; /* one series per (rule, field): its first entry sums them */
            for (size_t j = 0; j < i && first; j++)
                first = w.v[j].rule != w.v[i].rule || w.v[j].field != w.v[i].field;
            if (!first) continue;
            uint64_t longest = 0, keys = 0;
            for (size_t j = i; j < w.n; j++) {
                const struct sl_learned_hold *h = &w.v[j];
                if (h->rule != w.v[i].rule || h->field != w.v[i].field || h->until_ns <= now)
                    continue;
                keys++;
                if (h->until_ns - now > longest) longest = h->until_ns - now;
            }
            char rule[SL_NAME_MAX] = "?";
            uint64_t id;
            sl_table_rule_info(t, w.v[i].rule, &id, rule, sizeof rule);
            sl_metrics_req_name(rule);
            fprintf(out, "%s{rule=\"", name[m]);
            label(out, rule);
            fprintf(out, "\",field=\"%s\"} ", sl_learn_field_name(w.v[i].field));
            if (m == 0)
                fprintf(out, "%.3f\n", (double)longest / 1e9);
            else
                fprintf(out, "%llu\n", (unsigned long long)keys);
        }
    }
}

/* Token budgets (core/limit/cost.h), per rule: answers charged, the
 * tokens they cost, answers whose cost could not be read and the tokens
 * charged for them by the rule of doubt (among `tokens`), calls refused
 * while the key was in debt. */
static void expose_tokens(FILE *out, const struct sl_table *t)
{
    static const struct {
        const char *what;
        enum sl_counter c;
    } m[] = {{"calls", SL_C_COST_CALLS},
             {"tokens", SL_C_COST_TOKENS},
             {"unread", SL_C_COST_UNREAD},
             {"unread_tokens", SL_C_COST_DEFAULTS},
             {"refused", SL_C_COST_REFUSED}};
    fputs("# HELP sluice_tokens_total Token budgets: answers charged, the tokens they cost, "
          "answers whose cost could not be read and the tokens charged for them, calls refused "
          "in debt.\n# TYPE sluice_tokens_total counter\n",
          out);
    uint64_t id;
    char rule[SL_NAME_MAX];
    for (int r = 0; sl_table_rule_info(t, r, &id, rule, sizeof rule); r++) {
        if (!sl_metrics_cost_name(rule)) continue;
        for (size_t k = 0; k < sizeof m / sizeof *m; k++) {
            fputs("sluice_tokens_total{rule=\"", out);
            label(out, rule);
            fprintf(out, "\",what=\"%s\"} %llu\n", m[k].what,
                    (unsigned long long)sl_table_counter(t, r, m[k].c));
        }
    }
}

static void expose_queues(FILE *out, const struct sl_metrics_source *s, const struct sl_table *t)
{
    static const char *const head[3] = {
        "# HELP sluice_queue_waiting Decisions holding a turn still to come (action = delay; "
        "at most 59 are seen).\n# TYPE sluice_queue_waiting gauge\n",
        "# HELP sluice_queue_longest_wait_seconds The longest wait still to go among them.\n"
        "# TYPE sluice_queue_longest_wait_seconds gauge\n",
        "# HELP sluice_wait_seconds_total Time decisions were given to wait, in total.\n"
        "# TYPE sluice_wait_seconds_total counter\n"};
    static const char *const name[3] = {"sluice_queue_waiting", "sluice_queue_longest_wait_seconds",
                                        "sluice_wait_seconds_total"};
    uint64_t now = sl_clock_now();
    for (int m = 0; m < 3; m++) {
        fputs(head[m], out);
        uint64_t id;
        char rule[SL_NAME_MAX];
        for (int r = 0; sl_table_rule_info(t, r, &id, rule, sizeof rule); r++) {
            uint32_t waiting;
            uint64_t longest, total;
            if (sl_metrics_cost_name(rule)) continue; /* token budgets hold no calls */
            sl_table_queue(t, r, now, &waiting, &longest, &total);
            bool req = sl_metrics_req_name(rule);
            fprintf(out, "%s{rule=\"", name[m]);
            label(out, rule);
            fprintf(out, "\",direction=\"%s\",kind=\"%s\"} ", sl_metrics_direction(s, rule),
                    req ? "requests" : "connections");
            if (m == 0) fprintf(out, "%u\n", waiting);
            if (m == 1) fprintf(out, "%.6f\n", (double)longest / 1e9);
            if (m == 2) fprintf(out, "%.6f\n", (double)total / 1e9);
        }
    }
}

/* Keys of a request rule with a quota that reached 80, 90 and 100 % of it
 * (alerts: a key about to run out of its daily or monthly calls). */
static void expose_quotas(FILE *out, const struct sl_metrics_source *s, const struct sl_table *t)
{
    static const char *const pct[3] = {"80", "90", "100"};
    fputs("# HELP sluice_quota_reached_total Times a key reached a share of its quota (80, 90, "
          "100 percent) in a quota window.\n# TYPE sluice_quota_reached_total counter\n",
          out);
    uint64_t id;
    char rule[SL_NAME_MAX];
    for (int r = 0; sl_table_rule_info(t, r, &id, rule, sizeof rule); r++) {
        if (!sl_metrics_req_name(rule)) continue;
        uint64_t crossed[3];
        sl_table_quota_crossed(t, r, crossed);
        for (int i = 0; i < 3; i++) {
            fputs("sluice_quota_reached_total{rule=\"", out);
            label(out, rule);
            fprintf(out, "\",direction=\"%s\",percent=\"%s\"} %llu\n",
                    sl_metrics_direction(s, rule), pct[i], (unsigned long long)crossed[i]);
        }
    }
}

/* Quota use per plan (core/limit/table_plans.h), per request rule: requests
 * admitted against the plan's quota and refused by it, keys that reached
 * 80, 90, 100 % of it, ever (counters) and in the current window (gauges,
 * with the window's use and the quota itself). Plans by name only. */
static void expose_plans(FILE *out, const struct sl_metrics_source *s, const struct sl_table *t)
{
    static const char *const pct[3] = {"80", "90", "100"};
    static const struct {
        const char *name, *type, *help;
    } m[6] = {
        {"admitted_total", "counter", "Requests admitted against the plan's quota."},
        {"refused_total", "counter", "Requests the plan's quota refused (in dry run: would have)."},
        {"reached_total", "counter",
         "Times a key of the plan reached a share of its quota (80, 90, 100 percent)."},
        {"limit", "gauge", "The plan's quota per key and window (requests, by cost)."},
        {"used", "gauge",
         "Requests (by cost) admitted against the plan's quota in the current window, all keys."},
        {"keys", "gauge",
         "Keys of the plan that reached a share of their quota in the current window."},
    };
    for (int k = 0; k < 6; k++) {
        fprintf(out, "# HELP sluice_plan_quota_%s %s\n# TYPE sluice_plan_quota_%s %s\n", m[k].name,
                m[k].help, m[k].name, m[k].type);
        uint64_t id;
        char rule[SL_NAME_MAX];
        for (int r = 0; sl_table_rule_info(t, r, &id, rule, sizeof rule); r++) {
            if (!sl_metrics_req_name(rule)) continue;
            struct sl_plan_use u;
            for (int i = -1; sl_metrics_next_plan(t, r, &i, &u);) {
                bool pcts = k == 2 || k == 5;
                for (int p = 0; p < (pcts ? 3 : 1); p++) {
                    fprintf(out, "sluice_plan_quota_%s{rule=\"", m[k].name);
                    label(out, rule);
                    fprintf(out, "\",direction=\"%s\",plan=\"", sl_metrics_direction(s, rule));
                    label(out, u.name);
                    if (pcts) fprintf(out, "\",percent=\"%s", pct[p]);
                    uint64_t x = k == 0   ? u.admitted
                                 : k == 1 ? u.refused
                                 : k == 2 ? u.reached[p]
                                 : k == 3 ? u.quota
                                 : k == 4 ? u.used
                                          : u.keys[p];
                    fprintf(out, "\"} %llu\n", (unsigned long long)x);
                }
            }
        }
    }
}

static void expose_redis(FILE *out, const struct sl_metrics_source *s)
{
    struct sl_rhdr h;
    if (!sl_metrics_redis(s, &h)) return;
    uint64_t ok = atomic_load(&h.ok_at), now = sl_clock_now();
    fprintf(out,
            "# HELP sluice_redis_last_sync_age_seconds Since Redis last answered a whole round "
            "(-1: never).\n# TYPE sluice_redis_last_sync_age_seconds gauge\n"
            "sluice_redis_last_sync_age_seconds %.3f\n",
            ok ? (double)(now > ok ? now - ok : 0) / 1e9 : -1.0);
    fputs("# HELP sluice_redis_events_total The Redis sender's rounds, calls, failures, "
          "connects, fallback decisions, overflows, bad replies, early rounds, failovers, MOVED "
          "and ASK.\n"
          "# TYPE sluice_redis_events_total counter\n",
          out);
    for (int k = 0; k < SL_RC_NCOUNTERS; k++)
        fprintf(out, "sluice_redis_events_total{kind=\"%s\"} %llu\n", sl_redis_counter_names[k],
                (unsigned long long)atomic_load(&h.counters[k]));
    fputs("# HELP sluice_redis_node_calls_total Script calls each Redis server synced with "
          "answered (the primary, or each cluster primary).\n"
          "# TYPE sluice_redis_node_calls_total counter\n",
          out);
    for (uint32_t i = 0; i < h.nnodes; i++)
        fprintf(out, "sluice_redis_node_calls_total{node=\"%s\"} %llu\n", h.nodes[i].addr,
                (unsigned long long)atomic_load(&h.nodes[i].calls));
}

int sl_metrics_text(FILE *out, struct sl_metrics_source *s, char *err, size_t errlen)
{
    struct sl_table *t = sl_metrics_open(s, err, errlen);
    if (!t) return -1;
    static const char *const kinds[2] = {"connections", "requests"};
    static const char *const help[2] = {
        "Connections decided per rule (accept or connect), by outcome.",
        "HTTP requests decided per request rule, by outcome."};
    for (int kind = 0; kind < 2; kind++) {
        fprintf(out, "# HELP sluice_%s_total %s\n# TYPE sluice_%s_total counter\n", kinds[kind],
                help[kind], kinds[kind]);
        uint64_t id;
        char rule[SL_NAME_MAX];
        for (int r = 0; sl_table_rule_info(t, r, &id, rule, sizeof rule); r++) {
            if (sl_metrics_cost_name(rule) || sl_metrics_req_name(rule) != (kind == 1)) continue;
            for (int c = SL_C_ALLOWED; c <= SL_C_WOULD_LIMIT; c++) {
                fprintf(out, "sluice_%s_total{rule=\"", kinds[kind]);
                label(out, rule);
                fprintf(out, "\",direction=\"%s\",outcome=\"%s\"} %llu\n",
                        sl_metrics_direction(s, rule), sl_counter_names[c],
                        (unsigned long long)sl_table_counter(t, r, (enum sl_counter)c));
            }
        }
    }
    expose_queues(out, s, t);
    expose_quotas(out, s, t);
    expose_plans(out, s, t);
    fputs("# HELP sluice_table_problems_total Decisions made without a slot (full table), or "
          "failures inside the shim (which fail open), per rule.\n"
          "# TYPE sluice_table_problems_total counter\n",
          out);
    uint64_t id;
    char rule[SL_NAME_MAX];
    for (int r = 0; sl_table_rule_info(t, r, &id, rule, sizeof rule); r++)
        for (int c = SL_C_OVERFLOW; c < SL_C_LEARNED && !sl_metrics_cost_name(rule); c++) {
            if (c == SL_C_REUSED || c == SL_C_CLAIMED || c == SL_C_ODD) continue;
            fputs("sluice_table_problems_total{rule=\"", out);
            label(out, rule);
            fprintf(out, "\",problem=\"%s\"} %llu\n", sl_counter_names[c],
                    (unsigned long long)sl_table_counter(t, r, (enum sl_counter)c));
        }
    fputs("# HELP sluice_odd_heads_total Request heads sluice could read only by the rule of "
          "doubt (counted, or denied under on_odd = deny), per request rule.\n"
          "# TYPE sluice_odd_heads_total counter\n",
          out);
    for (int r = 0; sl_table_rule_info(t, r, &id, rule, sizeof rule); r++) {
        if (!sl_metrics_req_name(rule)) continue;
        fputs("sluice_odd_heads_total{rule=\"", out);
        label(out, rule);
        fprintf(out, "\"} %llu\n", (unsigned long long)sl_table_counter(t, r, SL_C_ODD));
    }
    expose_learned(out, t);
    expose_learned_holds(out, t);
    expose_tokens(out, t);
    fprintf(
        out,
        "# HELP sluice_table_slots Slots in the shared table.\n# TYPE sluice_table_slots gauge\n"
        "sluice_table_slots %u\n"
        "# HELP sluice_table_slots_used Slots holding a key.\n"
        "# TYPE sluice_table_slots_used gauge\nsluice_table_slots_used %u\n"
        "# HELP sluice_table_bytes Size of the shared table.\n"
        "# TYPE sluice_table_bytes gauge\nsluice_table_bytes %zu\n",
        sl_table_slots(t), sl_table_used(t), sl_table_bytes(t));
    sl_table_close(t);
    expose_gossip(out, s->cfg);
    expose_redis(out, s);
    return 0;
}
