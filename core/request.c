/* request.c - one connection's requests (see request.h).
 *
 * Two scanners. `h1` has read exactly the bytes that passed (pos of them);
 * each sl_req_admit copies it and feeds the copy the bytes shown, so it
 * sees the heads ahead without moving the original. Heads are decided in
 * stream order, once: `decided` is one past the start of the last head
 * that was let through, so a head shown again (a short read, a retried
 * peek) is not charged twice. A head that must wait its turn (delay) is
 * remembered with its time (`held_at`, `held_until`). The first denied head
 * ends the connection's requests: nothing from its first byte on passes.
 *
 * What may pass: every byte before the first of a denied head, a held head
 * whose time has not come, or the start of a head not complete yet.
 */
#include "request.h"

#include <string.h>

#include "clock.h"
#include "http1.h"
#include "reqdecide.h"
#include "reply.h"

struct sl_req_conn {
    struct sl_req_rules x;
    struct sl_h1 h1;
    uint64_t pos;     /* stream offset of the next byte to pass */
    uint64_t decided; /* heads starting before this were let through */
    bool held;        /* a head at held_at waits until held_until */
    uint64_t held_at, held_until;
    bool denied; /* the head at denied_at was denied */
    uint64_t denied_at;
    int denied_rule;
    enum sl_action denied_action;
    size_t reply_len;
    char reply[SL_REPLY_MAX];
};

size_t sl_req_conn_size(void)
{
    return sizeof(struct sl_req_conn);
}

bool sl_req_any(const struct sl_runtime *rt, enum sl_dir dir)
{
    const struct sl_config *c = rt->cfg;
    for (int i = 0; i < c->nrules; i++)
        if (c->rules[i].request && c->rules[i].dir == dir) return true;
    return false;
}

bool sl_req_conn_init(struct sl_req_conn *c, struct sl_runtime *rt, enum sl_dir dir,
                      const struct sl_addr *local, const struct sl_addr *peer, uint64_t now)
{
    (void)now;
    const struct sl_config *cfg = rt->cfg;
    uint64_t m = sl_rules_matching(rt, dir, local, peer), req = 0;
    for (int i = 0; i < cfg->nrules && i < SL_MAX_RULES; i++)
        if ((m >> i & 1) && cfg->rules[i].request) req |= 1ull << i;
    if (!req) return false;
    memset(c, 0, offsetof(struct sl_req_conn, reply));
    c->x.rt = rt;
    c->x.peer = *peer;
    c->x.match = req;
    c->x.wall_offset = sl_clock_wall_offset();
    /* one header is read per connection: the first rule's that keys on one */
    for (int i = 0; i < cfg->nrules && i < SL_MAX_RULES; i++) {
        const struct sl_rule *r = &cfg->rules[i];
        if ((req >> i & 1) && r->req_per == SL_REQ_PER_HEADER) {
            memcpy(c->x.header, r->req_per_name, sizeof c->x.header);
            break;
        }
    }
    sl_req_rules_entries(&c->x);
    sl_h1_init(&c->h1, c->x.header);
    return true;
}

static void to_head(const struct sl_h1_head *a, struct sl_req_head *b)
{
    *b = (struct sl_req_head){
        .method = a->method,
        .method_len = a->method_len,
        .path = a->path,
        .path_len = a->path_len,
        .query = a->query,
        .query_len = a->query_len,
        .host = a->host,
        .host_len = a->host_len,
        .cookie = a->cookie,
        .cookie_len = a->cookie_len,
        .idem = a->idem,
        .idem_len = a->idem_len,
        .header = a->header,
        .header_len = a->header_len,
    };
}

static void deny(struct sl_req_conn *c, uint64_t at, const struct sl_req_decision *d)
{
    const struct sl_rule *r = &c->x.rt->cfg->rules[d->rule];
    c->denied = true;
    c->denied_at = at;
    c->denied_rule = d->rule;
    c->denied_action = r->action == SL_ACT_REJECT ? SL_ACT_REJECT : SL_ACT_REPLY;
    if (r->reply && r->reply_len) {
        c->reply_len = r->reply_len < sizeof c->reply ? r->reply_len : sizeof c->reply;
        memcpy(c->reply, r->reply, c->reply_len);
    } else {
        c->reply_len = sl_reply_429_policy(c->reply, sizeof c->reply, &d->v, &d->policy);
    }
}

/* What stops the bytes at stream offset `at`: fills v, returns the bytes
 * before it that may pass. */
static size_t stop(const struct sl_req_conn *c, uint64_t at, uint64_t now, struct sl_req_verdict *v)
{
    if (c->denied && at == c->denied_at) {
        v->status = SL_REQ_DENY;
        v->rule = c->denied_rule;
        v->action = c->denied_action;
        v->reply = c->reply;
        v->reply_len = c->reply_len;
    } else {
        v->status = SL_REQ_HOLD;
        v->wait_ns = c->held_until > now ? c->held_until - now : 0;
    }
    return (size_t)(at - c->pos);
}

size_t sl_req_admit(struct sl_req_conn *c, const void *buf, size_t len, uint64_t now,
                    struct sl_req_verdict *v)
{
    memset(v, 0, sizeof *v);
    v->status = SL_REQ_PASS;
    v->rule = -1;
    if (c->denied && c->denied_at <= c->pos) return stop(c, c->pos, now, v);
    if (sl_h1_passthrough(&c->h1)) return len;
    if (c->held && now >= c->held_until) {
        c->held = false;
        c->decided = c->held_at + 1;
    }
    if (c->held && c->held_at == c->pos) return stop(c, c->pos, now, v);

    struct sl_h1 ahead;
    sl_h1_copy(&ahead, &c->h1);
    size_t off = 0;
    while (off < len) {
        struct sl_h1_head hd;
        bool got;
        off += sl_h1_feed(&ahead, (const char *)buf + off, len - off, &hd, &got);
        if (!got || hd.start < c->decided) continue;
        if (c->denied && hd.start >= c->denied_at) return stop(c, c->denied_at, now, v);
        if (c->held) { /* a later head waits behind the held one */
            if (hd.start >= c->held_at) return stop(c, c->held_at, now, v);
            continue;
        }
        struct sl_req_head h;
        struct sl_req_decision d;
        to_head(&hd, &h);
        sl_req_decide(&c->x, &h, now, &d);
        if (!d.allowed) {
            deny(c, hd.start, &d);
            return stop(c, hd.start, now, v);
        }
        if (d.wait_ns) {
            c->held = true;
            c->held_at = hd.start;
            c->held_until = now + d.wait_ns;
            return stop(c, hd.start, now, v);
        }
        c->decided = hd.start + 1;
    }
    if (sl_h1_in_head(&ahead) && ahead.head_start >= c->pos) {
        size_t before = (size_t)(ahead.head_start - c->pos);
        if (before == 0) v->status = SL_REQ_NEED_MORE;
        return before;
    }
    return len;
}

void sl_req_passed(struct sl_req_conn *c, const void *buf, size_t n)
{
    size_t off = 0;
    while (buf && off < n) {
        struct sl_h1_head hd;
        bool got;
        off += sl_h1_feed(&c->h1, (const char *)buf + off, n - off, &hd, &got);
    }
    c->pos += n;
}

bool sl_req_done(const struct sl_req_conn *c)
{
    return sl_h1_passthrough(&c->h1) && !c->denied;
}

void sl_req_conn_fini(struct sl_req_conn *c)
{
    (void)c;
}
