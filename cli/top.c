/* SPDX-License-Identifier: BSD-2-Clause */
/* top.c - `sluice top`: the keys a running program limits most, live, from
 * the ring of recent denials in its table (core/limit/table_denials.c). A key is
 * shown as the peer or destination address (or its block), or for a
 * request key as the short hash its log lines carry: never the value. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../conf/conf.h"
#include "../core/clock.h"
#include "../core/http/reqkey.h"
#include "locate.h"
#include "top.h"

int sl_cmd_top(int argc, char **argv);

void sl_top_format_key(const struct sl_key *k, char *out, size_t len)
{
    if (k->extra & SL_REQ_KEY_VALUE) {
        char h[7];
        sl_req_key_short(k, h);
        snprintf(out, len, k->hi || k->lo ? "key %s" : "(the rule)", h);
        return;
    }
    struct sl_cidr c = {.plen = (uint8_t)(k->extra & 0xff)};
    memcpy(c.addr, &k->hi, 8);
    memcpy(c.addr + 8, &k->lo, 8);
    unsigned port = (unsigned)(k->extra >> 8 & 0xffff);
    if (c.plen == 0) {
        snprintf(out, len, "(the rule)");
    } else if (c.plen == 128 || (c.plen == 96 + 32)) {
        char a[64];
        sl_addr_format(c.addr, a, sizeof a);
        if (port)
            snprintf(out, len, "%s port %u", a, port);
        else
            snprintf(out, len, "%s", a);
    } else {
        sl_cidr_format(&c, out, len);
    }
}

static int by_key(const void *a, const void *b)
{
    const struct sl_denial *x = &((const struct sl_top_seen *)a)->d,
                           *y = &((const struct sl_top_seen *)b)->d;
    if (x->rule != y->rule) return x->rule < y->rule ? -1 : 1;
    if (x->dry != y->dry) return x->dry ? 1 : -1;
    return memcmp(&x->key, &y->key, sizeof x->key);
}

static int by_count(const void *a, const void *b)
{
    const struct sl_top_seen *x = a, *y = b;
    return (x->count < y->count) - (x->count > y->count);
}

void sl_top_refresh(struct sl_top_view *w, const struct sl_table *t, uint64_t now, uint64_t window)
{
    struct sl_denial buf[512];
    size_t got;
    while ((got = sl_table_denials(t, &w->from, buf, 512, &w->lost)) > 0) {
        if (w->n + got > w->cap) {
            size_t cap = w->cap ? w->cap * 2 : 4096;
            while (cap < w->n + got)
                cap *= 2;
            struct sl_top_seen *v = realloc(w->v, cap * sizeof *v);
            if (!v) return;
            w->v = v;
            w->cap = cap;
        }
        for (size_t i = 0; i < got; i++)
            w->v[w->n++] = (struct sl_top_seen){.d = buf[i]};
    }
    size_t keep = 0;
    for (size_t i = 0; i < w->n; i++)
        if (w->v[i].d.at_ns + window >= now) w->v[keep++] = w->v[i];
    w->n = keep;
}

struct sl_top_seen *sl_top_tally(const struct sl_top_view *w, size_t *m)
{
    struct sl_top_seen *v = malloc((w->n ? w->n : 1) * sizeof *v);
    *m = 0;
    if (!v) return NULL;
    if (w->n) { /* none seen yet: w->v may be NULL, which memcpy and qsort may not take */
        memcpy(v, w->v, w->n * sizeof *v);
        qsort(v, w->n, sizeof *v, by_key);
    }
    size_t k = 0;
    for (size_t i = 0; i < w->n; i++) {
        if (k && by_key(&v[k - 1], &v[i]) == 0) {
            v[k - 1].count++;
        } else {
            v[k] = v[i];
            v[k++].count = 1;
        }
    }
    qsort(v, k, sizeof *v, by_count);
    *m = k;
    return v;
}

static void show(const struct sl_top_view *w, const struct sl_table *t, const char *label,
                 double window_s, int rows)
{
    size_t m;
    struct sl_top_seen *v = sl_top_tally(w, &m);
    if (!v) return;
    printf("%s: %zu denials in the last %.0f s, %zu keys%s\n", label, w->n, window_s, m,
           w->lost ? " (some were overwritten before they were read)" : "");
    printf("%10s  %-24s %-8s %s\n", "denied", "rule", "", "key");
    for (size_t i = 0; i < m && (int)i < rows; i++) {
        char rule[SL_NAME_MAX] = "?", key[96];
        uint64_t id;
        sl_table_rule_info(t, v[i].d.rule, &id, rule, sizeof rule);
        sl_top_format_key(&v[i].d.key, key, sizeof key);
        printf("%10llu  %-24s %-8s %s\n", (unsigned long long)v[i].count, rule,
               v[i].d.dry ? "dry run" : "", key);
    }
    free(v);
}

int sl_cmd_top(int argc, char **argv)
{
    static const struct option opts[] = {
        {"config", required_argument, NULL, 'c'},   {"shared", required_argument, NULL, 's'},
        {"pid", required_argument, NULL, 'p'},      {"once", no_argument, NULL, '1'},
        {"interval", required_argument, NULL, 'i'}, {"window", required_argument, NULL, 'w'},
        {"rows", required_argument, NULL, 'n'},     {NULL, 0, NULL, 0},
    };
    const char *config = NULL, *shared = NULL;
    int pid = 0, once = 0, rows = 20;
    double interval = 1, window = 10;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "c:n:", opts, NULL)) != -1) {
        switch (c) {
        case 'c':
            config = optarg;
            break;
        case 's':
            shared = optarg;
            break;
        case 'p':
            pid = atoi(optarg);
            break;
        case '1':
            once = 1;
            break;
        case 'i':
            interval = atof(optarg);
            break;
        case 'w':
            window = atof(optarg);
            break;
        case 'n':
            rows = atoi(optarg);
            break;
        default:
            fprintf(stderr, "usage: sluice top (-c FILE | --pid PID | --shared NAME) [--once] "
                            "[--interval S] [--window S] [-n ROWS]\n");
            return 2;
        }
    }
    if (interval < 0.05) interval = 0.05;
    if (window < interval) window = interval;
    struct sl_place place;
    char err[512], label[128];
    if (!sl_locate(config, shared, pid, &place, 1, err, sizeof err)) {
        fprintf(stderr, "sluice top: %s\n", err);
        return 1;
    }
    struct sl_table *t = sl_place_open(&place, false, err, sizeof err);
    if (!t) {
        fprintf(stderr, "sluice top: %s\n", err);
        return 1;
    }
    sl_place_label(&place, label, sizeof label);
    struct sl_top_view w = {0};
    bool tty = isatty(STDOUT_FILENO);
    for (;;) {
        sl_top_refresh(&w, t, sl_clock_now(), (uint64_t)(window * 1e9));
        if (tty && !once) fputs("\033[H\033[2J", stdout);
        show(&w, t, label, window, rows);
        fflush(stdout);
        if (once) break;
        struct timespec ts = {(time_t)interval, (long)((interval - (time_t)interval) * 1e9)};
        nanosleep(&ts, NULL);
        if (!tty) putchar('\n');
    }
    free(w.v);
    sl_table_close(t);
    return 0;
}
