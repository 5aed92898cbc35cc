/* SPDX-License-Identifier: BSD-2-Clause */
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
 * EINPROGRESS at once, is held back and performed when its turn comes
 * (pending.c), and the program sees it complete as usual. getsockopt's
 * SO_ERROR (interposed here, for held-back descriptors only) gives the
 * rule's errno when its turn never came.
 *
 * The contract of connect(2) holds while a blocking connect waits:
 *   - a signal whose handler lacks SA_RESTART ends the wait with EINTR
 *     (shim/wait.h says how that is told), and, as the kernel's connect
 *     after EINTR, the connect goes on in the background: it is held back
 *     as a non-blocking one would be, so poll for writability and SO_ERROR
 *     (what python does after EINTR) see it complete;
 *   - SO_SNDTIMEO ends the wait with EINPROGRESS, the connect again going
 *     on in the background, as the kernel does;
 *   - connect() again on a socket whose connect is held back returns
 *     EALREADY, and once a held-back connect has failed, the next connect
 *     reports that error once (as SO_ERROR does); on a socket the kernel is
 *     connecting or has connected, the kernel answers (EALREADY, EISCONN):
 *     nothing is counted twice;
 *   - a held-back connect whose socket is closed before its turn gives its
 *     turn back (fd.c), so a program that gives up on a connect (asyncio's
 *     wait_for) does not push every later connect further away.
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <fcntl.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "../core/clock.h"
#include "../core/log.h"
#include "../core/policy/connect.h"
#include "close.h"
#include "fd.h"
#include "pending.h"
#include "ready.h"
#include "reload.h"
#include "reqout.h"
#include "shim.h"
#include "wait.h"

/* The TCP state of fd (TCP_CLOSE: never connected, or failed), or -1 for
 * a socket that is not TCP. tcpi_state is the first byte of tcp_info. */
static int tcp_state(int fd)
{
    uint8_t info[8] = {0};
    socklen_t len = sizeof info;
    int saved = errno;
    int rc = REAL(getsockopt)(fd, IPPROTO_TCP, TCP_INFO, info, &len);
    errno = saved;
    return rc == 0 && len >= 1 ? info[0] : -1;
}

/* Carries out the verdict of a connect (core/policy/connect.h). Returns 0
 * with d->wait_ns the time to wait before connecting, or the errno to fail
 * with. A blocking caller may be made to wait here for a window to open or
 * a connection to close (delay rules), until `deadline` (SO_SNDTIMEO; 0:
 * none) or a signal: the connect is then handed to the asynchronous path
 * like a non-blocking one, and *cut says which (EAGAIN or EINTR). A
 * non-blocking caller only ever waits for a GCRA turn, asynchronously. */
static int decide(struct sl_runtime *rt, const struct sl_addr *dst, bool nonblock,
                  uint64_t deadline, struct sl_decision *d, int *cut)
{
    uint64_t start = sl_clock_now(), now = start;
    for (;;) {
        int err = 0;
        switch (sl_decide_connect(rt, dst, start, 0, now, d, &err)) {
        case SL_CONNECT_GO:
        case SL_CONNECT_TURN:
            return 0;
        case SL_CONNECT_DENY:
            return err;
        case SL_CONNECT_RETRY:
            break;
        }
        if (!nonblock && sl_wait_until(now + d->v.retry_ns, deadline) != 0) *cut = errno;
        if (nonblock || *cut) { /* asked again later, asynchronously: see pending.c */
            d->outcome = SL_PASS;
            d->wait_ns = *cut ? 0 : d->v.retry_ns;
            return 0;
        }
        now = sl_clock_now();
    }
}

/* SO_ERROR of a held-back connect that failed asynchronously (reported
 * once, as the kernel does); everything else is the kernel's. */
SL_EXPORT int getsockopt(int fd, int level, int name, void *val, socklen_t *len)
{
    struct sl_fd *e;
    if (level == SOL_SOCKET && name == SO_ERROR && val && len && *len >= sizeof(int) &&
        (e = sl_fd_get(fd)) && atomic_load(&e->connect_error)) {
        *(int *)val = sl_pending_error(e);
        *len = sizeof(int);
        return 0;
    }
    return REAL(getsockopt)(fd, level, name, val, len);
}

/* A connection no rule matches by address, while an outbound request rule
 * names a host: the client may name it (SNI, Host), so its first writes
 * are watched (reqout.c keeps a small state until then). */
static int named(struct sl_runtime *rt, int fd, const struct sockaddr *sa, socklen_t len,
                 const struct sl_addr *dst)
{
    if (tcp_state(fd) != TCP_CLOSE) return REAL(connect)(fd, sa, len);
    int rc = REAL(connect)(fd, sa, len);
    if (rc == 0 || errno == EINPROGRESS || errno == EINTR) {
        int saved = errno;
        sl_reqout_connect(rt, fd, dst);
        errno = saved;
    }
    return rc;
}

SL_EXPORT int connect(int fd, const struct sockaddr *sa, socklen_t len)
{
    struct sl_runtime *rt = sl_runtime_now();
    struct sl_addr dst;
    struct sl_fd *e;
    if (rt) rt = sl_reload_check(rt); /* `sluice reload` published a new configuration */
    if (!rt || !rt->any_out || !sl_addr_from_sockaddr(&dst, sa, len))
        return REAL(connect)(fd, sa, len);
    if (!sl_out_matches(rt, &dst))
        return rt->any_req_names ? named(rt, fd, sa, len, &dst) : REAL(connect)(fd, sa, len);
    if ((e = sl_fd_get(fd)) && sl_pending_held(e)) return sl_pending_again(e);
    /* Not TCP, or a connect the kernel already has in hand: the kernel
     * answers (EALREADY, EISCONN, ...), and nothing is counted again. */
    if (tcp_state(fd) != TCP_CLOSE) return REAL(connect)(fd, sa, len);

    int saved = errno, cut = 0;
    bool nonblock = sl_fd_nonblocking(fd);
    uint64_t deadline = nonblock ? 0 : sl_wait_deadline(fd, SO_SNDTIMEO, sl_clock_now());
    struct sl_decision d;
    int err = decide(rt, &dst, nonblock, deadline, &d, &cut);
    if (err) {
        errno = err;
        return -1;
    }
    if (d.wait_ns && !nonblock && !cut) {
        uint64_t turn = sl_clock_now() + d.wait_ns;
        if (sl_wait_until(turn, deadline) != 0) {
            cut = errno;
            uint64_t now = sl_clock_now();
            d.wait_ns = turn > now ? turn - now : 0;
        } else {
            d.wait_ns = 0;
        }
    }
    if ((nonblock && d.wait_ns) || cut) {
        if (sl_pending_hold(fd, sa, len, &d) == 0) {
            struct sl_fd *held = sl_fd_get(fd);
            sl_ready_throttle(fd, held, SL_IO_SEND, held->connect_at);
            errno = cut == EINTR ? EINTR : EINPROGRESS;
            return -1;
        }
        if (cut == EINTR) { /* cannot be followed: give the turn back, report the signal */
            sl_decide_out_refund(rt, &dst, d.took, sl_clock_now());
            sl_conn_release(rt, d.conn_rec);
            errno = EINTR;
            return -1;
        }
    }
    sl_fd_carry(fd, &d);
    errno = saved;
    int rc = REAL(connect)(fd, sa, len);
    if (rc < 0 && errno != EINPROGRESS && errno != EINTR) {
        int en = errno;
        sl_fd_drop(fd);
        errno = en;
    } else {
        sl_reqout_connect(rt, fd, &dst); /* its requests, if an outbound request rule matches */
    }
    return rc;
}
