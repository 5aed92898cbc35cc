/* SPDX-License-Identifier: BSD-2-Clause */
/* rule.h - the plain, immutable description of what sluice limits.
 *
 * conf/ builds a struct sl_config from a file, inline rules or both; core/
 * and shim/ only ever read it. Nothing here knows about libconfuse. A
 * config is built once, then published by swapping one pointer.
 */
#ifndef SL_RULE_H
#define SL_RULE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "verdict.h" /* struct sl_limit, struct sl_ramp */
#include "tokens.h"  /* struct sl_cost_rule */

#define SL_MAX_RULES     64
#define SL_MAX_PORTS     16
#define SL_MAX_CIDRS     32
#define SL_MAX_HOSTS     4
#define SL_MAX_STATUSES  16 /* count_status entries */
#define SL_MAX_HOST_ADDR 32 /* addresses kept per host name, load-time and learned */
#define SL_NAME_MAX      48
#define SL_HOST_MAX      256
#define SL_MAX_ROUTES    16
#define SL_ROUTE_MAX     128
#define SL_MAX_METHODS   8
#define SL_METHOD_MAX    16
#define SL_MAX_REQ_HOSTS 4
#define SL_REQ_NAME_MAX  64

enum sl_dir { SL_IN, SL_OUT };

enum sl_per {
    SL_PER_PEER,        /* inbound: the peer address, masked by prefix4/prefix6 */
    SL_PER_PREFIX,      /* same, with wider default prefixes (24 and 48) */
    SL_PER_DESTINATION, /* outbound: destination address and port */
    SL_PER_RULE,        /* one bucket for the whole rule */
};

/* Where a request rule finds a request's key (`per = header:NAME` ...). */
enum sl_req_per {
    SL_REQ_PER_ADDRESS, /* no request key: the connection's key, as `per` says */
    SL_REQ_PER_HEADER,  /* the value of a request header */
    SL_REQ_PER_QUERY,   /* the value of a query parameter */
    SL_REQ_PER_COOKIE,  /* the value of a cookie */
};

/* What a request without that key is counted under (`per_missing`). */
enum sl_per_missing {
    SL_MISSING_PEER, /* the connection's key, as `per` says (the peer, inbound) */
    SL_MISSING_RULE, /* one bucket shared by every request without a key */
    SL_MISSING_DENY, /* denied, as if its limit were 0 */
};

/* Which copies of a request key are charged when a request carries it more
 * than once (`per_copy`, core/http/reqkey.h: a header on two lines or
 * joined "A, B", a query parameter or a cookie given twice, names servers
 * fold together): every distinct one (the default; more than
 * SL_REQ_COPIES_MAX count as without a key), the first, or the last. */
enum sl_per_copy {
    SL_COPY_EACH,
    SL_COPY_FIRST,
    SL_COPY_LAST,
};

/* What a request head sluice could only read by the rule of doubt does
 * (`on_odd`, core/http/http1.h): counted like any request, or denied. */
enum sl_on_odd {
    SL_ODD_COUNT,
    SL_ODD_DENY,
};

/* Calendar windows of a quota. */
enum sl_quota_window { SL_QUOTA_NONE, SL_QUOTA_DAY, SL_QUOTA_MONTH };

struct sl_plans; /* core/limit/plan.h */

enum sl_action {
    SL_ACT_REJECT, /* inbound: reset the connection; outbound: fail connect with errno */
    SL_ACT_REPLY,  /* inbound: write a canned response, then close */
    SL_ACT_DELAY,  /* outbound: connect waits its turn up to max_delay */
};

enum sl_on_error { SL_ON_ERROR_OPEN, SL_ON_ERROR_CLOSED };

enum sl_scope {
    SL_SCOPE_LOCAL,   /* counts on this host only */
    SL_SCOPE_CLUSTER, /* counts shared with the gossip peers (see core/fleet/cluster.h) */
    SL_SCOPE_REDIS,   /* counts shared through a Redis server (see core/fleet/redis.h) */
};

enum sl_on_full {
    SL_FULL_SHARED, /* keys that find no slot share one overflow bucket per rule */
    SL_FULL_DENY,   /* keys that find no slot are denied */
    SL_FULL_ALLOW,  /* keys that find no slot pass (fail open) */
};

enum sl_log_target { SL_LOG_STDERR, SL_LOG_SYSLOG, SL_LOG_NONE };
enum sl_log_level { SL_LOG_ERROR, SL_LOG_WARN, SL_LOG_INFO, SL_LOG_DEBUG };

/* An address block. Addresses are kept as 16 bytes; IPv4 is stored
 * IPv4-mapped (::ffff:a.b.c.d) with plen counted over the 128 bits, so one
 * comparison serves both families. */
struct sl_cidr {
    uint8_t addr[16];
    uint8_t plen; /* 0..128 over the 16-byte form */
};

struct sl_port_range {
    uint16_t lo, hi;
};

/* An outbound host name and what it resolved to when the config loaded.
 * What the program resolves later is runtime state (policy.h:
 * struct sl_learned_host), never written here. */
struct sl_host {
    char name[SL_HOST_MAX]; /* lower case, no trailing dot */
    uint16_t port;          /* 0: the rule's port list applies */
    uint8_t addr[SL_MAX_HOST_ADDR][16];
    uint32_t naddr;
};

struct sl_rule {
    char name[SL_NAME_MAX];
    uint64_t id; /* hash of name: stable across processes sharing a table */
    enum sl_dir dir;

    struct sl_port_range ports[SL_MAX_PORTS];
    int nports; /* 0: every port */

    struct sl_cidr local[SL_MAX_CIDRS]; /* inbound: local addresses; 0 entries: any */
    int nlocal;
    struct sl_cidr from[SL_MAX_CIDRS]; /* inbound: peers; 0 entries: everyone */
    int nfrom;
    struct sl_cidr to[SL_MAX_CIDRS]; /* outbound: destination blocks */
    int nto;
    struct sl_host hosts[SL_MAX_HOSTS]; /* outbound: destination host names */
    int nhosts;
    struct sl_cidr exempt[SL_MAX_CIDRS];
    int nexempt;

    struct sl_limit limit; /* connection rate; count == 0: none (rate may be omitted
                              when a byte rate or conns is given) */
    char rate_text[32];    /* as written, normalised: "20/s" */

    /* Byte limits: GCRA over bytes (count = bytes per period_ns = 1 s,
     * burst in bytes). recv is what the program receives on the connection,
     * send what it sends. count == 0: no limit. */
    struct sl_limit recv_limit, send_limit;
    char recv_rate_text[32], send_rate_text[32]; /* "2MB/s" */
    uint32_t conns;                              /* connections open at once per key; 0: no limit */
    enum sl_scope scope;
    enum sl_per per;
    uint8_t prefix4; /* 0..32 */
    uint8_t prefix6; /* 0..128 */

    enum sl_action action;
    char *reply; /* inbound reply file contents, NULL: built-in 429 */
    size_t reply_len;
    char reply_path[256];  /* for printing */
    uint64_t max_delay_ns; /* outbound delay */
    bool learn;            /* outbound request rule: holds what the vendor's responses say
                              (core/http/learn.h) */
    uint64_t learn_max_ns; /* the longest hold learned */
    int err;               /* outbound errno on denial */
    bool dry_run;

    /* ---- Requests (core/http/request.h): HTTP requests on the connections the
     * fields above match. A rule is a request rule when `request` is set
     * (conf sets it when any option of this block is given). The
     * connection options above (rate, conns, bytes) still apply to the
     * connections themselves. */
    bool request;
    struct sl_limit req_limit; /* requests (counted by cost) per period; count 0: none */
    char req_rate_text[32];    /* as written, normalised: "20/s" */
    struct sl_ramp ramp;       /* req_rate stepping to another value over time; steps 0: none */
    char ramp_to_text[32], ramp_from_text[32];
    uint64_t ramp_over_ns;
    uint32_t cost;                               /* tokens a matching request takes: conf default 1;
                                                    0: counted, never limited */
    char routes[SL_MAX_ROUTES][SL_ROUTE_MAX];    /* path prefixes; with * ? or [ a glob
                                                    matched against the whole path */
    int nroutes;                                 /* 0: every path */
    char methods[SL_MAX_METHODS][SL_METHOD_MAX]; /* upper case; 0 entries: every method */
    int nmethods;
    char req_hosts[SL_MAX_REQ_HOSTS][SL_HOST_MAX]; /* Host values, lower case, no port */
    int nreq_hosts;                                /* 0: any Host */
    enum sl_req_per req_per;                       /* SL_REQ_PER_ADDRESS: as `per` says */
    char req_per_name[SL_REQ_NAME_MAX];            /* the header, parameter or cookie name */
    enum sl_per_missing per_missing;
    enum sl_per_copy per_copy; /* which copies of a repeated key count */
    enum sl_on_odd on_odd;
    uint64_t quota; /* requests (by cost) per calendar window; 0: none */
    enum sl_quota_window quota_window;
    int32_t quota_offset_s;       /* windows begin at midnight of UTC + this */
    char quota_text[32];          /* "10000/d" */
    const struct sl_plans *plans; /* key value -> plan; NULL: none */
    char plans_path[256];         /* for printing */
    /* inbound: only responses with these statuses take from req_rate's
     * bucket (at the response); a request is refused while the key's
     * bucket has nothing left (core/http/reqdecide.h). 0 entries: every
     * request takes its token as it comes. */
    uint16_t count_status[SL_MAX_STATUSES];
    int ncount_status;
    /* requests in flight at once per key, from the head to the end of its
     * response, in every process (the table's connection places); 0: no
     * limit */
    uint32_t req_conns;
    /* token budgets (core/limit/cost.h): cost_from, cost_rate, cost_burst;
     * from SL_COST_NONE: none */
    struct sl_cost_rule tokens;
};

/* Whether rule r keeps a token budget. */
static inline bool sl_rule_costs(const struct sl_rule *r)
{
    return r->tokens.from != SL_COST_NONE;
}

#define SL_MAX_PEERS 16

/* The gossip section (cluster limits). */
struct sl_gossip {
    bool enabled;     /* a gossip section was given */
    char listen[128]; /* "addr:port" */
    char peers[SL_MAX_PEERS][128];
    int npeers;
    uint64_t interval_ns;     /* default 100 ms */
    uint64_t peer_timeout_ns; /* a silent peer stops counting after this */
    uint32_t alone_share_pct; /* % of a cluster limit a node hearing nobody may use */
    char key_file[256];
    uint8_t key[32];
};

/* What a rule with scope = redis does while Redis does not answer. */
enum sl_backend_error {
    SL_BACKEND_LOCAL,  /* local_share % of the limit, on this program's counts */
    SL_BACKEND_OPEN,   /* everything passes */
    SL_BACKEND_CLOSED, /* everything is denied */
};

/* Where the redis section's counts go: one server, the primary that
 * Sentinel names, or a Redis Cluster. */
enum sl_redis_mode {
    SL_REDIS_SINGLE,   /* address */
    SL_REDIS_SENTINEL, /* sentinels + master */
    SL_REDIS_CLUSTER,  /* cluster: the seed nodes */
};
#define SL_REDIS_ADDRS_MAX 8 /* sentinels or cluster seed nodes */

/* The redis section (scope = redis rules). */
struct sl_redis {
    bool enabled;
    enum sl_redis_mode mode;
    char address[256];                  /* single: "host:port" (numeric) or "unix:/path" */
    char addrs[SL_REDIS_ADDRS_MAX][64]; /* sentinel, cluster: "host:port" (numeric) */
    int naddrs;
    char master[64]; /* sentinel: the name the sentinels know the primary by */
    char user[128];  /* "": no ACL user (AUTH with the password only) */
    char password[256];
    char prefix[64];
    uint64_t interval_ns; /* how often counts are synced */
    uint64_t timeout_ns;  /* connect; a sync round without progress */
    enum sl_backend_error on_error;
    uint32_t local_share_pct;
    char key_file[256]; /* "": request keys by value (header:, query:, cookie:) stay local */
    uint8_t key[32];    /* names those keys in Redis: BLAKE2b-128 of the value under it */
};

struct sl_config {
    uint32_t table_slots;
    char shared[SL_NAME_MAX]; /* "" : private to this program's processes */
    bool dry_run;
    enum sl_on_error on_error;
    enum sl_on_full on_full;
    bool inherit;
    enum sl_log_target log;
    enum sl_log_level log_level;
    int nrules;
    struct sl_rule rules[SL_MAX_RULES];
    struct sl_gossip gossip;
    struct sl_redis redis;
    /* Where it came from, for messages: "app.conf", "--in rule 1", ... */
    char source[256];
    /* "": all of it loaded; else the one line saying what was left out
     * under on_error = open (a plans file: the rule keeps its own limits) */
    char degraded[512];
};

#endif
