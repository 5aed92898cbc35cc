/* sluice - runs a program under the rate limiter, checks configurations,
 * shows counters. See `sluice --help`. */
#include <errno.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../conf/conf.h"
#include "../core/table.h"

int sl_cmd_keygen(int argc, char **argv);        /* cluster.c */
int sl_cmd_cluster_stats(int argc, char **argv); /* cluster.c */
int sl_cmd_metrics(int argc, char **argv);       /* metrics.c */

#ifndef SL_VERSION_TEXT
#define SL_VERSION_TEXT "dev"
#endif
#ifndef SL_LIBDIR
#define SL_LIBDIR "/usr/local/lib/sluice"
#endif

static const char usage[] =
    "usage: sluice run [-c FILE] [--in RULE]... [--out RULE]... [--dry-run] -- COMMAND [ARG]...\n"
    "       sluice check [-c FILE] [--in RULE]... [--out RULE]...\n"
    "       sluice stats (-c FILE | --shared NAME)\n"
    "       sluice keygen [FILE]\n"
    "       sluice cluster-stats (-c FILE | --listen ADDRESS:PORT)\n"
    "       sluice reload -c FILE\n"
    "       sluice metrics (-c FILE | --shared NAME) [--listen ADDRESS:PORT]\n"
    "       sluice version\n"
    "\n"
    "  run     runs COMMAND with libsluice.so preloaded and the rules given\n"
    "  check   validates the rules and prints them as understood (exit 1 on error)\n"
    "  stats   prints the per-rule counters of a table named with `shared`\n"
    "  keygen  writes a new gossip key (64 hex characters, mode 0600)\n"
    "  cluster-stats  prints gossip counters and peers of a running node\n"
    "  reload  publishes an edited FILE to the running program (no restart)\n"
    "  metrics prints a table's counters for Prometheus, or serves them (--listen)\n"
    "\n"
    "  -c, --config FILE   configuration file (libconfuse syntax, see README)\n"
    "  --in RULE           an inbound rule as key=value words: 'port=8080 rate=20/s burst=10'\n"
    "  --out RULE          an outbound rule: 'to=api.example port=443 rate=50/m action=delay'\n"
    "  --dry-run           decide and count, log what would be limited, enforce nothing\n"
    "  --shared NAME       (stats) the table's shared name\n";

struct args {
    const char *config;
    const char *shared;
    char rules[8192];
    int dry_run;
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

static int parse_args(int argc, char **argv, struct args *a)
{
    static const struct option opts[] = {
        {"config", required_argument, NULL, 'c'},
        {"in", required_argument, NULL, 'i'},
        {"out", required_argument, NULL, 'o'},
        {"dry-run", no_argument, NULL, 'd'},
        {"shared", required_argument, NULL, 's'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
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
            add_rule(a, "in", optarg);
            break;
        case 'o':
            add_rule(a, "out", optarg);
            break;
        case 'd':
            a->dry_run = 1;
            break;
        case 's':
            a->shared = optarg;
            break;
        case 'h':
            fputs(usage, stdout);
            exit(0);
        default:
            fputs(usage, stderr);
            exit(2);
        }
    }
    if (a->dry_run) {
        char tmp[sizeof a->rules];
        snprintf(tmp, sizeof tmp, "%s", a->rules);
        a->rules[0] = 0;
        add_rule(a, "global", "dry_run=yes");
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
        snprintf(out, len, "%s/../lib/sluice/libsluice.so", dir);
        if (file_exists(out)) return 0;
    }
    snprintf(out, len, "%s/libsluice.so", SL_LIBDIR);
    return file_exists(out) ? 0 : -1;
}

/* Loads the configuration the program will load, so that an error is
 * reported once, here, before the program starts (the library in the
 * program then finds it reported: conf/errors.c). Returns 78 when
 * on_error = closed refuses to start, else 0. */
static int validate_for_run(const char *file, const char *rules)
{
    if (!file && !rules) return 0;
    char err[1024];
    enum sl_on_error on_error;
    sl_conf_set_resolver(NULL, NULL); /* host names: the program's own load resolves them */
    struct sl_config *cfg = sl_conf_load(file, rules, &on_error, err, sizeof err);
    if (cfg) {
        sl_conf_free(cfg);
        return 0;
    }
    sl_conf_report_failure(err, on_error);
    return on_error == SL_ON_ERROR_CLOSED ? 78 : 0;
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
    int refused = validate_for_run(getenv("SLUICE_CONFIG"), *a.rules ? a.rules : NULL);
    if (refused) return refused;
    /* Ours goes last, so a sanitizer runtime the user preloads stays first.
     * SLUICE_PRELOAD_FIRST puts one in front for this command only (the
     * tests run the ASan-built library this way). */
    const char *pre = getenv("LD_PRELOAD"), *front = getenv("SLUICE_PRELOAD_FIRST");
    char preload[3 * PATH_MAX];
    snprintf(preload, sizeof preload, "%s%s%s%s%s", front && *front ? front : "",
             front && *front ? " " : "", pre && *pre ? pre : "", pre && *pre ? " " : "", lib);
    setenv("LD_PRELOAD", preload, 1);
    execvp(argv[first], argv + first);
    fprintf(stderr, "sluice: %s: %s\n", argv[first], strerror(errno));
    return 127;
}

static void print_warning(const char *line)
{
    fprintf(stderr, "sluice: warning: %s\n", line);
}

static int cmd_check(int argc, char **argv)
{
    struct args a;
    parse_args(argc, argv, &a);
    sl_conf_set_warn(print_warning);
    struct sl_config *cfg = load(&a);
    if (!cfg) return 1;
    sl_conf_print(cfg, stdout);
    sl_conf_free(cfg);
    return 0;
}

/* Publishes a validated configuration to the running program through its
 * shared table; each process loads it again at its next decision
 * (shim/reload.h says what may change). */
static int cmd_reload(int argc, char **argv)
{
    struct args a;
    parse_args(argc, argv, &a);
    if (!a.config) {
        fprintf(stderr, "sluice reload: -c FILE: the file the program was started with, edited\n");
        return 2;
    }
    struct sl_config *cfg = load(&a);
    if (!cfg) return 1; /* load() said why: nothing changes */
    int rc = 0;
    char err[256], path[PATH_MAX];
    struct sl_table *t = NULL;
    if (!*cfg->shared) {
        fprintf(stderr, "sluice reload: %s: the program is found through its table: set `shared`\n",
                a.config);
        rc = 2;
    } else if (cfg->gossip.enabled || cfg->redis.enabled) {
        fprintf(stderr,
                "sluice reload: %s: a gossip or redis section changes only with a "
                "restart\n",
                a.config);
        rc = 1;
    } else if (!(t = sl_table_attach_rw(cfg->shared, err, sizeof err))) {
        fprintf(stderr, "sluice reload: table %s: %s (is the program running?)\n", cfg->shared,
                err);
        rc = 1;
    } else if (sl_table_slots(t) < cfg->table_slots) {
        fprintf(stderr,
                "sluice reload: %s: table_slots changes only with a restart (the running "
                "table has %u)\n",
                a.config, sl_table_slots(t));
        rc = 1;
    } else if (!realpath(a.config, path) || !sl_table_config_publish(t, path)) {
        fprintf(stderr, "sluice reload: %s: cannot name it by an absolute path of under 1 KiB\n",
                a.config);
        rc = 1;
    } else {
        uint32_t gen = sl_table_config_gen(t);
        printf("published %s as generation %u of table %s: each process of the program takes it "
               "at its next decision (errors go to the program's log)\n",
               a.config, gen, cfg->shared);
    }
    if (t) sl_table_close(t);
    sl_conf_free(cfg);
    return rc;
}

/* One section of `sluice stats`: connection rules, or request rules (kept
 * in the table under "NAME:req", shown under their own name). */
static void print_rules(const struct sl_table *t, bool req)
{
    uint64_t id;
    char rule[SL_NAME_MAX];
    bool any = false;
    for (int r = 0; sl_table_rule_info(t, r, &id, rule, sizeof rule); r++) {
        size_t n = strlen(rule);
        bool is_req = n > 4 && strcmp(rule + n - 4, ":req") == 0;
        if (is_req != req) continue;
        if (is_req) rule[n - 4] = 0;
        if (!any) {
            if (req) printf("\nrequests (HTTP requests decided by req_rate rules)\n");
            printf("%-24s", "rule");
            for (int c = 0; c < SL_NCOUNTERS; c++)
                printf(" %12s", sl_counter_names[c]);
            printf("\n");
            any = true;
        }
        printf("%-24s", rule);
        for (int c = 0; c < SL_NCOUNTERS; c++)
            printf(" %12llu", (unsigned long long)sl_table_counter(t, r, (enum sl_counter)c));
        printf("\n");
    }
}

static int cmd_stats(int argc, char **argv)
{
    struct args a;
    parse_args(argc, argv, &a);
    char name[SL_NAME_MAX] = "";
    if (a.shared) {
        snprintf(name, sizeof name, "%s", a.shared);
    } else if (a.config) {
        struct sl_config *cfg = load(&a);
        if (!cfg) return 1;
        snprintf(name, sizeof name, "%s", cfg->shared);
        sl_conf_free(cfg);
    }
    if (!*name) {
        fprintf(stderr, "sluice stats: the table must have a shared name (option `shared`)\n");
        return 2;
    }
    char err[256];
    struct sl_table *t = sl_table_attach(name, err, sizeof err);
    if (!t) {
        fprintf(stderr, "sluice stats: %s: %s\n", name, err);
        return 1;
    }
    printf("table %s: %u slots, %u in use, %zu bytes\n", name, sl_table_slots(t), sl_table_used(t),
           sl_table_bytes(t));
    print_rules(t, false);
    print_rules(t, true);
    sl_table_close(t);
    return 0;
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
    if (!strcmp(cmd, "reload")) return cmd_reload(argc - 1, argv + 1);
    if (!strcmp(cmd, "keygen")) return sl_cmd_keygen(argc - 1, argv + 1);
    if (!strcmp(cmd, "cluster-stats")) return sl_cmd_cluster_stats(argc - 1, argv + 1);
    if (!strcmp(cmd, "metrics")) return sl_cmd_metrics(argc - 1, argv + 1);
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
