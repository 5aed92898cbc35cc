/* SPDX-License-Identifier: BSD-2-Clause */
/* accept.c - inbound connection limits: accept and accept4.
 *
 * The real call runs first, always into our own address buffer (the
 * program may pass NULL, and we need the peer either way). A connection the
 * rules deny is never seen by the program: `reject` resets it (SO_LINGER 0),
 * `reply` writes the canned response and lingers (linger.c). The call then
 * goes on to the next pending connection, so:
 *   - a blocking socket blocks, as it would have with no connection pending;
 *   - a non-blocking socket returns EAGAIN once the queue is empty, which
 *     every event loop handles, and an edge-triggered one is re-armed by
 *     the next connection: we only return EAGAIN when the kernel did.
 * So the errno values a denial can produce are those of the real call on an
 * empty or interrupted queue (EAGAIN, EWOULDBLOCK, EINTR, ...), all legal.
 * A call that passes leaves errno exactly as libc set it.
 */
#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../core/clock.h"
#include "../core/http/reply.h"
#include "fd.h"
#include "reqin.h"
#include "reload.h"
#include "shim.h"
#include "wait.h"

static void deny(const struct sl_runtime *rt, int fd, const struct sl_decision *d)
{
    const struct sl_rule *r = &rt->cfg->rules[d->rule];
    if (r->action == SL_ACT_REPLY) {
        char buf[SL_REPLY_MAX];
        const char *out = r->reply;
        size_t len = r->reply_len;
        if (!out) {
            len = sl_reply_429(buf, sizeof buf, &d->v);
            out = buf;
        }
        char sink[4096];
        while (REAL(recv)(fd, sink, sizeof sink, MSG_DONTWAIT) > 0) {
        }
        if (REAL(send)(fd, out, len, MSG_DONTWAIT | MSG_NOSIGNAL) >= 0 &&
            REAL(shutdown)(fd, SHUT_WR) == 0) {
            sl_linger_add(fd);
            return;
        }
    }
    struct linger hard = {.l_onoff = 1, .l_linger = 0};
    setsockopt(fd, SOL_SOCKET, SO_LINGER, &hard, sizeof hard);
    REAL(close)(fd);
}

#define listen_port sl_listen_port

/* The rules that can match a connection accepted from lfd, whose local
 * port is `port`: worked out once per listener and configuration (a reload
 * changes the generation), so an accept does not try every rule's ports. */
static uint64_t listen_rules(const struct sl_runtime *rt, int lfd, uint16_t port)
{
    if ((unsigned)lfd >= SL_FD_MAX || rt->cfg->nrules > 31) return SL_ALL_RULES;
    uint64_t w = atomic_load_explicit(&sl_listen_rules[lfd], memory_order_relaxed);
    if (__builtin_expect((w & SL_LISTEN_KNOWN) && (uint32_t)(w >> 32) == rt->config_gen, 1))
        return w & (SL_LISTEN_KNOWN - 1);
    uint64_t rules = sl_in_rules_for_port(rt, port);
    atomic_store_explicit(&sl_listen_rules[lfd],
                          (uint64_t)rt->config_gen << 32 | SL_LISTEN_KNOWN | rules,
                          memory_order_relaxed);
    return rules;
}

static bool local_of(int fd, struct sl_addr *out)
{
    struct sockaddr_storage ls;
    socklen_t ll = sizeof ls;
    return getsockname(fd, (struct sockaddr *)&ls, &ll) == 0 &&
           sl_addr_from_sockaddr(out, (struct sockaddr *)&ls, ll);
}

/* The verdict for one connection accepted from lfd; one that passes is
 * recorded with what it carries on. */
static bool admit(struct sl_runtime *rt, int lfd, int fd, const struct sockaddr_storage *ss,
                  socklen_t len, uint64_t now, struct sl_decision *d)
{
    struct sl_addr peer, local = {0}, *lp = NULL;
    uint64_t rules = SL_ALL_RULES;
    if (!sl_addr_from_sockaddr(&peer, (const struct sockaddr *)ss, len)) {
        /* Unix sockets and the like carry nothing (sl_decide_in fills d otherwise) */
        *d = (struct sl_decision){
            .outcome = SL_PASS, .rule = -1, .bytes_rule = {-1, -1}, .conn_rec = {-1, -1}};
        return true;
    }
    if (rt->in_needs_local_addr) {
        if (local_of(fd, &local)) lp = &local;
    } else if (rt->in_needs_local) {
        uint32_t p1 = (unsigned)lfd < SL_FD_MAX
                          ? atomic_load_explicit(&listen_port[lfd], memory_order_relaxed)
                          : 0;
        if (p1 == 0 && local_of(fd, &local)) {
            p1 = local.port + 1u;
            if ((unsigned)lfd < SL_FD_MAX)
                atomic_store_explicit(&listen_port[lfd], p1, memory_order_relaxed);
        }
        local.port = (uint16_t)(p1 - 1);
        if (p1) {
            lp = &local;
            rules = listen_rules(rt, lfd, local.port);
        }
    }
    bool pass;
    if (rules && !(rules & (rules - 1)) && (rules & rt->lean_in)) {
        /* the port's one rule looks at the peer alone: nothing to carry */
        pass = sl_decide_in_lean(rt, __builtin_ctzll(rules), &peer, now, d);
    } else {
        sl_decide_in_rules(rt, rules, lp, &peer, now, d);
        pass = d->outcome == SL_PASS;
        if (pass && sl_fd_carries(d)) sl_fd_carry(fd, d);
    }
    if (pass && rt->any_req_in)
        sl_reqin_accept(rt, fd, lp, &peer); /* its own test, here: no call */
    return pass;
}

static int sl_accept(int lfd, struct sockaddr *addr, socklen_t *addrlen, int flags, bool four)
{
    struct sl_runtime *rt = sl_runtime_now();
    if (rt) rt = sl_reload_check(rt); /* `sluice reload` published a new configuration */
    if (!rt || !rt->any_in || (addr && !addrlen))
        return four ? REAL(accept4)(lfd, addr, addrlen, flags) : REAL(accept)(lfd, addr, addrlen);

    int saved = errno;
    uint64_t start = sl_clock_now();
    sl_linger_service();
    uint64_t deadline = 0;
    for (bool denied = false;; denied = true) {
        /* After a denial a blocking accept goes on waiting, as the kernel's
         * would: its SO_RCVTIMEO counts from the start of the call and a
         * signal ends it as the kernel's would (shim/wait.h). */
        if (denied && !sl_fd_nonblocking(lfd)) {
            if (!deadline) deadline = sl_wait_deadline(lfd, SO_RCVTIMEO, start);
            if (sl_wait_fd(lfd, POLLIN, deadline) != 0) return -1;
        }
        struct sockaddr_storage ss;
        socklen_t len = sizeof ss;
        int fd = four ? REAL(accept4)(lfd, (struct sockaddr *)&ss, &len, flags)
                      : REAL(accept)(lfd, (struct sockaddr *)&ss, &len);
        if (fd < 0) return fd;

        /* decided as of now, with what is published now: a blocking accept
         * may have waited long since the call began */
        rt = sl_reload_check(rt);
        struct sl_decision d;
        if (admit(rt, lfd, fd, &ss, len, sl_clock_now(), &d)) {
            if (addr) {
                socklen_t n = len < *addrlen ? len : *addrlen;
                if (n == sizeof(struct sockaddr_in)) /* the common case: a copy of fixed size */
                    memcpy(addr, &ss, sizeof(struct sockaddr_in));
                else
                    memcpy(addr, &ss, n);
                *addrlen = len;
            }
            errno = saved;
            return fd;
        }
        deny(rt, fd, &d);
    }
}

SL_EXPORT int accept(int fd, struct sockaddr *addr, socklen_t *addrlen)
{
    return sl_accept(fd, addr, addrlen, 0, false);
}

SL_EXPORT int accept4(int fd, struct sockaddr *addr, socklen_t *addrlen, int flags)
{
    return sl_accept(fd, addr, addrlen, flags, true);
}
