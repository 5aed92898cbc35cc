/* SPDX-License-Identifier: BSD-2-Clause */
/* policy.h - which rules an event matches, and what they decide together.
 *
 * Every rule of the event's direction whose port and addresses match, and
 * which does not exempt the address, takes part: the event passes only if
 * all of them let it. When a later rule denies, the requests earlier rules
 * let through are given back, so a denied event costs nothing. A rule in
 * dry run counts and logs what it would have denied and enforces nothing.
 */
#ifndef SL_POLICY_H
#define SL_POLICY_H

#include <netdb.h>
#include <stdbool.h>
#include <stdint.h>

#include "../fleet/cluster.h"
#include "../limit/key.h"
#include "../limit/limit.h"
#include "../rule.h"
#include "../limit/table.h"

/* What the program resolved for one host name of an outbound rule, beyond
 * what the config holds from load time: runtime state, so the config stays
 * as loaded and can be swapped whole. naddr only grows; entries are written
 * before naddr is published with release, matchers read it with acquire. */
struct sl_learned_host {
    uint8_t addr[SL_MAX_HOST_ADDR][16];
    _Atomic uint32_t naddr;
};

struct sl_runtime {
    const struct sl_config *cfg;
    struct sl_table *table;
    struct sl_cluster *cluster;   /* NULL: no gossip; cluster rules then count locally */
    struct sl_redis_state *redis; /* NULL: no redis section; redis rules then count locally */
    int table_rule[SL_MAX_RULES]; /* the rule's entry in the table, -1 if none */
    bool any_in, any_out, any_hosts;
    bool in_needs_local;      /* some inbound rule looks at the local port or address */
    bool in_needs_local_addr; /* ... at the local address (not only the port) */
    bool any_bytes;           /* some rule limits bytes or reads requests: the I/O hooks
                                 have work */
    bool any_req_in;          /* some inbound rule counts requests */
    bool any_req_out;         /* some outbound rule counts requests */
    bool any_answers_in;      /* some inbound request rule reads the program's responses
                                 (count_status, req_conns, a token budget) */
    bool any_req_names;       /* ... and names a host: a connection to any address may name
                                 it (SNI, Host), so every outbound one is watched */
    bool any_conns;           /* some rule limits connections at once */
    uint64_t plain_in;        /* inbound rules whose decision is the rate alone (local
                                 count, no conns, bytes, delay or dry run): a connection
                                 only they match takes decide()'s short path */
    uint64_t lean_in;         /* plain_in rules with no local, from or exempt list: the
                                 peer's address alone decides (sl_decide_in_lean) */
    /* learned[host_base[rule] + i]: host i of the rule; NULL without host names */
    struct sl_learned_host *learned;
    int host_base[SL_MAX_RULES];
    _Atomic int learn_busy;
    uint32_t config_gen; /* the table's configuration generation this runtime was made for */
};

enum sl_outcome { SL_PASS, SL_DENY };

#define SL_CONN_HOLDS 2 /* conns rules one connection can be counted under */

struct sl_decision {
    enum sl_outcome outcome;
    int rule;                /* DENY: the rule that denied; -1 when nothing matched */
    bool conns_full;         /* DENY: because of a conns limit (retry_ns is a polling hint) */
    uint64_t wait_ns;        /* PASS: wait this long before acting (outbound delay) */
    uint64_t redecide_until; /* PASS of a non-blocking connect (shim): ask again after
                                wait_ns, until this time */
    struct sl_verdict v;     /* DENY: the denying rule's verdict */
    /* PASS: what the connection carries on: the first matching rule limiting
     * received / sent bytes (-1: none) with its key, and the concurrency
     * places taken (-1: none), to release with sl_conn_release. */
    int bytes_rule[2];
    struct sl_key bytes_key[2];
    int32_t conn_rec[SL_CONN_HOLDS];
    uint64_t took; /* PASS: bit i set when rule i's rate bucket gave this event a token */
};

/* Registers the config's rules in the table and makes room for the
 * addresses host-name rules will learn. Returns 0, or -1 (message in err)
 * when the table cannot take them or memory runs out. */
int sl_runtime_init(struct sl_runtime *rt, const struct sl_config *cfg, struct sl_table *table,
                    char *err, size_t errlen);

/* Frees what sl_runtime_init allocated, once nothing decides with rt. */
void sl_runtime_fini(struct sl_runtime *rt);

void sl_decide_in(struct sl_runtime *rt, const struct sl_addr *local, const struct sl_addr *peer,
                  uint64_t now, struct sl_decision *d);

/* The inbound rules whose ports take `port` (a bit per rule index): what a
 * listener can work out once rather than every accept. */
uint64_t sl_in_rules_for_port(const struct sl_runtime *rt, uint16_t port);

/* sl_decide_in with the rules looked at limited to `rules`, a mask from
 * sl_in_rules_for_port of the local port (their local addresses, peers
 * and exemptions are still checked per connection); SL_ALL_RULES: all. */
#define SL_ALL_RULES UINT64_MAX
void sl_decide_in_rules(struct sl_runtime *rt, uint64_t rules, const struct sl_addr *local,
                        const struct sl_addr *peer, uint64_t now, struct sl_decision *d);

/* sl_decide_in_rules for a listener whose port has one rule, rule i of
 * lean_in: whether the connection passes. A pass carries nothing and
 * leaves d untouched; a denial fills d as sl_decide_in_rules does. */
bool sl_decide_in_lean(struct sl_runtime *rt, int i, const struct sl_addr *peer, uint64_t now,
                       struct sl_decision *d);

/* `budget_ns` caps how long delay rules may ask the caller to wait. */
void sl_decide_out(struct sl_runtime *rt, const struct sl_addr *dst, uint64_t now,
                   uint64_t budget_ns, struct sl_decision *d);

/* Gives back the rate tokens (`took`, see struct sl_decision) of an
 * outbound PASS whose connect will not be made (its socket was closed
 * before its turn came). */
void sl_decide_out_refund(struct sl_runtime *rt, const struct sl_addr *dst, uint64_t took,
                          uint64_t now);

/* Releases the concurrency places a connection held (its last close). */
void sl_conn_release(struct sl_runtime *rt, const int32_t rec[SL_CONN_HOLDS]);

/* Byte budgets of a connection's direction (0 = SL_IO_RECV, 1 =
 * SL_IO_SEND): up to `want` bytes now, or 0 and when to come back, the
 * connection's place held in *turn (see core/limit/turn.h). The quantum is what
 * one turn moves: a fiftieth of the rate's second, at least 1. */
struct sl_turn;
uint64_t sl_bytes_quantum(const struct sl_runtime *rt, int rule, int io);
uint64_t sl_bytes_take(struct sl_runtime *rt, int rule, const struct sl_key *k, int io,
                       struct sl_turn *turn, uint64_t now, uint64_t want, uint64_t *at);
/* Gives back what *turn holds (the connection closes). */
void sl_bytes_drop(struct sl_runtime *rt, int rule, const struct sl_key *k, int io,
                   struct sl_turn *turn, uint64_t now);
void sl_bytes_refund(struct sl_runtime *rt, int rule, const struct sl_key *k, int io, uint64_t now,
                     uint64_t n);

/* The one connection matcher: whether rule `rule` matches a connection of
 * direction dir from/to peer (inbound: on local, NULL when not known).
 * Outbound host names match the addresses resolved at load and those the
 * program's own lookups taught (sl_learn_addr). Exempt addresses never
 * match. Connection and request rules both use it. */
bool sl_rule_matches(const struct sl_runtime *rt, int rule, enum sl_dir dir,
                     const struct sl_addr *local, const struct sl_addr *peer);

/* Whether outbound rule `rule` names host name[0..len) (no NUL needed; a
 * trailing dot and case are ignored) on port: how a connection whose TLS
 * SNI or request Host names the destination matches whatever address it
 * reached. */
bool sl_rule_names(const struct sl_runtime *rt, int rule, const char *name, size_t len,
                   uint16_t port);

/* True when some outbound rule matches dst: the caller then checks the
 * socket type, which costs a system call. */
bool sl_out_matches(const struct sl_runtime *rt, const struct sl_addr *dst);

/* Remembers addresses the program resolved for a rule's host name (in
 * rt->learned; the config is never written). */
void sl_learn_addrinfo(struct sl_runtime *rt, const char *name, const struct addrinfo *res);
void sl_learn_addr(struct sl_runtime *rt, const char *name, const uint8_t addr[16]);

#endif
