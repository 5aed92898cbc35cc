/* connect.c - outbound connection limits.
 *
 * Only TCP connects to an address some outbound rule matches are decided;
 * everything else (Unix sockets, UDP, unmatched destinations) goes straight
 * to libc after an in-memory match, with errno untouched.
 *
 * `delay`: the connect takes a place in the queue (a GCRA reservation,
 * first come, first served) and sleeps until its turn, then connects. A turn
 * further away than max_delay will not come in time, so the call fails at
 * once with the rule's errno (default ETIMEDOUT) rather than after a
 * pointless wait. Window algorithms cannot reserve: the call sleeps until
 * the window has room and asks again, within max_delay.
 * `reject`: fails at once with the rule's errno (default ECONNREFUSED).
 * Both errno values are ones connect(2) itself can return.
 *
 * On a non-blocking socket a delayed connect never sleeps: it returns
 * EINPROGRESS at once and is performed when its turn comes (fd.c, ready.c),
 * and the program sees it complete as usual. Waiting for a window or for a
 * connection to close (conns) is only done for blocking sockets; a
 * non-blocking connect that would need it fails with the rule's errno.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "../core/clock.h"
#include "../core/log.h"
#include "fd.h"
#include "ready.h"
#include "shim.h"

static void sleep_until(uint64_t deadline_ns)
{
    struct timespec ts = {.tv_sec = (time_t)(deadline_ns / SL_NS_PER_SEC),
                          .tv_nsec = (long)(deadline_ns % SL_NS_PER_SEC)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {}
}

static bool is_stream(int fd)
{
    int type = 0, saved = errno;
    socklen_t len = sizeof type;
    bool stream = getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) != 0 || type == SOCK_STREAM;
    errno = saved;
    return stream;
}

static int deny(struct sl_runtime *rt, const struct sl_addr *dst, const struct sl_decision *d)
{
    const struct sl_rule *r = &rt->cfg->rules[d->rule];
    sl_table_count(rt->table, rt->table_rule[d->rule], SL_C_LIMITED, 1);
    char text[64];
    sl_addr_format(dst->a, text, sizeof text);
    sl_log(SL_LOG_INFO, "rule \"%s\": limited connect to %s port %u (%s)", r->name, text,
           dst->port, d->conns_full ? "all connections in use" : "rate");
    return r->err;
}

/* Decides a connect. Returns 0 with d->wait_ns the time to wait before
 * connecting, or the errno to fail with. A blocking caller may be made to
 * wait here for a window to open or a connection to close (delay rules);
 * a non-blocking one only ever waits for a GCRA turn, asynchronously. */
static int decide(struct sl_runtime *rt, const struct sl_addr *dst, bool nonblock,
                  struct sl_decision *d)
{
    uint64_t start = sl_clock_now(), now = start;
    for (;;) {
        uint64_t spent = now - start;
        sl_decide_out(rt, dst, now, UINT64_MAX - spent, d);
        if (d->outcome == SL_PASS) return 0;
        const struct sl_rule *r = &rt->cfg->rules[d->rule];
        bool can_wait = r->action == SL_ACT_DELAY && !nonblock &&
                        (r->limit.alg != SL_ALG_GCRA || d->conns_full);
        if (!can_wait || spent + d->v.retry_ns > r->max_delay_ns) return deny(rt, dst, d);
        sleep_until(now + d->v.retry_ns);
        now = sl_clock_now();
    }
}

static bool is_nonblocking(int fd)
{
    int saved = errno;
    int fl = REAL(fcntl)(fd, F_GETFL);
    errno = saved;
    return fl >= 0 && (fl & O_NONBLOCK);
}

/* A non-blocking connect that must wait its turn: recorded, reported as
 * in progress, and performed by the readiness layer when the turn comes. */
static int hold_back(int fd, const struct sockaddr *sa, socklen_t len, const struct sl_decision *d)
{
    struct sl_fd *e = sl_fd_track(fd);
    if (!e || len > sizeof e->peer) return -1;
    sl_fd_carry(fd, d);
    memcpy(&e->peer, sa, len);
    e->peerlen = len;
    e->connect_at = sl_clock_now() + d->wait_ns;
    atomic_store(&e->ready_at[SL_IO_SEND], e->connect_at);
    atomic_store(&e->pending_connect, 1);
    sl_ready_throttle(fd, SL_IO_SEND, e->connect_at);
    errno = EINPROGRESS;
    return 0;
}

SL_EXPORT int connect(int fd, const struct sockaddr *sa, socklen_t len)
{
    struct sl_runtime *rt = sl_runtime();
    struct sl_addr dst;
    if (!rt || !rt->any_out || !sl_addr_from_sockaddr(&dst, sa, len) ||
        !sl_out_matches(rt, &dst) || !is_stream(fd))
        return REAL(connect)(fd, sa, len);

    int saved = errno;
    bool nonblock = is_nonblocking(fd);
    struct sl_decision d;
    int err = decide(rt, &dst, nonblock, &d);
    if (err) {
        errno = err;
        return -1;
    }
    if (d.wait_ns && nonblock && hold_back(fd, sa, len, &d) == 0) return -1;
    if (d.wait_ns) sleep_until(sl_clock_now() + d.wait_ns);
    sl_fd_carry(fd, &d);
    errno = saved;
    int rc = REAL(connect)(fd, sa, len);
    if (rc < 0 && errno != EINPROGRESS && errno != EINTR) {
        int e = errno;
        sl_fd_forget(fd);
        errno = e;
    }
    return rc;
}
