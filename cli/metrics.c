/* SPDX-License-Identifier: BSD-2-Clause */
/* metrics.c - `sluice metrics`: a running program's table in the
 * Prometheus text exposition format (version 0.0.4), printed once, or
 * served over HTTP with --listen for a Prometheus server to scrape.
 *
 * The server is this small separate process (libmicrohttpd, one thread
 * polling), reading the shared table on each scrape: nothing runs inside
 * the program under sluice. Counters are the table's per-rule counters
 * (what `sluice stats` prints) as sluice_connections_total (a rule's
 * connection decisions) and sluice_requests_total (its `<rule>:req` row),
 * with rule, direction (from the configuration, when given with -c) and
 * outcome labels; gauges give the table's size and use. The same server
 * answers / with a live page and /stats.json with what it shows (live.c).
 *
 * Who may read it (issue 31): a port alone binds loopback; another
 * address is the operator's choice, said on stderr when it is not
 * loopback. With --token FILE every path asks for `Authorization: Bearer
 * <the file's text>` (Prometheus's `authorization: credentials_file`),
 * else 401. The token is kept only as a BLAKE2b digest, compared with
 * sodium_memcmp: the time an answer takes tells nothing of the token,
 * not even its length; it is never printed.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <microhttpd.h>
#include <signal.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../conf/conf.h"
#include "../core/clock.h"
#include "../core/fleet/cluster_int.h"
#include "../core/fleet/hostport.h"
#include "../core/fleet/redis_int.h"
#include "../core/limit/table.h"
#include "../core/limit/table_plans.h"
#include "locate.h"
#include "metrics.h"
#include "redis_view.h"

int sl_cmd_metrics(int argc, char **argv);

const char *sl_metrics_direction(const struct sl_metrics_source *s, const char *rule)
{
    if (!s->cfg) return "";
    for (int i = 0; i < s->cfg->nrules; i++)
        if (strcmp(s->cfg->rules[i].name, rule) == 0)
            return s->cfg->rules[i].dir == SL_IN ? "in" : "out";
    return "";
}

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
    if (!cfg || !cfg->gossip.enabled) return;
    char name[200], err[256];
    sl_cluster_shm_name(cfg->gossip.listen, name, sizeof name);
    struct sl_cluster *c = sl_cluster_attach(name, err, sizeof err);
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
    sl_cluster_close(c);
}

/* Decisions waiting for their turn (action = delay), per rule: how many
 * hold a turn still to come, the longest of their waits, and the time
 * waited in total (with the delayed outcome: the average wait). */
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
            sl_table_queue(t, r, now, &waiting, &longest, &total);
            size_t n = strlen(rule);
            bool req = n > 4 && strcmp(rule + n - 4, ":req") == 0;
            if (req) rule[n - 4] = 0;
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
        size_t n = strlen(rule);
        if (n <= 4 || strcmp(rule + n - 4, ":req") != 0) continue;
        rule[n - 4] = 0;
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

const char *sl_metrics_window(enum sl_quota_window w)
{
    return w == SL_QUOTA_MONTH ? "month" : w == SL_QUOTA_DAY ? "day" : "";
}

bool sl_metrics_next_plan(const struct sl_table *t, int rule, int *i, struct sl_plan_use *u)
{
    uint64_t wall_s = (uint64_t)time(NULL);
    while (++*i < sl_table_plan_entries())
        if (sl_table_plan_use(t, *i, wall_s, u) && u->rule == rule) return true;
    return false;
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
            size_t n = strlen(rule);
            if (n <= 4 || strcmp(rule + n - 4, ":req") != 0) continue;
            rule[n - 4] = 0;
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

/* The Redis sender's view (core/fleet/redis.c), from the memory file the
 * program keeps it in: how long since Redis last answered a whole round,
 * and its counters. Nothing without a redis section or a running program. */
bool sl_metrics_redis(const struct sl_metrics_source *s, struct sl_rhdr *h)
{
    int pid = s->place.npids ? s->place.pids[0] : 0;
    if (!s->cfg || !s->cfg->redis.enabled || pid <= 0) return false;
    return sl_redis_view(pid, h);
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

/* Writes the exposition of one table; -1 when it cannot be opened. */
struct sl_table *sl_metrics_open(struct sl_metrics_source *s, char *err, size_t errlen)
{
    struct sl_table *t = sl_place_open(&s->place, false, err, errlen);
    if (!t && s->config && !*s->place.shared &&
        sl_locate(s->config, NULL, 0, &s->place, 1, err, errlen)) /* restarted: a new table */
        t = sl_place_open(&s->place, false, err, errlen);
    return t;
}

static int expose(FILE *out, struct sl_metrics_source *s, char *err, size_t errlen)
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
            size_t n = strlen(rule);
            bool req = n > 4 && strcmp(rule + n - 4, ":req") == 0;
            if (req != (kind == 1)) continue;
            if (req) rule[n - 4] = 0;
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
        for (int c = SL_C_OVERFLOW; c < SL_NCOUNTERS; c++) {
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
        size_t n = strlen(rule);
        if (n <= 4 || strcmp(rule + n - 4, ":req") != 0) continue;
        rule[n - 4] = 0;
        fputs("sluice_odd_heads_total{rule=\"", out);
        label(out, rule);
        fprintf(out, "\"} %llu\n", (unsigned long long)sl_table_counter(t, r, SL_C_ODD));
    }
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

/* The token's digest; `token_set` false: no token asked (no --token). */
static unsigned char token_digest[crypto_generichash_BYTES];
static bool token_set;

/* Reads the --token file: a regular file other users cannot read, one
 * line of printable characters (trailing white space dropped), at most
 * 4 KiB. Keeps its digest; NULL, or why not (never the token). */
static const char *read_token(const char *path)
{
    char text[4098];
    struct stat st;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0) return strerror(errno);
    const char *bad = fstat(fd, &st) != 0     ? strerror(errno)
                      : !S_ISREG(st.st_mode)  ? "is not a regular file"
                      : st.st_mode & S_IROTH  ? "can be read by every user: chmod 600 it"
                      : st.st_size > 4096 + 1 ? "is larger than 4 KiB"
                                              : NULL;
    ssize_t n = bad ? 0 : read(fd, text, sizeof text - 1);
    if (!bad && n < 0) bad = strerror(errno);
    close(fd);
    if (bad) return bad;
    size_t len = (size_t)n;
    while (len && (text[len - 1] == '\n' || text[len - 1] == '\r' || text[len - 1] == ' ' ||
                   text[len - 1] == '\t'))
        len--;
    if (len == 0) bad = "is empty";
    for (size_t i = 0; i < len && !bad; i++)
        if (text[i] < 0x21 || text[i] > 0x7e)
            bad = "does not hold a token: one line of printable characters, no spaces";
    if (!bad) {
        crypto_generichash(token_digest, sizeof token_digest, (const unsigned char *)text, len,
                           NULL, 0);
        token_set = true;
    }
    sodium_memzero(text, sizeof text);
    return bad;
}

/* The request carries `Authorization: Bearer <token>` (the scheme in any
 * case, RFC 7235), or no token is asked. */
static bool authorized(struct MHD_Connection *c)
{
    if (!token_set) return true;
    const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
    if (!h || strncasecmp(h, "Bearer ", 7) != 0) return false;
    for (h += 7; *h == ' ';)
        h++;
    unsigned char got[crypto_generichash_BYTES];
    crypto_generichash(got, sizeof got, (const unsigned char *)h, strlen(h), NULL, 0);
    return sodium_memcmp(got, token_digest, sizeof got) == 0;
}

static enum MHD_Result answer(void *cls, struct MHD_Connection *c, const char *url,
                              const char *method, const char *version, const char *data,
                              size_t *len, void **state)
{
    (void)version, (void)data, (void)len, (void)state;
    struct sl_metrics_source *s = cls;
    char *text = NULL, err[256];
    size_t n = 0;
    unsigned status = MHD_HTTP_OK;
    const char *type = "text/plain; version=0.0.4; charset=utf-8";
    FILE *out = open_memstream(&text, &n);
    if (!out) return MHD_NO;
    bool denied = !authorized(c);
    if (denied) {
        status = MHD_HTTP_UNAUTHORIZED;
        type = "text/plain; charset=utf-8";
        fputs("this exporter asks for Authorization: Bearer <token> (sluice metrics --token)\n",
              out);
    } else if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0) {
        status = MHD_HTTP_METHOD_NOT_ALLOWED;
        fputs("only GET\n", out);
    } else if (strcmp(url, "/") == 0) {
        type = "text/html; charset=utf-8";
        fputs(sl_live_page, out);
    } else if (strcmp(url, "/stats.json") == 0) {
        type = "application/json";
        if (sl_live_json(out, s, err, sizeof err) != 0) {
            status = MHD_HTTP_SERVICE_UNAVAILABLE;
            fprintf(out, "{\"error\": \"table unavailable\"}\n");
        }
    } else if (strcmp(url, "/metrics") != 0) {
        status = MHD_HTTP_NOT_FOUND;
        fputs("the metrics are at /metrics, the live page at /\n", out);
    } else if (expose(out, s, err, sizeof err) != 0) {
        status = MHD_HTTP_SERVICE_UNAVAILABLE;
        fprintf(out, "table %s: %s\n", s->label, err);
    }
    fclose(out);
    struct MHD_Response *r = MHD_create_response_from_buffer(n, text, MHD_RESPMEM_MUST_FREE);
    if (!r) {
        free(text);
        return MHD_NO;
    }
    MHD_add_response_header(r, "Content-Type", type);
    MHD_add_response_header(r, "Cache-Control", "no-store");
    if (denied)
        MHD_add_response_header(r, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer realm=\"sluice\"");
    enum MHD_Result rc = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return rc;
}

static volatile sig_atomic_t stopping;
static void stop(int sig)
{
    (void)sig;
    stopping = 1;
}

static bool loopback(const struct sockaddr_storage *ss)
{
    if (ss->ss_family == AF_INET)
        return (ntohl(((const struct sockaddr_in *)ss)->sin_addr.s_addr) >> 24) == 127;
    const struct in6_addr *a = &((const struct sockaddr_in6 *)ss)->sin6_addr;
    return IN6_IS_ADDR_LOOPBACK(a) || (IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127);
}

static int serve(struct sl_metrics_source *s, const char *arg)
{
    struct sockaddr_storage ss;
    socklen_t sslen;
    char listen[80];
    /* a port alone (9464 or :9464): loopback, only this host's users */
    const char *port_only = arg[0] == ':' ? arg + 1 : arg;
    if (*port_only && strspn(port_only, "0123456789") == strlen(port_only))
        snprintf(listen, sizeof listen, "127.0.0.1:%s", port_only);
    else
        snprintf(listen, sizeof listen, "%s", arg);
    const char *bad = sl_hostport_parse(listen, &ss, &sslen);
    if (bad) {
        fprintf(stderr, "sluice metrics: --listen %s: %s, or a port alone (loopback)\n", arg, bad);
        return 2;
    }
    if (!loopback(&ss))
        fprintf(stderr, "sluice metrics: warning: --listen %s is not a loopback address: %s\n",
                listen,
                token_set ? "other hosts reach it; they need the token, which plain HTTP carries "
                            "in clear"
                          : "whoever can reach it reads the rule names and counters (--token FILE "
                            "asks for a bearer token; a port alone binds 127.0.0.1)");
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG;
    if (ss.ss_family == AF_INET6) flags |= MHD_USE_IPv6;
    uint16_t port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                                   : ((struct sockaddr_in *)&ss)->sin_port);
    struct sockaddr *sa = (struct sockaddr *)&ss;
    struct MHD_Daemon *d =
        MHD_start_daemon(flags, port, NULL, NULL, answer, (void *)s, MHD_OPTION_SOCK_ADDR, sa,
                         MHD_OPTION_CONNECTION_TIMEOUT, 10u, MHD_OPTION_END);
    if (!d) {
        fprintf(stderr, "sluice metrics: cannot listen on %s: %s\n", listen, strerror(errno));
        return 1;
    }
    signal(SIGINT, stop);
    signal(SIGTERM, stop);
    fprintf(stderr, "sluice metrics: table of %s on http://%s/metrics, live page at http://%s/\n",
            s->label, listen, listen);
    while (!stopping)
        pause();
    MHD_stop_daemon(d);
    return 0;
}

int sl_cmd_metrics(int argc, char **argv)
{
    static const struct option opts[] = {
        {"config", required_argument, NULL, 'c'}, {"shared", required_argument, NULL, 's'},
        {"listen", required_argument, NULL, 'l'}, {"pid", required_argument, NULL, 'p'},
        {"token", required_argument, NULL, 't'},  {NULL, 0, NULL, 0},
    };
    const char *config = NULL, *shared = NULL, *listen = NULL, *token = NULL;
    int pid = 0;
    optind = 1;
    for (int c; (c = getopt_long(argc, argv, "c:s:l:", opts, NULL)) != -1;) {
        if (c == 'c')
            config = optarg;
        else if (c == 's')
            shared = optarg;
        else if (c == 'p')
            pid = atoi(optarg);
        else if (c == 'l')
            listen = optarg;
        else if (c == 't')
            token = optarg;
        else
            return 2;
    }
    if (token) {
        const char *bad = !listen             ? "is for --listen"
                          : sodium_init() < 0 ? "needs libsodium, which cannot initialise"
                                              : read_token(token);
        if (bad) {
            fprintf(stderr, "sluice metrics: --token %s: %s\n", token, bad);
            return 2;
        }
    }
    struct sl_metrics_source s = {.config = config, .pid = pid};
    struct sl_config *cfg = NULL;
    char err[1024];
    if (config) {
        enum sl_on_error on_error;
        cfg = sl_conf_load(config, NULL, &on_error, err, sizeof err);
        if (!cfg) {
            fprintf(stderr, "sluice: %s\n", err);
            return 1;
        }
        s.cfg = cfg;
    }
    struct sl_place found[2];
    size_t n = sl_locate(config,
                         shared                ? shared
                         : cfg && *cfg->shared ? cfg->shared
                                               : NULL,
                         pid, found, 2, err, sizeof err);
    if (n != 1) {
        if (n > 1)
            fprintf(stderr,
                    "sluice metrics: more than one program runs with %s: name one with "
                    "--pid (`sluice ps` lists them)\n",
                    config);
        else
            fprintf(stderr, "sluice metrics: %s\n", err);
        if (cfg) sl_conf_free(cfg);
        return n ? 2 : 1;
    }
    s.place = found[0];
    sl_place_label(&s.place, s.label, sizeof s.label);
    if (!cfg && *s.place.config) { /* found by --pid or --shared: what it runs from */
        enum sl_on_error on_error;
        s.cfg = cfg = sl_conf_load(s.place.config, NULL, &on_error, err, sizeof err);
    }
    int rc;
    if (listen) {
        rc = serve(&s, listen);
    } else {
        rc = expose(stdout, &s, err, sizeof err) == 0 ? 0 : 1;
        if (rc) fprintf(stderr, "sluice metrics: %s: %s\n", s.label, err);
    }
    free(s.top.v);
    if (cfg) sl_conf_free(cfg);
    return rc;
}
