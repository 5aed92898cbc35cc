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
 * and the program sees it complete as usual. A wait for a window or for a
 * connection to close (conns) is asked again at each retry time until
 * max_delay (sl_connect_redecide); out of time, the socket is left
 * unconnected, so it reports writable with POLLHUP, and getsockopt's
 * SO_ERROR (interposed for that descriptor only) gives the rule's errno.
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
#include "wait.h"

static void sleep_until(uint64_t deadline_ns)
{
    while (sl_wait_until(deadline_ns, 0) != 0) {
    }
}

static bool is_stream(int fd)
{
    int type = 0, saved = errno;
    socklen_t len = sizeof type;
    bool stream = REAL(getsockopt)(fd, SOL_SOCKET, SO_TYPE, &type, &len) != 0 || type == SOCK_STREAM;
    errno = saved;
    return stream;
}

static int deny(struct sl_runtime *rt, const struct sl_addr *dst, const struct sl_decision *d)
{
    const struct sl_rule *r = &rt->cfg->rules[d->rule];
    sl_table_count(rt->table, rt->table_rule[d->rule], SL_C_LIMITED, 1);
    char text[64];
    sl_addr_format(dst->a, text, sizeof text);
    sl_log(SL_LOG_INFO, "rule \"%s\": limited connect to %s port %u (%s)", r->name, text, dst->port,
           d->conns_full ? "all connections in use" : "rate");
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
        bool can_wait = r->action == SL_ACT_DELAY && (r->limit.alg != SL_ALG_GCRA || d->conns_full);
        if (!can_wait || spent + d->v.retry_ns > r->max_delay_ns) return deny(rt, dst, d);
        if (nonblock) { /* asked again later, asynchronously: see hold_back */
            d->outcome = SL_PASS;
            d->wait_ns = d->v.retry_ns;
            d->redecide_until = start + r->max_delay_ns;
            return 0;
        }
        sleep_until(now + d->v.retry_ns);
        now = sl_clock_now();
    }
}

/* A non-blocking connect that must wait its turn: recorded, reported as
 * in progress, and performed by the readiness layer when the turn comes. */
static int hold_back(int fd, const struct sockaddr *sa, socklen_t len, const struct sl_decision *d)
{
    struct sl_fd *e = sl_fd_track(fd);
    if (!e || len > sizeof e->peer) return -1;
    e->redecide = d->redecide_until != 0;
    e->connect_deadline = d->redecide_until;
    if (!e->redecide) sl_fd_carry(fd, d); /* a re-decided connect carries its final decision */
    memcpy(&e->peer, sa, len);
    e->peerlen = len;
    e->connect_at = sl_clock_now() + d->wait_ns;
    atomic_store(&e->ready_at[SL_IO_SEND], e->connect_at);
    atomic_store(&e->pending_connect, 1);
    sl_ready_throttle(fd, SL_IO_SEND, e->connect_at);
    errno = EINPROGRESS;
    return 0;
}

bool sl_connect_redecide(int fd, struct sl_fd *e, uint64_t now)
{
    struct sl_runtime *rt = atomic_load(&sl_runtime_ptr);
    struct sl_addr dst;
    if (!rt || !sl_addr_from_sockaddr(&dst, (struct sockaddr *)&e->peer, e->peerlen)) return true;
    uint64_t budget = e->connect_deadline > now ? e->connect_deadline - now : 0;
    struct sl_decision d;
    sl_decide_out(rt, &dst, now, budget, &d);
    if (d.outcome == SL_PASS) {
        sl_fd_carry(fd, &d);
        e->redecide = false;
        if (d.wait_ns) { /* a GCRA turn reserved now: connect then */
            e->connect_at = now + d.wait_ns;
            atomic_store(&e->ready_at[SL_IO_SEND], e->connect_at);
            return false;
        }
        atomic_store(&e->ready_at[SL_IO_SEND], 0);
        int rc = REAL(connect)(fd, (struct sockaddr *)&e->peer, e->peerlen);
        (void)rc; /* EINPROGRESS as usual */
        return true;
    }
    if (now + d.v.retry_ns <= e->connect_deadline) {
        e->connect_at = now + d.v.retry_ns;
        atomic_store(&e->ready_at[SL_IO_SEND], e->connect_at);
        return false;
    }
    /* Out of time: the socket stays unconnected, so the program sees it
     * writable with POLLHUP and reads this errno from SO_ERROR. */
    atomic_store(&e->connect_error, deny(rt, &dst, &d));
    atomic_store(&e->ready_at[SL_IO_SEND], 0);
    return true;
}

/* SO_ERROR of a held-back connect that failed asynchronously (reported
 * once, as the kernel does); everything else is the kernel's. */
SL_EXPORT int getsockopt(int fd, int level, int name, void *val, socklen_t *len)
{
    struct sl_fd *e;
    if (level == SOL_SOCKET && name == SO_ERROR && val && len && *len >= sizeof(int) &&
        (e = sl_fd_get(fd)) && atomic_load(&e->connect_error)) {
        *(int *)val = atomic_exchange(&e->connect_error, 0);
        *len = sizeof(int);
        return 0;
    }
    return REAL(getsockopt)(fd, level, name, val, len);
}

SL_EXPORT int connect(int fd, const struct sockaddr *sa, socklen_t len)
{
    struct sl_runtime *rt = sl_runtime();
    struct sl_addr dst;
    if (!rt || !rt->any_out || !sl_addr_from_sockaddr(&dst, sa, len) || !sl_out_matches(rt, &dst) ||
        !is_stream(fd))
        return REAL(connect)(fd, sa, len);

    int saved = errno;
    bool nonblock = sl_fd_nonblocking(fd);
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
