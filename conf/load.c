/* SPDX-License-Identifier: BSD-2-Clause */
/* load.c - a file and inline rules in, one struct sl_config out.
 *
 * Both are parsed into one libconfuse tree, the file first: globals set by
 * the inline rules then override the file's, and rules keep the order they
 * were written in (file rules first). Every value was checked while it was
 * read (options.c), so turning the tree into the struct cannot meet a bad
 * value; it fills in the defaults that depend on other options, reads
 * reply files and the gossip key, and resolves host names.
 *
 * libconfuse's lexer keeps global state, so loads take one lock.
 *
 * on_error must hold for every error, also those that stop the load before
 * libconfuse has read on_error: a file that cannot be read as a whole (too
 * large, a NUL byte), an unterminated string or comment, a syntax error,
 * an inline rule that cannot be split into words. So before parsing, the
 * text is scanned for a top-level `on_error = open|closed` (text.c): in a
 * file too large, its first MiB; with NUL bytes, the rest of the text; in
 * text that stops with an unterminated string, what comes before it; in
 * inline rules, every rule and word that can be read (inline.c). Inline
 * rules come after the file and their on_error wins, as when they parse;
 * SLUICE_ON_ERROR wins over both. Only a file that cannot be opened at all
 * says nothing, and the default (open) or SLUICE_ON_ERROR applies.
 *
 * Outbound `to` entries: an address or block with a port ("10.0.0.5:443",
 * "[2001:db8::1]:443") adds that port to the rule's ports when the rule has
 * no port list of its own (with one, such a port is an error: say it in one
 * place). A host name's port stays with the name (sl_host.port).
 */
#include "conf.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "../core/limit/key.h"
#include "../core/mem.h"
#include "../core/limit/plan.h"
#include "conf_int.h"

static pthread_mutex_t load_lock = PTHREAD_MUTEX_INITIALIZER;
/* None by default: inside the library getaddrinfo is the shim's own hook,
 * so the caller names the resolver (tests/check-boundary.sh). */
static sl_resolve_fn resolve_fn;
static sl_freeaddrinfo_fn release_fn;

void sl_conf_set_resolver(sl_resolve_fn resolve, sl_freeaddrinfo_fn release)
{
    pthread_mutex_lock(&load_lock);
    resolve_fn = resolve;
    release_fn = release;
    pthread_mutex_unlock(&load_lock);
}

static void resolve_host(struct sl_host *h)
{
    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM; /* one answer per address, not per socket type */
    if (!resolve_fn || resolve_fn(h->name, NULL, &hints, &res) != 0)
        return; /* kept: resolved later */
    for (struct addrinfo *ai = res; ai && h->naddr < SL_MAX_HOST_ADDR; ai = ai->ai_next) {
        struct sl_addr a;
        if (!ai->ai_addr || !sl_addr_from_sockaddr(&a, ai->ai_addr, ai->ai_addrlen)) continue;
        bool dup = false;
        for (uint32_t i = 0; i < h->naddr; i++)
            dup = dup || memcmp(h->addr[i], a.a, 16) == 0;
        if (!dup) memcpy(h->addr[h->naddr++], a.a, 16);
    }
    if (res && release_fn) release_fn(res);
}

static int enum_value(cfg_t *cfg, const char *name, const char *const *names)
{
    int v = 0;
    conf_parse_enum(cfg_getstr(cfg, name), names, &v);
    return v;
}

static void format_rate(uint64_t count, uint64_t period, char *buf, size_t len)
{
    static const struct {
        uint64_t ns;
        const char *unit;
    } bare[] = {{SL_NS_PER_SEC, "s"},
                {60 * SL_NS_PER_SEC, "m"},
                {3600 * SL_NS_PER_SEC, "h"},
                {86400 * SL_NS_PER_SEC, "d"}};
    char d[32], text[64];
    conf_format_duration(period, d, sizeof d);
    for (size_t i = 0; i < 4; i++)
        if (period == bare[i].ns) snprintf(d, sizeof d, "%s", bare[i].unit);
    /* fits: the parser allows at most 10 digits of N and 366 days */
    size_t n = (size_t)snprintf(text, sizeof text, "%llu/%s", (unsigned long long)count, d);
    if (n < len) memcpy(buf, text, n + 1);
}

static int add_port(struct sl_rule *r, uint16_t port)
{
    for (int i = 0; i < r->nports; i++)
        if (r->ports[i].lo == port && r->ports[i].hi == port) return 0;
    if (r->nports >= SL_MAX_PORTS) return -1;
    r->ports[r->nports].lo = r->ports[r->nports].hi = port;
    r->nports++;
    return 0;
}

static int cidr_list(cfg_t *sec, const char *opt, struct sl_cidr *out, int *n)
{
    for (unsigned i = 0; i < cfg_size(sec, opt); i++)
        conf_parse_cidr(cfg_getnstr(sec, opt, i), &out[(*n)++]);
    return 0;
}

/* A byte limit: GCRA over bytes, per second. count == 0 (zeroed) when
 * the rule has none. */
static void byte_limit(cfg_t *sec, const char *rate_opt, const char *burst_opt, struct sl_limit *l,
                       char *text, size_t len)
{
    const char *rate = cfg_getstr(sec, rate_opt), *burst_text = cfg_getstr(sec, burst_opt);
    uint64_t bps, burst;
    if (!rate) return;
    conf_parse_byte_rate(rate, &bps);
    if (burst_text)
        conf_parse_bytes(burst_text, &burst);
    else
        burst = conf_default_byte_burst(bps);
    sl_limit_init(l, SL_ALG_GCRA, bps, SL_NS_PER_SEC, burst); /* checked by the validator */
    char b[24]; /* room for "1000000000000B", the most there is */
    conf_format_bytes(bps, b, sizeof b);
    snprintf(text, len, "%s/s", b);
}

static int build_rule(cfg_t *sec, const struct conf_seen *seen, const struct sl_config *c,
                      struct sl_rule *r)
{
    enum sl_dir dir = seen->dir;
    snprintf(r->name, sizeof r->name, "%s", seen->name);
    r->id = sl_name_hash(r->name);
    r->dir = dir;

    for (unsigned i = 0; i < cfg_size(sec, "port"); i++)
        conf_parse_port_range(cfg_getnstr(sec, "port", i), &r->ports[r->nports++]);
    bool port_list = r->nports > 0;
    cidr_list(sec, "local", r->local, &r->nlocal);
    cidr_list(sec, "from", r->from, &r->nfrom);
    cidr_list(sec, "exempt", r->exempt, &r->nexempt);
    for (unsigned i = 0; i < cfg_size(sec, "to"); i++) {
        const char *text = cfg_getnstr(sec, "to", i);
        struct conf_dest d;
        conf_parse_dest(text, &d);
        if (d.is_host) {
            struct sl_host *h = &r->hosts[r->nhosts++];
            snprintf(h->name, sizeof h->name, "%s", d.host);
            h->port = d.port;
            resolve_host(h);
            continue;
        }
        r->to[r->nto++] = d.cidr;
        if (d.port && !port_list && add_port(r, d.port) != 0) {
            conf_fail(sec, seen->line, "to", text, "is one port too many (at most %d)",
                      SL_MAX_PORTS);
            return -1;
        }
    }

    r->scope = (enum sl_scope)enum_value(sec, "scope", conf_scope_names);
    if (r->scope == SL_SCOPE_CLUSTER && !c->gossip.enabled) {
        conf_fail(sec, seen->line, "scope", "cluster", "needs a gossip section");
        return -1;
    }
    if (r->scope == SL_SCOPE_REDIS && !c->redis.enabled) {
        conf_fail(sec, seen->line, "scope", "redis", "needs a redis section");
        return -1;
    }
    if (cfg_getstr(sec, "rate")) { /* none: limit stays zeroed, burst and algorithm unused */
        uint64_t count, period;
        conf_parse_rate(cfg_getstr(sec, "rate"), &count, &period);
        format_rate(count, period, r->rate_text, sizeof r->rate_text);
        enum sl_alg alg = (enum sl_alg)enum_value(sec, "algorithm", conf_alg_names);
        /* A cluster shares per-origin window counts (core/fleet/cluster.c): its
         * algorithm is the sliding window, and another one written is an
         * error rather than silently replaced. */
        if (r->scope != SL_SCOPE_LOCAL) {
            bool written = cfg_getopt(sec, "algorithm")->flags & CFGF_MODIFIED;
            if (written && alg != SL_ALG_SLIDING) {
                conf_fail(sec, seen->line, "algorithm", cfg_getstr(sec, "algorithm"),
                          r->scope == SL_SCOPE_CLUSTER
                              ? "is not available with scope = cluster (it counts a sliding window)"
                              : "is not available with scope = redis (it counts a sliding window)");
                return -1;
            }
            alg = SL_ALG_SLIDING;
            if (count > SL_SLIDING_MAX_COUNT) {
                conf_fail(sec, seen->line, "rate", cfg_getstr(sec, "rate"),
                          "is too many for one sliding window (at most %u)", SL_SLIDING_MAX_COUNT);
                return -1;
            }
        }
        uint64_t burst = cfg_size(sec, "burst") ? (uint64_t)cfg_getint(sec, "burst") : count;
        sl_limit_init(&r->limit, alg, count, period, burst); /* checked by the validator */
    }
    byte_limit(sec, "recv_rate", "recv_burst", &r->recv_limit, r->recv_rate_text,
               sizeof r->recv_rate_text);
    byte_limit(sec, "send_rate", "send_burst", &r->send_limit, r->send_rate_text,
               sizeof r->send_rate_text);
    r->conns = cfg_size(sec, "conns") ? (uint32_t)cfg_getint(sec, "conns") : 0;

    enum sl_req_per req_per;
    const char *req_name;
    bool per_address =
        cfg_getstr(sec, "per") && !conf_req_per(cfg_getstr(sec, "per"), &req_per, &req_name);
    r->per = per_address    ? (enum sl_per)enum_value(sec, "per", conf_per_names)
             : dir == SL_IN ? SL_PER_PEER
                            : SL_PER_RULE;
    if (dir == SL_IN) {
        bool wide = r->per == SL_PER_PREFIX;
        r->prefix4 = (uint8_t)(cfg_size(sec, "prefix4") ? cfg_getint(sec, "prefix4")
                               : wide                   ? 24
                                                        : 32);
        r->prefix6 = (uint8_t)(cfg_size(sec, "prefix6") ? cfg_getint(sec, "prefix6")
                               : wide                   ? 48
                                                        : 64);
    } else { /* unused: outbound keys hold the whole address */
        r->prefix4 = 32;
        r->prefix6 = 128;
    }

    r->action = cfg_getstr(sec, "action")
                    ? (enum sl_action)enum_value(sec, "action", conf_action_names)
                : dir == SL_IN ? SL_ACT_REJECT
                               : SL_ACT_DELAY;
    const char *reply = cfg_getstr(sec, "reply");
    if (reply) {
        const char *bad =
            conf_read_reply(reply, &r->reply, &r->reply_len, r->reply_path, sizeof r->reply_path);
        if (bad) {
            conf_fail(sec, seen->line, "reply", reply, "%s", bad);
            return -1;
        }
    }
    conf_parse_duration(cfg_getstr(sec, "max_delay"), &r->max_delay_ns);
    if (dir == SL_OUT) {
        if (cfg_getstr(sec, "errno"))
            conf_parse_errno(cfg_getstr(sec, "errno"), &r->err);
        else
            r->err = r->action == SL_ACT_DELAY ? ETIMEDOUT : ECONNREFUSED;
    }
    r->dry_run = cfg_size(sec, "dry_run") ? cfg_getbool(sec, "dry_run") : c->dry_run;
    if (conf_build_request(sec, r, seen->line) != 0) return -1;
    if (r->request && r->scope == SL_SCOPE_REDIS && r->req_per != SL_REQ_PER_ADDRESS &&
        !*c->redis.key_file) {
        /* a key value must be named alike by every program: a shared key */
        conf_fail(sec, seen->line, "per", cfg_getstr(sec, "per"),
                  "needs a key_file in the redis section with scope = redis");
        return -1;
    }
    return 0;
}

/* The gossip section, checked when it was read; fills the defaults that
 * depend on other options and reads the key. */
static int build_gossip(cfg_t *sec, struct sl_gossip *g)
{
    g->enabled = true;
    conf_parse_hostport(cfg_getstr(sec, "listen"), g->listen, sizeof g->listen);
    for (unsigned i = 0; i < cfg_size(sec, "peers"); i++)
        conf_parse_hostport(cfg_getnstr(sec, "peers", i), g->peers[g->npeers++],
                            sizeof g->peers[0]);
    conf_parse_duration(cfg_getstr(sec, "interval"), &g->interval_ns);
    if (cfg_getstr(sec, "peer_timeout"))
        conf_parse_duration(cfg_getstr(sec, "peer_timeout"), &g->peer_timeout_ns);
    else
        g->peer_timeout_ns = 10 * g->interval_ns;
    int nodes = g->npeers + 1;
    g->alone_share_pct = cfg_size(sec, "alone_share") ? (uint32_t)cfg_getint(sec, "alone_share")
                                                      : (uint32_t)((100 + nodes - 1) / nodes);
    const char *key_file = cfg_getstr(sec, "key_file");
    const char *bad = conf_read_key(key_file, g->key, g->key_file, sizeof g->key_file);
    if (bad) { /* changed since it was read a moment ago */
        conf_fail(sec, conf_section_line(sec), "key_file", key_file, "%s", bad);
        return -1;
    }
    return 0;
}

/* The redis section, checked when it was read. */
static int build_redis(cfg_t *sec, struct sl_redis *r)
{
    r->enabled = true;
    const char *a = cfg_getstr(sec, "address");
    const char *nodes = cfg_getstr(sec, "sentinels");
    r->mode = SL_REDIS_SINGLE;
    if (nodes) {
        r->mode = SL_REDIS_SENTINEL;
        snprintf(r->master, sizeof r->master, "%s", cfg_getstr(sec, "master"));
    } else if ((nodes = cfg_getstr(sec, "cluster"))) {
        r->mode = SL_REDIS_CLUSTER;
    }
    for (const char *p = nodes; p && r->naddrs < SL_REDIS_ADDRS_MAX; p = strchr(p, ',')) {
        if (*p == ',') p++;
        char one[128];
        snprintf(one, sizeof one, "%.*s", (int)strcspn(p, ","), p);
        conf_parse_hostport(one, r->addrs[r->naddrs++], sizeof r->addrs[0]); /* checked */
    }
    if (!a)
        snprintf(r->address, sizeof r->address, "%s", nodes); /* for messages */
    else if (strncmp(a, "unix:", 5) == 0)
        snprintf(r->address, sizeof r->address, "%s", a);
    else
        conf_parse_hostport(a, r->address, sizeof r->address);
    if (cfg_getstr(sec, "user")) snprintf(r->user, sizeof r->user, "%s", cfg_getstr(sec, "user"));
    if (cfg_getstr(sec, "password"))
        snprintf(r->password, sizeof r->password, "%s", cfg_getstr(sec, "password"));
    snprintf(r->prefix, sizeof r->prefix, "%s", cfg_getstr(sec, "prefix"));
    conf_parse_duration(cfg_getstr(sec, "interval"), &r->interval_ns);
    conf_parse_duration(cfg_getstr(sec, "timeout"), &r->timeout_ns);
    r->on_error =
        (enum sl_backend_error)enum_value(sec, "on_backend_error", conf_backend_error_names);
    r->local_share_pct = (uint32_t)cfg_getint(sec, "local_share");
    const char *key_file = cfg_getstr(sec, "key_file");
    const char *bad =
        key_file ? conf_read_key(key_file, r->key, r->key_file, sizeof r->key_file) : NULL;
    if (bad) { /* changed since it was read a moment ago */
        conf_fail(sec, conf_section_line(sec), "key_file", key_file, "%s", bad);
        return -1;
    }
    return 0;
}

static int build(cfg_t *cfg, struct conf_ctx *ctx, const char *dir, struct sl_config *c)
{
    c->table_slots = (uint32_t)cfg_getint(cfg, "table_slots");
    snprintf(c->shared, sizeof c->shared, "%s", cfg_getstr(cfg, "shared"));
    c->dry_run = cfg_getbool(cfg, "dry_run");
    c->on_error = (enum sl_on_error)enum_value(cfg, "on_error", conf_on_error_names);
    c->on_full = (enum sl_on_full)enum_value(cfg, "on_full", conf_on_full_names);
    c->inherit = cfg_getbool(cfg, "inherit");
    c->log = (enum sl_log_target)enum_value(cfg, "log", conf_log_names);
    c->log_level = (enum sl_log_level)enum_value(cfg, "log_level", conf_log_level_names);
    if (cfg_size(cfg, "gossip")) { /* before the rules: scope = cluster needs it */
        ctx->is_inline = ctx->gossip_inline;
        ctx->dir = ctx->gossip_inline ? NULL : dir;
        if (build_gossip(cfg_getnsec(cfg, "gossip", 0), &c->gossip) != 0) return -1;
    }
    if (cfg_size(cfg, "redis") && build_redis(cfg_getnsec(cfg, "redis", 0), &c->redis) != 0)
        return -1;
    for (int i = 0; i < ctx->nseen; i++) {
        const struct conf_seen *s = &ctx->seen[i];
        cfg_t *sec = cfg_gettsec(cfg, s->dir == SL_IN ? "inbound" : "outbound", s->name);
        ctx->is_inline = s->is_inline;
        ctx->dir = s->is_inline ? NULL : dir;
        if (!sec || build_rule(sec, s, c, &c->rules[c->nrules++]) != 0) return -1;
    }
    memcpy(c->degraded, ctx->degraded, sizeof c->degraded);
    return 0;
}

/* Parses text into cfg; a failure that libconfuse did not explain gets a
 * plain message. */
static int parse(cfg_t *cfg, const char *text)
{
    if (cfg_parse_buf(cfg, text) == CFG_SUCCESS) return 0;
    conf_fail(NULL, cfg->line, NULL, NULL, "syntax error");
    return -1;
}

static bool env_on_error(enum sl_on_error *oe, char *err, size_t errlen, bool *bad)
{
    const char *v = getenv("SLUICE_ON_ERROR");
    if (!v) return false;
    if (strcmp(v, "closed") == 0)
        *oe = SL_ON_ERROR_CLOSED;
    else if (strcmp(v, "open") == 0)
        *oe = SL_ON_ERROR_OPEN;
    else {
        if (!*bad && err && errlen)
            snprintf(err, errlen, "SLUICE_ON_ERROR: '%.40s' is not open or closed", v);
        *bad = true;
        return false;
    }
    return true;
}

struct sl_config *sl_conf_load(const char *file, const char *inline_rules,
                               enum sl_on_error *on_error, char *err, size_t errlen)
{
    static struct conf_ctx ctx; /* under load_lock; too big for a shim's stack */
    enum sl_on_error oe = SL_ON_ERROR_OPEN;
    struct sl_config *c = NULL;
    char *text = NULL, *itext = NULL;
    cfg_t *cfg = NULL;
    char dir[PATH_MAX] = ".";
    bool have_file = file && *file, have_inline = false;

    if (err && errlen) err[0] = 0;
    pthread_mutex_lock(&load_lock);
    memset(&ctx, 0, sizeof ctx);
    ctx.err = err;
    ctx.errlen = errlen;
    ctx.file = file;
    conf_ctx = &ctx;

    if (have_file) {
        const char *slash = strrchr(file, '/');
        if (slash && (size_t)(slash - file) < sizeof dir)
            snprintf(dir, sizeof dir, "%.*s", slash == file ? 1 : (int)(slash - file), file);
        size_t len = 0;
        const char *why = conf_read_file(file, CONF_FILE_MAX, &text, &len);
        if (why) {
            if (err && errlen) snprintf(err, errlen, "%s: %s", file, why);
            ctx.failed = true;
        }
        if (text) { /* even a file refused as a whole says what on_error is */
            for (size_t i = 0; i < len; i++)
                if (text[i] == 0) text[i] = ' ';
            conf_strip_comments(text);
            conf_scan_on_error(text, &oe);
        }
    }
    if (inline_rules) {
        ctx.is_inline = true;
        itext = conf_inline_to_text(inline_rules, &have_inline);
        if (itext) conf_scan_on_error(itext, &oe);
    }

    if (!ctx.failed) {
        cfg = conf_cfg_new();
        if (!cfg) conf_fail(NULL, 0, NULL, NULL, "out of memory");
    }
    if (!ctx.failed && text) {
        ctx.is_inline = false;
        ctx.dir = dir;
        parse(cfg, text);
    }
    if (!ctx.failed && itext && have_inline) {
        ctx.is_inline = true;
        ctx.dir = NULL;
        parse(cfg, itext);
    }
    if (!ctx.failed) {
        oe = (enum sl_on_error)enum_value(cfg, "on_error", conf_on_error_names);
        bool env_bad = false; /* a bad SLUICE_ON_ERROR fails the load below */
        ctx.on_error = oe;
        env_on_error(&ctx.on_error, NULL, 0, &env_bad);
        c = sl_alloc(sizeof *c);
        if (!c) {
            if (err && errlen) snprintf(err, errlen, "out of memory");
            ctx.failed = true;
        } else if (build(cfg, &ctx, dir, c) != 0) {
            sl_conf_free(c);
            c = NULL;
        } else if (have_file && have_inline) {
            snprintf(c->source, sizeof c->source, "%s + inline rules", file);
        } else {
            snprintf(c->source, sizeof c->source, "%s",
                     have_file     ? file
                     : have_inline ? "inline rules"
                                   : "defaults");
        }
    }
    bool bad_env = ctx.failed;
    if (env_on_error(&oe, err, errlen, &bad_env) && c) c->on_error = oe;
    if (bad_env && c) { /* a mistyped SLUICE_ON_ERROR is an error too */
        sl_conf_free(c);
        c = NULL;
    }
    if (on_error) *on_error = oe;

    if (cfg) cfg_free(cfg);
    sl_free(text);
    sl_free(itext);
    conf_ctx = NULL;
    pthread_mutex_unlock(&load_lock);
    return c;
}

void sl_conf_free(struct sl_config *c)
{
    if (!c) return;
    for (int i = 0; i < c->nrules; i++) {
        sl_free(c->rules[i].reply);
        sl_plans_free((struct sl_plans *)c->rules[i].plans);
    }
    explicit_bzero(c->gossip.key, sizeof c->gossip.key);
    explicit_bzero(c->redis.password, sizeof c->redis.password);
    explicit_bzero(c->redis.key, sizeof c->redis.key);
    sl_free(c);
}
