/* SPDX-License-Identifier: BSD-2-Clause */
/* options.c - the option table: one row per option, saying where it may
 * appear, its default, its bounds and the parser that checks its value
 * where libconfuse reads it (nginx's ngx_command_t is the model).
 *
 * libconfuse's own option arrays (global, gossip, and one for both rule
 * sections) are generated from the table. Every rule option is known to
 * both `inbound "name" { }` and `outbound "name" { }`; one that makes sense
 * in one direction only is refused in the other, on the line it appears.
 * An option with no default (NULL) is "not set" until written, visible as
 * cfg_size() == 0, and load.c fills in the default that depends on other
 * options (per, prefix4, burst, recv_burst, send_burst, action, errno;
 * peer_timeout, alone_share). An option that is both global and in rules
 * (dry_run) has no default in a rule: the global one applies.
 *
 * Adding an option is one row here (and its use in load.c and print.c).
 * A value parser is a function of values.c; an enumeration whose values
 * hold only in one direction names them in a struct conf_enum; a value
 * that takes a parameter (per = header:NAME) is an enumeration name
 * ending in ':' (values.c: conf_parse_enum).
 *
 * A rule limits at least one of: the connection rate (rate), bytes each
 * way (recv_rate, send_rate: GCRA over bytes per second) and connections
 * open at once (conns). The gossip section (at most one, untitled) is what
 * scope = cluster rules share their counts through; its key file is read
 * and checked here, and again at build, like a reply file.
 *
 * Every value is checked twice with the same parser: by a libconfuse
 * validator while the file is read (so the message has the right line),
 * and again by load.c when it builds the struct (which then cannot fail,
 * but for files that changed in between: reply and key_file).
 */
#include "../core/limit/limit.h"
#include "../core/limit/limit_log.h"
#include "conf_int.h"

#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/limit/key.h"
#include "../core/mem.h"

/* Where an option may appear. */
enum where { IN = 1, OUT = 2, RULE = IN | OUT, GLOBAL = 4, GOSSIP = 8, REDIS = 16 };

enum type { STR, LIST, INT, BOOL };

struct option;

/* Checks one value (of a list: one entry) of option o in a rule of
 * direction dir (SL_IN outside rules). Returns NULL or the words of the
 * error, as the parsers of values.c. */
typedef const char *(*check_fn)(const struct option *o, const char *value, enum sl_dir dir);

/* Checks a list as a whole once an entry is added; last is that entry. */
typedef const char *(*check_list_fn)(cfg_opt_t *opt, const char *last);

struct option {
    const char *name;
    enum type type;
    const char *def; /* as written in a file; NULL: not set unless written */
    unsigned where;
    long lo, hi;     /* INT: the bounds (hi NOLIMIT: none); durations: ns (hi 0: none) */
    int max;         /* LIST: entries (0: the list check counts) */
    check_fn check;  /* STR and LIST entries; INT and BOOL are checked by type */
    const void *arg; /* what the check needs: enumeration names */
    check_list_fn check_list;
};

/* An enumeration whose values may hold only in some places. */
struct conf_enum {
    const char *const *names;
    const unsigned *where; /* NULL: every value everywhere */
};

static const char *check_enum(const struct option *o, const char *v, enum sl_dir dir);
static const char *check_rate(const struct option *o, const char *v, enum sl_dir dir);
static const char *check_byte_rate(const struct option *o, const char *v, enum sl_dir dir);
static const char *check_bytes(const struct option *o, const char *v, enum sl_dir dir);
static const char *check_duration(const struct option *o, const char *v, enum sl_dir dir);
static const char *check_errno(const struct option *o, const char *v, enum sl_dir dir);
static const char *check_port(const struct option *o, const char *v, enum sl_dir dir);
static const char *check_cidr(const struct option *o, const char *v, enum sl_dir dir);
static const char *check_dest(const struct option *o, const char *v, enum sl_dir dir);
static const char *check_hostport(const struct option *o, const char *v, enum sl_dir dir);
static const char *check_redis_address(const struct option *o, const char *v, enum sl_dir dir);
static const char *check_redis_text(const struct option *o, const char *v, enum sl_dir dir);
static const char *check_redis_nodes(const struct option *o, const char *v, enum sl_dir dir);
static const char *check_table_name(const struct option *o, const char *v, enum sl_dir dir);
static const char *check_reply(const struct option *o, const char *v, enum sl_dir dir);
static const char *check_key_file(const struct option *o, const char *v, enum sl_dir dir);
static const char *check_per(const struct option *o, const char *v, enum sl_dir dir);
static const char *check_quota(const struct option *o, const char *v, enum sl_dir dir);
static const char *check_route(const struct option *o, const char *v, enum sl_dir dir);
static const char *check_utc_offset(const struct option *o, const char *v, enum sl_dir dir);
static const char *check_method(const struct option *o, const char *v, enum sl_dir dir);
static const char *check_utc_time(const struct option *o, const char *v, enum sl_dir dir);
static const char *check_req_host(const struct option *o, const char *v, enum sl_dir dir);
static const char *check_status(const struct option *o, const char *v, enum sl_dir dir);
static const char *check_cost_from(const struct option *o, const char *v, enum sl_dir dir);
static const char *count_dests(cfg_opt_t *opt, const char *last);
static const char *no_peer_twice(cfg_opt_t *opt, const char *last);

/* In the order of conf_per_names and conf_action_names (values.c). */
static const unsigned per_where[] = {IN, IN, OUT, RULE};
/* inbound delay and outbound reply: requests only (checked in check_rule) */
static const unsigned action_where[] = {RULE, RULE, RULE};

static const struct conf_enum alg_enum = {conf_alg_names, NULL};
static const struct conf_enum scope_enum = {conf_scope_names, NULL};
static const struct conf_enum per_enum = {conf_per_names, per_where};
static const struct conf_enum action_enum = {conf_action_names, action_where};
static const struct conf_enum on_error_enum = {conf_on_error_names, NULL};
static const struct conf_enum on_full_enum = {conf_on_full_names, NULL};
static const struct conf_enum per_missing_enum = {conf_per_missing_names, NULL};
static const struct conf_enum per_copy_enum = {conf_per_copy_names, NULL};
static const struct conf_enum on_odd_enum = {conf_on_odd_names, NULL};
static const struct conf_enum backend_error_enum = {conf_backend_error_names, NULL};
static const struct conf_enum log_enum = {conf_log_names, NULL};
static const struct conf_enum log_level_enum = {conf_log_level_names, NULL};

#define NOLIMIT LONG_MAX
#define MSEC    1000000L /* durations' bounds are in ns */
#define SEC     1000000000L

#define LEARN_MAX (366L * 86400 * SEC) /* core/http/learn.h: SL_LEARN_ABSURD_NS */

/* clang-format off */
static const struct option options[] = {
/*   name            type  default   where        lo        hi              max           check             arg              list check */
    /* rules: what they match */
    {"port",         LIST, NULL,     RULE,        0,        0,              SL_MAX_PORTS, check_port,       NULL,            NULL},          /* {}: every port */
    {"local",        LIST, NULL,     IN,          0,        0,              SL_MAX_CIDRS, check_cidr,       NULL,            NULL},          /* {}: any local address */
    {"from",         LIST, NULL,     IN,          0,        0,              SL_MAX_CIDRS, check_cidr,       NULL,            NULL},          /* {}: every peer */
    {"to",           LIST, NULL,     OUT,         0,        0,              0,            check_dest,       NULL,            count_dests},   /* required. A host name matches the addresses it had at load and those the program resolves later; a request rule also matches a connection whose TLS SNI or first request Host is that name, whatever its address (either is enough). */
    {"exempt",       LIST, NULL,     RULE,        0,        0,              SL_MAX_CIDRS, check_cidr,       NULL,            NULL},          /* {}: nobody */
    /* rules: their limits */
    {"rate",         STR,  NULL,     RULE,        0,        0,              0,            check_rate,       NULL,            NULL},          /* N/s N/m N/h N/d N/<duration>; none: no connection rate */
    {"burst",        INT,  NULL,     RULE,        1,        NOLIMIT,        0,            NULL,             NULL,            NULL},          /* the rate's N */
    {"algorithm",    STR,  "gcra",   RULE,        0,        0,              0,            check_enum,       &alg_enum,       NULL},          /* gcra, sliding, fixed (rate); gcra or log (req_rate: exact, per = rule) */
    {"recv_rate",    STR,  NULL,     RULE,        0,        0,              0,            check_byte_rate,  NULL,            NULL},          /* bytes received: 2MB/s; none: no limit */
    {"recv_burst",   STR,  NULL,     RULE,        0,        0,              0,            check_bytes,      NULL,            NULL},          /* a tenth of recv_rate's second, at least 1 */
    {"send_rate",    STR,  NULL,     RULE,        0,        0,              0,            check_byte_rate,  NULL,            NULL},          /* bytes sent; none: no limit */
    {"send_burst",   STR,  NULL,     RULE,        0,        0,              0,            check_bytes,      NULL,            NULL},          /* a tenth of send_rate's second, at least 1 */
    {"conns",        INT,  NULL,     RULE,        0,        CONF_CONNS_MAX, 0,            NULL,             NULL,            NULL},          /* open at once per key; 0: no limit */
    {"scope",        STR,  "local",  RULE,        0,        0,              0,            check_enum,       &scope_enum,     NULL},          /* cluster needs gossip and rate */
    {"per",          STR,  NULL,     RULE,        0,        0,              0,            check_per,        &per_enum,       NULL},          /* inbound peer, outbound rule; or header:NAME query:NAME cookie:NAME */
    {"prefix4",      INT,  NULL,     IN,          0,        32,             0,            NULL,             NULL,            NULL},          /* 32, 24 for per = prefix */
    {"prefix6",      INT,  NULL,     IN,          0,        128,            0,            NULL,             NULL,            NULL},          /* 64, 48 for per = prefix */
    /* rules: requests (core/http/request.h); any of these makes a request rule */
    {"req_rate",     STR,  NULL,     RULE,        0,        0,              0,            check_rate,       NULL,            NULL},          /* requests: N/s ... N/d; none: not limited by rate */
    {"req_burst",    INT,  NULL,     RULE,        1,        NOLIMIT,        0,            NULL,             NULL,            NULL},          /* req_rate's N */
    {"cost",         INT,  "1",      RULE,        0,        1000000,        0,            NULL,             NULL,            NULL},          /* tokens a request takes; 0: counted, never limited */
    {"route",        LIST, NULL,     RULE,        0,        0,              SL_MAX_ROUTES, check_route,     NULL,            NULL},          /* {}: every path; prefixes or globs */
    {"method",       LIST, NULL,     RULE,        0,        0,              SL_MAX_METHODS, check_method,   NULL,            NULL},          /* {}: every method */
    {"host",         LIST, NULL,     RULE,        0,        0,              SL_MAX_REQ_HOSTS, check_req_host, NULL,          NULL},          /* {}: any Host */
    {"per_missing",  STR,  "peer",   RULE,        0,        0,              0,            check_enum,       &per_missing_enum, NULL},        /* a request without the per key */
    {"per_copy",     STR,  "each",   RULE,        0,        0,              0,            check_enum,       &per_copy_enum,  NULL},          /* a key given more than once: each, first, last */
    {"on_odd",       STR,  "count",  RULE,        0,        0,              0,            check_enum,       &on_odd_enum,    NULL},          /* a head read by the rule of doubt: count, deny */
    {"quota_offset", STR,  NULL,     RULE,        0,        0,              0,            check_utc_offset, NULL,            NULL},          /* quota windows from UTC midnight: +5:30, -8; 0 */
    {"plans",        STR,  NULL,     RULE,        0,        0,              0,            NULL,             NULL,            NULL},          /* a plans file (any size); none. Unloadable under on_error = open: the rule's own limits */
    {"quota",        STR,  NULL,     RULE,        0,        0,              0,            check_quota,      NULL,            NULL},          /* N/d or N/month (UTC); none */
    {"ramp_to",      STR,  NULL,     RULE,        0,        0,              0,            check_rate,       NULL,            NULL},          /* req_rate steps towards this; none: no ramp */
    {"ramp_from",    STR,  NULL,     RULE,        0,        0,              0,            check_utc_time,   NULL,            NULL},          /* when the ramp starts: 2026-12-01 (UTC) */
    {"ramp_over",    STR,  NULL,     RULE,        0,        0,              0,            check_duration,   NULL,            NULL},          /* reaching ramp_to this long after ramp_from */
    {"ramp_every",   STR,  "1d",     RULE,        0,        0,              0,            check_duration,   NULL,            NULL},          /* one step each */
    /* rules: what a denial does */
    {"action",       STR,  NULL,     RULE,        0,        0,              0,            check_enum,       &action_enum,    NULL},          /* inbound reject, outbound delay; outbound reply (req_rate rules): the request is not sent, the client reads a 429 (HTTP/1.1; HTTP/2 requests are rejected) */
    {"reply",        STR,  NULL,     IN,          0,        0,              0,            check_reply,      NULL,            NULL},          /* none: built-in 429 */
    {"max_delay",    STR,  "10s",    RULE,        0,        0,              0,            check_duration,   NULL,            NULL},
    {"req_conns",    INT,  NULL,     RULE,        0,        CONF_CONNS_MAX, 0,            NULL,             NULL,            NULL},          /* requests in flight at once per key (head to end of response); 0: no limit */
    {"count_status", LIST, NULL,     IN,          0,        0,              SL_MAX_STATUSES, check_status,  NULL,            NULL},          /* inbound req_rate rules: only responses of these statuses take a token, {401, 403}; {}: every request */
    {"cost_from",    STR,  NULL,     RULE,        0,        0,              0,            check_cost_from,  NULL,            NULL},          /* header:NAME or json:a.b.c: what each answer says the call cost (HTTP/1; a JSON body or the last server-sent event with the path); none. Needs cost_rate */
    {"cost_rate",    STR,  NULL,     RULE,        0,        0,              0,            check_rate,       NULL,            NULL},          /* tokens (cost_from) per key: N/s ... N/d; a call passes while the key is not in debt. Needs cost_from */
    {"cost_burst",   INT,  NULL,     RULE,        1,        NOLIMIT,        0,            NULL,             NULL,            NULL},          /* cost_rate's N */
    {"learn",        BOOL, "no",     OUT,         0,        0,              0,            NULL,             NULL,            NULL},          /* outbound req_rate rules: hold the key's calls as the vendor's 429s and RateLimit fields say */
    {"learn_max",    STR,  "10m",    OUT,         1,        LEARN_MAX,      0,            check_duration,   NULL,            NULL},          /* the longest hold learned */
    {"errno",        STR,  NULL,     OUT,         0,        0,              0,            check_errno,      NULL,            NULL},          /* ETIMEDOUT (delay), ECONNREFUSED (reject) */
    {"dry_run",      BOOL, "no",     RULE|GLOBAL, 0,        0,              0,            NULL,             NULL,            NULL},          /* in a rule: the global one */
    /* global */
    {"table_slots",  INT,  "65536",  GLOBAL,      64,       1L << 30,       0,            NULL,             NULL,            NULL},
    {"shared",       STR,  "",       GLOBAL,      0,        0,              0,            check_table_name, NULL,            NULL},          /* "": private to this program */
    {"on_error",     STR,  "open",   GLOBAL,      0,        0,              0,            check_enum,       &on_error_enum,  NULL},
    {"on_full",      STR,  "shared", GLOBAL,      0,        0,              0,            check_enum,       &on_full_enum,   NULL},          /* when a new key finds only keys at their limit (the least-used key is evicted first): shared, deny, allow */
    {"inherit",      BOOL, "yes",    GLOBAL,      0,        0,              0,            NULL,             NULL,            NULL},
    {"log",          STR,  "stderr", GLOBAL,      0,        0,              0,            check_enum,       &log_enum,       NULL},
    {"log_level",    STR,  "info",   GLOBAL,      0,        0,              0,            check_enum,       &log_level_enum, NULL},
    /* gossip */
    {"listen",       STR,  NULL,     GOSSIP,      0,        0,              0,            check_hostport,   NULL,            NULL},          /* required */
    {"peers",        LIST, NULL,     GOSSIP,      0,        0,              SL_MAX_PEERS, check_hostport,   NULL,            no_peer_twice}, /* required */
    {"interval",     STR,  "20ms",   GOSSIP|REDIS,    1 * MSEC, 10 * SEC,       0,            check_duration,   NULL,            NULL},
    {"peer_timeout", STR,  NULL,     GOSSIP,      0,        0,              0,            check_duration,   NULL,            NULL},          /* 10 x interval; checked against it at the section's end */
    {"alone_share",  INT,  NULL,     GOSSIP,      1,        100,            0,            NULL,             NULL,            NULL},          /* %; ceil(100 / (peers + 1)) */
    {"key_file",     STR,  NULL,     GOSSIP|REDIS, 0,        0,              0,            check_key_file,   NULL,            NULL},          /* gossip: required; redis: for request keys by value. 64 hex characters, mode 600 */
    /* redis (core/fleet/redis.c; interval above) */
    {"address",      STR,  NULL,     REDIS,       0,        0,              0,            check_redis_address, NULL,         NULL},          /* one server: "host:port" or "unix:/path"; or sentinels, or cluster */
    {"sentinels",    STR,  NULL,     REDIS,       0,        0,              0,            check_redis_nodes, NULL,           NULL},          /* "host:port,host:port": Sentinel finds the primary; with master */
    {"master",       STR,  NULL,     REDIS,       0,        0,              0,            check_redis_text, NULL,            NULL},          /* the primary's name for the sentinels */
    {"cluster",      STR,  NULL,     REDIS,       0,        0,              0,            check_redis_nodes, NULL,           NULL},          /* "host:port,...": Redis Cluster seed nodes */
    {"user",         STR,  NULL,     REDIS,       0,        0,              0,            check_redis_text, NULL,            NULL},          /* ACL user; none: AUTH with the password only */
    {"password",     STR,  NULL,     REDIS,       0,        0,              0,            check_redis_text, NULL,            NULL},          /* none: no AUTH; never printed or logged */
    {"prefix",       STR,  "sluice:", REDIS,      0,        0,              0,            check_redis_text, NULL,            NULL},          /* of every key sluice writes */
    {"timeout",      STR,  "200ms",  REDIS,       1 * MSEC, 10 * SEC,       0,            check_duration,   NULL,            NULL},          /* connect; a sync round without progress */
    {"on_backend_error", STR, "local", REDIS,     0,        0,              0,            check_enum,       &backend_error_enum, NULL},      /* while Redis does not answer */
    {"local_share",  INT,  "50",     REDIS,       1,        100,            0,            NULL,             NULL,            NULL},          /* % of the limit, on_backend_error = local */
};
/* clang-format on */

#define NOPTIONS (sizeof options / sizeof options[0])

static const struct option *find_option(const char *name)
{
    for (size_t i = 0; i < NOPTIONS; i++)
        if (strcmp(options[i].name, name) == 0) return &options[i];
    return NULL;
}

bool conf_opt_is_list(const char *name)
{
    const struct option *o = find_option(name);
    return o && o->type == LIST;
}

/* ---- the checks the table names ----------------------------------------- */

static const char *check_enum(const struct option *o, const char *v, enum sl_dir dir)
{
    const struct conf_enum *e = o->arg;
    int i;
    const char *bad = conf_parse_enum(v, e->names, &i);
    if (bad || !e->where) return bad;
    if (!(e->where[i] & (dir == SL_IN ? IN : OUT)))
        return dir == SL_IN ? "is only for outbound rules" : "is only for inbound rules";
    return NULL;
}

static const char *check_per(const struct option *o, const char *v, enum sl_dir dir)
{
    enum sl_req_per kind;
    const char *name;
    if (conf_req_per(v, &kind, &name)) return conf_parse_req_per_name(name);
    return check_enum(o, v, dir);
}

static const char *check_quota(const struct option *o, const char *v, enum sl_dir dir)
{
    uint64_t n;
    enum sl_quota_window w;
    return conf_parse_quota(v, &n, &w);
}

static const char *check_utc_time(const struct option *o, const char *v, enum sl_dir dir)
{
    (void)o;
    (void)dir;
    int64_t t;
    return conf_parse_utc_time(v, &t);
}

static const char *check_utc_offset(const struct option *o, const char *v, enum sl_dir dir)
{
    int32_t s;
    return conf_parse_utc_offset(v, &s);
}

static const char *check_route(const struct option *o, const char *v, enum sl_dir dir)
{
    return conf_parse_route(v);
}

static const char *check_method(const struct option *o, const char *v, enum sl_dir dir)
{
    return conf_parse_method(v);
}

static const char *check_req_host(const struct option *o, const char *v, enum sl_dir dir)
{
    return conf_parse_req_host(v);
}

static const char *check_status(const struct option *o, const char *v, enum sl_dir dir)
{
    return conf_parse_status(v, NULL);
}

static const char *check_cost_from(const struct option *o, const char *v, enum sl_dir dir)
{
    return conf_parse_cost_from(v, NULL, NULL, 0);
}

static const char *check_rate(const struct option *o, const char *v, enum sl_dir dir)
{
    uint64_t count, period;
    return conf_parse_rate(v, &count, &period);
}

static const char *check_byte_rate(const struct option *o, const char *v, enum sl_dir dir)
{
    uint64_t bytes;
    return conf_parse_byte_rate(v, &bytes);
}

static const char *check_bytes(const struct option *o, const char *v, enum sl_dir dir)
{
    uint64_t bytes;
    return conf_parse_bytes(v, &bytes);
}

/* A duration, within the row's bounds when it has some (hi > 0). */
static const char *check_duration(const struct option *o, const char *v, enum sl_dir dir)
{
    static __thread char msg[96];
    uint64_t ns;
    const char *bad = conf_parse_duration(v, &ns);
    if (bad || o->hi == 0 || (ns >= (uint64_t)o->lo && ns <= (uint64_t)o->hi)) return bad;
    char a[32], b[32];
    conf_format_duration((uint64_t)o->lo, a, sizeof a);
    conf_format_duration((uint64_t)o->hi, b, sizeof b);
    snprintf(msg, sizeof msg, "is out of range (%s..%s)", a, b);
    return msg;
}

static const char *check_errno(const struct option *o, const char *v, enum sl_dir dir)
{
    int err;
    return conf_parse_errno(v, &err);
}

static const char *check_port(const struct option *o, const char *v, enum sl_dir dir)
{
    struct sl_port_range r;
    return conf_parse_port_range(v, &r);
}

static const char *check_cidr(const struct option *o, const char *v, enum sl_dir dir)
{
    struct sl_cidr c;
    return conf_parse_cidr(v, &c);
}

static const char *check_dest(const struct option *o, const char *v, enum sl_dir dir)
{
    struct conf_dest d;
    return conf_parse_dest(v, &d);
}

static const char *check_hostport(const struct option *o, const char *v, enum sl_dir dir)
{
    char text[128];
    return conf_parse_hostport(v, text, sizeof text);
}

static const char *check_redis_address(const struct option *o, const char *v, enum sl_dir dir)
{
    if (strncmp(v, "unix:", 5) == 0) {
        if (v[5] != '/') return "is not unix:/ABSOLUTE/PATH";
        if (strlen(v) >= 5 + 108) return "is too long a socket path";
        return NULL;
    }
    return check_hostport(o, v, dir);
}
/* "host:port,host:port": up to SL_REDIS_ADDRS_MAX numeric addresses. */
static const char *check_redis_nodes(const struct option *o, const char *v, enum sl_dir dir)
{
    char one[128], text[128];
    int n = 0;
    for (const char *p = v;; p++) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len == 0) return "has an empty address (\"host:port,host:port\")";
        if (len >= sizeof one) return "has an address too long";
        if (++n > SL_REDIS_ADDRS_MAX) return "has more than 8 addresses";
        memcpy(one, p, len);
        one[len] = 0;
        const char *bad = conf_parse_hostport(one, text, sizeof text);
        if (bad) return bad;
        if (strlen(text) >= 64) return "has an address too long";
        if (!end) return NULL;
        p = end;
    }
}

static const char *check_redis_text(const struct option *o, const char *v, enum sl_dir dir)
{
    if (strlen(v) >= 128) return "is too long (at most 127 characters)";
    for (const char *p = v; *p; p++)
        if ((unsigned char)*p < 0x21 || *p == 0x7f) return "has spaces or control characters";
    return NULL;
}

static const char *check_table_name(const struct option *o, const char *v, enum sl_dir dir)
{
    return *v ? conf_parse_name(v) : NULL;
}

static const char *check_reply(const struct option *o, const char *v, enum sl_dir dir)
{
    char *buf, path[256];
    size_t len;
    const char *bad = conf_read_reply(v, &buf, &len, path, sizeof path);
    if (!bad) sl_free(buf);
    return bad;
}

static const char *check_key_file(const struct option *o, const char *v, enum sl_dir dir)
{
    uint8_t key[32];
    char path[256];
    const char *bad = conf_read_key(v, key, path, sizeof path);
    explicit_bzero(key, sizeof key);
    return bad;
}

/* Outbound destinations: two limits, one for addresses and one for names. */
static const char *count_dests(cfg_opt_t *opt, const char *last)
{
    static __thread char msg[64];
    int hosts = 0, addrs = 0;
    for (unsigned i = 0; i < opt->nvalues; i++) {
        struct conf_dest d;
        conf_parse_dest(cfg_opt_getnstr(opt, i), &d);
        d.is_host ? hosts++ : addrs++;
    }
    if (hosts > SL_MAX_HOSTS)
        snprintf(msg, sizeof msg, "is one host name too many (at most %d)", SL_MAX_HOSTS);
    else if (addrs > SL_MAX_CIDRS)
        snprintf(msg, sizeof msg, "is one address too many (at most %d)", SL_MAX_CIDRS);
    else
        return NULL;
    return msg;
}

/* The same peer twice would count twice. */
static const char *no_peer_twice(cfg_opt_t *opt, const char *last)
{
    char a[128], b[128];
    conf_parse_hostport(last, a, sizeof a);
    for (unsigned i = 0; i + 1 < opt->nvalues; i++) {
        conf_parse_hostport(cfg_opt_getnstr(opt, i), b, sizeof b);
        if (strcmp(a, b) == 0) return "is listed twice";
    }
    return NULL;
}

/* ---- libconfuse callbacks ----------------------------------------------- */

/* Integers are parsed here, not by libconfuse, so the message can quote
 * the value. */
static int parse_int(cfg_t *cfg, cfg_opt_t *opt, const char *value, void *result)
{
    const char *bad = conf_parse_whole(value ? value : "", (long *)result);
    if (bad) conf_fail(cfg, cfg->line, opt->name, value ? value : "", "%s", bad);
    return bad ? -1 : 0;
}

static int parse_bool(cfg_t *cfg, cfg_opt_t *opt, const char *value, void *result)
{
    int b = value ? cfg_parse_boolean(value) : -1;
    if (b < 0) {
        conf_fail(cfg, cfg->line, opt->name, value ? value : "", "is not yes or no");
        return -1;
    }
    *(int *)result = b;
    return 0;
}

/* Runs when libconfuse creates a rule section (it parses this option's
 * default then), with the section's line still that of its opening brace:
 * libconfuse has no other hook there. The line is kept as the option's
 * value; the section becomes the one being parsed. Must not fail: a
 * failing default makes libconfuse abort(). */
static int note_section_line(cfg_t *cfg, cfg_opt_t *opt, const char *value, void *result)
{
    *(void **)result = (void *)(intptr_t)cfg->line;
    if (conf_ctx) conf_ctx->section = cfg;
    return 0;
}

int conf_section_line(cfg_t *sec)
{
    return (int)(intptr_t)cfg_getptr(sec, CONF_SECTION_LINE);
}

static int check_int(cfg_t *cfg, const struct option *o, long v)
{
    if (v >= o->lo && v <= o->hi) return 0;
    char value[32], msg[64];
    snprintf(value, sizeof value, "%ld", v);
    if (o->hi == NOLIMIT)
        snprintf(msg, sizeof msg, "must be at least %ld", o->lo);
    else
        snprintf(msg, sizeof msg, "is out of range (%ld..%ld)", o->lo, o->hi);
    conf_fail(cfg, cfg->line, o->name, value, "%s", msg);
    return -1;
}

/* Checks the value just read: the last one of the option. Lists call it
 * once per entry and again at their closing brace. */
static int validate_option(cfg_t *cfg, cfg_opt_t *opt)
{
    const struct option *o = find_option(opt->name);
    bool in_rule = cfg->title != NULL;
    enum sl_dir dir = in_rule ? conf_section_dir(cfg) : SL_IN;
    if (!o || opt->nvalues == 0) return 0;
    if (in_rule && !(o->where & (dir == SL_IN ? IN : OUT))) {
        conf_fail(cfg, cfg->line, NULL, NULL, "option '%s' is only for %s rules", opt->name,
                  dir == SL_IN ? "outbound" : "inbound");
        return -1;
    }
    if (o->type == INT) return check_int(cfg, o, cfg_opt_getnint(opt, 0));
    if (o->type == BOOL) return 0;

    const char *v = cfg_opt_getnstr(opt, opt->nvalues - 1);
    if (!v) v = "";
    const char *bad = o->check ? o->check(o, v, dir) : NULL;
    if (!bad && o->type == LIST && o->max && opt->nvalues > (unsigned)o->max) {
        conf_fail(cfg, cfg->line, opt->name, v, "is one entry too many (at most %d)", o->max);
        return -1;
    }
    if (!bad && o->check_list) bad = o->check_list(opt, v);
    if (bad) {
        conf_fail(cfg, cfg->line, opt->name, v, "%s", bad);
        return -1;
    }
    return 0;
}

static const struct conf_seen *seen_find(const char *name)
{
    for (int i = 0; i < conf_ctx->nseen; i++)
        if (strcmp(conf_ctx->seen[i].name, name) == 0) return &conf_ctx->seen[i];
    return NULL;
}

/* algorithm = log keeps one exact log of the last N request times for the
 * rule (core/limit/limit_log.h, in a bounded region of the table): for req_rate
 * only, N up to SL_LOG_MAX_COUNT, one budget per rule, counted here. */
static int log_fits(cfg_t *sec, int line, enum sl_dir dir, const char *rate, bool req_rate)
{
    const char *alg = cfg_getstr(sec, "algorithm");
    if (strcmp(alg, "log") != 0) return 0;
    const char *why = NULL, *opt = "algorithm", *val = alg;
    uint64_t count = 0, period;
    if (rate) {
        why = "counts requests: use it with req_rate (rate counts connections)";
    } else if (!req_rate) {
        why = "needs a req_rate";
    } else if (conf_parse_rate(cfg_getstr(sec, "req_rate"), &count, &period),
               count > SL_LOG_MAX_COUNT) {
        opt = "req_rate", val = cfg_getstr(sec, "req_rate");
        why = "is more than algorithm log keeps (at most 4096 requests per period)";
    } else if (strcmp(cfg_getstr(sec, "scope"), "local") != 0) {
        why = "is for local rules (a fleet shares window counts)";
    } else if (cfg_getstr(sec, "per") ? strcmp(cfg_getstr(sec, "per"), "rule") != 0
                                      : dir != SL_OUT) {
        opt = "per", val = cfg_getstr(sec, "per") ? cfg_getstr(sec, "per") : "peer (the default)";
        why = "must be rule with algorithm = log (one exact log per rule)";
    } else if (cfg_getint(sec, "cost") > 1) {
        why = "counts each request once: cost must be 0 or 1";
    } else if (cfg_getstr(sec, "plans") || cfg_getstr(sec, "ramp_to")) {
        why = "keeps one log of a fixed size: no plans or ramp";
    } else {
        conf_ctx->log_words += count + 1;
        if (conf_ctx->log_words > SL_LOG_TABLE_WORDS)
            why = "rules together keep more requests than the table's log region holds (8192 "
                  "in all)";
    }
    if (!why) return 0;
    conf_fail(sec, line, opt, val, "%s", why);
    return -1;
}

/* The numbers of the connection rate must work for the algorithm. */
static int rate_fits_algorithm(cfg_t *sec, int line, const char *rate)
{
    uint64_t count, period;
    int alg;
    conf_parse_rate(rate, &count, &period);
    conf_parse_enum(cfg_getstr(sec, "algorithm"), conf_alg_names, &alg);
    uint64_t burst = cfg_size(sec, "burst") ? (uint64_t)cfg_getint(sec, "burst") : count;
    struct sl_limit l;
    if (sl_limit_init(&l, (enum sl_alg)alg, count, period, count) != 0) {
        if (alg == SL_ALG_SLIDING || alg == SL_ALG_FIXED)
            conf_fail(
                sec, line, "rate", rate,
                "is more than algorithm %s can count (at most %" PRIu64 " per period)",
                conf_alg_names[alg],
                (uint64_t)(alg == SL_ALG_SLIDING ? SL_SLIDING_MAX_COUNT : SL_FIXED_MAX_COUNT));
        else
            conf_fail(sec, line, "rate", rate, "is too fast or too slow to keep");
        return -1;
    }
    if (sl_limit_init(&l, (enum sl_alg)alg, count, period, burst) != 0) {
        char b[32];
        snprintf(b, sizeof b, "%" PRIu64, burst);
        conf_fail(sec, line, "burst", b, "is too large for rate %s (at most %" PRIu64 ")", rate,
                  conf_gcra_max_burst(count, period));
        return -1;
    }
    return 0;
}

/* A byte rate and its burst: the burst needs the rate, and must fit it. */
static int byte_limit_fits(cfg_t *sec, int line, const char *rate_opt, const char *burst_opt)
{
    const char *rate = cfg_getstr(sec, rate_opt), *burst_text = cfg_getstr(sec, burst_opt);
    if (!rate) {
        if (!burst_text) return 0;
        conf_fail(sec, line, burst_opt, burst_text, "needs %s", rate_opt);
        return -1;
    }
    uint64_t bps, burst;
    conf_parse_byte_rate(rate, &bps);
    if (burst_text)
        conf_parse_bytes(burst_text, &burst);
    else
        burst = conf_default_byte_burst(bps);
    struct sl_limit l;
    if (sl_limit_init(&l, SL_ALG_GCRA, bps, SL_NS_PER_SEC, burst) != 0) {
        char most[32];
        conf_format_bytes(conf_gcra_max_burst(bps, SL_NS_PER_SEC), most, sizeof most);
        conf_fail(sec, line, burst_opt, burst_text, "is too large for %s %s (at most %s)", rate_opt,
                  rate, most);
        return -1;
    }
    return 0;
}

/* Only GCRA has a burst: a window algorithm counts up to N in its window,
 * and a cluster rule counts a sliding window (issue 13, item 5). */
static void warn_ignored_burst(cfg_t *sec, int line, const char *scope)
{
    char b[32];
    int alg;
    conf_parse_enum(cfg_getstr(sec, "algorithm"), conf_alg_names, &alg);
    snprintf(b, sizeof b, "%ld", cfg_getint(sec, "burst"));
    if (strcmp(scope, "cluster") == 0)
        conf_warn(sec, line, "burst", b, "is ignored: scope = cluster counts a sliding window");
    else if (alg != SL_ALG_GCRA)
        conf_warn(sec, line, "burst", b,
                  "is ignored: algorithm %s counts a window, only gcra has a burst",
                  conf_alg_names[alg]);
}

/* Checks what needs more than one option, once the rule's closing brace
 * is read. Messages carry the line the rule opens on. */
static int validate_rule(cfg_t *parent, cfg_opt_t *opt)
{
    cfg_t *sec = conf_ctx->section;
    if (!sec) return 0;
    conf_ctx->section = NULL;
    int line = conf_section_line(sec);
    const char *name = cfg_title(sec);
    enum sl_dir dir = conf_section_dir(sec);
    const char *bad;

    if ((bad = conf_parse_name(name))) {
        conf_fail(sec, line, NULL, name, "%s", bad);
        return -1;
    }
    const struct conf_seen *prev = seen_find(name);
    if (prev) {
        if (prev->is_inline)
            conf_fail(sec, line, NULL, NULL, "rule name '%s' is already used by inline rule %d",
                      name, prev->line);
        else
            conf_fail(sec, line, NULL, NULL, "rule name '%s' is already used on line %d", name,
                      prev->line);
        return -1;
    }
    if (conf_ctx->nseen >= SL_MAX_RULES) {
        conf_fail(sec, line, NULL, NULL, "is one rule too many (at most %d)", SL_MAX_RULES);
        return -1;
    }
    const char *rate = cfg_getstr(sec, "rate");
    const char *recv_rate = cfg_getstr(sec, "recv_rate");
    const char *send_rate = cfg_getstr(sec, "send_rate");
    long conns = cfg_size(sec, "conns") ? cfg_getint(sec, "conns") : 0;
    if (!rate && !recv_rate && !send_rate && conns == 0 && !conf_is_request_rule(sec)) {
        conf_fail(sec, line, NULL, NULL,
                  "needs at least one of rate, recv_rate, send_rate or conns");
        return -1;
    }
    const char *act = cfg_getstr(sec, "action");
    if (dir == SL_IN && act && strcmp(act, "delay") == 0 && !conf_is_request_rule(sec)) {
        conf_fail(sec, line, "action", act,
                  "needs req_rate on an inbound rule (requests are held, connections are not)");
        return -1;
    }
    if (dir == SL_OUT && act && strcmp(act, "reply") == 0 && !conf_is_request_rule(sec)) {
        conf_fail(sec, line, "action", act,
                  "needs req_rate on an outbound rule (the 429 answers a request, a connect has "
                  "none)");
        return -1;
    }
    if (dir == SL_OUT && cfg_size(sec, "to") == 0) {
        conf_fail(sec, line, NULL, NULL, "option 'to' is missing");
        return -1;
    }
    const char *action = cfg_getstr(sec, "action");
    const char *reply = cfg_getstr(sec, "reply");
    if (reply && (!action || strcmp(action, "reply") != 0)) {
        conf_fail(sec, line, "reply", reply, "needs action = reply");
        return -1;
    }
    if (dir == SL_OUT && cfg_size(sec, "port") > 0) {
        for (unsigned i = 0; i < cfg_size(sec, "to"); i++) {
            struct conf_dest d;
            const char *to = cfg_getnstr(sec, "to", i);
            conf_parse_dest(to, &d);
            if (!d.is_host && d.port) {
                conf_fail(sec, line, "to", to, "has a port, and the rule a port list: use one");
                return -1;
            }
        }
    }

    const char *scope = cfg_getstr(sec, "scope");
    bool req_rate = cfg_getstr(sec, "req_rate") != NULL;
    if (!rate && strcmp(scope, "cluster") == 0) {
        conf_fail(sec, line, "scope", scope,
                  "needs a rate (a cluster shares the connection rate only)");
        return -1;
    }
    if (!rate && !req_rate && strcmp(scope, "redis") == 0) {
        conf_fail(sec, line, "scope", scope, "needs a rate or a req_rate (what redis shares)");
        return -1;
    }
    if (byte_limit_fits(sec, line, "recv_rate", "recv_burst") != 0 ||
        byte_limit_fits(sec, line, "send_rate", "send_burst") != 0)
        return -1;
    if (log_fits(sec, line, dir, rate, req_rate) != 0) return -1;
    if (rate && rate_fits_algorithm(sec, line, rate) != 0) return -1;
    if (rate && cfg_size(sec, "burst")) warn_ignored_burst(sec, line, scope);

    struct conf_seen *s = &conf_ctx->seen[conf_ctx->nseen++];
    snprintf(s->name, sizeof s->name, "%s", name);
    s->dir = dir;
    s->line = line;
    s->is_inline = conf_ctx->is_inline;
    return 0;
}

/* The peer that is this node itself, if one is: its listen address, or
 * with a wildcard listen address (0.0.0.0, ::) a loopback address on the
 * same port. It would count its own datagrams as a peer's (issue 12). A
 * peer that is another local address of a wildcard listener cannot be
 * told here: the receiver drops datagrams from its own node id. */
static const char *is_self(const char *listen, cfg_t *sec)
{
    char me[128], peer[128];
    conf_parse_hostport(listen, me, sizeof me);
    const char *port = strrchr(me, ':');
    bool wildcard = strncmp(me, "0.0.0.0:", 8) == 0 || strncmp(me, "[::]:", 5) == 0;
    for (unsigned i = 0; i < cfg_size(sec, "peers"); i++) {
        const char *text = cfg_getnstr(sec, "peers", i);
        conf_parse_hostport(text, peer, sizeof peer);
        const char *peer_port = strrchr(peer, ':');
        bool loopback = strncmp(peer, "127.", 4) == 0 || strncmp(peer, "[::1]:", 6) == 0;
        if (strcmp(me, peer) == 0 || (wildcard && loopback && strcmp(port, peer_port) == 0))
            return text;
    }
    return NULL;
}

/* Checks the gossip section once its closing brace is read: at most one,
 * the required options, and peer_timeout against interval. */
static int validate_gossip(cfg_t *parent, cfg_opt_t *opt)
{
    cfg_t *sec = cfg_opt_getnsec(opt, opt->nvalues - 1);
    conf_ctx->section = NULL;
    int line = conf_section_line(sec);
    if (conf_ctx->gossip_line) {
        if (conf_ctx->gossip_inline)
            conf_fail(sec, line, NULL, NULL, "there is already a gossip section in inline rule %d",
                      conf_ctx->gossip_line);
        else
            conf_fail(sec, line, NULL, NULL, "there is already a gossip section on line %d",
                      conf_ctx->gossip_line);
        return -1;
    }
    static const char *const required[] = {"listen", "peers", "key_file"};
    for (size_t i = 0; i < sizeof required / sizeof required[0]; i++) {
        if (cfg_size(sec, required[i]) == 0) {
            conf_fail(sec, line, NULL, NULL, "option '%s' is missing", required[i]);
            return -1;
        }
    }
    const char *self = is_self(cfg_getstr(sec, "listen"), sec);
    if (self) {
        conf_fail(sec, line, "peers", self, "is this node's own listen address");
        return -1;
    }
    const char *timeout = cfg_getstr(sec, "peer_timeout");
    uint64_t interval, peer_timeout;
    conf_parse_duration(cfg_getstr(sec, "interval"), &interval);
    if (timeout && conf_parse_duration(timeout, &peer_timeout) == NULL &&
        peer_timeout <= interval) {
        char d[32];
        conf_format_duration(interval, d, sizeof d);
        conf_fail(sec, line, "peer_timeout", timeout, "must be longer than interval (%s)", d);
        return -1;
    }
    conf_ctx->gossip_line = line;
    conf_ctx->gossip_inline = conf_ctx->is_inline;
    return 0;
}

/* Checks the redis section once its closing brace is read: at most one,
 * with an address. */
static int validate_redis(cfg_t *parent, cfg_opt_t *opt)
{
    cfg_t *sec = cfg_opt_getnsec(opt, opt->nvalues - 1);
    conf_ctx->section = NULL;
    int line = conf_section_line(sec);
    if (conf_ctx->redis_line) {
        conf_fail(sec, line, NULL, NULL, "there is already a redis section %s %d",
                  conf_ctx->redis_inline ? "in inline rule" : "on line", conf_ctx->redis_line);
        return -1;
    }
    int where = (cfg_size(sec, "address") > 0) + (cfg_size(sec, "sentinels") > 0) +
                (cfg_size(sec, "cluster") > 0);
    if (where == 0) {
        conf_fail(sec, line, NULL, NULL, "option 'address' is missing (or 'sentinels', 'cluster')");
        return -1;
    }
    if (where > 1) {
        conf_fail(sec, line, NULL, NULL, "takes one of 'address', 'sentinels' and 'cluster'");
        return -1;
    }
    if (cfg_size(sec, "sentinels") && !cfg_getstr(sec, "master")) {
        conf_fail(sec, line, "sentinels", cfg_getstr(sec, "sentinels"),
                  "needs master (the name the sentinels know the primary by)");
        return -1;
    }
    if (cfg_getstr(sec, "master") && !cfg_size(sec, "sentinels")) {
        conf_fail(sec, line, "master", cfg_getstr(sec, "master"), "needs sentinels");
        return -1;
    }
    if (cfg_size(sec, "cluster") && strpbrk(cfg_getstr(sec, "prefix"), "{}")) {
        /* the key's hash tag must be the first {...}: both windows in one slot */
        conf_fail(sec, line, "prefix", cfg_getstr(sec, "prefix"),
                  "may not have { or } with cluster (the keys' hash tag)");
        return -1;
    }
    if (cfg_getstr(sec, "user") && !cfg_getstr(sec, "password")) {
        conf_fail(sec, line, "user", cfg_getstr(sec, "user"), "needs a password");
        return -1;
    }
    conf_ctx->redis_line = line;
    conf_ctx->redis_inline = conf_ctx->is_inline;
    return 0;
}

/* ---- libconfuse's option arrays, made from the table --------------------- */

static cfg_opt_t to_cfg_opt(const struct option *o, bool in_rule)
{
    const char *def = in_rule && (o->where & GLOBAL) ? NULL : o->def;
    cfg_flag_t unset = def ? CFGF_NONE : CFGF_NODEFAULT;
    switch (o->type) {
    case LIST:
        return (cfg_opt_t)CFG_STR_LIST(o->name, NULL, CFGF_NONE);
    case INT:
        return (cfg_opt_t)CFG_INT_CB(o->name, def ? strtol(def, NULL, 10) : 0, unset, parse_int);
    case BOOL:
        return (cfg_opt_t)CFG_BOOL_CB(o->name, def && cfg_parse_boolean(def) == 1, unset,
                                      parse_bool);
    case STR:
        break;
    }
    return (cfg_opt_t)CFG_STR(o->name, def, unset);
}

/* The options of one kind of section, each checked by validate_option,
 * then `extra` (its sections, or the hidden line option), then the end. */
static void make_opts(cfg_opt_t *out, unsigned where, const cfg_opt_t *extra, size_t nextra)
{
    size_t n = 0;
    for (size_t i = 0; i < NOPTIONS; i++)
        if (options[i].where & where) {
            out[n] = to_cfg_opt(&options[i], where == RULE);
            out[n++].validcb = validate_option;
        }
    for (size_t i = 0; i < nextra; i++)
        out[n++] = extra[i];
    out[n] = (cfg_opt_t)CFG_END();
}

/* The validating callbacks are part of the option arrays, which cfg_init
 * copies with them: cfg_set_validate_func would look every one of ~250
 * paths up by name in each load (about 130,000 instructions, a quarter of
 * a process's start-up with one rule). */
cfg_t *conf_cfg_new(void)
{
    /* made once, under the load lock; libconfuse copies them at cfg_init */
    static cfg_opt_t rule_opts[NOPTIONS + 2], gossip_opts[NOPTIONS + 2], redis_opts[NOPTIONS + 2],
        global_opts[NOPTIONS + 5];
    static bool made;
    if (!made) {
        const cfg_opt_t line[] = {
            CFG_PTR_CB(CONF_SECTION_LINE, "0", CFGF_NONE, note_section_line, NULL),
        };
        cfg_opt_t sections[] = {
            CFG_SEC("gossip", gossip_opts, CFGF_MULTI), /* at most one (checked) */
            CFG_SEC("redis", redis_opts, CFGF_MULTI),   /* at most one (checked) */
            CFG_SEC("inbound", rule_opts, CFGF_MULTI | CFGF_TITLE),
            CFG_SEC("outbound", rule_opts, CFGF_MULTI | CFGF_TITLE),
        };
        sections[0].validcb = validate_gossip;
        sections[1].validcb = validate_redis;
        sections[2].validcb = validate_rule;
        sections[3].validcb = validate_rule;
        make_opts(rule_opts, RULE, line, 1);
        make_opts(gossip_opts, GOSSIP, line, 1);
        make_opts(redis_opts, REDIS, line, 1);
        make_opts(global_opts, GLOBAL, sections, 4);
        made = true;
    }
    cfg_t *cfg = cfg_init(global_opts, CFGF_NONE);
    if (!cfg) return NULL;
    cfg_set_error_function(cfg, conf_libconfuse_error);
    return cfg;
}
