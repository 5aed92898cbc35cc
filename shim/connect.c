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
 * This version sleeps on the calling thread even for non-blocking sockets;
 * readiness virtualisation for event loops is the next step (issue 3).
 */
#include <errno.h>
#include <sys/socket.h>
#include <time.h>

#include "../core/clock.h"
#include "../core/log.h"
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

/* Returns 0 when the connect may go ahead, or the errno to fail with. */
static int wait_turn(struct sl_runtime *rt, const struct sl_addr *dst)
{
    uint64_t start = sl_clock_now(), now = start;
    for (;;) {
        struct sl_decision d;
        uint64_t spent = now - start;
        sl_decide_out(rt, dst, now, UINT64_MAX - spent, &d);
        if (d.outcome == SL_PASS) {
            if (d.wait_ns) sleep_until(now + d.wait_ns);
            return 0;
        }
        const struct sl_rule *r = &rt->cfg->rules[d.rule];
        int table_rule = rt->table_rule[d.rule];
        bool window = r->limit.alg != SL_ALG_GCRA;
        if (r->action == SL_ACT_DELAY && window && spent + d.v.retry_ns <= r->max_delay_ns) {
            sleep_until(now + d.v.retry_ns);
            now = sl_clock_now();
            continue;
        }
        sl_table_count(rt->table, table_rule, SL_C_LIMITED, 1);
        char text[64];
        sl_addr_format(dst->a, text, sizeof text);
        sl_log(SL_LOG_INFO, "rule \"%s\": limited connect to %s port %u (retry in %llu ms)",
               r->name, text, dst->port, (unsigned long long)(d.v.retry_ns / 1000000));
        return r->err;
    }
}

SL_EXPORT int connect(int fd, const struct sockaddr *sa, socklen_t len)
{
    struct sl_runtime *rt = sl_runtime();
    struct sl_addr dst;
    if (!rt || !rt->any_out || !sl_addr_from_sockaddr(&dst, sa, len) ||
        !sl_out_matches(rt, &dst) || !is_stream(fd))
        return REAL(connect)(fd, sa, len);

    int saved = errno;
    int err = wait_turn(rt, &dst);
    if (err) {
        errno = err;
        return -1;
    }
    errno = saved;
    return REAL(connect)(fd, sa, len);
}
