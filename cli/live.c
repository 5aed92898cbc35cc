/* SPDX-License-Identifier: BSD-2-Clause */
/* live.c - the live page of `sluice metrics --listen`: / is one
 * self-contained HTML page (cli/live.html, built in as a string: inline
 * CSS, JS and SVG, no external asset), which reads /stats.json every
 * second. The JSON is a snapshot of the table: per rule its counters (the
 * numbers `sluice stats` prints), queue, quota thresholds and quota use
 * per plan (plans by name), what `learn` holds (keys by short hash, the
 * field, until when); the keys denied most in the last minute, as
 * `sluice top` names them (addresses, or short hashes of request keys:
 * never a key's value); gossip peers and the Redis sender. Rates over
 * the last minute are the page's own work: it keeps the last 60 snapshots
 * and charts their differences. All it reads comes from the source
 * (metrics_source.c); the server (metrics_http.c) calls it.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "live.h"

#include "../core/clock.h"
#include "../core/fleet/fleet_stats.h"
#include "../core/http/learn.h"
#include "../core/limit/table_plans.h"
#include "learned.h"
#include "metrics_source.h"

#include "live_html.h" /* sl_live_html, generated from cli/live.html */

const char sl_live_page[] = SL_LIVE_HTML;

#define TOP_WINDOW_NS (60 * 1000000000ull)
#define TOP_ROWS      10

/* A JSON string: quotes, backslashes and control bytes escaped, and < >
 * & too, so no value can close a tag if a page ever inlines the JSON. */
static void jstr(FILE *out, const char *v)
{
    fputc('"', out);
    for (const unsigned char *p = (const unsigned char *)v; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(out, "\\%c", *p);
        else if (*p < 0x20 || *p == '<' || *p == '>' || *p == '&' || *p == 0x7f)
            fprintf(out, "\\u%04x", *p);
        else
            fputc(*p, out);
    }
    fputc('"', out);
}

/* A request rule's quota use per plan (core/limit/table_plans.h): ever, and in
 * the current window ("used", "keys" that reached 80/90/100 %). */
static void plans_json(FILE *out, const struct sl_table *t, int r)
{
    struct sl_plan_use u;
    uint64_t wall_s = (uint64_t)time(NULL);
    fputs(", \"plans\": [", out);
    for (int i = -1, n = 0; sl_metrics_next_plan(t, r, &i, &u); n++) {
        fputs(n ? ", {\"plan\": " : "{\"plan\": ", out);
        jstr(out, u.name);
        fprintf(
            out,
            ", \"quota\": %llu, \"window\": \"%s\", \"admitted\": %llu, \"refused\": %llu, "
            "\"reached\": {\"80\": %llu, \"90\": %llu, \"100\": %llu}, \"used\": %llu, "
            "\"keys\": {\"80\": %llu, \"90\": %llu, \"100\": %llu}, \"window_ends_in_s\": %lld}",
            (unsigned long long)u.quota, sl_metrics_window(u.window),
            (unsigned long long)u.admitted, (unsigned long long)u.refused,
            (unsigned long long)u.reached[0], (unsigned long long)u.reached[1],
            (unsigned long long)u.reached[2], (unsigned long long)u.used,
            (unsigned long long)u.keys[0], (unsigned long long)u.keys[1],
            (unsigned long long)u.keys[2],
            u.window_end_s > wall_s ? (long long)(u.window_end_s - wall_s) : 0ll);
    }
    fputc(']', out);
}

/* What a request rule's `learn` holds (core/limit/table_learned.h): the
 * keys in force and the last few ended, by short hash, the field that
 * said it and until when (wall time and seconds left; a spread's gap). */
static void learned_json(FILE *out, const struct sl_learned_view *w, int r, uint64_t now)
{
    int64_t wall = sl_clock_wall_offset();
    fputs(", \"learned_holds\": [", out);
    int n = 0;
    for (size_t i = 0; i < w->n; i++) {
        const struct sl_learned_hold *h = &w->v[i];
        if (h->rule != r || !sl_learned_shown(w, i, now)) continue;
        char until[40];
        sl_learned_wall(h->until_ns, wall, until, sizeof until);
        fputs(n++ ? ", {\"key\": " : "{\"key\": ", out);
        jstr(out, h->key);
        fputs(", \"field\": ", out);
        jstr(out, sl_learn_field_name(h->field));
        fputs(", \"until\": ", out);
        jstr(out, until);
        fprintf(out,
                ", \"kind\": \"%s\", \"in_force\": %s, \"left_s\": %.3f, \"ended_s_ago\": %.3f, "
                "\"gap_s\": %.3f, \"calls_left\": %lld, \"learned_s_ago\": %.3f}",
                h->gap_ns ? "spread" : "hold", h->until_ns > now ? "true" : "false",
                h->until_ns > now ? (double)(h->until_ns - now) / 1e9 : 0.0,
                h->until_ns > now ? 0.0 : (double)(now - h->until_ns) / 1e9,
                (double)h->gap_ns / 1e9, (long long)h->left,
                now > h->at_ns ? (double)(now - h->at_ns) / 1e9 : 0.0);
    }
    fputc(']', out);
}

static void rules_json(FILE *out, struct sl_metrics_source *s, const struct sl_table *t,
                       uint64_t now)
{
    struct sl_learned_view learned; /* 5 KB */
    sl_learned_read(t, now, &learned);
    uint64_t id;
    char rule[SL_NAME_MAX];
    fputs("\"rules\": [", out);
    for (int r = 0; sl_table_rule_info(t, r, &id, rule, sizeof rule); r++) {
        bool cost = sl_metrics_cost_name(rule); /* a token budget: its counters, named */
        bool req = !cost && sl_metrics_req_name(rule);
        fputs(r ? ",\n  {\"rule\": " : "\n  {\"rule\": ", out);
        jstr(out, rule);
        fprintf(out, ", \"kind\": \"%s\", \"direction\": \"%s\"",
                cost  ? "tokens"
                : req ? "requests"
                      : "connections",
                sl_metrics_direction(s, rule));
        for (int c = 0; c < SL_NCOUNTERS; c++)
            fprintf(out, ", \"%s\": %llu", sl_counter_names[c],
                    (unsigned long long)sl_table_counter(t, r, (enum sl_counter)c));
        uint32_t waiting;
        uint64_t longest, total;
        sl_table_queue(t, r, now, &waiting, &longest, &total);
        fprintf(out, ", \"waiting\": %u, \"longest_wait_s\": %.3f, \"waited_s\": %.3f", waiting,
                (double)longest / 1e9, (double)total / 1e9);
        if (req) {
            uint64_t q[3];
            sl_table_quota_crossed(t, r, q);
            fprintf(out, ", \"quota_reached\": {\"80\": %llu, \"90\": %llu, \"100\": %llu}",
                    (unsigned long long)q[0], (unsigned long long)q[1], (unsigned long long)q[2]);
            plans_json(out, t, r);
            learned_json(out, &learned, r, now);
        }
        fputc('}', out);
    }
    fputs("\n],\n", out);
}

static void top_json(FILE *out, struct sl_metrics_source *s, const struct sl_table *t, uint64_t now)
{
    if (s->top_ino != s->place.ino) { /* another table (a restart): start again */
        s->top.n = 0;
        s->top.from = s->top.lost = 0;
        s->top_ino = s->place.ino;
    }
    sl_top_refresh(&s->top, t, now, TOP_WINDOW_NS);
    size_t m = 0;
    struct sl_top_seen *v = sl_top_tally(&s->top, &m);
    fprintf(out, "\"top_window_s\": %llu, \"denials_in_window\": %zu, \"top\": [",
            TOP_WINDOW_NS / 1000000000ull, s->top.n);
    for (size_t i = 0; v && i < m && i < TOP_ROWS; i++) {
        char rule[SL_NAME_MAX] = "?", key[96];
        uint64_t id;
        sl_table_rule_info(t, v[i].d.rule, &id, rule, sizeof rule);
        sl_top_format_key(&v[i].d.key, key, sizeof key);
        fputs(i ? ",\n  {\"rule\": " : "\n  {\"rule\": ", out);
        jstr(out, rule);
        fputs(", \"key\": ", out);
        jstr(out, key);
        fprintf(out, ", \"denied\": %llu, \"dry_run\": %s}", (unsigned long long)v[i].count,
                v[i].d.dry ? "true" : "false");
    }
    fputs("\n],\n", out);
    free(v);
}

static void gossip_json(FILE *out, const struct sl_config *cfg, uint64_t now)
{
    fputs("\"gossip\": ", out);
    struct sl_cluster *c = sl_metrics_gossip(cfg);
    if (!c) {
        fprintf(out, "{\"enabled\": %s, \"peers\": []},\n",
                cfg && cfg->gossip.enabled ? "true" : "false");
        return;
    }
    fputs("{\"enabled\": true, \"peers\": [", out);
    for (int i = 0; i < sl_cluster_npeers(c); i++) {
        struct sl_cluster_peer_info p;
        sl_cluster_peer(c, i, now, &p);
        fputs(i ? ", {\"peer\": " : "{\"peer\": ", out);
        jstr(out, p.name);
        fprintf(out, ", \"up\": %s, \"age_s\": %.3f}", p.alive ? "true" : "false",
                p.heard ? (double)p.age_ns / 1e9 : -1.0);
    }
    fputs("]},\n", out);
    sl_cluster_unmap(c);
}

static void redis_json(FILE *out, const struct sl_metrics_source *s, uint64_t now)
{
    struct sl_rhdr h;
    bool enabled = s->cfg && s->cfg->redis.enabled;
    if (!sl_metrics_redis(s, &h)) {
        fprintf(out, "\"redis\": {\"enabled\": %s, \"running\": false}\n",
                enabled ? "true" : "false");
        return;
    }
    uint64_t ok = atomic_load(&h.ok_at);
    fprintf(out,
            "\"redis\": {\"enabled\": true, \"running\": true, \"sender_pid\": %d, "
            "\"last_sync_age_s\": %.3f",
            (int)atomic_load(&h.sender_pid), ok ? (double)(now > ok ? now - ok : 0) / 1e9 : -1.0);
    for (int k = 0; k < SL_RC_NCOUNTERS; k++)
        fprintf(out, ", \"%s\": %llu", sl_redis_counter_names[k],
                (unsigned long long)atomic_load(&h.counters[k]));
    fputs("}\n", out);
}

int sl_live_json(FILE *out, struct sl_metrics_source *s, char *err, size_t errlen)
{
    struct sl_table *t = sl_metrics_open(s, err, errlen);
    if (!t) return -1;
    uint64_t now = sl_clock_now();
    fputs("{\"table\": ", out);
    jstr(out, s->label);
    fprintf(out, ", \"mono_s\": %.3f, \"slots\": %u, \"slots_used\": %u,\n", (double)now / 1e9,
            sl_table_slots(t), sl_table_used(t));
    rules_json(out, s, t, now);
    top_json(out, s, t, now);
    sl_table_close(t);
    gossip_json(out, s->cfg, now);
    redis_json(out, s, now);
    fputs("}\n", out);
    return 0;
}
