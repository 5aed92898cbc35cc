/* SPDX-License-Identifier: BSD-2-Clause */
/* redis_link.c - one connection of the Redis sender to one server.
 *
 * The socket is the link's own, non-blocking, driven by raw system calls
 * (sys.h) with ppoll deadlines, so no hook of sluice's (or another
 * preloaded library's) sees it and nothing waits past the deadline; the
 * sender thread is its only user. hiredis formats the commands
 * (redisFormatCommandArgv) and parses the replies (redisReader), from
 * sluice's arena (redis_alloc.c).
 */
#include "redis_link.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/un.h>
#include <time.h>

#include "../clock.h"
#include "hostport.h"
#include "../mem.h"
#include "../sys.h"

bool sl_rlink_append(struct sl_rlink *l, int argc, const char **argv, const size_t *len)
{
    char *cmd;
    int n = redisFormatCommandArgv(&cmd, argc, argv, len);
    if (n < 0) return false;
    if (l->outlen + (size_t)n > l->outcap) {
        size_t cap = l->outcap ? l->outcap : 65536;
        while (cap < l->outlen + (size_t)n)
            cap *= 2;
        char *p = sl_realloc(l->out, cap);
        if (!p) {
            redisFreeCommand(cmd);
            return false;
        }
        l->out = p;
        l->outcap = cap;
    }
    memcpy(l->out + l->outlen, cmd, (size_t)n);
    l->outlen += (size_t)n;
    redisFreeCommand(cmd);
    return true;
}

void sl_rlink_drop(struct sl_rlink *l)
{
    if (l->fd >= 0) sl_sys_close(l->fd);
    l->fd = -1;
    if (l->mirror) *l->mirror = -1;
    if (l->reader) redisReaderFree(l->reader);
    l->reader = NULL;
    l->outlen = 0; /* what was not sent is not sent on the next connection */
}

int sl_rlink_fail(struct sl_rlink *l, const char *what, int err)
{
    if (err)
        snprintf(l->why, sizeof l->why, "%s: %s", what, strerror(err));
    else
        snprintf(l->why, sizeof l->why, "%s", what);
    sl_rlink_drop(l);
    return -1;
}

void sl_rlink_free(struct sl_rlink *l)
{
    sl_rlink_drop(l);
    if (l->out) explicit_bzero(l->out, l->outcap);
    sl_free(l->out);
    l->out = NULL;
    l->outcap = 0;
}

static int remaining_ms(uint64_t deadline)
{
    uint64_t now = sl_clock_now();
    return now >= deadline ? 0 : (int)((deadline - now + 999999) / 1000000);
}

static uint64_t progress(uint64_t deadline, uint64_t timeout, uint64_t last)
{
    uint64_t d = sl_clock_now() + timeout;
    return d > last ? last : d > deadline ? d : deadline;
}

/* Waits for ev on the link's socket until deadline; a long wait (a slow
 * server, a sentinel or node that does not answer) keeps the sender's
 * heartbeat fresh, so that no other process of the program takes it for
 * dead and starts a second sender. */
static int wait_fd(struct sl_rlink *l, short ev, uint64_t deadline)
{
    if (l->beat) atomic_store_explicit(l->beat, sl_clock_now(), memory_order_relaxed);
    int fd = l->fd;
    int ms = remaining_ms(deadline);
    if (ms == 0) return 0;
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};
    struct pollfd p = {.fd = fd, .events = ev};
    int n = sl_sys_ppoll(&p, 1, &ts);
    return n > 0 ? p.revents : n;
}

int sl_rlink_connect(struct sl_rlink *l)
{
    struct sockaddr_storage ss = {0};
    socklen_t len;
    sl_rlink_drop(l);
    if (strncmp(l->addr, "unix:", 5) == 0) {
        struct sockaddr_un *un = (struct sockaddr_un *)&ss;
        un->sun_family = AF_UNIX;
        snprintf(un->sun_path, sizeof un->sun_path, "%s", l->addr + 5);
        len = sizeof *un;
    } else if (sl_hostport_parse(l->addr, &ss, &len)) {
        return sl_rlink_fail(l, "address is not ADDRESS:PORT", 0);
    }
    l->fd = sl_sys_socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (l->fd < 0) return sl_rlink_fail(l, "socket", errno);
    if (l->mirror) *l->mirror = l->fd;
    uint64_t deadline = sl_clock_now() + l->timeout_ns;
    if (sl_sys_connect(l->fd, (struct sockaddr *)&ss, len) != 0) {
        if (errno != EINPROGRESS && errno != EAGAIN) return sl_rlink_fail(l, "connect", errno);
        int rev = wait_fd(l, POLLOUT, deadline);
        if (rev <= 0) return sl_rlink_fail(l, "connect timed out", 0);
        int e = 0;
        socklen_t el = sizeof e;
        sl_sys_getsockopt(l->fd, SOL_SOCKET, SO_ERROR, &e, &el);
        if (e) return sl_rlink_fail(l, "connect", e);
    }
    l->reader = redisReaderCreate();
    if (!l->reader) return sl_rlink_fail(l, "out of memory", 0);
    return 0;
}

/* Feeds n bytes and hands every complete reply to fn; *got counts them. */
static int feed(struct sl_rlink *l, const char *buf, size_t n, size_t *got, size_t want,
                sl_rlink_fn fn, void *ctx)
{
    if (redisReaderFeed(l->reader, buf, n) != REDIS_OK)
        return sl_rlink_fail(l, "reply too large", 0);
    for (;;) {
        void *r = NULL;
        if (redisReaderGetReply(l->reader, &r) != REDIS_OK)
            return sl_rlink_fail(l, "malformed reply", 0);
        if (!r) return 0;
        int rc = *got < want ? fn(l, ctx, *got, r) : sl_rlink_fail(l, "reply not asked for", 0);
        freeReplyObject(r);
        (*got)++;
        if (rc != 0) {
            if (l->fd >= 0) sl_rlink_drop(l);
            return -1; /* fn said why */
        }
    }
}

/* One link's turn when its socket is ready: writes what is left of the
 * output, reads and hands over replies; x->rc 0 once every reply came,
 * -1 when it failed. */
static void rx_step(struct sl_rx *x, short rev)
{
    struct sl_rlink *l = x->l;
    char buf[16384];
    if ((rev & POLLOUT) && x->sent < l->outlen) {
        ssize_t n = sl_sys_sendto(l->fd, l->out + x->sent, l->outlen - x->sent,
                                  MSG_NOSIGNAL | MSG_DONTWAIT, NULL, 0);
        if (n < 0 && errno != EAGAIN && errno != EINTR) {
            x->rc = sl_rlink_fail(l, "send", errno);
            return;
        }
        if (n > 0) x->sent += (size_t)n;
        if (n > 0) x->deadline = progress(x->deadline, l->timeout_ns, x->last);
    }
    if (rev & (POLLIN | POLLHUP | POLLERR)) {
        ssize_t n = sl_sys_recvfrom(l->fd, buf, sizeof buf, MSG_DONTWAIT);
        if (n == 0) {
            x->rc = sl_rlink_fail(l, "connection closed by Redis", 0);
            return;
        }
        if (n < 0) {
            if (errno != EAGAIN && errno != EINTR) x->rc = sl_rlink_fail(l, "recv", errno);
            return;
        }
        x->deadline = progress(x->deadline, l->timeout_ns, x->last);
        if (feed(l, buf, (size_t)n, &x->got, x->want, x->fn, x->ctx) != 0) {
            x->rc = -1;
            return;
        }
    }
    if (x->got >= x->want) {
        l->outlen = 0;
        x->rc = 0;
    }
}

int sl_rlink_exchange_all(struct sl_rx *xs, size_t n)
{
    struct pollfd p[SL_RX_MAX];
    size_t at[SL_RX_MAX];
    int failed = 0;
    if (n > SL_RX_MAX) n = SL_RX_MAX;
    for (size_t i = 0; i < n; i++) {
        struct sl_rx *x = &xs[i];
        x->sent = x->got = 0;
        x->last = x->deadline + 7 * x->l->timeout_ns;
        x->rc = x->l->fd < 0 ? -1 : x->want ? 1 : 0;
    }
    for (;;) {
        size_t np = 0;
        uint64_t first = UINT64_MAX, now = sl_clock_now();
        for (size_t i = 0; i < n; i++) {
            struct sl_rx *x = &xs[i];
            if (x->rc == 1 && now >= x->deadline) x->rc = sl_rlink_fail(x->l, "timed out", 0);
            if (x->rc != 1) continue;
            p[np] = (struct pollfd){.fd = x->l->fd,
                                    .events = POLLIN | (x->sent < x->l->outlen ? POLLOUT : 0)};
            at[np++] = i;
            if (x->deadline < first) first = x->deadline;
        }
        if (!np) break;
        /* a long wait keeps the heartbeat fresh (wait_fd) */
        if (xs[at[0]].l->beat) atomic_store_explicit(xs[at[0]].l->beat, now, memory_order_relaxed);
        int ms = remaining_ms(first);
        struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};
        int r = ms ? sl_sys_ppoll(p, (nfds_t)np, &ts) : 0;
        if (r < 0 && errno != EINTR) {
            for (size_t k = 0; k < np; k++)
                xs[at[k]].rc = sl_rlink_fail(xs[at[k]].l, "ppoll", errno);
            break;
        }
        for (size_t k = 0; r > 0 && k < np; k++)
            if (p[k].revents) rx_step(&xs[at[k]], p[k].revents);
    }
    for (size_t i = 0; i < n; i++)
        failed += xs[i].rc != 0;
    return failed ? -1 : 0;
}

int sl_rlink_exchange(struct sl_rlink *l, size_t want, uint64_t deadline, sl_rlink_fn fn, void *ctx)
{
    struct sl_rx x = {.l = l, .want = want, .deadline = deadline, .fn = fn, .ctx = ctx};
    if (l->fd < 0) return -1;
    if (!want) {
        l->outlen = 0;
        return 0;
    }
    return sl_rlink_exchange_all(&x, 1);
}

int sl_rlink_drain(struct sl_rlink *l, sl_rlink_fn fn, void *ctx)
{
    char buf[4096];
    size_t got = 0;
    if (l->fd < 0) return -1;
    for (int i = 0; i < 64; i++) { /* bounded: a flood of messages waits for the next loop */
        ssize_t n = sl_sys_recvfrom(l->fd, buf, sizeof buf, MSG_DONTWAIT);
        if (n == 0) return sl_rlink_fail(l, "connection closed", 0);
        if (n < 0) {
            if (errno == EAGAIN || errno == EINTR) return 0;
            return sl_rlink_fail(l, "recv", errno);
        }
        if (feed(l, buf, (size_t)n, &got, (size_t)-1, fn, ctx) != 0) return -1;
    }
    return 0;
}
