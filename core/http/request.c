/* SPDX-License-Identifier: BSD-2-Clause */
/* request.c - one connection's requests (see request.h).
 *
 * Stream offsets. `pos` is the offset of the next byte to pass (what
 * sl_req_admit's buf[0] is); the scanner's own position (sl_h1_pos) is how
 * far it has read, never behind pos, so bytes shown again after a short
 * read are not scanned twice. Heads found past pos were decided when
 * found and are remembered in `ahead` (their offset and when they may
 * pass), so a head is charged once however often its bytes are shown. The
 * first denied head ends the connection's requests: nothing from its first
 * byte on passes.
 *
 * What may pass: every byte before the first of (a) the denied head, (b) a
 * held head whose time has not come, (c) the start of a head the scanner
 * is still reading, (d) the first byte not scanned (the scanner pauses
 * when SL_REQ_AHEAD heads are remembered).
 *
 * The rule of doubt (core/http/http1.h): an odd head (one sluice could read only
 * by the conservative reading) is counted like any request, and counted
 * in odd_heads of every rule matching the connection, with a log line (at
 * most one a second per process, saying how many were not logged); a rule
 * with on_odd = deny denies it instead. Only a stream that is not HTTP
 * from its first bytes passes uncounted.
 */
#include "request.h"

#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "bodydigest.h"
#include "../clock.h"
#include "costread.h"
#include "h1resp.h"
#include "../log.h"
#include "../mem.h"
#include "h2.h"
#include "h2resp.h"
#include "http1.h"
#include "reply.h"
#include "reqdecide.h"
#include "../limit/answer.h"
#include "../limit/cost.h"
#include "../limit/table.h"
#include "../limit/table_learned.h"
#include "../fleet/redis.h"

#define SL_REQ_AHEAD 16

struct ahead {
    uint64_t off;        /* the head's first byte */
    uint64_t release_at; /* monotonic ns it may pass (0: now) */
    /* req_conns under delay: the place in flight the head waits for (rule
     * -1: none), looked for again at release_at until `until`; the
     * request's index among those sl_h1resp counts */
    int place_rule;
    uint64_t until, index;
    struct sl_key place_key;
};

/* A request an outbound `reply` rule denied: [start, end) is swallowed
 * (end UINT64_MAX until the scanner finds the end of its body). */
struct swallow {
    uint64_t start, end;
    uint64_t before; /* requests sent ahead of it: their responses come first */
    int rule;        /* the denying rule */
    struct sl_verdict v;
    uint64_t quota, window_s; /* the RateLimit-Policy fields */
    char name[49];            /* the rule's name (reply.c writes at most 48 bytes of it) */
    bool queued;              /* its 429 is queued */
    bool close;               /* the request asked to close (Connection: close, or
                                 HTTP/1.0): its 429 says so and ends the stream */
};

#define SL_REQ_INJECT_MAX (4 * SL_REPLY_MAX)

/* The bucket a request's response may hold (a rule with `learn`): its
 * rule (-1: none), key hash, gap (reqdecide.h) and short hash. */
struct learn_target {
    uint64_t hash, gap_ns;
    struct sl_key k; /* scope = redis: the key (sl_redis_hold) */
    uint32_t stream; /* HTTP/2: the request's stream, which its response names */
    int8_t rule;
    char key[7];
};

/* The buckets a request's response is charged to when its status is one
 * a rule with count_status counts (reqdecide.h). */
struct answer_target {
    uint8_t n;
    int8_t rule[SL_REQ_ANSWERS];
    uint64_t hash[SL_REQ_ANSWERS];
    uint8_t nrec; /* req_conns: the places in flight it holds */
    int32_t rec[SL_REQ_ANSWERS];
    bool over;          /* its response has ended */
    uint64_t reset_end; /* HTTP/2: where the client's RST_STREAM of it ends (0: none seen) */
};

/* The token budgets a request's answer is charged to (cost_from,
 * reqdecide.h): their rules and keys' table hashes. */
struct cost_target {
    uint8_t n;
    int8_t rule[SL_REQ_ANSWERS];
    uint64_t hash[SL_REQ_ANSWERS];
};

/* What only an outbound connection with a `reply` or `learn` rule, or an
 * inbound one with a `count_status` rule, or one with a token budget,
 * needs (~14 KB): allocated at init for those alone. */
struct replies {
    struct swallow sw[SL_REQ_AHEAD];
    size_t inj_len;                            /* queued 429 bytes not yet read */
    bool inj_close;                            /* the last queued 429 ends the stream */
    bool replied_end;                          /* ... and the program has read it whole */
    struct sl_h1resp resp;                     /* the responses the program has read */
    char inj[SL_REQ_INJECT_MAX];               /* the queued 429s */
    struct learn_target learn[SL_H1RESP_RING]; /* by request, as sl_h1resp counts them */
    struct sl_h2resp *h2r;                     /* HTTP/2: the responses' heads and ends */
    struct answer_target ans[SL_H1RESP_RING];  /* the same, count_status */
    struct cost_target cost[SL_H1RESP_RING];   /* the same, token budgets */
    struct sl_costread read;         /* the answer's cost, as the first cost rule says to read it */
    uint32_t cost_stream;            /* HTTP/2: the stream whose answer `read` reads (0: none) */
    int8_t cost_entry[SL_MAX_RULES]; /* sl_req_rules.cost_entry */
    int resets; /* HTTP/2: requests whose client resets were scanned, not yet passed */
};

/* Memory (issue 23): what every connection carries is this struct and
 * the HTTP/1 scanner's own state (~1 KB together); the rest is allocated
 * from sluice's heap when needed: HTTP/2 state when the preface is seen,
 * the scanner's head copies while http-parser reads a head (core/http/http1.h),
 * a 429's text when a head is denied, the swallow and 429 queue of
 * outbound `reply` rules. No memory: the connection passes unlimited
 * (fail open) or is reset (a denial with no room for its 429). */
struct sl_req_conn {
    struct sl_req_rules rules;
    bool out;          /* outbound: the program writes these requests */
    bool replies;      /* outbound with a `reply` rule: swallowed requests are answered */
    bool learn;        /* outbound with a `learn` rule: the responses' fields are read */
    bool answers;      /* inbound with a `count_status` rule: the responses' statuses are read */
    bool inflight;     /* a `req_conns` rule: each request holds places until its response ends */
    bool costs;        /* a rule with a token budget: the responses' costs are read */
    bool resp_seen;    /* response bytes were shown (sl_req_responses): else a request's
                          places are given back at the next head (request.c: act) */
    uint64_t resp_now; /* the time of the responses being read (sl_req_responses_at; 0: read
                          the clock) */
    bool denied;
    bool pass;      /* not HTTP from its first bytes: nothing more is limited */
    bool cookies;   /* a rule keys on a cookie: the scanners collect Cookie lines */
    bool is_h2;     /* the HTTP/2 preface was seen: h2 scans from there on */
    bool key_alias; /* the key header is Host or Idempotency-Key (http1.c's keys_done) */
    bool odd_body;  /* the scanner's odd body (sl_h1_odd_body) was counted */
    int nsw;
    int nahead;
    uint64_t pos;
    struct ahead *ahead; /* SL_REQ_AHEAD of them, allocated at the first hold */
    uint64_t deny_off;
    struct sl_req_verdict deny;
    uint64_t refuse_at; /* outbound HTTP/2: the denial waits for earlier streams until then */
    char *reply;        /* a denial's built-in 429 (allocated then) */
    struct sl_h1 scan;
    struct sl_h2 *h2;   /* is_h2 */
    struct replies *rp; /* replies */
    /* the lane (see lane()): the last read was one fast head, the thread's
     * memory `lane_serial` (0: none), passed at once by the single rule for
     * the key of table hash lane_hash */
    uint64_t lane_serial, lane_hash;
};

size_t sl_req_conn_size(void)
{
    return sizeof(struct sl_req_conn);
}

bool sl_req_any(const struct sl_runtime *rt, enum sl_dir dir)
{
    for (int i = 0; i < rt->cfg->nrules; i++)
        if (rt->cfg->rules[i].request && rt->cfg->rules[i].dir == dir) return true;
    return false;
}

/* The connection-level match of a request rule: core/policy/policy.c's matcher
 * (learned addresses included), or, outbound, the name the client asked
 * for (TLS SNI, Host) when known. */
static bool conn_matches(const struct sl_runtime *rt, int rule, enum sl_dir dir,
                         const struct sl_addr *local, const struct sl_addr *peer, const char *name)
{
    if (sl_rule_matches(rt, rule, dir, local, peer)) return true;
    const struct sl_rule *r = &rt->cfg->rules[rule];
    if (!name || dir != SL_OUT || sl_cidr_list_contains(r->exempt, r->nexempt, peer->a))
        return false;
    return sl_rule_names(rt, rule, name, strlen(name), peer->port);
}

static int64_t (*wall_offset_hook)(void);

/* Test hook: what the wall clock is, as an offset from the monotonic one. */
void sl_req_set_wall_offset(int64_t (*hook)(void));
void sl_req_set_wall_offset(int64_t (*hook)(void))
{
    wall_offset_hook = hook;
}

static int64_t wall_offset(void)
{
    return wall_offset_hook ? wall_offset_hook() : sl_clock_wall_offset();
}

/* What a response head taught (core/http/learn.h), for the bucket of the
 * request it answers: held in the table, said once per change, counted
 * per rule (SL_C_LEARN*). Read by the response parser (h1resp.c) as the
 * program reads the bytes. A spread moves the key at every answer: said
 * when its gap changes by a quarter or more (per process), not each time. */
static void learn_from(struct sl_req_conn *c, const struct learn_target *lt,
                       const struct sl_learn_resp *f)
{
    static uint64_t ignored_total, spread_said; /* touched only with __atomic builtins */
    if (lt->rule < 0) return;
    struct sl_runtime *rt = c->rules.rt;
    const struct sl_rule *r = &rt->cfg->rules[lt->rule];
    uint64_t now = sl_clock_now();
    struct sl_learned out;
    bool hold = sl_learn_decide(f, (int64_t)now + wall_offset(), r->learn_max_ns, &out);
    int e = c->rules.entry[lt->rule];
    if (out.ignored) {
        static const char *const why[] = {"", "unreadable", "in the past", "absurd"};
        uint64_t total = __atomic_add_fetch(&ignored_total, out.ignored, __ATOMIC_RELAXED);
        if (e >= 0) sl_table_count(rt->table, e, SL_C_LEARN_IGNORED, out.ignored);
        sl_log(SL_LOG_INFO,
               "rule \"%s\": learn: ignored %s (%s) in a %d response for key #%s (%llu ignored "
               "in all)",
               r->name, out.ignored_field, why[out.why], f->status, lt->key,
               (unsigned long long)total);
    }
    const struct sl_limit *l = &r->req_limit;
    if (hold && out.spread &&
        !sl_learn_spread_needed(&out, l->burst ? l->burst : l->count, l->count, l->period_ns,
                                r->cost))
        hold = false; /* the rule alone cannot send more than is left */
    if (!hold || e < 0) return;
    if (r->scope == SL_SCOPE_REDIS
            ? !rt->redis || !sl_redis_hold(rt->redis, lt->rule, r, &lt->k, now, now + out.wait_ns)
            : !sl_table_hold(rt->table, e, lt->hash, &r->req_limit, now + out.wait_ns, lt->gap_ns,
                             now))
        return;
    /* for readers (stats, metrics, the live page): a spread is in force for the vendor's window */
    sl_table_note_learned(
        rt->table,
        &(struct sl_learned_hold){
            .rule = e,
            .field = sl_learn_field_of(out.field),
            .key = {lt->key[0], lt->key[1], lt->key[2], lt->key[3], lt->key[4], lt->key[5]},
            .hash = lt->hash,
            .at_ns = now,
            .until_ns = now + (out.spread ? out.window_ns : out.wait_ns),
            .gap_ns = out.spread ? out.wait_ns : 0,
            .left = out.spread ? out.left : 0,
        });
    sl_table_count(rt->table, e, out.spread ? SL_C_LEARN_SPREAD : SL_C_LEARNED, 1);
    if (out.capped) sl_table_count(rt->table, e, SL_C_LEARN_CAPPED, 1);
    char cap[96] = "";
    if (out.capped)
        snprintf(cap, sizeof cap, " (capped at learn_max: it asked %llu s)",
                 (unsigned long long)(out.asked_ns / SL_NS_PER_SEC));
    if (out.spread) {
        uint64_t said = __atomic_load_n(&spread_said, __ATOMIC_RELAXED);
        if (said && out.wait_ns < said + said / 4 && out.wait_ns + said / 4 > said) return;
        __atomic_store_n(&spread_said, out.wait_ns, __ATOMIC_RELAXED);
        sl_log(SL_LOG_INFO,
               "rule \"%s\": learned from %s in a %d response: %lld left for %.3f s, key #%s "
               "spread %.3f s apart%s",
               r->name, out.field, f->status, (long long)out.left, (double)out.window_ns / 1e9,
               lt->key, (double)out.wait_ns / 1e9, cap);
        return;
    }
    sl_log(SL_LOG_INFO,
           "rule \"%s\": learned from %s in a %d response: key #%s held until %.3f s from now%s",
           r->name, out.field, f->status, lt->key, (double)out.wait_ns / 1e9, cap);
}

/* An HTTP/1 response head, for request `index` (h1resp.c). */
static void learned(void *arg, uint64_t index, const struct sl_learn_resp *f)
{
    struct sl_req_conn *c = arg;
    learn_from(c, &c->rp->learn[index % SL_H1RESP_RING], f);
}

/* The first of the requests still in the ring, of `sent` sent. */
static uint64_t ring_first(uint64_t sent)
{
    return sent > SL_H1RESP_RING ? sent - SL_H1RESP_RING : 0;
}

/* The index of the request sent on HTTP/2 stream `stream`, among the
 * last SL_H1RESP_RING sent: false for an older one (its answer is not
 * paired: what it holds was given back when its slot was reused). */
static bool h2_index(const struct sl_req_conn *c, uint32_t stream, uint64_t *index)
{
    uint64_t sent = c->rp->resp.sent;
    for (uint64_t i = 0; i < sent && i < SL_H1RESP_RING; i++)
        if (c->rp->learn[(sent - 1 - i) % SL_H1RESP_RING].stream == stream) {
            *index = sent - 1 - i;
            return true;
        }
    return false;
}

/* An HTTP/2 response head with rate-limit fields (h2resp.c). */
static void learned_h2(void *arg, uint32_t stream, const struct sl_learn_resp *f)
{
    struct sl_req_conn *c = arg;
    uint64_t i;
    if (h2_index(c, stream, &i)) learn_from(c, &c->rp->learn[i % SL_H1RESP_RING], f);
}

/* The status of the response the program wrote to request `index`: each
 * bucket of a rule with count_status that looked at the request is
 * charged its cost when the status is one the rule counts. Called by the
 * response parser (h1resp.c) as the program writes the bytes. */
static void answered(void *arg, uint64_t index, int status)
{
    struct sl_req_conn *c = arg;
    const struct answer_target *at = &c->rp->ans[index % SL_H1RESP_RING];
    struct sl_runtime *rt = c->rules.rt;
    uint64_t now = c->resp_now;
    for (int k = 0; k < at->n; k++) {
        const struct sl_rule *r = &rt->cfg->rules[at->rule[k]];
        int e = c->rules.entry[at->rule[k]], i = 0;
        while (i < r->ncount_status && r->count_status[i] != status)
            i++;
        if (i < r->ncount_status || e < 0) continue; /* counted: it keeps what it took */
        if (!now) now = sl_clock_now();
        sl_answer_refund(rt->table, e, at->hash[k], &r->req_limit, now, r->cost);
    }
}

/* Once per process and cause: an answer whose cost could not be read. */
static void cost_unread_log(const struct sl_rule *r, const char *why, uint64_t tokens)
{
    static _Atomic uint32_t told; /* a bit per cause, by a hash of its words */
    uint32_t h = 2166136261u;
    for (const char *p = why; *p; p++)
        h = (h ^ (unsigned char)*p) * 16777619u;
    uint32_t bit = 1u << (h & 31);
    if (atomic_fetch_or(&told, bit) & bit) return;
    const struct sl_cost_rule *cr = &r->tokens;
    sl_log(SL_LOG_WARN,
           "rule \"%s\": the cost of a call could not be read from %s:%s (%s): charged %llu "
           "tokens by the rule of doubt (said once; `sluice stats` counts them)",
           r->name, cr->from == SL_COST_HEADER ? "header" : "json", cr->name, why,
           (unsigned long long)tokens);
}

/* Charges the answer to request `index` to the token budgets its request
 * looked at, at `now` (0: the responses' time, else the clock): `tokens`
 * when found (read as the connection's reader reads: a rule that reads
 * elsewhere is charged by doubt), else each rule's `cost` (at least 1),
 * the rule of doubt; `why` says why not found. */
static void cost_charge(struct sl_req_conn *c, uint64_t index, bool found, uint64_t tokens,
                        const char *why, uint64_t now)
{
    struct cost_target *ct = &c->rp->cost[index % SL_H1RESP_RING];
    struct sl_runtime *rt = c->rules.rt;
    if (!now) now = c->resp_now;
    for (int k = 0; k < ct->n; k++) {
        const struct sl_rule *r = &rt->cfg->rules[ct->rule[k]];
        const struct sl_cost_rule *cr = &r->tokens;
        int e = c->rp->cost_entry[ct->rule[k]];
        if (cr->from == SL_COST_NONE || e < 0) continue; /* a reload took it away */
        bool read =
            found && cr->from == c->rp->read.from && strcmp(cr->name, c->rp->read.name) == 0;
        uint64_t t = read ? tokens : r->cost ? r->cost : 1;
        if (!now) now = sl_clock_now();
        if (!sl_cost_charge(rt->table, e, ct->hash[k], &cr->limit, now, t)) {
            sl_table_count(rt->table, e, SL_C_OVERFLOW, 1); /* no room: not counted */
            continue;
        }
        sl_table_count(rt->table, e, SL_C_COST_CALLS, 1);
        sl_table_count(rt->table, e, SL_C_COST_TOKENS, t);
        if (read) continue;
        sl_table_count(rt->table, e, SL_C_COST_UNREAD, 1);
        sl_table_count(rt->table, e, SL_C_COST_DEFAULTS, t);
        cost_unread_log(r, found ? "another rule's cost_from is read on this connection" : why, t);
    }
    ct->n = 0;
}

/* A response header field, for request `index` (h1resp.c). */
static void cost_field(void *arg, uint64_t index, const char *name, size_t nlen, const char *value,
                       size_t vlen)
{
    struct sl_req_conn *c = arg;
    (void)index;
    sl_costread_header(&c->rp->read, name, nlen, value, vlen);
}

/* Response body bytes, framing removed, for request `index` (h1resp.c). */
static void cost_body(void *arg, uint64_t index, const char *at, size_t n)
{
    struct sl_req_conn *c = arg;
    if (c->rp->cost[index % SL_H1RESP_RING].n) sl_costread_body(&c->rp->read, at, n);
}

/* The end of request `index`'s response: its cost is charged. */
static void cost_ended(struct sl_req_conn *c, uint64_t index)
{
    uint64_t tokens;
    bool found = sl_costread_end(&c->rp->read, &tokens);
    if (c->rp->cost[index % SL_H1RESP_RING].n)
        cost_charge(c, index, found, tokens, "not in the answer, or not a whole number", 0);
}

/* Gives back the places in flight request `index` holds (req_conns). */
static void places_free(struct sl_req_conn *c, uint64_t index)
{
    struct answer_target *at = &c->rp->ans[index % SL_H1RESP_RING];
    for (int k = 0; k < at->nrec; k++)
        sl_table_conn_release(c->rules.rt->table, at->rec[k]);
    at->nrec = 0;
}

/* The end of the response to request `index` (h1resp.c): it is no longer
 * in flight. */
static void ended(void *arg, uint64_t index)
{
    struct sl_req_conn *c = arg;
    places_free(c, index);
    c->rp->ans[index % SL_H1RESP_RING].over = true;
    if (c->costs) cost_ended(c, index);
}

/* HTTP/2 (h2resp.h's pairs): a final head's fields and status, its
 * body, and the stream's end, for the request of its stream. The
 * connection's cost reader reads one answer at a time: that of the first
 * stream whose final head comes while it is free (a `header:` cost is
 * charged at the head's end, a `json:` one at the stream's end, from its
 * DATA); an answer whose stream runs beside the one being read is charged
 * by doubt. */
static bool h2_cost_reads(struct sl_req_conn *c, uint32_t stream)
{
    if (!c->costs) return false;
    if (!c->rp->cost_stream) c->rp->cost_stream = stream;
    return c->rp->cost_stream == stream;
}

/* The end of the answer the cost reader reads: *tokens when found. */
static bool h2_cost_read(struct sl_req_conn *c, uint64_t *tokens)
{
    c->rp->cost_stream = 0;
    return sl_costread_end(&c->rp->read, tokens);
}

static void h2_field(void *arg, uint32_t stream, const char *name, size_t nlen, const char *value,
                     size_t vlen)
{
    struct sl_req_conn *c = arg;
    if (h2_cost_reads(c, stream)) sl_costread_header(&c->rp->read, name, nlen, value, vlen);
}

static void h2_status(void *arg, uint32_t stream, int status)
{
    struct sl_req_conn *c = arg;
    uint64_t i, tokens = 0;
    bool at_head = h2_cost_reads(c, stream) && c->rp->read.from == SL_COST_HEADER;
    bool found = at_head && h2_cost_read(c, &tokens);
    if (!h2_index(c, stream, &i)) return;
    if (c->answers) answered(c, i, status);
    if (at_head) cost_charge(c, i, found, tokens, "not in the answer, or not a whole number", 0);
}

static void h2_data(void *arg, uint32_t stream, const uint8_t *p, size_t n)
{
    struct sl_req_conn *c = arg;
    if (c->costs && c->rp->cost_stream == stream)
        sl_costread_body(&c->rp->read, (const char *)p, n);
}

static void h2_ended(struct sl_req_conn *c, uint64_t i, uint32_t stream)
{
    places_free(c, i);
    c->rp->ans[i % SL_H1RESP_RING].over = true;
    if (!c->costs) return;
    uint64_t tokens = 0;
    if (c->rp->cost_stream == stream) {
        bool found = h2_cost_read(c, &tokens);
        cost_charge(c, i, found, tokens, "not in the answer, or not a whole number", 0);
    }
    cost_charge(c, i, false, 0, "its HTTP/2 answer was not read (none, or beside another's)", 0);
}

static void h2_end(void *arg, uint32_t stream)
{
    struct sl_req_conn *c = arg;
    uint64_t i, tokens;
    if (h2_index(c, stream, &i))
        h2_ended(c, i, stream);
    else if (c->costs && c->rp->cost_stream == stream) /* an older request's: the reader is free */
        h2_cost_read(c, &tokens);
}

static void h2_goaway(void *arg, uint32_t last)
{
    struct sl_req_conn *c = arg;
    uint64_t sent = c->rp->resp.sent;
    for (uint64_t i = ring_first(sent); i < sent; i++)
        if (c->rp->learn[i % SL_H1RESP_RING].stream > last)
            h2_ended(c, i, c->rp->learn[i % SL_H1RESP_RING].stream);
}

static const struct sl_h2resp_pairs h2_pairs = {
    .status = h2_status, .field = h2_field, .data = h2_data, .end = h2_end, .goaway = h2_goaway};

/* The reader of an HTTP/2 connection's responses, allocated at its first
 * use; NULL when there is nothing to read them for, or no memory. */
static struct sl_h2resp *h2_reader(struct sl_req_conn *c)
{
    struct replies *rp = c->rp;
    if (!rp || !(c->learn || c->answers || c->inflight || c->costs || c->replies)) return NULL;
    if (!rp->h2r && (rp->h2r = sl_alloc(sizeof *rp->h2r))) {
        sl_h2resp_init(rp->h2r, c->learn ? learned_h2 : NULL, c);
        sl_h2resp_pair(rp->h2r, &h2_pairs);
    }
    if (rp->h2r) rp->h2r->arg = c; /* where the connection is now */
    return rp->h2r;
}

/* Whether the ends of this connection's responses will be seen: else
 * what a request holds until its answer is given back at once. HTTP/2
 * streams run together, so no response shown yet says nothing (the
 * server's SETTINGS may follow the first requests): their ends are
 * taken as seen unless the program wrote what sluice could not read
 * (sl_req_responses_unread), the reader lost its way, or had no memory. */
static bool ends_seen(struct sl_req_conn *c)
{
    if (!c->is_h2) return true; /* HTTP/1: see act() for responses never shown */
    struct sl_h2resp *r = h2_reader(c);
    return r && !sl_h2resp_lost(r);
}

bool sl_req_conn_init(struct sl_req_conn *c, struct sl_runtime *rt, enum sl_dir dir,
                      const struct sl_addr *local, const struct sl_addr *peer, uint64_t now)
{
    return sl_req_conn_init_named(c, rt, dir, local, peer, NULL, now);
}

bool sl_req_conn_init_named(struct sl_req_conn *c, struct sl_runtime *rt, enum sl_dir dir,
                            const struct sl_addr *local, const struct sl_addr *peer,
                            const char *name, uint64_t now)
{
    const struct sl_config *cfg = rt->cfg;
    uint64_t match = 0;
    bool quota = false, replies = false, learn = false, answers = false, inflight = false;
    const struct sl_cost_rule *costs = NULL; /* the first rule's with a token budget */
    const char *header = NULL;
    bool cookies = false;
    for (int i = 0; i < cfg->nrules && i < SL_MAX_RULES; i++) {
        const struct sl_rule *r = &cfg->rules[i];
        if (!r->request || r->dir != dir || !conn_matches(rt, i, dir, local, peer, name)) continue;
        match |= 1ull << i;
        quota |= r->quota != 0 || r->plans != NULL || r->ramp.steps != 0; /* wall time needed */
        if (!header && r->req_per == SL_REQ_PER_HEADER) header = r->req_per_name;
        cookies |= r->req_per == SL_REQ_PER_COOKIE;
        replies |= dir == SL_OUT && r->action == SL_ACT_REPLY;
        learn |= dir == SL_OUT && r->learn;
        if (!costs && sl_rule_costs(r)) costs = &r->tokens;
        answers |= dir == SL_IN && r->ncount_status;
        inflight |= r->req_conns != 0;
    }
    if (!match) return false;
    memset(c, 0, sizeof *c);
    if ((replies || learn || answers || inflight || costs) && !(c->rp = sl_alloc(sizeof *c->rp)))
        return false; /* no memory: untracked */
    c->out = dir == SL_OUT;
    c->replies = replies;
    c->learn = learn;
    c->answers = answers;
    c->inflight = inflight;
    c->costs = costs != NULL;
    if (c->rp) sl_h1resp_init(&c->rp->resp);
    if (costs) {
        sl_costread_init(&c->rp->read, costs->from, costs->name);
        sl_h1resp_bodies(&c->rp->resp, cost_field, cost_body, c);
    }
    if (learn) sl_h1resp_learn(&c->rp->resp, learned, c);
    if (answers) sl_h1resp_statuses(&c->rp->resp, answered, c);
    /* every connection that pairs responses gives places back at their end:
     * a reload may give one of its rules req_conns */
    if (c->rp) sl_h1resp_ends(&c->rp->resp, ended, c);
    c->rules.rt = rt;
    c->rules.peer = *peer;
    c->rules.match = match;
    c->rules.wall_offset = quota ? wall_offset() : 0;
    c->rules.cost_entry = c->costs ? c->rp->cost_entry : NULL;
    if (header) snprintf(c->rules.header, sizeof c->rules.header, "%s", header);
    sl_req_rules_entries(&c->rules);
    /* one header is extracted per connection: rules keyed by another
     * header count its requests as without a key (documented) */
    sl_h1_init(&c->scan, header ? SL_H1_KEY_HEADER : SL_H1_KEY_NONE, header);
    if (cookies) sl_h1_want_cookies(&c->scan);
    if (c->out) sl_h1_trust_bodies(&c->scan);
    c->cookies = cookies;
    c->is_h2 = false;
    c->key_alias =
        header && (strcasecmp(header, "host") == 0 || strcasecmp(header, "idempotency-key") == 0);
    (void)now;
    return true;
}

/* What scan() needs of a head beside its fields, whichever reader found it. */
struct found {
    uint64_t start, end; /* stream offsets */
    uint64_t serial;     /* a fast head the thread remembers: its serial (h1fast.h); 0 */
    enum sl_h1_odd odd;
    const char *method;
    bool close;                 /* the request asked to close the connection */
    struct sl_body_frame frame; /* for an Idempotency-Key's body digest */
};

static void head_of(const struct sl_h1_head *h1, struct sl_req_head *h, struct found *f)
{
    memset(h, 0, sizeof *h);
    *f = (struct found){.start = h1->start,
                        .end = h1->end,
                        .odd = h1->odd,
                        .method = h1->method,
                        .close = !h1->keep_alive,
                        .frame = {.http_major = h1->http_major,
                                  .body = h1->body,
                                  .chunked = h1->chunked,
                                  .has_length = h1->has_length,
                                  .content_length = h1->content_length}};
    h->odd = h1->odd != SL_H1_ODD_NONE;
    h->method = h1->method;
    h->method_len = strlen(h1->method);
    h->path = h1->url + h1->path_off;
    h->path_len = h1->path_len;
    /* cut inside the path (not its query): no route can be judged */
    h->path_cut = h1->url_info.truncated && !memchr(h1->url, '?', h1->url_info.len) &&
                  !memchr(h1->url, '#', h1->url_info.len);
    if (h1->query_len) {
        h->query = h1->url + h1->query_off;
        h->query_len = h1->query_len;
    }
    if (h1->host_info.present) {
        h->host = h1->host;
        h->host_len = h1->host_info.len;
    }
    if (h1->cookie_info.present && !h1->cookie_info.truncated) {
        h->cookie = h1->cookie;
        h->cookie_len = h1->cookie_info.len;
    }
    if (h1->idem_info.present) {
        h->idem = h1->idem;
        h->idem_len = h1->idem_info.len;
    }
    if (h1->key_info.present) {
        h->header = h1->key;
        h->header_len = h1->key_info.len;
    }
}

/* A value slice of a fast head, its trailing blanks trimmed (as
 * http1.c's copies are). */
static const char *slice(const char *b, struct sl_h1fast_slice v, size_t *len)
{
    *len = v.trimmed;
    return b + v.off;
}

/* Whether the fast head f may be taken as slices of its buffer: not with
 * a value too long for http1.c's bounded copies (their cut and hash make
 * the key), or a key header that aliases Host or Idempotency-Key: the
 * copies are made (sl_h1_head) so both readers give the same key. */
static inline bool fast_fits(const struct sl_req_conn *c, const struct sl_h1fast *f)
{
    return !c->key_alias && f->host.len < SL_H1_HOST_MAX && f->key.len < SL_H1_VALUE_MAX &&
           f->idem.len < SL_H1_VALUE_MAX;
}

/* A head the fast path read, as slices of the buffer (no copies). False:
 * it does not fit them (fast_fits). */
static bool fast_of(const struct sl_req_conn *c, const struct sl_h1fast *f, const char *b,
                    struct sl_req_head *h, struct found *fd)
{
    if (!fast_fits(c, f)) return false;
    *h = (struct sl_req_head){.method = f->method,
                              .method_len = f->method_len,
                              .path = b + f->url.off,
                              .path_len = f->path_len};
    *fd = (struct found){.start = sl_h1_head_start(&c->scan),
                         .end = sl_h1_pos(&c->scan),
                         .serial = sl_h1fast_serial(f),
                         .odd = SL_H1_ODD_NONE,
                         .method = f->method,
                         /* the fast path declines Transfer-Encoding */
                         .frame = {.http_major = 1,
                                   .body = f->has_length && f->content_length,
                                   .has_length = f->has_length,
                                   .content_length = f->content_length}};
    if (f->query_len) {
        h->query = b + f->url.off + f->query_off;
        h->query_len = f->query_len;
    }
    if (f->host.present) h->host = slice(b, f->host, &h->host_len);
    if (f->idem.present) h->idem = slice(b, f->idem, &h->idem_len);
    if (f->key.present) h->header = slice(b, f->key, &h->header_len);
    return true;
}

static void deny(struct sl_req_conn *c, uint64_t off, const struct sl_req_decision *d)
{
    const struct sl_rule *r = &c->rules.rt->cfg->rules[d->rule];
    c->denied = true;
    c->deny_off = off;
    c->deny = (struct sl_req_verdict){.status = SL_REQ_DENY, .rule = d->rule};
    /* an HTTP/1 429 has no place in an HTTP/2 stream: h2 denials reset */
    c->deny.action = r->action == SL_ACT_REJECT || c->is_h2 ? SL_ACT_REJECT : SL_ACT_REPLY;
    if (c->deny.action != SL_ACT_REPLY) return;
    if (r->reply) {
        c->deny.reply = r->reply;
        c->deny.reply_len = r->reply_len;
    } else if (c->reply || (c->reply = sl_alloc(SL_REPLY_MAX))) {
        c->deny.reply = c->reply;
        c->deny.reply_len = sl_reply_429_policy(c->reply, SL_REPLY_MAX, &d->v, &d->policy);
    } else {
        c->deny.action = SL_ACT_REJECT; /* no memory for its text: reset */
    }
}

/* The scanner's position and the start of the head it is inside, if any
 * (UINT64_MAX: none), whichever protocol the connection speaks. */
static uint64_t scan_pos(const struct sl_req_conn *c)
{
    return c->is_h2 ? sl_h2_pos(c->h2) : sl_h1_pos(&c->scan);
}

static uint64_t scan_head_start(const struct sl_req_conn *c)
{
    if (c->is_h2) return sl_h2_state(c->h2) == SL_H2_IN_HEAD ? sl_h2_head_start(c->h2) : UINT64_MAX;
    return sl_h1_state(&c->scan) == SL_H1_IN_HEAD ? sl_h1_head_start(&c->scan) : UINT64_MAX;
}

/* The HTTP/1 head the scanner just reported (fast: the fast path's read
 * of it at base, or NULL), as slices of the buffer when the fast path read
 * it (else its copies). False: no memory for the copies, the rest of the
 * stream passes. */
static bool h1_head_of(struct sl_req_conn *c, const struct sl_h1fast *fast, const char *base,
                       struct sl_req_head *h, struct found *f)
{
    if (fast && fast_of(c, fast, base, h, f)) return true;
    const struct sl_h1_head *h1 = sl_h1_head(&c->scan);
    if (!h1) {
        sl_log_no_memory("a request head's copies");
        c->pass = true;
        return false;
    }
    head_of(h1, h, f);
    return true;
}

/* The client reset HTTP/2 stream `stream` (its RST_STREAM ends at
 * `end`): nothing more is written to it, so the places its request holds
 * are given back once the program has been passed the reset
 * (sl_req_passed), not before: a head held ahead of it has not reached the
 * program either. Its count_status charge stays until an answer gives it
 * back (the rule of doubt). */
static void client_reset(struct sl_req_conn *c, uint32_t stream, uint64_t end)
{
    uint64_t i;
    if (!c->rp || !c->inflight || !h2_index(c, stream, &i)) return;
    struct answer_target *at = &c->rp->ans[i % SL_H1RESP_RING];
    if (at->over || at->reset_end) return;
    at->reset_end = end;
    c->rp->resets++;
}

/* Gives back the places of the requests whose resets the program has
 * been passed (c->pos). */
static void resets_passed(struct sl_req_conn *c)
{
    uint64_t sent = c->rp->resp.sent;
    for (uint64_t i = ring_first(sent); i < sent; i++) {
        struct answer_target *at = &c->rp->ans[i % SL_H1RESP_RING];
        if (!at->reset_end || at->reset_end > c->pos) continue;
        at->reset_end = 0;
        c->rp->resets--;
        places_free(c, i);
        at->over = true;
    }
}

/* The HTTP/2 preface, seen by the HTTP/1 scanner (prior knowledge): the
 * frames follow it. False: no memory for HTTP/2's state, the rest passes. */
static __attribute__((noinline)) bool h2_begin(struct sl_req_conn *c)
{
    const char *key = *c->rules.header ? c->rules.header : NULL;
    if (!(c->h2 = sl_alloc(sizeof *c->h2))) { /* no memory: the rest passes */
        sl_log_no_memory("a connection's HTTP/2 state");
        c->pass = true;
        return false;
    }
    c->is_h2 = true;
    if (c->out) sl_req_reply_waits(c, SL_NO_REPLY_H2);
    sl_h2_init(c->h2, key ? SL_H1_KEY_HEADER : SL_H1_KEY_NONE, key, sl_h1_pos(&c->scan), true);
    if (c->cookies) sl_h2_want_cookies(c->h2);
    sl_h1_fini(&c->scan); /* HTTP/1 is over on this connection */
    return true;
}

/* Feeds the bytes of buf past the scanner's position: whether a head was
 * found (HTTP/1's, sl_h1_fast or sl_h1_head, or HTTP/2's, sl_h2_head),
 * or false with nothing more to find now. Inline in scan(), its one
 * caller: no frame of its own per request. */
static inline __attribute__((always_inline)) bool next_head(struct sl_req_conn *c, const char *buf,
                                                            size_t len)
{
    for (;;) {
        uint64_t at = scan_pos(c);
        if (at >= c->pos + len) return false;
        const char *p = buf + (at - c->pos);
        size_t n = (size_t)(c->pos + len - at);
        if (c->is_h2) {
            enum sl_h2_event ev;
            sl_h2_feed(c->h2, p, n, &ev);
            if (ev == SL_H2_RESET) { /* the client's: on to what follows it */
                client_reset(c, sl_h2_reset_stream(c->h2), sl_h2_pos(c->h2));
                continue;
            }
            if (ev == SL_H2_PASSTHROUGH) c->pass = true;
            return ev == SL_H2_REQUEST;
        }
        enum sl_h1_event ev;
        sl_h1_feed(&c->scan, p, n, &ev);
        if (ev == SL_H1_HEAD) return true;
        if (ev == SL_H1_PASSTHROUGH) c->pass = true;
        if (ev != SL_H1_H2 || !h2_begin(c)) return false;
    }
}

/* The last swallowed request's end, once the scanner has passed it: its
 * body is the first to end after its head (a later head is decided only
 * after this ran). Passthrough with the end unknown swallows the rest:
 * bytes after a body that cannot be framed are not a request of their own. */
static void swallow_ends(struct sl_req_conn *c)
{
    if (!c->nsw || c->is_h2) return;
    struct swallow *s = &c->rp->sw[c->nsw - 1];
    if (s->end == UINT64_MAX && sl_h1_body_end(&c->scan) > s->start)
        s->end = sl_h1_body_end(&c->scan);
}

/* An outbound `reply` denial: the request is swallowed, not the connection. */
static bool swallowed(struct sl_req_conn *c, const struct found *h1,
                      const struct sl_req_decision *d)
{
    const struct sl_rule *r = &c->rules.rt->cfg->rules[d->rule];
    /* a head whose first bytes went already (a head written in parts:
     * they pass until its end) cannot be taken back: it fails like reject */
    if (!c->replies || c->is_h2 || r->action != SL_ACT_REPLY || c->nsw >= SL_REQ_AHEAD ||
        h1->start < c->pos)
        return false;
    struct swallow *s = &c->rp->sw[c->nsw++];
    *s = (struct swallow){.start = h1->start,
                          .end = sl_h1_state(&c->scan) == SL_H1_IDLE ? h1->end : UINT64_MAX,
                          .before = c->rp->resp.sent,
                          .rule = d->rule,
                          .v = d->v,
                          .quota = d->policy.quota,
                          .window_s = d->policy.window_s,
                          .close = h1->close};
    snprintf(s->name, sizeof s->name, "%s", d->policy.name ? d->policy.name : "");
    return true;
}

/* One line a second at most, per process: odd heads can come in floods. */
static uint64_t odd_logged_at, odd_unlogged; /* touched only with __atomic builtins */

static void odd_log(const struct sl_req_conn *c, enum sl_h1_odd why, int rule, uint64_t now)
{
    uint64_t last = __atomic_load_n(&odd_logged_at, __ATOMIC_RELAXED);
    if (last && now - last < SL_NS_PER_SEC) {
        __atomic_fetch_add(&odd_unlogged, 1, __ATOMIC_RELAXED);
        return;
    }
    if (!__atomic_compare_exchange_n(&odd_logged_at, &last, now ? now : 1, false, __ATOMIC_RELAXED,
                                     __ATOMIC_RELAXED)) {
        __atomic_fetch_add(&odd_unlogged, 1, __ATOMIC_RELAXED);
        return;
    }
    uint64_t more = __atomic_exchange_n(&odd_unlogged, 0, __ATOMIC_RELAXED);
    const struct sl_rule *r = &c->rules.rt->cfg->rules[rule];
    char addr[64];
    sl_addr_format(c->rules.peer.a, addr, sizeof addr);
    const char *deed = r->on_odd == SL_ODD_DENY ? "denied" : "counted";
    if (why != SL_H1_ODD_CHUNKED) {
        sl_log(SL_LOG_INFO,
               "rule \"%s\": odd request head %s %s (%s): %s as a request (%llu more not logged)",
               r->name, c->out ? "to" : "from", addr, sl_h1_odd_reason(why), deed,
               (unsigned long long)more);
        return;
    }
    /* the framing line as sent, to its odd byte: sl_log escapes it (\n,
     * \r, \xNN); a NUL, which would end the text, is shown as '?' */
    size_t n;
    const char *at = sl_h1_odd_body_line(&c->scan, &n);
    char line[32];
    if (n >= sizeof line) n = sizeof line - 1;
    for (size_t i = 0; i < n; i++)
        line[i] = at[i] ? at[i] : '?';
    line[n] = '\0';
    sl_log(SL_LOG_INFO,
           "rule \"%s\": odd request body %s %s (%s, at \"%s\"): %s (%llu more not logged)",
           r->name, c->out ? "to" : "from", addr, sl_h1_odd_reason(why), line,
           r->on_odd == SL_ODD_DENY ? "denied from its odd byte on"
                                    : "counted, and the request heads after it counted as requests",
           (unsigned long long)more);
}

/* An odd head, or body (why): counted in odd_heads of the connection's
 * rules; a rule with on_odd = deny denies it (true, *d set). */
static bool odd_head(struct sl_req_conn *c, enum sl_h1_odd why, uint64_t now,
                     struct sl_req_decision *d)
{
    const struct sl_config *cfg = c->rules.rt->cfg;
    int deny_rule = -1, first = -1;
    for (int i = 0; i < cfg->nrules && i < SL_MAX_RULES; i++) {
        if (!(c->rules.match & (1ull << i))) continue;
        if (first < 0) first = i;
        int e = c->rules.entry[i];
        if (e >= 0) sl_table_count(c->rules.rt->table, e, SL_C_ODD, 1);
        if (cfg->rules[i].on_odd != SL_ODD_DENY) continue;
        if (cfg->rules[i].dry_run) { /* counted as enforcing would, not denied */
            if (e >= 0) sl_table_count(c->rules.rt->table, e, SL_C_WOULD_LIMIT, 1);
        } else if (deny_rule < 0) {
            deny_rule = i;
        }
    }
    if (first < 0) return false;
    odd_log(c, why, deny_rule >= 0 ? deny_rule : first, now);
    if (deny_rule < 0) return false;
    const struct sl_rule *r = &cfg->rules[deny_rule];
    *d = (struct sl_req_decision){.allowed = false, .rule = deny_rule};
    d->v = (struct sl_verdict){.retry_ns = SL_NS_PER_SEC};
    d->policy = (struct sl_reply_policy){.name = r->name, .window_s = 1};
    sl_table_count(c->rules.rt->table, c->rules.entry[deny_rule], SL_C_LIMITED, 1);
    return true;
}

/* A chunked body servers frame differently (core/http/http1.h,
 * sl_h1_odd_body), found by the feed that just ran, before any head it
 * reported: the request it belongs to is counted odd, once. With on_odd =
 * deny nothing passes from its odd byte on (true: the scan stops); else
 * the heads the conservative reading finds after it are decided as they
 * come, each a request. */
static bool odd_body(struct sl_req_conn *c, uint64_t now)
{
    c->odd_body = true;
    struct sl_req_decision d;
    if (!odd_head(c, SL_H1_ODD_CHUNKED, now, &d)) return false;
    uint64_t at = sl_h1_odd_body(&c->scan);
    deny(c, at > c->pos ? at : c->pos, &d);
    return true;
}

/* The first request whose answer may not have been read, among those
 * still in the ring (HTTP/2 answers are not counted in resp->done). */
static uint64_t unanswered(const struct sl_h1resp *resp)
{
    uint64_t ring = ring_first(resp->sent);
    return resp->done > ring ? resp->done : ring;
}

/* The token budgets request `resp->sent` (being sent) looked at, whose
 * answer will charge them. Answers never read (a ring slot reused, a
 * connection whose responses sluice is not shown) are charged by the
 * rule of doubt. */
static void cost_targets(struct sl_req_conn *c, struct sl_h1resp *resp,
                         const struct sl_req_decision *d, uint64_t now)
{
    if (!c->costs) return;
    if (!c->resp_seen && !c->is_h2) /* HTTP/2: see ends_seen() */
        for (uint64_t i = unanswered(resp); i < resp->sent; i++)
            cost_charge(c, i, false, 0, "its answer was not shown to sluice", now);
    cost_charge(c, resp->sent, false, 0, "its answer was never read", now);
    struct cost_target *ct = &c->rp->cost[resp->sent % SL_H1RESP_RING];
    ct->n = (uint8_t)d->ncosts;
    for (int k = 0; k < ct->n; k++) {
        ct->rule[k] = d->cost_rule[k];
        ct->hash[k] = d->cost_hash[k];
    }
}

/* What a decided head leaves: a denial (false: the scan stops there), a
 * swallow, a response expected, a hold. */
static bool act(struct sl_req_conn *c, const struct found *h1, const struct sl_req_decision *d,
                uint64_t now)
{
    if (!d->allowed && swallowed(c, h1, d)) return true;
    if (!d->allowed) {
        deny(c, h1->start, d);
        return false;
    }
    /* a request holds places until its answer's end only where that end
     * will be seen (an HTTP/2 stream's may not: ends_seen) */
    bool held = c->rp && ends_seen(c);
    if (!c->rp) /* no responses paired (a reload gave a rule req_conns): not held */
        for (int k = 0; k < d->ninflight; k++)
            sl_table_conn_release(c->rules.rt->table, d->inflight_rec[k]);
    if (c->rp) {
        struct learn_target *lt = &c->rp->learn[c->rp->resp.sent % SL_H1RESP_RING];
        lt->rule = (int8_t)(c->learn ? d->learn_rule : -1);
        lt->stream = c->is_h2 ? sl_h2_stream(c->h2) : 0;
        if (lt->rule >= 0) {
            lt->hash = d->learn_hash;
            lt->gap_ns = d->learn_gap_ns;
            lt->k = d->learn_k;
            memcpy(lt->key, d->learn_key, sizeof lt->key);
        }
        struct sl_h1resp *resp = &c->rp->resp;
        /* HTTP/1 responses never shown (TLS written by a library sluice
         * does not read): a request's places last until the next head, the
         * end of its response for a client that waits for it; HTTP/2: see
         * ends_seen() */
        if (c->inflight && !c->resp_seen && !c->is_h2)
            for (uint64_t i = unanswered(resp); i < resp->sent; i++)
                places_free(c, i);
        places_free(c, resp->sent); /* a request's whose response was never counted */
        cost_targets(c, resp, d, now);
        struct answer_target *at = &c->rp->ans[resp->sent % SL_H1RESP_RING];
        at->n = c->answers ? (uint8_t)d->nanswers : 0;
        for (int k = 0; k < at->n; k++) {
            at->rule[k] = d->answer_rule[k];
            at->hash[k] = d->answer_hash[k];
        }
        at->over = false;
        if (at->reset_end) c->rp->resets--; /* an older request's, never passed */
        at->reset_end = 0;
        at->nrec = held ? (uint8_t)d->ninflight : 0;
        for (int k = 0; k < d->ninflight; k++)
            if (held)
                at->rec[k] = d->inflight_rec[k];
            else
                sl_table_conn_release(c->rules.rt->table, d->inflight_rec[k]);
        sl_h1resp_sent(resp, h1->method);
    }
    /* no memory to remember a hold: the head passes now (fail open) */
    if (d->wait_ns && (c->ahead || (c->ahead = sl_alloc(SL_REQ_AHEAD * sizeof *c->ahead)))) {
        struct ahead *a = &c->ahead[c->nahead++];
        *a = (struct ahead){.off = h1->start, .release_at = now + d->wait_ns, .place_rule = -1};
        if (d->place_rule >= 0 && held) {
            a->place_rule = d->place_rule;
            a->place_key = d->place_key;
            a->index = c->rp->resp.sent - 1;
            a->until = now + c->rules.rt->cfg->rules[d->place_rule].max_delay_ns;
        }
    }
    return true;
}

/* Whether the lane may take a connection whose responses are paired:
 * only for count_status (its rule's bucket is all a request leaves to its
 * answer, lane_answered), and a request whose response has a body
 * (neither HEAD nor CONNECT). */
static bool lane_answers(const struct sl_req_conn *c, const char *method)
{
    return c->answers && !c->learn && !c->inflight && !c->costs && !c->replies &&
           strcmp(method, "HEAD") != 0 && strcmp(method, "CONNECT") != 0;
}

/* What act() leaves for a request the lane (or lean()) passed on such a
 * connection, the single rule's key of table hash `hash`: its answer gives
 * the rule's take back (answered()). */
static void lane_answered(struct sl_req_conn *c, uint64_t hash)
{
    struct sl_h1resp *resp = &c->rp->resp;
    places_free(c, resp->sent); /* as act(): none held here, unless a reload left some */
    c->rp->learn[resp->sent % SL_H1RESP_RING] = (struct learn_target){.rule = -1};
    struct answer_target *at = &c->rp->ans[resp->sent % SL_H1RESP_RING];
    if (at->reset_end) c->rp->resets--;
    *at = (struct answer_target){.n = 1, .rule = {c->rules.solo}, .hash = {hash}};
    sl_h1resp_sent(resp, "GET");
}

/* Whether a head of the connection waits for a place in flight: the heads
 * after it are decided once it has one, in their order (a later head
 * that took the place first could not end before the earlier one reached
 * the program: a stream of one HTTP/2 connection, a pipelined request). */
static bool place_awaited(const struct sl_req_conn *c)
{
    for (int i = 0; i < c->nahead; i++)
        if (c->ahead[i].place_rule >= 0) return true;
    return false;
}

/* The lane's opening (see lane()), after a head that passed at once under
 * the single rule and left the scanner at the read's end: one fast head
 * read from the thread's memory (serial: sl_h1fast_memory) that was the
 * whole read [start, end), on a connection whose answers the lane may
 * leave as act() would (method: lane_answers). `hash`: the table hash of
 * the memory's own key when the head was the memory's, byte for byte; 0
 * when it is not known (a head that differed in values has its own key). */
static inline void lane_open(struct sl_req_conn *c, size_t len, uint64_t serial, uint64_t hash,
                             uint64_t start, uint64_t end, const char *method)
{
    if (serial && (!c->rp || lane_answers(c, method)) && start == c->pos && end == c->pos + len) {
        c->lane_serial = serial;
        c->lane_hash = hash;
    }
}

/* The fast head f (slices of base) decided by the single rule from its
 * key's slice alone (lean), when it may be: no Idempotency-Key, values
 * that fit fast_of's slices, answers left as the lane leaves them. */
static inline enum sl_req_solo lean(const struct sl_req_conn *c, const struct sl_h1fast *f,
                                    const char *base, uint64_t now, uint64_t *hash,
                                    struct sl_verdict *v)
{
    if (c->rules.solo < 0 || f->idem.present || !fast_fits(c, f) ||
        (c->rp && !lane_answers(c, f->method)))
        return SL_REQ_SOLO_NO;
    return sl_req_solo_decide(&c->rules, f->key.present ? base + f->key.off : NULL, f->key.trimmed,
                              now, hash, v);
}

/* A fast head that lean() decided with a verdict v other than "pass now":
 * its head made from the slices (true: lean() asked fast_fits) and settled
 * as the single rule's general path settles it, for act(). */
static inline void lean_settle(const struct sl_req_conn *c, const struct sl_h1fast *f,
                               const char *base, const struct sl_verdict *v, uint64_t now,
                               struct sl_req_head *h, struct found *fd, struct sl_req_decision *d)
{
    fast_of(c, f, base, h, fd);
    sl_req_settle_again(&c->rules, h, v, now, d);
}

/* What act() leaves for a decision that let a head pass now with nothing
 * to remember: none where no response is paired (allowed, no wait, no
 * place in flight taken): the common request makes no call for it. */
static inline bool act_needed(const struct sl_req_conn *c, const struct sl_req_decision *d)
{
    return c->rp || !d->allowed || d->wait_ns || d->ninflight;
}

/* Scans the bytes of buf past the scanner's position, deciding each head.
 *
 * A fast head on a connection whose one rule is plain is decided lean:
 * its key's hash from the slice, and the table asked as the lane asks it
 * (sl_req_solo_decide, core/http/reqdecide.h), so a head that passes at once
 * makes no struct sl_req_head, decision or act() (the common request on
 * keys that vary, which the lane cannot take). Any other verdict is
 * settled from the head made then (sl_req_settle_again), as the lane
 * does: the same counters, log lines and verdicts as sl_req_decide's
 * single-rule path (test_reqlean). */
static void scan(struct sl_req_conn *c, const char *buf, size_t len, uint64_t now,
                 const struct sl_h1fast *pre)
{
    c->lane_serial = 0; /* the lane is for a read right after one made by the lane's rules */
    while (!c->denied && !c->pass && c->nahead < SL_REQ_AHEAD && c->nsw < SL_REQ_AHEAD &&
           !place_awaited(c)) {
        /* pre: the fast head at the position, read by whole() */
        bool found = pre ? sl_h1_take(&c->scan, pre, buf, len) : next_head(c, buf, len);
        pre = NULL;
        if (c->nsw) swallow_ends(c);
        if (!c->odd_body && !c->is_h2 && sl_h1_odd_body(&c->scan) && odd_body(c, now)) return;
        if (!found) return;
        struct sl_req_head h;
        struct found fd, *h1 = &fd;
        struct sl_req_decision d;
        const char *base = NULL;
        const struct sl_h1fast *fast = c->is_h2 ? NULL : sl_h1_fast(&c->scan, &base);
        uint64_t hash;
        struct sl_verdict v;
        enum sl_req_solo solo = fast ? lean(c, fast, base, now, &hash, &v) : SL_REQ_SOLO_NO;
        if (solo == SL_REQ_SOLO_PASSED) { /* and act()'s part */
            if (c->rp) lane_answered(c, hash);
            if (sl_h1_pos(&c->scan) < c->pos + len) continue;
            lane_open(c, len, sl_h1fast_memory(fast), sl_h1fast_serial(fast) ? hash : 0,
                      sl_h1_head_start(&c->scan), sl_h1_pos(&c->scan), fast->method);
            return;
        }
        if (solo == SL_REQ_SOLO_SETTLE) {
            lean_settle(c, fast, base, &v, now, &h, &fd, &d);
        } else {
            if (c->is_h2)
                head_of(sl_h2_head(c->h2), &h, &fd);
            else if (!h1_head_of(c, fast, base, &h, &fd))
                return;
            uint8_t digest[SL_BODY_DIGEST_LEN];
            if (h.idem && h1->end >= c->pos && h1->end <= c->pos + len &&
                sl_body_digest(&h1->frame, c->is_h2 ? sl_h2_stream(c->h2) : 0,
                               (const uint8_t *)buf + (h1->end - c->pos),
                               (size_t)(c->pos + len - h1->end), digest))
                h.body_digest = digest;
            if (h1->odd && odd_head(c, h1->odd, now, &d)) {
                deny(c, h1->start, &d);
                return;
            }
            sl_req_decide(&c->rules, &h, now, &d);
        }
        if (act_needed(c, &d) && !act(c, h1, &d, now)) return;
        if (!d.allowed) continue; /* swallowed */
        /* the common end, a head that filled the read: the next round's
         * next_head would find nothing to feed (and swallow_ends has run
         * since the last feed). One fast head that was the whole read and
         * passed at once by the single rule opens the lane. */
        if (scan_pos(c) >= c->pos + len) {
            if (!d.wait_ns && d.key_hash)
                lane_open(c, len, fd.serial, d.key_hash, fd.start, fd.end, fd.method);
            return;
        }
    }
}

/* Whether all len bytes at the position may pass, as scan() left the
 * connection: nothing held, swallowed or denied, no head begun and not
 * finished. Conservative (a hold whose time has come still says no):
 * sl_req_admit weighs the rest. Inline in both callers: the gate's common
 * read asks it on every request. */
static inline __attribute__((always_inline)) bool all_pass(const struct sl_req_conn *c, size_t len)
{
    if (c->denied || c->nahead || c->nsw) return false;
    return c->pass || (scan_pos(c) >= c->pos + len && scan_head_start(c) == UINT64_MAX);
}

static __thread uint64_t lane_heads __attribute__((tls_model("initial-exec")));

uint64_t sl_req_lane_heads(void)
{
    return lane_heads;
}

enum lane { LANE_NO, LANE_PASS, LANE_STOP };

/* A connection the lane and whole() may take a read on: nothing held,
 * denied, swallowed or passed through, HTTP/1, and its scanner at the
 * read's first byte. */
static inline bool at_rest(const struct sl_req_conn *c)
{
    return !c->denied && !c->nahead && !c->nsw && !c->pass && !c->is_h2 &&
           sl_h1_pos(&c->scan) == c->pos;
}

/* The lane: a read that is exactly a head from the thread's memory
 * (h1fast.h) which the connection's last read was too, while the thread
 * still remembers it, and after which nothing was held, denied or begun:
 * the scanner steps over it without reading it (sl_h1_feed_again) and it
 * is decided as scan() decides a fast head under the single rule. The
 * memory's own head, byte for byte, is the same request again: the table
 * decides for the key it had (sl_req_decide_again), with no head, key or
 * hash made. A head differing from it only in header values (another key
 * of one length, a trace id) has the memory's result and its own key:
 * decided lean (sl_req_solo_decide), as scan() would. A verdict other
 * than "pass now" is settled as scan() would settle it, the head made
 * from the thread's memory. LANE_NO: not such a read, nothing done;
 * LANE_PASS: every byte passes (counted as sl_req_passed); LANE_STOP:
 * decided, not all may pass now. */
static enum lane lane(struct sl_req_conn *c, const char *buf, size_t len, uint64_t now)
{
    if (!at_rest(c) || !sl_h1_feed_again(&c->scan, buf, len, c->lane_serial)) return LANE_NO;
    lane_heads++;
    const char *base = NULL;
    const struct sl_h1fast *f = sl_h1_fast(&c->scan, &base);
    struct sl_verdict v;
    uint64_t hash = c->lane_hash;
    bool own = sl_h1fast_serial(f) != 0; /* the memory's own bytes: its own key */
    enum sl_req_solo solo;
    if (hash && own)
        solo =
            sl_req_decide_again(&c->rules, hash, now, &v) ? SL_REQ_SOLO_PASSED : SL_REQ_SOLO_SETTLE;
    else if ((solo = lean(c, f, base, now, &hash, &v)) != SL_REQ_SOLO_NO && own)
        c->lane_hash = hash;
    if (solo == SL_REQ_SOLO_PASSED) {
        if (c->rp) lane_answered(c, hash);
        c->pos += len; /* sl_req_passed, nothing ahead */
        return LANE_PASS;
    }
    c->lane_serial = 0;
    struct sl_req_head h;
    struct found fd;
    struct sl_req_decision d;
    if (!h1_head_of(c, f, base, &h, &fd)) return all_pass(c, len) ? LANE_NO : LANE_STOP;
    if (solo == SL_REQ_SOLO_SETTLE)
        sl_req_settle_again(&c->rules, &h, &v, now, &d);
    else /* a key header made a list, say: as scan()'s general path (no Idempotency-Key here) */
        sl_req_decide(&c->rules, &h, now, &d);
    act(c, &fd, &d, now);
    return LANE_STOP;
}

/* A head waiting for a place in flight (req_conns under delay), whose
 * time to look again has come: true when it may go on (a place taken,
 * or none to record: fail open), or must wait again (release_at moved);
 * false when its max_delay ran out: the head is denied. */
static bool place_found(struct sl_req_conn *c, struct ahead *a, uint64_t now)
{
    struct sl_runtime *rt = c->rules.rt;
    int rule = a->place_rule, e = c->rules.entry[rule];
    int32_t rec = e >= 0 ? sl_req_place_take(rt, rule, e, &a->place_key, now) : -2;
    if (rec != -1) {
        a->place_rule = -1;
        struct answer_target *at = &c->rp->ans[a->index % SL_H1RESP_RING];
        if (rec >= 0 && at->nrec < SL_REQ_ANSWERS && !at->over)
            at->rec[at->nrec++] = rec;
        else if (rec >= 0) /* no room, or its response already ended */
            sl_table_conn_release(rt->table, rec);
        return true;
    }
    if (now < a->until) {
        a->release_at = now + SL_NS_PER_SEC / 200 < a->until ? now + SL_NS_PER_SEC / 200 : a->until;
        return true;
    }
    const struct sl_rule *r = &rt->cfg->rules[rule];
    struct sl_req_decision d = {.allowed = false, .rule = rule};
    d.v = (struct sl_verdict){.retry_ns = SL_NS_PER_SEC, .limit = r->req_conns};
    d.policy = (struct sl_reply_policy){.name = r->name, .quota = r->req_conns, .window_s = 1};
    if (e >= 0) sl_table_count(rt->table, e, SL_C_LIMITED, 1);
    sl_log(SL_LOG_INFO,
           "rule \"%s\": limited a request: %u in flight for its key, none ended "
           "within max_delay",
           r->name, (unsigned)r->req_conns);
    a->place_rule = -1;
    deny(c, a->off, &d);
    return false;
}

uint64_t sl_req_refusal_wait(struct sl_req_conn *c, uint64_t now)
{
    if (!c->denied || !c->out || !c->is_h2 || !c->rp || !ends_seen(c)) return 0;
    if (!c->refuse_at) c->refuse_at = now + c->rules.rt->cfg->rules[c->deny.rule].max_delay_ns;
    const struct sl_h1resp *resp = &c->rp->resp;
    bool open = false;
    for (uint64_t i = unanswered(resp); i < resp->sent && !open; i++)
        open = !c->rp->ans[i % SL_H1RESP_RING].over;
    if (!open || now >= c->refuse_at) return 0;
    uint64_t step = SL_NS_PER_SEC / 200;
    return c->refuse_at - now < step ? c->refuse_at - now : step;
}

size_t sl_req_admit(struct sl_req_conn *c, const void *buf, size_t len, uint64_t now,
                    struct sl_req_verdict *v)
{
    *v = (struct sl_req_verdict){.status = SL_REQ_PASS, .rule = -1};
    scan(c, buf, len, now, NULL);
    if (all_pass(c, len)) return len;
    uint64_t limit = c->pos + len;
    if (!c->pass) {
        uint64_t scanned = scan_pos(c), head = scan_head_start(c);
        if (scanned < limit) limit = scanned;
        if (head < limit) {
            limit = head;
            v->status = SL_REQ_NEED_MORE;
        }
    }
    for (int i = 0; i < c->nahead; i++) {
        struct ahead *a = &c->ahead[i];
        if (a->place_rule >= 0 && a->release_at <= now && a->off < limit && !place_found(c, a, now))
            limit = a->off; /* no place before its time ran out: denied there */
        if (a->release_at <= now || a->off >= limit) continue;
        limit = a->off;
        *v = (struct sl_req_verdict){
            .status = SL_REQ_HOLD, .rule = -1, .wait_ns = a->release_at - now};
    }
    if (c->nsw && c->rp->sw[0].start <= limit) {
        limit = c->rp->sw[0].start;
        *v = (struct sl_req_verdict){.status = SL_REQ_SWALLOW, .rule = c->rp->sw[0].rule};
    }
    if (c->denied && c->deny_off <= limit) {
        limit = c->deny_off;
        *v = c->deny;
    }
    return limit > c->pos ? (size_t)(limit - c->pos) : 0;
}

static __thread uint64_t whole_heads __attribute__((tls_model("initial-exec")));

uint64_t sl_req_whole_heads(void)
{
    return whole_heads;
}

/* whole()'s head f (at buf, the scanner past it) with a verdict v other
 * than "pass now": settled as scan() settles it. Out of line: its frame
 * (a head, a decision) is not set up for the head that passes. */
static __attribute__((noinline)) void whole_settle(struct sl_req_conn *c, const struct sl_h1fast *f,
                                                   const char *buf, const struct sl_verdict *v,
                                                   uint64_t now)
{
    struct sl_req_head h;
    struct found fd;
    struct sl_req_decision d;
    lean_settle(c, f, buf, v, now, &h, &fd, &d);
    act(c, &fd, &d, now);
}

/* The common read of a keep-alive client on a connection whose one rule
 * is plain: one whole request, a fast head and the body its
 * Content-Length gives (or the body's first bytes), on a connection where
 * nothing is held, denied, swallowed or begun. It is read once
 * (sl_h1_peek) and decided lean, as scan() decides it, before the scanner
 * moves; passed at once, the scanner steps over it with no more of
 * scan()'s rounds. LANE_PASS: every byte passes; LANE_STOP: decided
 * otherwise, settled as scan() settles it; LANE_NO: nothing decided,
 * *pre the head read when there is one (scan() takes it from there). */
static enum lane whole(struct sl_req_conn *c, const char *buf, size_t len, uint64_t now,
                       const struct sl_h1fast **pre)
{
    if (c->rules.solo < 0 || !at_rest(c) || !(*pre = sl_h1_peek(&c->scan, buf, len)))
        return LANE_NO;
    const struct sl_h1fast *f = *pre;
    if (f->end + f->content_length < len) return LANE_NO; /* a head after it: scan()'s rounds */
    uint64_t hash;
    struct sl_verdict v;
    enum sl_req_solo solo = lean(c, f, buf, now, &hash, &v);
    if (solo == SL_REQ_SOLO_NO) return LANE_NO;
    whole_heads++;
    *pre = NULL;
    c->lane_serial = 0;
    sl_h1_take(&c->scan, f, buf, len);
    if (solo == SL_REQ_SOLO_PASSED) { /* and act()'s part, as scan() */
        if (c->rp) lane_answered(c, hash);
        if (f->end < len) { /* its body's bytes: the scanner steps over them */
            enum sl_h1_event ev;
            sl_h1_feed(&c->scan, buf + f->end, len - f->end, &ev);
        } else {
            uint64_t memory = sl_h1fast_memory(f); /* most heads are not the memory's */
            if (memory)
                lane_open(c, len, memory, sl_h1fast_serial(f) ? hash : 0, c->pos, c->pos + len,
                          f->method);
        }
        c->pos += len; /* sl_req_passed, nothing ahead */
        return LANE_PASS;
    }
    whole_settle(c, f, buf, &v, now);
    return LANE_STOP;
}

bool sl_req_admit_all(struct sl_req_conn *c, const void *buf, size_t len, uint64_t now)
{
    const struct sl_h1fast *pre = NULL;
    enum lane l = c->lane_serial ? lane(c, buf, len, now) : LANE_NO;
    if (l == LANE_NO) l = whole(c, buf, len, now, &pre);
    if (l == LANE_PASS) return true;
    scan(c, buf, len, now, pre); /* after LANE_STOP: the rest of the read (a body, say) */
    if (!all_pass(c, len)) return false;
    c->pos += len;                                /* sl_req_passed, nothing ahead (all_pass) */
    if (c->rp && c->rp->resets) resets_passed(c); /* as sl_req_passed */
    return true;
}

void sl_req_passed(struct sl_req_conn *c, const void *buf, size_t n)
{
    (void)buf;
    c->pos += n;
    if (c->rp && c->rp->resets) resets_passed(c);
    int k = 0;
    for (int i = 0; i < c->nahead; i++)
        if (c->ahead[i].off >= c->pos) c->ahead[k++] = c->ahead[i];
    c->nahead = k;
}

void sl_req_unpassed(struct sl_req_conn *c, size_t n)
{
    c->pos -= n < c->pos ? n : c->pos;
}

bool sl_req_done(const struct sl_req_conn *c)
{
    return c->pass && !c->denied && c->nahead == 0 && c->nsw == 0;
}

/* Queues s's 429 if its turn has come: every response before it read. */
static bool queue_reply(struct sl_req_conn *c, struct swallow *s)
{
    struct replies *rp = c->rp;
    if (rp->resp.lost || rp->resp.done < s->before) return false;
    char text[SL_REPLY_MAX];
    struct sl_reply_policy p = {.name = s->name, .quota = s->quota, .window_s = s->window_s};
    /* a client that asked to close reads to the end (PHP's file_get_contents):
     * its 429 says Connection: close, and the stream ends after it */
    size_t n = s->close ? sl_reply_429_policy(text, sizeof text, &s->v, &p)
                        : sl_reply_429_keep(text, sizeof text, &s->v, &p);
    if (n > sizeof rp->inj - rp->inj_len)
        return false; /* the program reads the earlier ones first */
    memcpy(rp->inj + rp->inj_len, text, n);
    rp->inj_len += n;
    rp->inj_close = s->close;
    s->queued = true;
    return true;
}

size_t sl_req_swallow(struct sl_req_conn *c, const void *buf, size_t len, uint64_t now)
{
    (void)buf;
    (void)now;
    if (!c->nsw || c->rp->sw[0].start > c->pos) return 0;
    swallow_ends(c);
    struct swallow *s = &c->rp->sw[0];
    if (!s->queued && !queue_reply(c, s)) return 0;
    uint64_t end = s->end, scanned = scan_pos(c);
    if (end > scanned) end = scanned; /* the body goes on past what was shown */
    if (end > c->pos + len) end = c->pos + len;
    size_t n = end > c->pos ? (size_t)(end - c->pos) : 0;
    c->pos += n;
    if (c->pos >= s->end) {
        memmove(&c->rp->sw[0], &c->rp->sw[1], (size_t)(c->nsw - 1) * sizeof c->rp->sw[0]);
        c->nsw--;
    }
    return n;
}

bool sl_req_swallow_lost(const struct sl_req_conn *c)
{
    return c->replies && c->rp->resp.lost;
}

size_t sl_req_inject_peek(const struct sl_req_conn *c, const char **p)
{
    if (!c->rp) {
        *p = "";
        return 0;
    }
    *p = c->rp->inj;
    return c->rp->inj_len;
}

void sl_req_inject_take(struct sl_req_conn *c, size_t n)
{
    struct replies *rp = c->rp;
    if (!rp) return;
    if (n > rp->inj_len) n = rp->inj_len;
    memmove(rp->inj, rp->inj + n, rp->inj_len - n);
    rp->inj_len -= n;
    if (rp->inj_len == 0 && rp->inj_close) rp->replied_end = true;
}

bool sl_req_replied_end(const struct sl_req_conn *c)
{
    return c->rp && c->rp->replied_end;
}

bool sl_req_replies(const struct sl_req_conn *c)
{
    return c->replies || c->learn || (c->out && (c->inflight || c->costs));
}

void sl_req_reply_waits(struct sl_req_conn *c, enum sl_no_reply why)
{
    static const char *const said[] = {
        [SL_NO_REPLY_H2] = "HTTP/2 (a client's stream cannot be answered)",
        [SL_NO_REPLY_MEMORY_BIO] = "a memory BIO (python asyncio's TLS: no 429 can be put in it)",
        [SL_NO_REPLY_RECORDS] = "TLS that sluice cannot decrypt (counted from its records)",
    };
    if (c->rules.reply_waits) return;
    c->rules.reply_waits = true;
    sl_req_rules_solo(&c->rules); /* its hold */
    const struct sl_config *cfg = c->rules.rt->cfg;
    for (int i = 0; i < cfg->nrules; i++) {
        const struct sl_rule *r = &cfg->rules[i];
        if (!(c->rules.match >> i & 1) || r->action != SL_ACT_REPLY) continue;
        static _Atomic uint32_t told; /* a bit per cause */
        uint32_t bit = 1u << why;
        if (atomic_fetch_or(&told, bit) & bit) return;
        sl_log(SL_LOG_WARN,
               "rule \"%s\": action = reply cannot answer on %s: a request over the limit "
               "waits its turn instead, within max_delay (%llu ms), and is refused beyond it "
               "(said once)",
               r->name, said[why], (unsigned long long)(r->max_delay_ns / 1000000));
        return;
    }
}

bool sl_req_answers(const struct sl_req_conn *c)
{
    return c->answers || (!c->out && (c->inflight || c->costs));
}

void sl_req_responses(struct sl_req_conn *c, const void *buf, size_t n)
{
    if (!c->rp) return;
    c->resp_seen |= n > 0;
    if (c->is_h2) { /* no reader (no memory): nothing learned, nothing held */
        struct sl_h2resp *r = n ? h2_reader(c) : NULL;
        if (r) sl_h2resp_feed(r, buf, n);
        return;
    }
    c->rp->resp.arg = c; /* where the connection is now */
    if (n == 0)
        sl_h1resp_eof(&c->rp->resp);
    else
        sl_h1resp_feed(&c->rp->resp, buf, n);
}

void sl_req_responses_at(struct sl_req_conn *c, const void *buf, size_t n, uint64_t now)
{
    c->resp_now = now;
    sl_req_responses(c, buf, n);
    c->resp_now = 0;
}

void sl_req_responses_unread(struct sl_req_conn *c)
{
    if (!c->rp) return;
    sl_h1resp_lose(&c->rp->resp);
    if (c->is_h2 && h2_reader(c)) sl_h2resp_lose(c->rp->h2r);
}

void sl_req_conn_rebind(struct sl_req_conn *c, struct sl_runtime *rt)
{
    c->lane_serial = 0; /* its hash was the old rules' */
    c->rules.rt = rt;
    sl_req_rules_entries(&c->rules);
}

struct sl_runtime *sl_req_conn_runtime(const struct sl_req_conn *c)
{
    return c->rules.rt;
}

void sl_req_conn_fini(struct sl_req_conn *c)
{
    if (c->is_h2) sl_h2_fini(c->h2); /* its HPACK inflater */
    c->is_h2 = false;
    sl_free(c->h2);
    c->h2 = NULL;
    sl_h1_fini(&c->scan);
    if (c->rp) /* the requests still in flight end with the connection */
        for (uint64_t i = 0; i < SL_H1RESP_RING; i++)
            places_free(c, i);
    if (c->rp && c->costs) { /* their answers unread: the rule of doubt */
        for (uint64_t i = 0; i < SL_H1RESP_RING; i++)
            cost_charge(c, i, false, 0, "the connection ended before its answer", 0);
        sl_costread_fini(&c->rp->read);
    }
    if (c->rp && c->rp->h2r) {
        sl_h2resp_fini(c->rp->h2r);
        sl_free(c->rp->h2r);
    }
    sl_free(c->rp);
    c->rp = NULL;
    sl_free(c->reply);
    c->reply = NULL;
    sl_free(c->ahead);
    c->ahead = NULL;
}
