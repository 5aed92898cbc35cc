/* SPDX-License-Identifier: BSD-2-Clause */
/* readiness.c - readiness virtualisation, the part that needs no system.
 *
 * The problem. A non-blocking socket whose byte budget is empty gets EAGAIN
 * from recv/send although the kernel has data (or room). An event loop
 * that keeps asking the kernel would hear "readable" at once and spin
 * (level-triggered), or never hear about it again (edge-triggered: the
 * edge was consumed, the budget refill is not a kernel event). trickle has
 * both bugs.
 *
 * The approach. While a direction is throttled, the wait wrappers do not
 * ask the kernel for it: poll/select drop the event bits from a copy of the
 * program's request; epoll takes them out of the kernel registration with
 * EPOLL_CTL_MOD, keeping the program's own events and data in a shadow
 * table. Every wait is cut to the next refill; when it comes, the wrapper
 * asks again with the events back (for epoll: a MOD with the program's
 * events, which re-evaluates readiness and so gives an edge-triggered
 * registration a new edge if data is waiting). A wait that ends with
 * nothing before the program's own timeout is repeated with the time left,
 * so the program sees one call.
 *
 * The shadow table is an open-addressing hash keyed by (epfd, fd), linear
 * probing with backward-shift deletion (no tombstones, so a long-running
 * program's table never fills with them), grown at half load. Registrations
 * that differ from what the program asked for are also on a short list (in
 * practice, the descriptors throttled right now), which the wait wrappers
 * scan instead of the table. Epoll descriptors are few (one per event loop)
 * and kept in a small array: "every registration of fd" is one lookup per
 * epoll descriptor.
 *
 * Locking is the caller's: shim/epoll.c holds its one mutex around every call.
 */
#include "readiness.h"

#include <limits.h>
#include <poll.h>
#include <string.h>
#include <sys/epoll.h>

#include "../mem.h"

unsigned sl_rd_throttled(uint64_t recv_at, uint64_t send_at, uint64_t now, uint64_t *wake)
{
    unsigned m = 0;
    if (recv_at > now) {
        m |= SL_RD_RECV;
        if (recv_at < *wake) *wake = recv_at;
    }
    if (send_at > now) {
        m |= SL_RD_SEND;
        if (send_at < *wake) *wake = send_at;
    }
    return m;
}

short sl_rd_poll_mask(unsigned throttled)
{
    short m = 0;
    if (throttled & (SL_RD_RECV | SL_RD_PARK)) m |= POLLIN | POLLRDNORM | POLLRDHUP;
    if (throttled & (SL_RD_SEND | SL_RD_PARK)) m |= POLLOUT | POLLWRNORM | POLLWRBAND;
    return m;
}

uint32_t sl_rd_epoll_mask(unsigned throttled)
{
    uint32_t m = 0;
    if (throttled & (SL_RD_RECV | SL_RD_PARK)) m |= EPOLLIN | EPOLLRDNORM | EPOLLRDHUP;
    if (throttled & (SL_RD_SEND | SL_RD_PARK)) m |= EPOLLOUT | EPOLLWRNORM | EPOLLWRBAND;
    return m;
}

uint64_t sl_rd_deadline(uint64_t now, int64_t timeout_ns)
{
    if (timeout_ns < 0) return SL_RD_FOREVER;
    if ((uint64_t)timeout_ns >= SL_RD_FOREVER - now) return SL_RD_FOREVER;
    return now + (uint64_t)timeout_ns;
}

uint64_t sl_rd_wait_ns(uint64_t now, uint64_t deadline, uint64_t wake)
{
    uint64_t until = wake < deadline ? wake : deadline;
    if (until == SL_RD_FOREVER) return SL_RD_FOREVER;
    return until > now ? until - now : 0;
}

int sl_rd_ms(uint64_t ns)
{
    if (ns == SL_RD_FOREVER) return -1;
    uint64_t ms = ns / 1000000 + (ns % 1000000 != 0);
    return ms > INT_MAX ? INT_MAX : (int)ms;
}

enum sl_rd_op sl_rd_plan(const struct sl_rd_reg *r, unsigned throttled, enum sl_rd_why why,
                         uint32_t *ev)
{
    if (r->events & EPOLLEXCLUSIVE) throttled = 0;
    if (throttled & SL_RD_PARK) {
        *ev = 0;
        return r->parked ? SL_RD_KEEP : SL_RD_DEL;
    }
    uint32_t want = r->events & ~sl_rd_epoll_mask(throttled);
    *ev = want;
    if (r->parked) return SL_RD_ADD;
    if (why == SL_RD_PROGRAM) return SL_RD_MOD; /* the program's MOD goes to the kernel as a MOD */
    if (r->events & EPOLLONESHOT) {
        /* Only a re-arm we masked is ours to redo. */
        if (why == SL_RD_THROTTLE || r->applied == r->events) return SL_RD_KEEP;
        return SL_RD_MOD;
    }
    return want == r->applied ? SL_RD_KEEP : SL_RD_MOD;
}

bool sl_rd_done(struct sl_rd_table *t, struct sl_rd_reg *r, enum sl_rd_op op, uint32_t ev,
                uint64_t wake)
{
    if (op == SL_RD_DEL) {
        r->parked = true;
    } else if (op != SL_RD_KEEP) {
        r->parked = false;
        r->applied = ev;
    }
    r->until = wake;
    if (r->parked || r->applied != r->events) return sl_rd_list(t, r);
    sl_rd_unlist(t, r);
    return false;
}

/* ---- the shadow table ---- */

static uint64_t key_of(int epfd, int fd)
{
    return (uint64_t)(uint32_t)epfd << 32 | (uint32_t)fd;
}

static uint32_t hash_of(uint64_t k, uint32_t cap)
{
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdull;
    k ^= k >> 33;
    return (uint32_t)k & (cap - 1);
}

struct sl_rd_reg *sl_rd_find(struct sl_rd_table *t, int epfd, int fd)
{
    if (!t->cap) return NULL;
    for (uint32_t i = hash_of(key_of(epfd, fd), t->cap);; i = (i + 1) & (t->cap - 1)) {
        struct sl_rd_reg *r = &t->slot[i];
        if (!r->used) return NULL;
        if (r->epfd == epfd && r->fd == fd) return r;
    }
}

static bool grow(struct sl_rd_table *t)
{
    uint32_t cap = t->cap ? t->cap * 2 : 64;
    struct sl_rd_reg *fresh = sl_alloc(cap * sizeof *fresh);
    if (!fresh) return false;
    for (uint32_t j = 0; j < t->cap; j++) {
        if (!t->slot[j].used) continue;
        uint32_t i = hash_of(key_of(t->slot[j].epfd, t->slot[j].fd), cap);
        while (fresh[i].used)
            i = (i + 1) & (cap - 1);
        fresh[i] = t->slot[j];
    }
    sl_free(t->slot);
    t->slot = fresh;
    t->cap = cap;
    return true;
}

static struct sl_rd_ep *ep_find(const struct sl_rd_table *t, int epfd)
{
    for (uint32_t i = 0; i < t->nep; i++)
        if (t->ep[i].epfd == epfd) return &t->ep[i];
    return NULL;
}

struct sl_rd_ep *sl_rd_ep(struct sl_rd_table *t, int epfd, bool create)
{
    struct sl_rd_ep *e = ep_find(t, epfd);
    if (e || !create) return e;
    if (t->nep == t->capep) {
        uint32_t cap = t->capep ? t->capep * 2 : 4;
        struct sl_rd_ep *fresh = sl_alloc(cap * sizeof *fresh);
        if (!fresh) return NULL;
        if (t->nep) memcpy(fresh, t->ep, t->nep * sizeof *fresh);
        sl_free(t->ep);
        t->ep = fresh;
        t->capep = cap;
    }
    e = &t->ep[t->nep++];
    memset(e, 0, sizeof *e);
    e->epfd = epfd;
    return e;
}

void sl_rd_ep_idle(struct sl_rd_table *t, int epfd)
{
    struct sl_rd_ep *e = ep_find(t, epfd);
    if (e && !e->nregs && !e->waiters) *e = t->ep[--t->nep];
}

struct sl_rd_reg *sl_rd_insert(struct sl_rd_table *t, int epfd, int fd)
{
    struct sl_rd_reg *r = sl_rd_find(t, epfd, fd);
    if (r) return r;
    if ((t->n + 1) * 2 > t->cap && !grow(t)) return NULL;
    struct sl_rd_ep *e = sl_rd_ep(t, epfd, true);
    if (!e) return NULL;
    uint32_t i = hash_of(key_of(epfd, fd), t->cap);
    while (t->slot[i].used)
        i = (i + 1) & (t->cap - 1);
    r = &t->slot[i];
    memset(r, 0, sizeof *r);
    r->used = true;
    r->epfd = epfd;
    r->fd = fd;
    t->n++;
    e->nregs++;
    return r;
}

static void list_drop(struct sl_rd_table *t, uint64_t k)
{
    for (uint32_t i = 0; i < t->nlist; i++)
        if (t->list[i] == k) {
            t->list[i] = t->list[--t->nlist];
            return;
        }
}

bool sl_rd_list(struct sl_rd_table *t, struct sl_rd_reg *r)
{
    if (r->listed) return true;
    if (t->nlist == t->caplist) {
        uint32_t cap = t->caplist ? t->caplist * 2 : 16;
        uint64_t *fresh = sl_alloc(cap * sizeof *fresh);
        if (!fresh) return false;
        if (t->nlist) memcpy(fresh, t->list, t->nlist * sizeof *fresh);
        sl_free(t->list);
        t->list = fresh;
        t->caplist = cap;
    }
    t->list[t->nlist++] = key_of(r->epfd, r->fd);
    r->listed = true;
    return true;
}

void sl_rd_unlist(struct sl_rd_table *t, struct sl_rd_reg *r)
{
    if (!r->listed) return;
    list_drop(t, key_of(r->epfd, r->fd));
    r->listed = false;
}

void sl_rd_remove(struct sl_rd_table *t, int epfd, int fd)
{
    struct sl_rd_reg *r = sl_rd_find(t, epfd, fd);
    if (!r) return;
    sl_rd_unlist(t, r);
    struct sl_rd_ep *e = ep_find(t, epfd);
    if (e && e->nregs) e->nregs--;
    /* backward-shift deletion: pull later members of the probe run into the hole */
    uint32_t hole = (uint32_t)(r - t->slot), mask = t->cap - 1;
    for (uint32_t j = (hole + 1) & mask; t->slot[j].used; j = (j + 1) & mask) {
        uint32_t home = hash_of(key_of(t->slot[j].epfd, t->slot[j].fd), t->cap);
        /* slot j may move to the hole when its home is not in (hole, j] */
        bool stays = hole <= j ? (home > hole && home <= j) : (home > hole || home <= j);
        if (stays) continue;
        t->slot[hole] = t->slot[j];
        hole = j;
    }
    memset(&t->slot[hole], 0, sizeof t->slot[hole]);
    t->n--;
    sl_rd_ep_idle(t, epfd);
}

void sl_rd_remove_fd(struct sl_rd_table *t, int fd)
{
    for (uint32_t i = t->nep; i-- > 0;) {
        if (i >= t->nep) continue; /* removal may have shrunk the array */
        sl_rd_remove(t, t->ep[i].epfd, fd);
    }
}

size_t sl_rd_due(const struct sl_rd_table *t, int epfd, uint64_t now, int32_t *epfds, int32_t *fds,
                 size_t max, uint64_t *next)
{
    size_t n = 0;
    for (uint32_t i = 0; i < t->nlist; i++) {
        int32_t ep = (int32_t)(t->list[i] >> 32), fd = (int32_t)(uint32_t)t->list[i];
        if (epfd >= 0 && ep != epfd) continue;
        if (epfd < 0) {
            const struct sl_rd_ep *e = ep_find(t, ep);
            if (!e || !e->waiters) continue;
        }
        const struct sl_rd_reg *r = sl_rd_find((struct sl_rd_table *)t, ep, fd);
        if (!r) continue;
        if (r->until <= now && n < max) {
            epfds[n] = ep;
            fds[n++] = fd;
        } else if (r->until < *next) {
            *next = r->until <= now ? now : r->until;
        }
    }
    return n;
}

void sl_rd_table_free(struct sl_rd_table *t)
{
    sl_free(t->slot);
    sl_free(t->list);
    sl_free(t->ep);
    memset(t, 0, sizeof *t);
}
