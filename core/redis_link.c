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

#include "clock.h"
#include "hostport.h"
#include "mem.h"
#include "sys.h"

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

int sl_rlink_exchange(struct sl_rlink *l, size_t want, uint64_t deadline, sl_rlink_fn fn, void *ctx)
{
    const uint64_t timeout = l->timeout_ns;
    const uint64_t last = deadline + 7 * timeout;
    size_t sent = 0, got = 0;
    char buf[16384];
    if (l->fd < 0) return -1;
    while (got < want) {
        short ev = POLLIN | (sent < l->outlen ? POLLOUT : 0);
        int rev = wait_fd(l, ev, deadline);
        if (rev == 0) return sl_rlink_fail(l, "timed out", 0);
        if (rev < 0) {
            if (errno == EINTR) continue;
            return sl_rlink_fail(l, "ppoll", errno);
        }
        if ((rev & POLLOUT) && sent < l->outlen) {
            ssize_t n = sl_sys_sendto(l->fd, l->out + sent, l->outlen - sent,
                                      MSG_NOSIGNAL | MSG_DONTWAIT, NULL, 0);
            if (n < 0 && errno != EAGAIN && errno != EINTR) return sl_rlink_fail(l, "send", errno);
            if (n > 0) sent += (size_t)n;
            if (n > 0) deadline = progress(deadline, timeout, last);
        }
        if (rev & (POLLIN | POLLHUP | POLLERR)) {
            ssize_t n = sl_sys_recvfrom(l->fd, buf, sizeof buf, MSG_DONTWAIT);
            if (n == 0) return sl_rlink_fail(l, "connection closed by Redis", 0);
            if (n < 0) {
                if (errno == EAGAIN || errno == EINTR) continue;
                return sl_rlink_fail(l, "recv", errno);
            }
            deadline = progress(deadline, timeout, last);
            if (feed(l, buf, (size_t)n, &got, want, fn, ctx) != 0) return -1;
        }
    }
    l->outlen = 0;
    return 0;
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
