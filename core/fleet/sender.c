/* SPDX-License-Identifier: BSD-2-Clause */
/* sender.c - starting, electing, stopping and forking the one sender of a
 * fleet backend (sender.h says what it is for; gossip.c and redis.c say
 * what their threads do).
 *
 * Why a thread in the program and not an agent process: the sender reads
 * and writes the backend's state, which lives in the program's shared
 * memory, and must live exactly as long as the limits it enforces. A
 * thread needs no second program to install, start, supervise and stop,
 * works the same for `sluice run` and a bare LD_PRELOAD, and dies with
 * the program. What that costs, and how it is paid here:
 *   - one per program (Redis) or per host (gossip, whose bind of the
 *     listen address is the lock: prepare returns 1 when it is taken);
 *   - re-election: the running sender stores its heartbeat each loop; a
 *     decision that finds it older than stale_ns (3 intervals and 200 ms,
 *     and Redis's timeout) tries once, at most once a second per mapping
 *     (CAS on elect_ns: of the deciders of every process, one wins), to
 *     start the thread in its own process;
 *   - nothing held across fork: a forked child has no thread, so the fork
 *     handler closes the sender's sockets (a gossip address would stay
 *     bound after the sender's death) and clears running, so that the
 *     child may be elected later;
 *   - the host's signal handlers never run on the thread: every signal is
 *     blocked while it is created, and it inherits the mask.
 *
 * Memory order: heartbeat and pid are relaxed (a late view delays an
 * election by at most a check); elect_ns is a CAS; running is written by
 * this process only (start, stop, the fork handler in the child).
 */
#include "sender.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "../clock.h"
#include "../log.h"
#include "../sys.h"

#define ELECT_EVERY_NS SL_NS_PER_SEC /* at most one election attempt a second */
#define WATCH_MAX      8

static void close_fds(struct sl_sender *s)
{
    for (int i = 0; i < s->nfds; i++) {
        if (s->fds[i] >= 0) sl_sys_close(s->fds[i]);
        s->fds[i] = -1;
    }
}

/* ---- fork --------------------------------------------------------------- */

static struct sl_sender *_Atomic watched[WATCH_MAX];
static _Atomic int atfork_set;

static void after_fork_child(void)
{
    for (int i = 0; i < WATCH_MAX; i++) {
        struct sl_sender *s = atomic_load(&watched[i]);
        if (!s || !atomic_load(s->running)) continue;
        /* The thread did not come along; its sockets must not either. What
         * it allocated stays in this copy (a few KiB). */
        close_fds(s);
        atomic_store(s->running, 0);
    }
}

void sl_sender_watch(struct sl_sender *s)
{
    for (int i = 0; i < WATCH_MAX; i++)
        if (atomic_load(&watched[i]) == s) return;
    for (int i = 0; i < WATCH_MAX; i++) {
        struct sl_sender *none = NULL;
        if (atomic_compare_exchange_strong(&watched[i], &none, s)) break;
    }
    if (!atomic_exchange(&atfork_set, 1)) pthread_atfork(NULL, NULL, after_fork_child);
}

static void unwatch(struct sl_sender *s)
{
    for (int i = 0; i < WATCH_MAX; i++) {
        struct sl_sender *self = s;
        atomic_compare_exchange_strong(&watched[i], &self, NULL);
    }
}

/* ---- the thread ------------------------------------------------------------ */

int sl_sender_start(struct sl_sender *s, char *err, size_t errlen)
{
    if (s->prepare) {
        int rc = s->prepare(s->arg, err, errlen);
        if (rc != 0) return rc;
    }
    atomic_store(&s->stop, 0);
    atomic_store(s->running, 1);
    atomic_store_explicit(s->heartbeat, sl_clock_now(), memory_order_relaxed);
    atomic_store_explicit(s->pid, (int32_t)getpid(), memory_order_relaxed);

    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(&s->thread, NULL, s->run, s->arg);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        close_fds(s);
        atomic_store(s->running, 0);
        snprintf(err, errlen, "%s: pthread_create: %s", s->name, strerror(rc));
        return -1;
    }
    return 0;
}

void sl_sender_stop(struct sl_sender *s)
{
    unwatch(s);
    if (!s->running || !atomic_load(s->running)) return;
    atomic_store(&s->stop, 1);
    pthread_join(s->thread, NULL);
    close_fds(s);
    atomic_store(s->running, 0);
}

/* ---- election ------------------------------------------------------------ */

static bool elect(struct sl_sender *s, uint64_t now, uint64_t *hb)
{
    *hb = atomic_load_explicit(s->heartbeat, memory_order_relaxed);
    if (now < *hb + s->stale_ns) return false;
    uint64_t e = atomic_load_explicit(s->elect_ns, memory_order_relaxed);
    if (e && now < e + ELECT_EVERY_NS) return false;
    return atomic_compare_exchange_strong(s->elect_ns, &e, now);
}

bool sl_sender_elect(struct sl_sender *s, uint64_t now)
{
    uint64_t hb;
    return elect(s, now, &hb);
}

void sl_sender_check_slow(struct sl_sender *s, uint64_t now)
{
    uint64_t hb;
    if (!s->run || atomic_load_explicit(s->running, memory_order_relaxed)) return;
    if (!elect(s, now, &hb)) return;
    int saved = errno; /* on the program's call path: leave errno as it was */
    char err[256] = "";
    int rc = sl_sender_start(s, err, sizeof err);
    if (rc == 0 && (hb || s->tell_first))
        sl_log(SL_LOG_INFO, "%s: this process (%d) now %s %s", s->name, (int)getpid(), s->verb,
               s->target);
    else if (rc != 0 && *err)
        sl_log(SL_LOG_WARN, "%s", err);
    errno = saved;
}
