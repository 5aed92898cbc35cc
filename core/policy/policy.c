/* SPDX-License-Identifier: BSD-2-Clause */
/* policy.c - matching events to rules and combining their verdicts.
 *
 * The config is only read. Host addresses the program resolves at run
 * time go to rt->learned (policy.h), appended under a try-lock flag (never waited
 * for: a lookup that finds it busy simply does not teach this time, so no
 * thread can block and a fork can never inherit a held lock). Entries are
 * written before naddr is published with release; matchers read naddr with
 * acquire.
 */
#include "policy.h"

#include <ctype.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "../fleet/cluster.h"
#include "../fleet/redis.h"
#include "../log.h"
#include "../mem.h"
#include "pacelog.h"
#include "../limit/turn.h"

int sl_runtime_init(struct sl_runtime *rt, const struct sl_config *cfg, struct sl_table *table,
                    char *err, size_t errlen)
{
    memset(rt, 0, sizeof *rt);
    rt->cfg = cfg;
    rt->table = table;
    int nhosts = 0;
    for (int i = 0; i < cfg->nrules; i++) {
        const struct sl_rule *r = &cfg->rules[i];
        rt->host_base[i] = nhosts;
        nhosts += r->nhosts;
        rt->table_rule[i] = sl_table_rule(table, r->id, r->name);
        if (rt->table_rule[i] < 0) {
            snprintf(err, errlen, "the shared table already holds %d other rules", SL_MAX_RULES);
            return -1;
        }
        rt->any_req_in |= r->request && r->dir == SL_IN;
        rt->any_req_out |= r->request && r->dir == SL_OUT;
        rt->any_answers_in |=
            r->request && r->dir == SL_IN && (r->ncount_status || r->req_conns || sl_rule_costs(r));
        rt->any_bytes |=
            r->recv_limit.count || r->send_limit.count || rt->any_req_in || rt->any_req_out;
        rt->any_conns |= r->conns > 0;
        if (r->dir == SL_IN) {
            rt->any_in = true;
            if (r->limit.count && r->scope == SL_SCOPE_LOCAL && !r->conns && !r->recv_limit.count &&
                !r->send_limit.count && !r->request && r->action != SL_ACT_DELAY && !r->dry_run)
                rt->plain_in |= 1ull << i;
            if ((rt->plain_in >> i & 1) && !r->nlocal && !r->nfrom && !r->nexempt)
                rt->lean_in |= 1ull << i;
            rt->in_needs_local |= r->nports > 0 || r->nlocal > 0;
            rt->in_needs_local_addr |= r->nlocal > 0;
        } else {
            rt->any_out = true;
            rt->any_hosts |= r->nhosts > 0;
            rt->any_req_names |= r->request && r->nhosts > 0;
        }
    }
    if (nhosts) {
        rt->learned = sl_alloc((size_t)nhosts * sizeof *rt->learned);
        if (!rt->learned) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        memset(rt->learned, 0, (size_t)nhosts * sizeof *rt->learned);
    }
    return 0;
}

void sl_runtime_fini(struct sl_runtime *rt)
{
    sl_free(rt->learned);
    rt->learned = NULL;
}

static bool port_matches(const struct sl_rule *r, uint16_t port)
{
    if (r->nports == 0) return true;
    for (int i = 0; i < r->nports; i++)
        if (port >= r->ports[i].lo && port <= r->ports[i].hi) return true;
    return false;
}

static bool in_matches(const struct sl_rule *r, const struct sl_addr *local,
                       const struct sl_addr *peer)
{
    if (r->nports || r->nlocal) {
        if (!local) return false;
        if (!port_matches(r, local->port)) return false;
        if (r->nlocal && !sl_cidr_list_contains(r->local, r->nlocal, local->a)) return false;
    }
    if (r->nfrom && !sl_cidr_list_contains(r->from, r->nfrom, peer->a)) return false;
    return true;
}

static bool addr_in(const uint8_t (*list)[16], uint32_t n, const uint8_t a[16])
{
    for (uint32_t i = 0; i < n; i++)
        if (memcmp(list[i], a, 16) == 0) return true;
    return false;
}

static struct sl_learned_host *learned_of(const struct sl_runtime *rt, int rule, int host)
{
    return &rt->learned[rt->host_base[rule] + host];
}

/* Load-time addresses (the config) or learned ones (the runtime). */
static bool host_has(const struct sl_runtime *rt, int rule, int host, const uint8_t a[16])
{
    const struct sl_host *h = &rt->cfg->rules[rule].hosts[host];
    if (addr_in(h->addr, h->naddr, a)) return true;
    const struct sl_learned_host *l = learned_of(rt, rule, host);
    return addr_in(l->addr, atomic_load_explicit(&l->naddr, memory_order_acquire), a);
}

static bool out_matches(const struct sl_runtime *rt, int rule, const struct sl_addr *dst)
{
    const struct sl_rule *r = &rt->cfg->rules[rule];
    if (sl_cidr_list_contains(r->to, r->nto, dst->a)) return port_matches(r, dst->port);
    for (int i = 0; i < r->nhosts; i++) {
        const struct sl_host *h = &r->hosts[i];
        if (!host_has(rt, rule, i, dst->a)) continue;
        if (h->port ? h->port == dst->port : port_matches(r, dst->port)) return true;
    }
    return false;
}

/* A rule of sl_in_rules_for_port's mask: the direction and port are known
 * to match, the rest is checked per connection. */
static inline bool in_rest_matches(const struct sl_rule *r, const struct sl_addr *local,
                                   const struct sl_addr *peer)
{
    if (r->nlocal && (!local || !sl_cidr_list_contains(r->local, r->nlocal, local->a)))
        return false;
    if (r->nfrom && !sl_cidr_list_contains(r->from, r->nfrom, peer->a)) return false;
    return !r->nexempt || !sl_cidr_list_contains(r->exempt, r->nexempt, peer->a);
}

uint64_t sl_in_rules_for_port(const struct sl_runtime *rt, uint16_t port)
{
    const struct sl_config *c = rt->cfg;
    uint64_t mask = 0;
    for (int i = 0; i < c->nrules; i++)
        if (c->rules[i].dir == SL_IN && port_matches(&c->rules[i], port)) mask |= 1ull << i;
    return mask;
}

/* Inline in decide(): it runs for every rule at every accept and connect. */
static inline bool rule_matches(const struct sl_runtime *rt, int rule, enum sl_dir dir,
                                const struct sl_addr *local, const struct sl_addr *peer)
{
    const struct sl_rule *r = &rt->cfg->rules[rule];
    if (r->dir != dir) return false;
    if (dir == SL_IN ? !in_matches(r, local, peer) : !out_matches(rt, rule, peer)) return false;
    return !r->nexempt || !sl_cidr_list_contains(r->exempt, r->nexempt, peer->a);
}

bool sl_rule_matches(const struct sl_runtime *rt, int rule, enum sl_dir dir,
                     const struct sl_addr *local, const struct sl_addr *peer)
{
    return rule_matches(rt, rule, dir, local, peer);
}

bool sl_rule_names(const struct sl_runtime *rt, int rule, const char *name, size_t len,
                   uint16_t port)
{
    const struct sl_rule *r = &rt->cfg->rules[rule];
    while (len && name[len - 1] == '.') /* "api.example." is "api.example" */
        len--;
    if (r->dir != SL_OUT || len == 0 || len >= SL_HOST_MAX) return false;
    for (int i = 0; i < r->nhosts; i++) {
        const struct sl_host *h = &r->hosts[i];
        if (strlen(h->name) != len || strncasecmp(h->name, name, len) != 0) continue;
        if (h->port ? h->port == port : port_matches(r, port)) return true;
    }
    return false;
}

bool sl_out_matches(const struct sl_runtime *rt, const struct sl_addr *dst)
{
    const struct sl_config *c = rt->cfg;
    for (int i = 0; i < c->nrules; i++)
        if (c->rules[i].dir == SL_OUT && out_matches(rt, i, dst)) return true;
    return false;
}

/* A rule that let the connection through. Its key is not kept: only a
 * later rule's denial needs it (to refund), and that rare path makes it
 * again rather than every accept copying it. */
struct pass {
    int rule;
    uint64_t wait_ns;
};

static void log_denial(const struct sl_config *c, const struct sl_rule *r, const struct sl_addr *a,
                       const struct sl_verdict *v, bool dry, bool conns)
{
    char text[64];
    sl_addr_format(a->a, text, sizeof text);
    if (conns)
        sl_decision_log(c, SL_LOG_INFO, "rule \"%s\": %s %s %s (%u connections open)", r->name,
                        dry ? "would limit" : "limited", r->dir == SL_IN ? "peer" : "destination",
                        text, r->conns);
    else
        sl_decision_log(c, SL_LOG_INFO, "rule \"%s\": %s %s %s (retry in %llu ms)", r->name,
                        dry ? "would limit" : "limited", r->dir == SL_IN ? "peer" : "destination",
                        text, (unsigned long long)(v->retry_ns / 1000000));
}

/* A connection that passed: a line when it was paced, or in verbose mode. */
static void log_pass(const struct sl_config *c, int rule, const struct sl_addr *a, uint64_t wait_ns,
                     uint64_t now)
{
    if (!wait_ns && !sl_decisions_verbose(c)) return;
    const struct sl_rule *r = &c->rules[rule];
    char text[64], what[96];
    sl_addr_format(a->a, text, sizeof text);
    if (r->dir == SL_IN)
        snprintf(what, sizeof what, "from %s", text);
    else
        snprintf(what, sizeof what, "to %s port %u", text, a->port);
    if (wait_ns)
        sl_pace_log(c, rule, false, what, wait_ns, now);
    else
        sl_decision_log(c, SL_LOG_DEBUG, "rule \"%s\": allowed a connection %s", r->name, what);
}

/* A key of a rule's byte bucket: the rule's key, told apart from its
 * connection-rate bucket and from the other direction. */
static void bytes_key(struct sl_key *k, const struct sl_key *base, int io)
{
    *k = *base;
    k->extra |= 1ull << (62 + io);
}

static const struct sl_limit *bytes_limit(const struct sl_rule *r, int io)
{
    return io == 0 ? &r->recv_limit : &r->send_limit;
}

/* The limit a rule's slot is judged idle by: its rate, or, for a rule with
 * no rate (conns only), a nominal one whose state stays 0. */
static const struct sl_limit *slot_limit(const struct sl_rule *r)
{
    static const struct sl_limit nominal = {.alg = SL_ALG_GCRA, .period_ns = SL_NS_PER_SEC};
    return r->limit.count ? &r->limit : &nominal;
}

static void rate_decide(struct sl_runtime *rt, int i, const struct sl_rule *r,
                        const struct sl_key *k, uint64_t now, uint64_t slack, struct sl_verdict *v)
{
    if (r->scope == SL_SCOPE_CLUSTER && rt->cluster)
        sl_cluster_decide(rt->cluster, i, r, k, now, 1, v);
    else if (r->scope == SL_SCOPE_REDIS && rt->redis)
        sl_redis_decide(rt->redis, i, r, &(struct sl_redis_what){.limit = &r->limit}, k, now, 1, v);
    else
        /* a connection's verdict is read on an allow only for allowed and
         * wait_ns: no `remaining` */
        sl_table_decide_lean(rt->table, rt->table_rule[i], k, &r->limit, now, 1, slack, v);
}

static void rate_refund(struct sl_runtime *rt, int i, const struct sl_rule *r,
                        const struct sl_key *k, uint64_t now)
{
    if (r->scope == SL_SCOPE_CLUSTER && rt->cluster)
        sl_cluster_refund(rt->cluster, i, r, k, now, 1);
    else if (r->scope == SL_SCOPE_REDIS && rt->redis)
        sl_redis_refund(rt->redis, i, r, &(struct sl_redis_what){.limit = &r->limit}, k, now, 1);
    else
        sl_table_refund(rt->table, rt->table_rule[i], k, &r->limit, now, 1);
}

/* Runs every matching rule of one direction; see the file comment. */
/* A decision that passes, with no rule: filled field by field, as bytes_key
 * (64 bytes) means something only under a bytes_rule, and a whole-struct
 * memset is a good part of an accept. */
static inline void decision_init(struct sl_decision *d)
{
    d->outcome = SL_PASS;
    d->rule = -1;
    d->conns_full = false;
    d->wait_ns = d->redecide_until = d->took = 0;
    d->v = (struct sl_verdict){0};
    d->bytes_rule[0] = d->bytes_rule[1] = -1;
    d->conn_rec[0] = d->conn_rec[1] = -1;
}

/* decide() for one inbound rule of plain_in, known to match but for its
 * peer checks: what the loop below does for it, without the loop's
 * bookkeeping (a connection under a never-limiting rule is counted in
 * instructions against plain nginx). */
static void decide_plain(struct sl_runtime *rt, int i, const struct sl_addr *addr, uint64_t now,
                         struct sl_decision *d)
{
    const struct sl_rule *r = &rt->cfg->rules[i];
    int tr = rt->table_rule[i];
    struct sl_key key;
    struct sl_verdict v = {.allowed = true};
    sl_key_make(&key, r, addr);
    sl_table_decide_lean(rt->table, tr, &key, &r->limit, now, 1, 0, &v);
    if (v.allowed) {
        d->took = 1ull << i;
        d->wait_ns = v.wait_ns;
        sl_table_count(rt->table, tr, SL_C_ALLOWED, 1);
        if (v.wait_ns) sl_table_count_wait(rt->table, tr, now, v.wait_ns);
        /* log_pass's own test, here: a call with its buffers costs more */
        if (v.wait_ns || sl_decisions_verbose(rt->cfg)) log_pass(rt->cfg, i, addr, v.wait_ns, now);
        return;
    }
    sl_table_note_denial(rt->table, tr, &key, now);
    d->outcome = SL_DENY;
    d->rule = i;
    d->v = v;
}

/* `rules`: when not SL_ALL_RULES, the inbound rules of the listener's port
 * (sl_in_rules_for_port), the only ones looked at. */
static void decide(struct sl_runtime *rt, enum sl_dir dir, uint64_t rules,
                   const struct sl_addr *local, const struct sl_addr *addr, uint64_t now,
                   uint64_t budget, struct sl_decision *d)
{
    const struct sl_config *c = rt->cfg;
    struct pass passed[SL_MAX_RULES];
    int npassed = 0, nheld = 0;

    decision_init(d);
    bool all = rules == SL_ALL_RULES;
    uint64_t left = !all ? rules : c->nrules >= 64 ? UINT64_MAX : (1ull << c->nrules) - 1;
    while (left) { /* in the configuration's order: the first denying rule is reported */
        int i = __builtin_ctzll(left);
        left &= left - 1;
        const struct sl_rule *r = &c->rules[i];
        if (all ? !rule_matches(rt, i, dir, local, addr) : !in_rest_matches(r, local, addr))
            continue;

        struct sl_key key;
        struct sl_verdict v = {.allowed = true};
        bool conns_full = false;
        sl_key_make(&key, r, addr);
        if (r->limit.count) {
            uint64_t slack = 0;
            if (r->action == SL_ACT_DELAY)
                slack = r->max_delay_ns < budget ? r->max_delay_ns : budget;
            rate_decide(rt, i, r, &key, now, slack, &v);
        }
        if (v.allowed && r->conns && nheld < SL_CONN_HOLDS) {
            int32_t rec = sl_table_conn_acquire(rt->table, rt->table_rule[i], &key, slot_limit(r),
                                                r->conns, now);
            if (rec == -1) {
                if (r->limit.count) rate_refund(rt, i, r, &key, now);
                v = (struct sl_verdict){.retry_ns = SL_NS_PER_SEC / 100, .limit = r->conns};
                conns_full = true;
            } else if (rec >= 0) {
                d->conn_rec[nheld++] = rec;
            }
        }
        if (v.allowed) {
            passed[npassed++] = (struct pass){.rule = i, .wait_ns = v.wait_ns};
            if (!r->recv_limit.count && !r->send_limit.count) continue;
            for (int io = 0; io < 2; io++) {
                if (d->bytes_rule[io] >= 0 || !bytes_limit(r, io)->count) continue;
                d->bytes_rule[io] = i;
                bytes_key(&d->bytes_key[io], &key, io);
            }
            continue;
        }
        sl_table_note_denial(rt->table, rt->table_rule[i] | (r->dry_run ? SL_DENIAL_DRY : 0), &key,
                             now);
        if (r->dry_run) {
            sl_table_count(rt->table, rt->table_rule[i], SL_C_WOULD_LIMIT, 1);
            log_denial(c, r, addr, &v, true, conns_full);
            continue;
        }
        for (int j = 0; j < npassed; j++) {
            const struct sl_rule *pr = &c->rules[passed[j].rule];
            if (!pr->limit.count) continue;
            struct sl_key pk;
            sl_key_make(&pk, pr, addr);
            rate_refund(rt, passed[j].rule, pr, &pk, now);
        }
        sl_conn_release(rt, d->conn_rec);
        int32_t none[SL_CONN_HOLDS] = {-1, -1};
        memcpy(d->conn_rec, none, sizeof none);
        d->bytes_rule[0] = d->bytes_rule[1] = -1;
        d->outcome = SL_DENY;
        d->rule = i;
        d->conns_full = conns_full;
        d->v = v;
        return;
    }
    for (int j = 0; j < npassed; j++) {
        int tr = rt->table_rule[passed[j].rule];
        if (c->rules[passed[j].rule].limit.count) d->took |= 1ull << passed[j].rule;
        sl_table_count(rt->table, tr, SL_C_ALLOWED, 1);
        if (passed[j].wait_ns) sl_table_count_wait(rt->table, tr, now, passed[j].wait_ns);
        if (passed[j].wait_ns > d->wait_ns) d->wait_ns = passed[j].wait_ns;
        log_pass(c, passed[j].rule, addr, passed[j].wait_ns, now);
    }
}

/* An inbound denial's count and log line. */
static void denied_in(struct sl_runtime *rt, const struct sl_addr *peer,
                      const struct sl_decision *d)
{
    sl_table_count(rt->table, rt->table_rule[d->rule], SL_C_LIMITED, 1);
    log_denial(rt->cfg, &rt->cfg->rules[d->rule], peer, &d->v, false, d->conns_full);
}

void sl_decide_in(struct sl_runtime *rt, const struct sl_addr *local, const struct sl_addr *peer,
                  uint64_t now, struct sl_decision *d)
{
    sl_decide_in_rules(rt, SL_ALL_RULES, local, peer, now, d);
}

void sl_decide_in_rules(struct sl_runtime *rt, uint64_t rules, const struct sl_addr *local,
                        const struct sl_addr *peer, uint64_t now, struct sl_decision *d)
{
    if (rules != SL_ALL_RULES && rules && !(rules & (rules - 1)) && (rules & rt->plain_in)) {
        /* the listener's port has one rule, a plain one: no loop (and not
         * decide()'s frame, sized for every rule) */
        int i = __builtin_ctzll(rules);
        decision_init(d);
        if (in_rest_matches(&rt->cfg->rules[i], local, peer)) decide_plain(rt, i, peer, now, d);
    } else {
        decide(rt, SL_IN, rules, local, peer, now, 0, d);
    }
    if (d->outcome == SL_DENY) denied_in(rt, peer, d);
}

/* The thread's last lean decision: a peer that connects again (a client's
 * next connection; every connection a proxy forwards) is decided by its
 * key's hash and slot, not made again. The key is the rule's (its place and
 * the configuration's generation) over the address; the hash is the
 * table's, whose random secret names it (a slot of another mapping of the
 * same table is the same slot). `seq` is odd while the memo is written: a
 * signal handler's accept that interrupts the writing neither takes nor
 * writes the memo, and a reader the handler interrupts sees seq move. */
struct lean_memo {
    unsigned seq;
    uint32_t gen;
    uint64_t secret;
    const struct sl_rule *rule;
    uint64_t a[2];
    uint64_t h;
    int64_t at;
};
static __thread struct lean_memo lean_memo __attribute__((tls_model("initial-exec")));

/* The key hash of rule r for peer, and the slot the memo remembers (-1:
 * none); *seq says which memo they came from (odd: none). */
static inline uint64_t lean_hash(struct sl_runtime *rt, const struct sl_rule *r,
                                 const struct sl_addr *peer, int64_t *at, unsigned *seq)
{
    struct lean_memo *m = &lean_memo;
    uint64_t a[2];
    memcpy(a, peer->a, sizeof a);
    const uint64_t *secret = sl_table_secret(rt->table);
    unsigned s = *(volatile unsigned *)&m->seq;
    atomic_signal_fence(memory_order_seq_cst);
    if (__builtin_expect(!(s & 1) && m->a[0] == a[0] && m->a[1] == a[1] && m->rule == r &&
                             m->gen == rt->config_gen && m->secret == secret[0],
                         1)) {
        uint64_t h = m->h;
        *at = m->at;
        atomic_signal_fence(memory_order_seq_cst);
        if (__builtin_expect(*(volatile unsigned *)&m->seq == s, 1)) {
            *seq = s;
            return h;
        }
    }
    struct sl_key key;
    sl_key_make(&key, r, peer);
    uint64_t h = sl_key_hash(&key, secret);
    *at = -1;
    *seq = 1;
    s = *(volatile unsigned *)&m->seq;
    if (s & 1) return h; /* a handler amid the memo's writing: not ours to write */
    *(volatile unsigned *)&m->seq = s + 1;
    atomic_signal_fence(memory_order_seq_cst);
    *m = (struct lean_memo){.seq = s + 1,
                            .gen = rt->config_gen,
                            .secret = secret[0],
                            .rule = r,
                            .a = {a[0], a[1]},
                            .h = h,
                            .at = -1};
    atomic_signal_fence(memory_order_seq_cst);
    *(volatile unsigned *)&m->seq = *seq = s + 2;
    return h;
}

/* Remembers where the key of the memo's seq was found. */
static inline void lean_found(unsigned seq, int64_t at)
{
    struct lean_memo *m = &lean_memo;
    if (!(seq & 1) && *(volatile unsigned *)&m->seq == seq) m->at = at; /* a tag checks it */
}

/* decide_plain without the decision on a pass, and by the memo: an accepted
 * connection under a never-limiting rule is counted in instructions
 * against plain nginx. Kept apart from decide_plain, its twin, so that it
 * has one caller and the table's step inlines into accept: merged, a new
 * connection cost 20-35 instructions more (callgrind). */
bool sl_decide_in_lean(struct sl_runtime *rt, int i, const struct sl_addr *peer, uint64_t now,
                       struct sl_decision *d)
{
    const struct sl_rule *r = &rt->cfg->rules[i];
    int tr = rt->table_rule[i];
    struct sl_verdict v = {.allowed = true};
    int64_t at;
    unsigned seq;
    uint64_t h = lean_hash(rt, r, peer, &at, &seq);
    int64_t was = at;
    sl_table_decide_lean_at(rt->table, tr, h, &at, &r->limit, now, &v);
    if (at != was) lean_found(seq, at);
    if (__builtin_expect(v.allowed, 1)) {
        sl_table_count(rt->table, tr, SL_C_ALLOWED, 1);
        if (v.wait_ns) sl_table_count_wait(rt->table, tr, now, v.wait_ns);
        if (v.wait_ns || sl_decisions_verbose(rt->cfg)) log_pass(rt->cfg, i, peer, v.wait_ns, now);
        return true;
    }
    struct sl_key key;
    sl_key_make(&key, r, peer);
    decision_init(d);
    sl_table_note_denial(rt->table, tr, &key, now);
    d->outcome = SL_DENY;
    d->rule = i;
    d->v = v;
    denied_in(rt, peer, d);
    return false;
}

void sl_decide_out(struct sl_runtime *rt, const struct sl_addr *dst, uint64_t now,
                   uint64_t budget_ns, struct sl_decision *d)
{
    decide(rt, SL_OUT, SL_ALL_RULES, NULL, dst, now, budget_ns, d);
}

_Static_assert(SL_MAX_RULES <= 64, "struct sl_decision.took has a bit per rule");

void sl_decide_out_refund(struct sl_runtime *rt, const struct sl_addr *dst, uint64_t took,
                          uint64_t now)
{
    for (int i = 0; took && i < rt->cfg->nrules; i++, took >>= 1) {
        if (!(took & 1)) continue;
        const struct sl_rule *r = &rt->cfg->rules[i];
        struct sl_key key;
        sl_key_make(&key, r, dst);
        rate_refund(rt, i, r, &key, now);
    }
}

void sl_conn_release(struct sl_runtime *rt, const int32_t rec[SL_CONN_HOLDS])
{
    for (int i = 0; i < SL_CONN_HOLDS; i++)
        if (rec[i] >= 0) sl_table_conn_release(rt->table, rec[i]);
}

uint64_t sl_bytes_quantum(const struct sl_runtime *rt, int rule, int io)
{
    const struct sl_limit *l = bytes_limit(&rt->cfg->rules[rule], io);
    /* Move at least a fiftieth of a second's worth (at most the burst), so a
     * throttled transfer costs at most ~50 wake-ups a second. */
    return l->count / 50 ? l->count / 50 : 1;
}

uint64_t sl_bytes_take(struct sl_runtime *rt, int rule, const struct sl_key *k, int io,
                       struct sl_turn *turn, uint64_t now, uint64_t want, uint64_t *at)
{
    const struct sl_limit *l = bytes_limit(&rt->cfg->rules[rule], io);
    return sl_turn_take(rt->table, rt->table_rule[rule], k, l, sl_bytes_quantum(rt, rule, io), turn,
                        now, want, at);
}

void sl_bytes_drop(struct sl_runtime *rt, int rule, const struct sl_key *k, int io,
                   struct sl_turn *turn, uint64_t now)
{
    const struct sl_limit *l = bytes_limit(&rt->cfg->rules[rule], io);
    sl_turn_drop(rt->table, rt->table_rule[rule], k, l, turn, now);
}

void sl_bytes_refund(struct sl_runtime *rt, int rule, const struct sl_key *k, int io, uint64_t now,
                     uint64_t n)
{
    if (n == 0) return;
    const struct sl_limit *l = bytes_limit(&rt->cfg->rules[rule], io);
    sl_table_refund(rt->table, rt->table_rule[rule], k, l, now, n);
}

static void normalise_name(char *out, size_t len, const char *name)
{
    size_t n = 0;
    for (; name[n] && n + 1 < len; n++)
        out[n] = (char)tolower((unsigned char)name[n]);
    if (n && out[n - 1] == '.') n--;
    out[n] = 0;
}

void sl_learn_addr(struct sl_runtime *rt, const char *name, const uint8_t addr[16])
{
    char norm[SL_HOST_MAX];
    normalise_name(norm, sizeof norm, name);
    int expected = 0;
    if (!rt->learned || !atomic_compare_exchange_strong(&rt->learn_busy, &expected, 1)) return;
    const struct sl_config *c = rt->cfg;
    for (int i = 0; i < c->nrules; i++) {
        for (int j = 0; j < c->rules[i].nhosts; j++) {
            const struct sl_host *h = &c->rules[i].hosts[j];
            if (strcmp(h->name, norm) != 0 || host_has(rt, i, j, addr)) continue;
            struct sl_learned_host *l = learned_of(rt, i, j);
            uint32_t n = atomic_load_explicit(&l->naddr, memory_order_relaxed);
            if (h->naddr + n >= SL_MAX_HOST_ADDR) continue; /* the cap counts both */
            memcpy(l->addr[n], addr, 16);
            atomic_store_explicit(&l->naddr, n + 1, memory_order_release);
            char text[64];
            sl_addr_format(addr, text, sizeof text);
            sl_log(SL_LOG_DEBUG, "rule \"%s\": %s resolved to %s", c->rules[i].name, norm, text);
        }
    }
    atomic_store(&rt->learn_busy, 0);
}

void sl_learn_addrinfo(struct sl_runtime *rt, const char *name, const struct addrinfo *res)
{
    for (; res; res = res->ai_next) {
        struct sl_addr a;
        if (sl_addr_from_sockaddr(&a, res->ai_addr, res->ai_addrlen)) sl_learn_addr(rt, name, a.a);
    }
}
