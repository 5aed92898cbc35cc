/* SPDX-License-Identifier: BSD-2-Clause */
/* reqdecide.c - one request against the request rules (see reqdecide.h).
 *
 * Each rule's requests are counted under a table entry of their own (the
 * rule's id with a mark, named "<rule>:req"), so `sluice stats` shows them
 * beside the rule's connection counters and request buckets never share
 * the rule's overflow bucket with its connections. When the table has no
 * room for the extra entry, the rule's own entry serves both.
 */
#include "reqdecide.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "../log.h"
#include "../policy/pacelog.h"
#include "../limit/plan.h"
#include "../limit/quota.h"
#include "../limit/ramp.h"
#include "../fleet/redis.h"
#include "reqkey.h"
#include "reqmatch.h"
#include "../limit/answer.h"
#include "../limit/cost.h"
#include "../limit/limit_gcra.h"
#include "../limit/limit_log.h"
#include "../limit/table.h"
#include "../limit/table_plans.h"

#define ENTRY_MARK      0x7265712e72756c65ull /* "req.rule" */
#define COST_MARK       0x636f73742e72756cull /* "cost.rul": a rule's token budgets */
#define PATH_MAX_NORMAL 2048

/* Whether rule r's requests over the limit wait their turn (within
 * max_delay): `delay`, and `reply` where no 429 can be given (x->reply_waits:
 * sl_req_reply_waits). */
static inline bool waits(const struct sl_req_rules *x, const struct sl_rule *r)
{
    return r->action == SL_ACT_DELAY || (r->action == SL_ACT_REPLY && x->reply_waits);
}

/* Whether rule r is decided by its rate alone, from a key it always has or
 * goes without: one GCRA bucket in the shared table, no route, method or
 * host to match, no plan, quota, ramp, dry run or learn, a cost (count_status
 * only adds the bucket to give back to: sl_req_decision.answer_*), keyed by a header
 * or by the address (the general path decides a request without the
 * header's value: per_missing). Such a rule, alone on a connection, is
 * decided by solo_decide without the general loop. */
static bool plain_rule(const struct sl_rule *r)
{
    return r->req_limit.count && r->req_limit.alg == SL_ALG_GCRA && r->cost && !r->learn &&
           !r->req_conns && !sl_rule_costs(r) && r->scope != SL_SCOPE_REDIS && !r->dry_run &&
           !r->plans && !r->quota && !r->ramp.steps && !r->nroutes && !r->nmethods &&
           !r->nreq_hosts && (r->req_per == SL_REQ_PER_HEADER || r->req_per == SL_REQ_PER_ADDRESS);
}

void sl_req_rules_entries(struct sl_req_rules *x)
{
    const struct sl_config *c = x->rt->cfg;
    x->by_header = 0;
    x->solo = -1;
    int n = 0, last = -1;
    for (int i = 0; i < c->nrules && i < SL_MAX_RULES; i++) {
        x->entry[i] = (int8_t)x->rt->table_rule[i];
        if (!(x->match >> i & 1)) continue;
        if (c->rules[i].req_per == SL_REQ_PER_HEADER && *x->header &&
            sl_req_header_name_eq(c->rules[i].req_per_name, strlen(c->rules[i].req_per_name),
                                  x->header, strlen(x->header)))
            x->by_header |= 1ull << i;
        char name[SL_NAME_MAX];
        snprintf(name, sizeof name, "%.*s:req", SL_NAME_MAX - 5, c->rules[i].name);
        int e = sl_table_rule(x->rt->table, c->rules[i].id ^ ENTRY_MARK, name);
        if (e >= 0) x->entry[i] = (int8_t)e;
        if (x->cost_entry) x->cost_entry[i] = x->entry[i];
        if (x->cost_entry && sl_rule_costs(&c->rules[i])) {
            snprintf(name, sizeof name, "%.*s:cost", SL_NAME_MAX - 6, c->rules[i].name);
            e = sl_table_rule(x->rt->table, c->rules[i].id ^ COST_MARK, name);
            if (e >= 0) x->cost_entry[i] = (int8_t)e;
        }
        n++;
        last = i;
    }
    if (n == 1 && plain_rule(&c->rules[last])) x->solo = (int8_t)last;
    sl_req_rules_solo(x);
}

void sl_req_rules_solo(struct sl_req_rules *x)
{
    const struct sl_rule *r = x->solo >= 0 ? &x->rt->cfg->rules[x->solo] : NULL;
    x->solo_rule = r;
    x->solo_by_header = r && r->req_per == SL_REQ_PER_HEADER && (x->by_header >> x->solo & 1);
    x->solo_slack = r && waits(x, r) ? r->max_delay_ns : 0;
    x->solo_verbose = sl_decisions_verbose(x->rt->cfg);
}

/* What one rule took from one request, to give back if a later one denies. */
struct grant {
    int rule;
    struct sl_key key;
    bool took_rate;       /* took from a bucket of this rate (by value: a ramped */
    struct sl_limit rate; /* rate is computed per decision, on apply_rule's stack) */
    uint64_t quota_end;   /* 0: took nothing from a quota */
    uint64_t mark_end;    /* 0: opened no Idempotency-Key window */
    int32_t plan;         /* the plan's counters in the table (table_plans.h); -1: none */
    uint32_t quota_used, quota_limit; /* of the quota (< 2^28), for the plan's counters */
    uint64_t wait_ns;
    bool copy;        /* another copy of the key the rule's grant before this one charged */
    bool answered;    /* count_status: took at the head; its answer gives it back unless counted */
    int32_t inflight; /* req_conns: the place taken (a connection record); -1: none */
    bool place_wait;  /* req_conns under delay: every place taken, the request waits */
    bool cost_looked; /* token budget: looked at, not in debt (its answer charges it) */
    uint64_t cost_hash, cost_wait; /* its key's table hash; how long until its debt is paid */
};

struct idem_op {
    uint64_t now, opened;
    bool free, unmark;
};

static uint64_t idem_step(uint64_t old, void *arg)
{
    struct idem_op *op = arg;
    if (op->unmark) return sl_idem_unmark(old, op->opened);
    return sl_idem_step(old, op->now, &op->free, &op->opened);
}

/* The request's Idempotency-Key mark, stepped (a retry: *free) or, with
 * unmark, the window `opened` taken back. A mark is the cheapest word to
 * lose (the next retry pays, and opens a new window), so it is given the
 * largest limit: a full table evicts marks before any key's count. */
static void idem_apply(struct sl_runtime *rt, int e, const struct sl_key *bucket,
                       const struct sl_req_head *h, uint64_t now, struct idem_op *op)
{
    struct sl_key mk;
    sl_idem_key(&mk, bucket, h, sl_table_secret(rt->table));
    if (op->unmark) /* taken back: only from the mark's own slot */
        sl_table_give_back(rt->table, &mk, idem_step, op);
    else
        sl_table_apply(rt->table, e, &mk, sl_quota_slot_limit(), SL_QUOTA_MAX, now, idem_step, op);
}

struct quota_op {
    uint64_t limit, cost, end, now;
    bool refund;
    struct sl_verdict v;
};

static uint64_t quota_step(uint64_t old, void *arg)
{
    struct quota_op *op = arg;
    if (op->refund) return sl_quota_refund(old, op->cost, op->end);
    uint64_t next;
    sl_quota_step(old, op->limit, op->cost, op->end, op->now, &next, &op->v);
    return next;
}

static void quota_key(struct sl_key *k, const struct sl_key *bucket)
{
    *k = *bucket;
    k->extra |= SL_REQ_KEY_QUOTA;
}

/* The copies of the rule's key in the request that its per_copy charges
 * (core/http/reqkey.h); none: the key is missing. qbuf holds decoded query
 * values. More than SL_REQ_COPIES_MAX distinct copies, or more than
 * `room` of them: none (the rule of doubt: per_missing applies). */
static void key_copies(const struct sl_req_rules *x, const struct sl_rule *r,
                       const struct sl_req_head *h, char *qbuf, size_t qlen, unsigned room,
                       struct sl_req_copies *c)
{
    c->n = 0;
    c->many = false;
    switch (r->req_per) {
    case SL_REQ_PER_ADDRESS:
        break;
    case SL_REQ_PER_HEADER:
        if (h->header && x->by_header >> (r - x->rt->cfg->rules) & 1)
            sl_header_copies(h->header, h->header_len, r->per_copy, c);
        break;
    case SL_REQ_PER_QUERY:
        if (h->query)
            sl_query_copies(h->query, h->query_len, r->req_per_name, r->per_copy, qbuf, qlen, c);
        break;
    case SL_REQ_PER_COOKIE:
        if (h->cookie) sl_cookie_copies(h->cookie, h->cookie_len, r->req_per_name, r->per_copy, c);
        break;
    }
    if (c->many || c->n > room) c->n = 0;
}

static bool request_matches(const struct sl_rule *r, const struct sl_req_head *h, char *path,
                            bool *normalised)
{
    bool unread_method = h->odd && !h->method_len, unread_host = h->odd && !h->host_len;
    if (!unread_method && !sl_method_matches(r, h->method ? h->method : "", h->method_len))
        return false;
    if (r->nreq_hosts && !unread_host && (!h->host || !sl_host_matches(r, h->host, h->host_len)))
        return false;
    if (r->nroutes == 0 || h->path_cut || (h->odd && !h->path_len)) return true;
    if (!*normalised) {
        sl_path_normalise(h->path ? h->path : "", h->path_len, path, PATH_MAX_NORMAL);
        *normalised = true;
    }
    return sl_route_matches(r, path);
}

static void log_request(const struct sl_config *c, const struct sl_rule *r,
                        const struct sl_req_head *h, const struct sl_addr *peer,
                        const struct sl_key *k, const struct sl_verdict *v, bool dry)
{
    char addr[64], key[7];
    sl_addr_format(peer->a, addr, sizeof addr);
    sl_req_key_short(k, key);
    int plen = h->path_len > 64 ? 64 : (int)h->path_len;
    sl_decision_log(
        c, SL_LOG_INFO, "rule \"%s\": %s request %.*s %.*s%s %s %s key #%s (retry in %llu ms)",
        r->name, dry ? "would limit" : "limited", (int)(h->method_len > 16 ? 16 : h->method_len),
        h->method ? h->method : "", plen, h->path ? h->path : "", h->path_len > 64 ? "..." : "",
        r->dir == SL_IN ? "from" : "to", addr, key, (unsigned long long)(v->retry_ns / 1000000));
}

/* A request that passed: a line when it was paced, or in verbose mode. The
 * key is told by its short hash, never its value. Out of line: it runs
 * only then. */
static __attribute__((noinline)) void log_grant_line(const struct sl_config *c, int rule,
                                                     const struct sl_key *k,
                                                     const struct sl_addr *peer, uint64_t wait_ns,
                                                     uint64_t now)
{
    const struct sl_rule *r = &c->rules[rule];
    char addr[64], key[7], what[128];
    sl_addr_format(peer->a, addr, sizeof addr);
    sl_req_key_short(k, key);
    snprintf(what, sizeof what, "%s %s key #%s", r->dir == SL_IN ? "from" : "to", addr, key);
    if (wait_ns)
        sl_pace_log(c, rule, true, what, wait_ns, now);
    else
        sl_decision_log(c, SL_LOG_DEBUG, "rule \"%s\": allowed a request %s", r->name, what);
}

static inline void log_grant(const struct sl_config *c, int rule, const struct sl_key *k,
                             const struct sl_addr *peer, uint64_t wait_ns, uint64_t now)
{
    if (wait_ns || sl_decisions_verbose(c)) log_grant_line(c, rule, k, peer, wait_ns, now);
}

static void give_back(struct sl_runtime *rt, const struct sl_req_rules *x, const struct grant *g,
                      uint64_t now, const struct sl_req_head *h)
{
    const struct sl_rule *r = &rt->cfg->rules[g->rule];
    int e = x->entry[g->rule];
    if (g->took_rate && r->scope == SL_SCOPE_REDIS && rt->redis)
        sl_redis_refund(rt->redis, g->rule, r, &(struct sl_redis_what){.limit = &g->rate}, &g->key,
                        now, r->cost);
    else if (g->took_rate)
        sl_table_refund(rt->table, e, &g->key, &g->rate, now, r->cost);
    if (g->quota_end) {
        struct sl_key qk;
        quota_key(&qk, &g->key);
        struct quota_op op = {.cost = r->cost, .end = g->quota_end, .refund = true};
        sl_table_give_back(rt->table, &qk, quota_step, &op);
    }
    if (g->mark_end) {
        struct idem_op op = {.opened = g->mark_end, .unmark = true};
        idem_apply(rt, e, &g->key, h, now, &op);
    }
    if (g->inflight >= 0) sl_table_conn_release(rt->table, g->inflight);
}

/* The bucket a place in flight claims its slot with when the rule has no
 * rate (the slot's state stays 0: a key holding places is never evicted,
 * one holding none is idle). */
static const struct sl_limit place_limit = {
    .alg = SL_ALG_GCRA, .count = 1, .period_ns = 1, .burst = 1, .burst_ns = 1};

/* How often a request waiting for a place in flight looks again. */
#define PLACE_POLL_NS (SL_NS_PER_SEC / 200)

void sl_req_place_key(struct sl_key *k, const struct sl_key *bucket)
{
    *k = *bucket;
    k->extra |= SL_REQ_KEY_INFLIGHT;
}

int32_t sl_req_place_take(struct sl_runtime *rt, int rule, int e, const struct sl_key *k,
                          uint64_t now)
{
    const struct sl_rule *r = &rt->cfg->rules[rule];
    const struct sl_limit *l = r->req_limit.count ? &r->req_limit : &place_limit;
    return sl_table_conn_acquire(rt->table, e, k, l, r->req_conns, now);
}

/* Rule i's place in flight for the request apply_rule let through (g):
 * taken (g->inflight), or waited for (delay), or none to take: then the
 * rule denies (v, pol) and what apply_rule took is given back. No record
 * free: fail open. */
static void take_place(const struct sl_req_rules *x, int i, const struct sl_req_head *h,
                       uint64_t now, struct grant *g, struct sl_verdict *v,
                       struct sl_reply_policy *pol)
{
    struct sl_runtime *rt = x->rt;
    const struct sl_rule *r = &rt->cfg->rules[i];
    struct sl_key k;
    sl_req_place_key(&k, &g->key);
    int32_t rec = sl_req_place_take(rt, i, x->entry[i], &k, now);
    if (rec >= 0) g->inflight = rec;
    if (rec != -1) return;
    if (waits(x, r) && !r->dry_run && r->max_delay_ns) {
        g->place_wait = true;
        if (g->wait_ns < PLACE_POLL_NS) g->wait_ns = PLACE_POLL_NS;
        return;
    }
    give_back(rt, x, g, now, h);
    g->took_rate = false;
    g->quota_end = g->mark_end = 0;
    *v = (struct sl_verdict){.allowed = false, .retry_ns = SL_NS_PER_SEC, .limit = r->req_conns};
    *pol = (struct sl_reply_policy){.name = r->name, .quota = r->req_conns, .window_s = 1};
}

/* Under action = delay, a request over its quota whose window renews
 * within max_delay waits for the next window (max_delay is the user's
 * bound on waiting, whatever the reason): its rate token is taken again as
 * if it arrived at the renewal, so the calls queued for the new window
 * leave at the rate rather than all at once, and it counts against the
 * next window. A rate kept in Redis or in an exact log is not re-decided:
 * there the request fails as before. Returns whether it may wait; on
 * false, the rate's token is already given back. */
static bool wait_for_window(const struct sl_req_rules *x, int i, const struct sl_limit *rate,
                            uint64_t now, uint64_t wall, enum sl_quota_window qwin, struct grant *g,
                            struct quota_op *op, struct sl_verdict *v)
{
    struct sl_runtime *rt = x->rt;
    const struct sl_rule *r = &rt->cfg->rules[i];
    int e = x->entry[i];
    uint64_t left = op->end - now, at = op->end;
    if (rate->count && (!g->took_rate || r->scope == SL_SCOPE_REDIS)) return false;
    struct sl_verdict rv = {.allowed = true};
    if (g->took_rate) {
        sl_table_refund(rt->table, e, &g->key, rate, now, r->cost);
        g->took_rate = false;
        sl_table_decide(rt->table, e, &g->key, rate, at, r->cost, r->max_delay_ns - left, &rv);
        if (!rv.allowed) return false;
    }
    struct sl_key qk;
    quota_key(&qk, &g->key);
    uint64_t next_end = now + (sl_quota_window_end(wall + left, qwin, r->quota_offset_s) - wall);
    struct quota_op nx = {.limit = op->limit, .cost = op->cost, .end = next_end, .now = now};
    if (!sl_table_apply(rt->table, e, &qk, sl_quota_slot_limit(), op->limit, now, quota_step,
                        &nx) ||
        !nx.v.allowed) {
        if (rate->count) sl_table_refund(rt->table, e, &g->key, rate, at, r->cost);
        if (nx.v.limit) op->v = nx.v; /* the next window is full too: retry after it */
        return false;
    }
    g->took_rate = rate->count != 0;
    g->rate = *rate;
    g->wait_ns = left + rv.wait_ns;
    g->quota_end = next_end;
    g->quota_used = (uint32_t)(nx.v.limit - nx.v.remaining);
    g->quota_limit = (uint32_t)nx.v.limit;
    *v = nx.v;
    v->wait_ns = g->wait_ns;
    sl_table_note_quota(rt->table, e, nx.v.limit - nx.v.remaining, r->cost, nx.v.limit);
    return true;
}

static uint64_t window_seconds(uint64_t period_ns)
{
    return sl_reply_seconds(period_ns);
}

/* What the 429 of a request that `rate` denied describes (RateLimit fields). */
static struct sl_reply_policy rate_policy(const char *name, const struct sl_limit *rate)
{
    return (struct sl_reply_policy){
        .name = name, .quota = rate->count, .window_s = window_seconds(rate->period_ns)};
}

/* Rule i's token budget for the key of g, looked at without taking
 * (core/limit/cost.h): true when it is not in debt (or will not be within
 * the rule's max_delay: g->cost_wait), else false with v and pol the
 * refusal's. */
static bool cost_look(const struct sl_req_rules *x, int i, uint64_t now, struct grant *g,
                      struct sl_verdict *v, struct sl_reply_policy *pol)
{
    struct sl_runtime *rt = x->rt;
    const struct sl_rule *r = &rt->cfg->rules[i];
    const struct sl_cost_rule *cr = &r->tokens;
    int ce = x->cost_entry ? x->cost_entry[i] : x->entry[i];
    struct sl_key ck;
    sl_cost_key(&ck, &g->key);
    g->cost_hash = sl_key_hash(&ck, sl_table_secret(rt->table));
    sl_cost_peek(rt->table, ce, g->cost_hash, &cr->limit, now, waits(x, r) ? r->max_delay_ns : 0,
                 v);
    if (!v->allowed) {
        if (!r->dry_run) sl_table_count(rt->table, ce, SL_C_COST_REFUSED, 1);
        *pol = rate_policy(r->name, &cr->limit);
        return false;
    }
    g->cost_looked = true;
    g->cost_wait = v->wait_ns;
    *v = (struct sl_verdict){.allowed = true};
    return true;
}

/* One rule against the request, charging the copy val[0..vlen) of its key
 * (val NULL: the key is missing): fills g (what it took) and v. */
static void apply_budgets(const struct sl_req_rules *x, int i, const struct sl_req_head *h,
                          const char *val, size_t vlen, uint64_t now, struct grant *g,
                          struct sl_verdict *v, struct sl_reply_policy *pol)
{
    struct sl_runtime *rt = x->rt;
    const struct sl_rule *r = &rt->cfg->rules[i];
    const uint64_t *secret = sl_table_secret(rt->table);
    int e = x->entry[i];
    const struct sl_plan *plan = NULL;

    /* the fields read whatever happens (the rest only under the flag or
     * end that says it was filled): no 130-byte clear per request */
    g->rule = i;
    g->took_rate = g->answered = g->place_wait = g->cost_looked = false;
    g->inflight = -1;
    g->quota_end = g->mark_end = g->wait_ns = 0;
    g->plan = -1;
    *v = (struct sl_verdict){.allowed = true};
    if (val) {
        sl_req_key_value(&g->key, r, val, vlen, secret);
        plan = sl_plans_find(r->plans, val, vlen);
    } else if (r->req_per == SL_REQ_PER_ADDRESS || r->per_missing == SL_MISSING_PEER) {
        sl_req_key_addr(&g->key, r, &x->peer);
    } else if (r->per_missing == SL_MISSING_RULE) {
        sl_req_key_rule(&g->key, r);
    } else {
        sl_req_key_rule(&g->key, r);
        *v = (struct sl_verdict){.retry_ns = SL_NS_PER_SEC};
        *pol = (struct sl_reply_policy){.name = r->name, .window_s = 1};
        return;
    }

    if (sl_rule_costs(r) && !cost_look(x, i, now, g, v, pol)) return; /* in debt: nothing taken */
    const struct sl_limit *rate = plan && plan->req_limit.count ? &plan->req_limit : &r->req_limit;
    struct sl_limit ramped;
    if (r->ramp.steps && rate == &r->req_limit) { /* the rate in force today (core/limit/ramp.h) */
        sl_ramp_limit(rate, &r->ramp, sl_ramp_step(&r->ramp, (int64_t)now + x->wall_offset),
                      &ramped);
        rate = &ramped;
    }
    uint64_t quota = plan && plan->quota ? plan->quota : r->quota;
    enum sl_quota_window qwin = plan && plan->quota ? plan->quota_window : r->quota_window;
    const char *pname = plan ? plan->name : r->name;
    if (r->cost == 0 || (!rate->count && !quota)) return; /* counted, never limited */

    if (h->idem && h->idem_len && h->body_digest) { /* no digest: charged, opens nothing */
        struct idem_op op = {.now = now};
        idem_apply(rt, e, &g->key, h, now, &op);
        if (op.free) return; /* a retry: free */
        g->mark_end = op.opened;
    }
    if (rate->count) {
        uint64_t slack = waits(x, r) ? r->max_delay_ns : 0;
        struct sl_log *lg;
        if (rate->alg == SL_ALG_LOG) { /* one exact log for the rule (per = rule) */
            if ((lg = sl_table_log(rt->table, e, rate->count)))
                sl_log_step(rate, lg, now, slack, v);
            else /* no room in the log region: fail open, counted */
                sl_table_count(rt->table, e, SL_C_ERRORS, 1);
        } else if (r->scope == SL_SCOPE_REDIS && rt->redis) {
            /* a value (header:, query:, cookie:) names the key in Redis */
            struct sl_redis_what w = {rate, val, vlen};
            sl_redis_decide(rt->redis, i, r, &w, &g->key, now, r->cost, v);
        } else {
            sl_table_decide(rt->table, e, &g->key, rate, now, r->cost, slack, v);
        }
        if (!v->allowed) *pol = rate_policy(pname, rate); /* only a denial needs it */
        /* count_status: taken now, given back by an answer whose status is
         * not counted (core/limit/answer.h) */
        g->answered = r->ncount_status && v->allowed;
        if (v->allowed) {
            g->took_rate = rate->alg != SL_ALG_LOG; /* a stamp is not given back */
            g->rate = *rate;
            g->wait_ns = v->wait_ns;
        }
    }
    if (v->allowed && quota && qwin != SL_QUOTA_NONE) {
        uint64_t wall = now + (uint64_t)x->wall_offset;
        struct sl_key qk;
        quota_key(&qk, &g->key);
        if (plan) /* quota use per plan: a lookup in the line the plan's requests share */
            g->plan = sl_table_plan(rt->table, e, plan->id, plan->name, quota, qwin);
        struct quota_op op = {.limit = quota,
                              .cost = r->cost,
                              .end =
                                  now + (sl_quota_window_end(wall, qwin, r->quota_offset_s) - wall),
                              .now = now};
        if (sl_table_apply(rt->table, e, &qk, sl_quota_slot_limit(), quota, now, quota_step, &op)) {
            if (op.v.allowed) {
                g->quota_end = op.end;
                g->quota_used = (uint32_t)(op.v.limit - op.v.remaining);
                g->quota_limit = (uint32_t)op.v.limit;
                sl_table_note_quota(rt->table, e, op.v.limit - op.v.remaining, r->cost, op.v.limit);
            } else if (waits(x, r) && op.end - now <= r->max_delay_ns &&
                       wait_for_window(x, i, rate, now, wall, qwin, g, &op, v)) {
                /* waits for the next window (g, v filled) */
            } else {
                sl_table_plan_refuse(rt->table, g->plan); /* -1 (no plan): nothing */
                *v = op.v;
                *pol = (struct sl_reply_policy){
                    .name = pname,
                    .quota = quota,
                    .window_s = sl_quota_window_seconds(wall, qwin, r->quota_offset_s)};
            }
        } /* no slot for the quota word: it is not counted (fail open) */
    }
    if (!v->allowed) {
        struct grant partial = *g;
        partial.quota_end = 0;
        give_back(rt, x, &partial, now, h);
        g->took_rate = false;
        g->mark_end = 0;
    }
}

/* apply_budgets, and a call that passes waits until its token budget's
 * debt is paid too (the later of the two). */
static void apply_rule(const struct sl_req_rules *x, int i, const struct sl_req_head *h,
                       const char *val, size_t vlen, uint64_t now, struct grant *g,
                       struct sl_verdict *v, struct sl_reply_policy *pol)
{
    apply_budgets(x, i, h, val, vlen, now, g, v, pol);
    if (v->allowed && g->cost_looked && g->cost_wait > g->wait_ns)
        g->wait_ns = v->wait_ns = g->cost_wait;
}

/* A denial by rule i (not a dry run), after what the other rules took was
 * given back: counted, logged, and d filled. */
static void refuse(const struct sl_req_rules *x, int i, const struct sl_req_head *h,
                   const struct sl_key *key, const struct sl_verdict *v,
                   const struct sl_reply_policy *pol, struct sl_req_decision *d)
{
    const struct sl_config *c = x->rt->cfg;
    sl_table_count(x->rt->table, x->entry[i], SL_C_LIMITED, 1);
    log_request(c, &c->rules[i], h, &x->peer, key, v, false);
    d->allowed = false;
    d->rule = i;
    d->v = *v;
    d->policy = *pol;
}

/* A request that rule entry e let through, held wait_ns first: counted. */
static void admitted(struct sl_runtime *rt, int e, uint64_t wait_ns, uint64_t now)
{
    sl_table_count(rt->table, e, SL_C_ALLOWED, 1);
    if (wait_ns) sl_table_count_wait(rt->table, e, now, wait_ns);
}

/* The single rule's key for a request whose key header's value is
 * val[0..len) (NULL: none), and its table hash. False: a request the
 * general path decides (a key header that is missing, or a list). */
static inline __attribute__((always_inline)) bool solo_key_value(const struct sl_req_rules *x,
                                                                 const char *val, size_t len,
                                                                 struct sl_key *key, uint64_t *hash)
{
    const struct sl_rule *r = x->solo_rule;
    const uint64_t *secret = sl_table_secret(x->rt->table);
    if (r->req_per == SL_REQ_PER_ADDRESS) {
        sl_req_key_addr(key, r, &x->peer);
        *hash = sl_key_hash(key, secret);
    } else {
        /* a list ("a, b": lines joined, or node's join) has copies */
        if (!val || !x->solo_by_header) return false;
        return sl_req_key_one_hash(key, r, val, len, secret, hash);
    }
    return true;
}

/* The single rule's key for h and its table hash. False: a request the
 * general path decides (an Idempotency-Key, a key header that is
 * missing). */
static inline __attribute__((always_inline)) bool solo_key(const struct sl_req_rules *x,
                                                           const struct sl_req_head *h,
                                                           struct sl_key *key, uint64_t *hash)
{
    if (h->idem && h->idem_len) return false;
    /* the value as the general loop's copies take it (sl_header_copies):
     * without blanks around it, which a head read under doubt may keep
     * (a fast head's slice has none) */
    const char *v = h->header;
    size_t n = h->header_len;
    sl_req_unblank(&v, &n);
    return solo_key_value(x, v, n, key, hash);
}

/* The single rule's table decision for the key of table hash `hash`.
 * lean: what remains of the burst is read only by a denial's 429, where it
 * is 0 (the general loop fills it, and reads it no more) */
static inline __attribute__((always_inline)) void
solo_table(const struct sl_req_rules *x, uint64_t hash, uint64_t now, struct sl_verdict *v)
{
    const struct sl_rule *r = x->solo_rule;
    for (int tries = 0; tries < SL_TABLE_TRIES; tries++) /* a slot lost under the step: again */
        if (sl_table_decide_lean_h(x->rt->table, x->entry[x->solo], hash, &r->req_limit, now,
                                   r->cost, x->solo_slack, v))
            return;
}

/* What the table's verdict v for the single rule's key means: counted,
 * logged, d filled. */
static void solo_settle(const struct sl_req_rules *x, const struct sl_req_head *h,
                        const struct sl_key *key, uint64_t hash, const struct sl_verdict *v,
                        uint64_t now, struct sl_req_decision *d)
{
    struct sl_runtime *rt = x->rt;
    const struct sl_rule *r = &rt->cfg->rules[x->solo];
    int e = x->entry[x->solo];
    d->key_hash = hash;
    if (!v->allowed) {
        struct sl_reply_policy pol = rate_policy(r->name, &r->req_limit);
        sl_table_note_denial(rt->table, e, key, now);
        refuse(x, x->solo, h, key, v, &pol, d);
        return;
    }
    admitted(rt, e, v->wait_ns, now);
    d->allowed = true;
    d->rule = -1;
    d->wait_ns = v->wait_ns;
    d->nanswers = d->ninflight = d->ncosts = 0;
    d->place_rule = -1;
    if (r->ncount_status) { /* taken now, given back by its answer (decide_all's `answered`) */
        d->nanswers = 1;
        d->answer_rule[0] = x->solo;
        d->answer_hash[0] = hash;
    }
    log_grant(rt->cfg, x->solo, key, &x->peer, v->wait_ns, now);
}

/* The connection's one plain rule (x->solo), without the general loop:
 * the same decision, counters and log lines as sl_req_decide's loop
 * (test_reqdecide compares them on twin tables). False, nothing done: a
 * request the general path decides. */
static bool solo_decide(const struct sl_req_rules *x, const struct sl_req_head *h, uint64_t now,
                        struct sl_req_decision *d)
{
    struct sl_key key;
    uint64_t hash;
    if (!solo_key(x, h, &key, &hash)) return false;
    struct sl_verdict v;
    solo_table(x, hash, now, &v);
    solo_settle(x, h, &key, hash, &v, now, d);
    return true;
}

/* sl_req_decide_again, inline in it and in sl_req_solo_decide. */
static inline __attribute__((always_inline)) bool
decide_again(const struct sl_req_rules *x, uint64_t hash, uint64_t now, struct sl_verdict *v)
{
    solo_table(x, hash, now, v);
    if (!v->allowed || v->wait_ns || x->solo_verbose) return false;
    admitted(x->rt, x->entry[x->solo], 0, now);
    return true;
}

bool sl_req_decide_again(const struct sl_req_rules *x, uint64_t hash, uint64_t now,
                         struct sl_verdict *v)
{
    return decide_again(x, hash, now, v);
}

/* Flattened: the key's hash (core/http/reqkey.c), the table's step and
 * count (core/limit/table.c) in one frame, as every head of keys that
 * vary takes them (bench/insn.sh's 64 keys). */
__attribute__((flatten)) enum sl_req_solo sl_req_solo_decide(const struct sl_req_rules *x,
                                                             const char *val, size_t len,
                                                             uint64_t now, uint64_t *hash,
                                                             struct sl_verdict *v)
{
    struct sl_key key; /* made as sl_req_decide makes it; only its hash is wanted here */
    if (x->solo < 0 || !solo_key_value(x, val, len, &key, hash)) return SL_REQ_SOLO_NO;
    return decide_again(x, *hash, now, v) ? SL_REQ_SOLO_PASSED : SL_REQ_SOLO_SETTLE;
}

void sl_req_settle_again(const struct sl_req_rules *x, const struct sl_req_head *h,
                         const struct sl_verdict *v, uint64_t now, struct sl_req_decision *d)
{
    struct sl_key key;
    uint64_t hash;
    if (!solo_key(x, h, &key, &hash)) { /* never: the same head was the single rule's before */
        *d = (struct sl_req_decision){.allowed = true, .rule = -1};
        return;
    }
    solo_settle(x, h, &key, hash, v, now, d);
}

/* Grants for the copies of a key past a rule's first, in one request
 * (each rule charges up to SL_REQ_COPIES_MAX): a rule whose copies would
 * not fit counts the request as without its key (the rule of doubt). */
#define COPY_GRANTS 16

/* The bucket a rule with `learn` took the request from: where what its
 * response teaches is held (core/http/request.c). */
static void learn_target(const struct sl_req_rules *x, const struct grant *g,
                         struct sl_req_decision *d)
{
    const struct sl_rule *r = &x->rt->cfg->rules[g->rule];
    uint64_t cost_ns = sl_gcra_cost_ns(&g->rate, r->cost);
    d->learn_rule = g->rule;
    d->learn_hash = sl_key_hash(&g->key, sl_table_secret(x->rt->table));
    d->learn_k = g->key;
    d->learn_gap_ns = g->rate.burst_ns > cost_ns ? g->rate.burst_ns - cost_ns : 0;
    sl_req_key_short(&g->key, d->learn_key);
}

/* Every rule of the connection in turn, each copy of a rule's key as a
 * key of its own (per_copy = each): the request passes only if every
 * copy's budget lets it, and a denial gives back what the others took.
 * Out of line: its frame (a grant per rule and copy, a normalised path)
 * is not set up for the single rule's decision. */
static __attribute__((noinline)) void decide_all(const struct sl_req_rules *x,
                                                 const struct sl_req_head *h, uint64_t now,
                                                 struct sl_req_decision *d)
{
    struct sl_runtime *rt = x->rt;
    const struct sl_config *c = rt->cfg;
    d->key_hash = 0;
    struct grant granted[SL_MAX_RULES + COPY_GRANTS];
    int ngranted = 0, copies = 0;
    char path[PATH_MAX_NORMAL];
    bool normalised = false;
    char qbuf[SL_REQ_VALUE_MAX + 1]; /* a rule's decoded query values */

    d->allowed = true; /* v and policy are filled only on a denial (reqdecide.h) */
    d->wait_ns = 0;
    d->rule = -1;
    d->learn_rule = -1;
    d->nanswers = d->ninflight = d->ncosts = 0;
    d->place_rule = -1;
    for (int i = 0; i < c->nrules && i < SL_MAX_RULES; i++) {
        if (!(x->match >> i & 1)) continue;
        const struct sl_rule *r = &c->rules[i];
        if (!request_matches(r, h, path, &normalised)) continue;
        struct sl_req_copies cp;
        key_copies(x, r, h, qbuf, sizeof qbuf, 1u + COPY_GRANTS - (unsigned)copies, &cp);
        unsigned k = 0;
        do {
            struct grant *gp = &granted[ngranted]; /* filled in place: no copy when it is kept */
            struct sl_verdict v;
            struct sl_reply_policy pol = {.name = r->name, .window_s = 1};
            apply_rule(x, i, h, cp.n ? cp.v[k] : NULL, cp.n ? cp.len[k] : 0, now, gp, &v, &pol);
            if (v.allowed && r->req_conns) take_place(x, i, h, now, gp, &v, &pol);
            gp->copy = k > 0;
            if (v.allowed) {
                ngranted++;
                copies += k > 0;
                continue;
            }
            struct grant g = *gp;
            sl_table_note_denial(rt->table, x->entry[i] | (r->dry_run ? SL_DENIAL_DRY : 0), &g.key,
                                 now);
            if (r->dry_run) { /* counted once, whichever copy */
                sl_table_count(rt->table, x->entry[i], SL_C_WOULD_LIMIT, 1);
                log_request(c, r, h, &x->peer, &g.key, &v, true);
                break;
            }
            for (int j = 0; j < ngranted; j++)
                give_back(rt, x, &granted[j], now, h);
            refuse(x, i, h, &g.key, &v, &pol, d);
            return;
        } while (++k < cp.n);
    }
    for (int j = 0; j < ngranted; j++) {
        int e = x->entry[granted[j].rule];
        if (!granted[j].copy) admitted(rt, e, granted[j].wait_ns, now); /* a request, once */
        if (granted[j].quota_end) /* admitted against its plan's quota only now it passes */
            sl_table_plan_admit(rt->table, granted[j].plan, granted[j].quota_used,
                                c->rules[granted[j].rule].cost, granted[j].quota_limit,
                                /* the window's end, monotonic to wall seconds */
                                (granted[j].quota_end + (uint64_t)x->wall_offset) / SL_NS_PER_SEC);
        if (granted[j].wait_ns > d->wait_ns) d->wait_ns = granted[j].wait_ns;
        if (d->learn_rule < 0 && c->rules[granted[j].rule].learn && granted[j].took_rate)
            learn_target(x, &granted[j], d);
        if (granted[j].inflight >= 0 && d->ninflight < SL_REQ_ANSWERS)
            d->inflight_rec[d->ninflight++] = granted[j].inflight;
        else if (granted[j].inflight >= 0) /* no room to remember it: fail open */
            sl_table_conn_release(rt->table, granted[j].inflight);
        if (granted[j].place_wait && d->place_rule < 0) { /* the first: a second goes on (open) */
            d->place_rule = granted[j].rule;
            sl_req_place_key(&d->place_key, &granted[j].key);
        }
        if (granted[j].answered && d->nanswers < SL_REQ_ANSWERS) {
            d->answer_rule[d->nanswers] = (int8_t)granted[j].rule;
            d->answer_hash[d->nanswers++] =
                sl_key_hash(&granted[j].key, sl_table_secret(rt->table));
        }
        if (granted[j].cost_looked && d->ncosts < SL_REQ_ANSWERS) {
            d->cost_rule[d->ncosts] = (int8_t)granted[j].rule;
            d->cost_hash[d->ncosts++] = granted[j].cost_hash;
        }
        log_grant(c, granted[j].rule, &granted[j].key, &x->peer, granted[j].wait_ns, now);
    }
}

void sl_req_decide(const struct sl_req_rules *x, const struct sl_req_head *h, uint64_t now,
                   struct sl_req_decision *d)
{
    if (x->solo >= 0 && solo_decide(x, h, now, d)) return;
    decide_all(x, h, now, d);
}
