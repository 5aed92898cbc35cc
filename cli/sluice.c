/* SPDX-License-Identifier: BSD-2-Clause */
/* sluice - runs a program under the rate limiter, checks configurations,
 * shows counters. See `sluice --help`. */
#include <errno.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../conf/conf.h"
#include "../core/clock.h"
#include "../core/elfkind.h"
#include "../core/http/learn.h"
#include "../core/limit/cost.h"
#include "../core/limit/table.h"
#include "../core/limit/table_plans.h"
#include "learned.h"
#include "locate.h"
#include "metrics_source.h"
#include "places.h"
#include "proxy.h"
#include "redis_view.h"

int sl_cmd_keygen(int argc, char **argv);        /* cluster.c */
int sl_cmd_cluster_stats(int argc, char **argv); /* cluster.c */
int sl_cmd_metrics(int argc, char **argv);       /* metrics_http.c */
int sl_cmd_top(int argc, char **argv);           /* top.c */

#ifndef SL_VERSION_TEXT
#define SL_VERSION_TEXT "dev"
#endif
#ifndef SL_LIBDIR
#define SL_LIBDIR "/usr/local/lib/sluice"
#endif

static const char usage[] =
    "usage: sluice run [-c FILE] [--in RULE]... [--out RULE]... [--dry-run] [--verbose] -- COMMAND "
    "[ARG]...\n"
    "       sluice check [-c FILE] [--in RULE]... [--out RULE]...\n"
    "       sluice stats (-c FILE | --pid PID | --shared NAME)\n"
    "       sluice ps [--clean]\n"
    "       sluice top (-c FILE | --pid PID | --shared NAME) [--once] [--window S]\n"
    "       sluice keygen [FILE]\n"
    "       sluice cluster-stats (-c FILE | --listen ADDRESS:PORT)\n"
    "       sluice reload (-c FILE | --pid PID [-c FILE] [--in RULE]... [--out RULE]...)\n"
    "       sluice metrics (-c FILE | --pid PID | --shared NAME) [--listen [ADDRESS:]PORT] "
    "[--token FILE]\n"
    "       sluice version\n"
    "\n"
    "  run     runs COMMAND with libsluice.so preloaded and the rules given (a Go or static\n"
    "          COMMAND under outbound rules: through a local proxy, named in HTTPS_PROXY,\n"
    "          HTTP_PROXY and ALL_PROXY, that runs under the rules)\n"
    "  check   validates the rules and prints them as understood (exit 1 on error)\n"
    "  stats   prints the per-rule counters of a running program's table\n"
    "  ps      lists the programs running under sluice, and named tables left by ended ones\n"
    "  top     shows live the keys a program limits most (addresses, hashes of request keys)\n"
    "  keygen  writes a new gossip key (64 hex characters, mode 0600)\n"
    "  cluster-stats  prints gossip counters and peers of a running node\n"
    "  reload  publishes an edited FILE (or new inline rules) to the running program\n"
    "  metrics prints a table's counters for Prometheus, or serves them (--listen)\n"
    "\n"
    "  -c, --config FILE   configuration file (libconfuse syntax, see sluice.conf(5))\n"
    "  --in RULE           an inbound rule as key=value words: 'port=8080 rate=20/s burst=10'\n"
    "  --out RULE          an outbound rule: 'to=api.example port=443 rate=50/m action=delay'\n"
    "  --dry-run           decide and count, log what would be limited, enforce nothing\n"
    "  --verbose           (run, check) log every decision, unlimited (log_level = debug)\n"
    "  --shared NAME       (stats, top, metrics) the table's shared name\n"
    "  --pid PID           (stats, top, metrics, reload) the program one of whose processes is "
    "PID\n"
    "  --listen [ADDR:]PORT  (metrics) serve over HTTP; a port alone binds 127.0.0.1, another\n"
    "                      address than loopback is warned about on stderr\n"
    "  --token FILE        (metrics --listen) answer only requests with Authorization: Bearer\n"
    "                      and the file's text (mode 600, one line), others 401\n"
    "  Without --pid or --shared, -c FILE finds the programs started with FILE.\n";

struct args {
    const char *config;
    const char *shared;
    char rules[8192];
    int dry_run;
    int verbose;
    int pid;
    int clean;
};

static void add_rule(struct args *a, const char *dir, const char *text)
{
    size_t n = strlen(a->rules);
    int w = snprintf(a->rules + n, sizeof a->rules - n, "%s%s %s", n ? "; " : "", dir, text);
    if (w < 0 || (size_t)w >= sizeof a->rules - n) {
        fprintf(stderr, "sluice: inline rules are too long\n");
        exit(2);
    }
}

/* The text of one --in or --out is one rule: an unquoted ';' in it would
 * start a second rule in SLUICE_RULES (issue 31). */
static void add_one_rule(struct args *a, const char *dir, const char *text)
{
    const char *semi = sl_conf_inline_separator(text);
    if (semi) {
        fprintf(stderr,
                "sluice: --%s '%s': the ';' at byte %zu would start a second rule: give each rule "
                "its own --in or --out (quote a ';' that belongs in a value)\n",
                dir, text, (size_t)(semi - text) + 1);
        exit(2);
    }
    add_rule(a, dir, text);
}

static int parse_args(int argc, char **argv, struct args *a)
{
    static const struct option opts[] = {
        {"config", required_argument, NULL, 'c'}, {"in", required_argument, NULL, 'i'},
        {"out", required_argument, NULL, 'o'},    {"dry-run", no_argument, NULL, 'd'},
        {"verbose", no_argument, NULL, 'v'},      {"shared", required_argument, NULL, 's'},
        {"pid", required_argument, NULL, 'p'},    {"clean", no_argument, NULL, 'C'},
        {"help", no_argument, NULL, 'h'},         {NULL, 0, NULL, 0},
    };
    memset(a, 0, sizeof *a);
    optind = 1;
    int c;
    while ((c = getopt_long(argc, argv, "+c:h", opts, NULL)) != -1) {
        switch (c) {
        case 'c':
            a->config = optarg;
            break;
        case 'i':
            add_one_rule(a, "in", optarg);
            break;
        case 'o':
            add_one_rule(a, "out", optarg);
            break;
        case 'd':
            a->dry_run = 1;
            break;
        case 'v':
            a->verbose = 1;
            break;
        case 's':
            a->shared = optarg;
            break;
        case 'p':
            a->pid = atoi(optarg);
            if (a->pid <= 0) {
                fprintf(stderr, "sluice: --pid %s: not a process id\n", optarg);
                exit(2);
            }
            break;
        case 'C':
            a->clean = 1;
            break;
        case 'h':
            fputs(usage, stdout);
            exit(0);
        default:
            fputs(usage, stderr);
            exit(2);
        }
    }
    if (a->dry_run || a->verbose) { /* global words first, then the rules */
        char tmp[sizeof a->rules];
        snprintf(tmp, sizeof tmp, "%s", a->rules);
        a->rules[0] = 0;
        if (a->dry_run) add_rule(a, "global", "dry_run=yes");
        if (a->verbose) add_rule(a, "global", "log_level=debug");
        if (*tmp) add_rule(a, "", tmp);
    }
    return optind;
}

static struct sl_config *load(const struct args *a)
{
    char err[1024];
    enum sl_on_error on_error;
    struct sl_config *cfg =
        sl_conf_load(a->config, *a->rules ? a->rules : NULL, &on_error, err, sizeof err);
    if (!cfg) fprintf(stderr, "sluice: %s\n", err);
    if (cfg && cfg->degraded[0]) { /* a program would run without that part: an error to fix */
        fprintf(stderr, "sluice: %s\n", cfg->degraded);
        sl_conf_free(cfg);
        cfg = NULL;
    }
    return cfg;
}

static int file_exists(const char *p)
{
    return access(p, R_OK) == 0;
}

/* The library beside this program (the build tree), then under the install
 * prefix relative to it, then the compiled-in prefix. */
static int find_library(char *out, size_t len)
{
    const char *env = getenv("SLUICE_LIBRARY");
    if (env && *env) return snprintf(out, len, "%s", env), 0;
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n > 0) {
        self[n] = 0;
        char *dir = dirname(self);
        snprintf(out, len, "%s/libsluice.so", dir);
        if (file_exists(out)) return 0;
        char up[PATH_MAX + 32];
        snprintf(up, sizeof up, "%s/../lib/sluice/libsluice.so", dir);
        if (file_exists(up) && realpath(up, self)) return snprintf(out, len, "%s", self), 0;
    }
    snprintf(out, len, "%s/libsluice.so", SL_LIBDIR);
    return file_exists(out) ? 0 : -1;
}

/* Loads the configuration the program will load, so that an error is
 * reported once, here, before the program starts (the library in the
 * program then finds it reported: conf/errors.c). Returns 78 when
 * on_error = closed refuses to start, else 0. */
static int validate_for_run(const char *file, const char *rules, bool *requests, bool *outbound)
{
    *requests = *outbound = false;
    if (!file && !rules) return 0;
    char err[1024];
    enum sl_on_error on_error;
    sl_conf_set_resolver(NULL, NULL); /* host names: the program's own load resolves them */
    struct sl_config *cfg = sl_conf_load(file, rules, &on_error, err, sizeof err);
    if (cfg) {
        sl_conf_report_degraded(cfg);
        for (int i = 0; i < cfg->nrules; i++) {
            *requests = *requests || cfg->rules[i].request;
            *outbound = *outbound || cfg->rules[i].dir == SL_OUT;
        }
        sl_conf_free(cfg);
        return 0;
    }
    sl_conf_report_failure(err, on_error);
    return on_error == SL_ON_ERROR_CLOSED ? 78 : 0;
}

/* The file execvp would run for `cmd`, or false. */
static bool find_program(const char *cmd, char *out, size_t len)
{
    if (strchr(cmd, '/')) return realpath(cmd, out) != NULL;
    const char *path = getenv("PATH");
    char dir[PATH_MAX + 256], real[PATH_MAX];
    for (const char *p = path && *path ? path : "/usr/local/bin:/usr/bin:/bin"; p;) {
        const char *end = strchr(p, ':');
        int n = end ? (int)(end - p) : (int)strlen(p);
        snprintf(dir, sizeof dir, "%.*s/%s", n, n ? p : ".", cmd);
        if (access(dir, X_OK) == 0 && realpath(dir, real) && strlen(real) < len) {
            strcpy(out, real);
            return true;
        }
        p = end ? end + 1 : NULL;
    }
    return false;
}

/* Before exec: says once what sluice will not see in the program (a Go or
 * static binary, TLS in the binary), and tells the library it was said.
 * A program that makes its system calls itself gets, under outbound rules,
 * the proxy of proxy.h in its environment (preload: what the proxy runs
 * with), said in the same line. */
static void say_unseen(const char *cmd, bool requests, bool any_rule, bool outbound,
                       const char *preload)
{
    char path[PATH_MAX];
    if (!any_rule || !find_program(cmd, path, sizeof path)) return;
    struct sl_elf_kind k;
    sl_elf_kind_file(path, &k);
    const char *why = sl_elf_kind_unseen(&k, requests);
    if (!why) return;
    char url[64], kept[1024] = "", err[256] = "", proxy[2048] = "";
    if (outbound && (k.go || !k.dynamic)) {
        if (!sl_proxy_unset_vars())
            snprintf(proxy, sizeof proxy,
                     "; no proxy started: HTTPS_PROXY, HTTP_PROXY and ALL_PROXY are already set "
                     "and left as they are (requests through them are not limited)");
        else if (sl_proxy_start(preload, url, sizeof url, err, sizeof err) != 0)
            snprintf(proxy, sizeof proxy, "; the proxy that would pace it did not start: %s", err);
        else {
            sl_proxy_name(url, kept, sizeof kept);
            snprintf(proxy, sizeof proxy,
                     "; sluice started a proxy at %s under the same rules, named in "
                     "HTTPS_PROXY, HTTP_PROXY and ALL_PROXY (and lowercase)%s%s%s: %s",
                     url, *kept ? " where not already set (" : "", kept,
                     *kept ? " already set: left as it is)" : "", sl_proxy_covers);
        }
    }
    fprintf(stderr, "sluice: warning: %s: %s%s\n", path, why, proxy);
    setenv("SLUICE_SEEN_EXE", path, 1);
}

static int cmd_run(int argc, char **argv)
{
    struct args a;
    int first = parse_args(argc, argv, &a);
    if (first >= argc) {
        fprintf(stderr, "sluice run: no command given\n%s", usage);
        return 2;
    }
    char lib[PATH_MAX];
    if (find_library(lib, sizeof lib) != 0) {
        fprintf(stderr, "sluice: libsluice.so not found beside %s or in %s\n", argv[0], SL_LIBDIR);
        return 1;
    }
    char abs[PATH_MAX];
    if (a.config) {
        /* An unreadable file is the shim's to report (and, by on_error,
         * to run unlimited or refuse): pass it on as given. */
        setenv("SLUICE_CONFIG", realpath(a.config, abs) ? abs : a.config, 1);
    }
    if (*a.rules) setenv("SLUICE_RULES", a.rules, 1);
    bool requests, outbound;
    int refused =
        validate_for_run(getenv("SLUICE_CONFIG"), *a.rules ? a.rules : NULL, &requests, &outbound);
    if (refused) return refused;
    /* Ours goes last, so a sanitizer runtime the user preloads stays first.
     * SLUICE_PRELOAD_FIRST puts one in front for this command only (the
     * tests run the ASan-built library this way). */
    const char *pre = getenv("LD_PRELOAD"), *front = getenv("SLUICE_PRELOAD_FIRST");
    char preload[3 * PATH_MAX];
    snprintf(preload, sizeof preload, "%s%s%s%s%s", front && *front ? front : "",
             front && *front ? " " : "", pre && *pre ? pre : "", pre && *pre ? " " : "", lib);
    say_unseen(argv[first], requests, getenv("SLUICE_CONFIG") || *a.rules, outbound, preload);
    setenv("LD_PRELOAD", preload, 1);
    execvp(argv[first], argv + first);
    fprintf(stderr, "sluice: %s: %s\n", argv[first], strerror(errno));
    return 127;
}

static void print_warning(const char *line)
{
    fprintf(stderr, "sluice: warning: %s\n", line);
}

/* Which clients an outbound rule will not see (README: what sluice cannot
 * see), on stderr: stdout stays a valid configuration file. */
static void say_clients_unseen(const struct sl_config *cfg)
{
    for (int i = 0; i < cfg->nrules; i++) {
        const struct sl_rule *r = &cfg->rules[i];
        if (r->dir != SL_OUT) continue;
        fprintf(stderr,
                "sluice: note: outbound \"%s\" does not see Go programs or statically linked ones "
                "(raw system calls: `sluice run` warns about them and starts a local proxy under "
                "the same rules, named in HTTPS_PROXY, HTTP_PROXY and ALL_PROXY: %s)%s\n",
                r->name, sl_proxy_covers,
                r->request ? "; and over TLS it cannot read the requests of OpenSSL inside the "
                             "program's binary (node's own build), rustls or Java's JSSE: it "
                             "counts them as write bursts, approximately when h2 is offered (the "
                             "program's log says which, once)"
                           : "");
    }
}

static int cmd_check(int argc, char **argv)
{
    struct args a;
    parse_args(argc, argv, &a);
    sl_conf_set_warn(print_warning);
    struct sl_config *cfg = load(&a);
    if (!cfg) return 1;
    sl_conf_print(cfg, stdout);
    say_clients_unseen(cfg);
    sl_say_places(cfg);
    sl_conf_free(cfg);
    return 0;
}

/* Publishes a validated configuration to the running program(s) through
 * their table; each process loads it again at its next decision
 * (shim/reload.h says what may change). Inline rules given replace the
 * program's; with -c alone, the inline rules it has stay. */
static int publish(const struct args *a, const struct sl_config *cfg, const struct sl_place *p)
{
    char err[512], path[PATH_MAX] = "", label[128], rules[2048];
    sl_place_label(p, label, sizeof label);
    struct sl_table *t = sl_place_open(p, true, err, sizeof err);
    if (!t) {
        fprintf(stderr, "sluice reload: %s: %s (is the program running?)\n", label, err);
        return 1;
    }
    int rc = 0;
    if (*a->rules)
        snprintf(rules, sizeof rules, "%.2047s", a->rules); /* longer: refused below */
    else
        sl_table_config_rules(t, rules, sizeof rules);
    /* the program runs what its table says; it would refuse what cannot change */
    char run_path[1024], run_rules[2048];
    sl_table_config_path(t, run_path, sizeof run_path);
    sl_table_config_rules(t, run_rules, sizeof run_rules);
    enum sl_on_error on_error;
    struct sl_config *running =
        *run_path || *run_rules
            ? sl_conf_load(*run_path ? run_path : NULL, *run_rules ? run_rules : NULL, &on_error,
                           err, sizeof err)
            : NULL;
    struct sl_config *next = NULL; /* with -c alone: the file with the inline rules it keeps */
    const char *unfit = NULL;
    if (!*a->rules && *rules && a->config &&
        !(next = sl_conf_load(a->config, rules, &on_error, err, sizeof err)))
        unfit = err;
    if (!unfit && running) unfit = sl_conf_unfit(running, next ? next : cfg);
    if (running) sl_conf_free(running);
    if (next) sl_conf_free(next);
    if (unfit) {
        fprintf(stderr, "sluice reload: %s: %s; nothing changed\n", label, unfit);
        rc = 1;
    } else if ((a->config && !realpath(a->config, path)) || strlen(a->rules) >= sizeof rules ||
               !sl_table_config_publish(t, path, *rules ? rules : NULL)) {
        fprintf(stderr,
                "sluice reload: %s: the file's absolute path must be under 1 KiB and inline "
                "rules under 2 KiB\n",
                a->config ? a->config : "inline rules");
        rc = 1;
    } else {
        printf("published %s as generation %u to %s: each process of the program takes it at "
               "its next decision (errors go to the program's log)\n",
               *path ? path : "the inline rules", sl_table_config_gen(t), label);
    }
    sl_table_close(t);
    return rc;
}

static int cmd_reload(int argc, char **argv)
{
    struct args a;
    parse_args(argc, argv, &a);
    if (!a.config && !(a.pid && *a.rules)) {
        fprintf(stderr, "sluice reload: -c FILE (the file the program was started with, edited), "
                        "or --pid PID with the new --in/--out rules\n");
        return 2;
    }
    struct sl_config *cfg = load(&a);
    if (!cfg) return 1; /* load() said why: nothing changes */
    if (cfg->gossip.enabled || cfg->redis.enabled) {
        fprintf(stderr, "sluice reload: a gossip or redis section changes only with a restart\n");
        sl_conf_free(cfg);
        return 1;
    }
    struct sl_place places[16];
    char err[512];
    size_t n =
        sl_locate(a.config, *cfg->shared ? cfg->shared : NULL, a.pid, places, 16, err, sizeof err);
    int rc = n ? 0 : 1;
    if (!n) fprintf(stderr, "sluice reload: %s\n", err);
    for (size_t i = 0; i < n; i++)
        rc |= publish(&a, cfg, &places[i]);
    sl_conf_free(cfg);
    return rc;
}

/* Under a request rule's row: the keys a vendor's answer holds or spreads
 * (learn = yes), by the short hash the log gives them, the field that
 * said so and until when; then the last few that ended. */
static void print_learned(const struct sl_learned_view *w, int rule, uint64_t now, int64_t wall)
{
    for (size_t i = 0; i < w->n; i++) {
        const struct sl_learned_hold *h = &w->v[i];
        if (h->rule != rule || !sl_learned_shown(w, i, now)) continue;
        char until[40], what[96], left[48];
        sl_learned_wall(h->until_ns, wall, until, sizeof until);
        if (h->gap_ns)
            snprintf(what, sizeof what, "spread %.3f s apart (%lld left)", (double)h->gap_ns / 1e9,
                     (long long)h->left);
        else
            snprintf(what, sizeof what, "held");
        if (h->until_ns > now)
            snprintf(left, sizeof left, "%.1f s left", (double)(h->until_ns - now) / 1e9);
        else
            snprintf(left, sizeof left, "ended %.1f s ago", (double)(now - h->until_ns) / 1e9);
        printf("  learned: key #%s %s until %s (%s), from %s\n", h->key, what, until, left,
               sl_learn_field_name(h->field));
    }
}

/* One section of `sluice stats`: connection rules, or request rules (kept
 * in the table under "NAME:req", shown under their own name), with what
 * `learn` learned under each request rule. */
static void print_rules(const struct sl_table *t, bool req)
{
    uint64_t now = sl_clock_now();
    int64_t wall = sl_clock_wall_offset();
    struct sl_learned_view learned = {.n = 0}; /* 5 KB */
    if (req) sl_learned_read(t, now, &learned);
    /* what `learn` learned (learned .. learn_ignored): request rules only */
    int ncounters = req ? SL_NCOUNTERS : SL_C_LEARNED;
    uint64_t id;
    char rule[SL_NAME_MAX];
    bool any = false;
    for (int r = 0; sl_table_rule_info(t, r, &id, rule, sizeof rule); r++) {
        if (sl_metrics_cost_name(rule) || sl_metrics_req_name(rule) != req) continue;
        if (!any) {
            if (req) printf("\nrequests (HTTP requests decided by req_rate rules)\n");
            printf("%-24s", "rule");
            for (int c = 0; c < ncounters; c++)
                printf(" %12s", sl_counter_names[c]);
            printf(" %8s %12s\n", "waiting", "longest_ms");
            any = true;
        }
        printf("%-24s", rule);
        for (int c = 0; c < ncounters; c++)
            printf(" %12llu", (unsigned long long)sl_table_counter(t, r, (enum sl_counter)c));
        uint32_t waiting;
        uint64_t longest, total;
        sl_table_queue(t, r, now, &waiting, &longest, &total);
        printf(" %8u %12llu\n", waiting, (unsigned long long)(longest / 1000000));
        if (req) print_learned(&learned, r, now, wall);
    }
}

/* Token budgets (cost_from, cost_rate: core/limit/cost.h), kept in the
 * table under "NAME:cost": answers charged, the tokens they cost, those
 * whose cost could not be read (charged the rule's `cost`: the tokens so
 * charged are among `tokens`), and calls refused while the key was in
 * debt. */
static void print_tokens(const struct sl_table *t)
{
    uint64_t id;
    char rule[SL_NAME_MAX];
    bool any = false;
    for (int r = 0; sl_table_rule_info(t, r, &id, rule, sizeof rule); r++) {
        if (!sl_metrics_cost_name(rule)) continue;
        if (!any)
            printf("\ntokens (token budgets: what the answers said the calls cost)\n"
                   "%-24s %12s %14s %12s %14s %12s\n",
                   "rule", "calls", "tokens", "unread", "unread_tokens", "refused");
        any = true;
        printf("%-24s %12llu %14llu %12llu %14llu %12llu\n", rule,
               (unsigned long long)sl_table_counter(t, r, SL_C_COST_CALLS),
               (unsigned long long)sl_table_counter(t, r, SL_C_COST_TOKENS),
               (unsigned long long)sl_table_counter(t, r, SL_C_COST_UNREAD),
               (unsigned long long)sl_table_counter(t, r, SL_C_COST_DEFAULTS),
               (unsigned long long)sl_table_counter(t, r, SL_C_COST_REFUSED));
    }
}

/* Quota use per plan of the request rules (core/limit/table_plans.h): requests
 * admitted against each plan's quota and refused by it, ever; what its
 * keys used in the current window, and how many of them reached 80, 90
 * and 100 % of the quota in it. Plans by name: never a key. */
static void print_plans(const struct sl_table *t)
{
    uint64_t id;
    char rule[SL_NAME_MAX];
    bool any = false;
    for (int r = 0; sl_table_rule_info(t, r, &id, rule, sizeof rule); r++) {
        if (!sl_metrics_req_name(rule)) continue;
        struct sl_plan_use u;
        for (int i = -1; sl_metrics_next_plan(t, r, &i, &u);) {
            if (!any)
                printf("\nplans (quota use per plan; used and keys_80/90/100 in the current "
                       "window)\n%-24s %-24s %14s %12s %12s %12s %8s %8s %8s\n",
                       "rule", "plan", "quota", "admitted", "refused", "used", "keys_80", "keys_90",
                       "keys_100");
            any = true;
            char quota[40];
            snprintf(quota, sizeof quota, "%llu/%s", (unsigned long long)u.quota,
                     sl_metrics_window(u.window));
            printf("%-24s %-24s %14s %12llu %12llu %12llu %8llu %8llu %8llu\n", rule, u.name, quota,
                   (unsigned long long)u.admitted, (unsigned long long)u.refused,
                   (unsigned long long)u.used, (unsigned long long)u.keys[0],
                   (unsigned long long)u.keys[1], (unsigned long long)u.keys[2]);
        }
    }
}

static int cmd_stats(int argc, char **argv)
{
    struct args a;
    parse_args(argc, argv, &a);
    struct sl_place places[16];
    char err[512], label[128];
    size_t n = sl_locate(a.config, a.shared, a.pid, places, 16, err, sizeof err);
    if (!n) {
        fprintf(stderr, "sluice stats: %s\n", err);
        return a.config || a.shared || a.pid ? 1 : 2;
    }
    int rc = 0;
    for (size_t i = 0; i < n; i++) {
        sl_place_label(&places[i], label, sizeof label);
        struct sl_table *t = sl_place_open(&places[i], false, err, sizeof err);
        if (!t) {
            fprintf(stderr, "sluice stats: %s: %s\n", label, err);
            rc = 1;
            continue;
        }
        printf("%stable %s: %u slots, %u in use, %zu bytes\n", i ? "\n" : "",
               *places[i].shared ? places[i].shared : label, sl_table_slots(t), sl_table_used(t),
               sl_table_bytes(t));
        print_rules(t, false);
        print_rules(t, true);
        print_tokens(t);
        print_plans(t);
        struct sl_rhdr rh; /* the Redis sender's state, with a redis section */
        if (places[i].npids && sl_redis_view(places[i].pids[0], &rh))
            sl_redis_view_print(stdout, &rh);
        sl_table_close(t);
    }
    return rc;
}

/* Lists the tables of running programs, and named ones left by programs
 * that ended (--clean removes those). */
static int cmd_ps(int argc, char **argv)
{
    struct args a;
    parse_args(argc, argv, &a);
    struct sl_place *p = calloc(SL_LOCATE_MAX, sizeof *p);
    if (!p) return 1;
    size_t total, n = sl_locate_all(p, SL_LOCATE_MAX, &total);
    printf("%-8s %-16s %-24s %-6s %s\n", "PID", "COMMAND", "TABLE", "PROCS", "CONFIGURATION");
    int rc = 0;
    for (size_t i = 0; i < n; i++) {
        char pid[16] = "-", table[64], config[1100];
        if (p[i].npids) snprintf(pid, sizeof pid, "%d", p[i].pids[0]);
        snprintf(table, sizeof table, "%s", *p[i].shared ? p[i].shared : "(unnamed)");
        snprintf(config, sizeof config, "%s%s%s", p[i].config,
                 *p[i].config && p[i].inline_rules ? " + " : "",
                 p[i].inline_rules ? "inline rules" : "");
        if (!p[i].npids) {
            if (a.clean && unlink(p[i].path) == 0) {
                printf("%-8s %-16s %-24s %-6s removed (no program used it)\n", "-", "-", table,
                       "0");
                continue;
            }
            if (a.clean) {
                fprintf(stderr, "sluice ps: %s: %s\n", p[i].path, strerror(errno));
                rc = 1;
            }
            snprintf(config + strlen(config), sizeof config - strlen(config),
                     "%sleft by a program that ended (`sluice ps --clean` removes it)",
                     *config ? "; " : "");
        }
        printf("%-8s %-16s %-24s %-6d %s\n", pid, *p[i].command ? p[i].command : "?", table,
               p[i].npids, *config ? config : "-");
    }
    if (total > n) printf("(%zu more not shown)\n", total - n);
    free(p);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fputs(usage, stderr);
        return 2;
    }
    const char *cmd = argv[1];
    sl_conf_set_resolver(getaddrinfo, freeaddrinfo);
    if (!strcmp(cmd, "run")) return cmd_run(argc - 1, argv + 1);
    if (!strcmp(cmd, "check")) return cmd_check(argc - 1, argv + 1);
    if (!strcmp(cmd, "stats")) return cmd_stats(argc - 1, argv + 1);
    if (!strcmp(cmd, "ps")) return cmd_ps(argc - 1, argv + 1);
    if (!strcmp(cmd, "top")) return sl_cmd_top(argc - 1, argv + 1);
    if (!strcmp(cmd, "reload")) return cmd_reload(argc - 1, argv + 1);
    if (!strcmp(cmd, "keygen")) return sl_cmd_keygen(argc - 1, argv + 1);
    if (!strcmp(cmd, "cluster-stats")) return sl_cmd_cluster_stats(argc - 1, argv + 1);
    if (!strcmp(cmd, "metrics")) return sl_cmd_metrics(argc - 1, argv + 1);
    if (!strcmp(cmd, "proxy-serve")) return sl_cmd_proxy_serve(argc - 1, argv + 1);
    if (!strcmp(cmd, "version") || !strcmp(cmd, "--version")) {
        printf("sluice %s\n", SL_VERSION_TEXT);
        return 0;
    }
    if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) {
        fputs(usage, stdout);
        return 0;
    }
    fprintf(stderr, "sluice: unknown command '%s'\n%s", cmd, usage);
    return 2;
}
