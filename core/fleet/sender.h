/* SPDX-License-Identifier: BSD-2-Clause */
/* sender.h - the one elected sender of a fleet backend: a thread in one
 * process of the program that talks to the other hosts (gossip.c) or to
 * Redis (redis.c) while every decision reads shared memory only.
 *
 * What it does, once for both backends (sender.c): the thread is started
 * in this process with every signal blocked; it beats a heartbeat word in
 * the backend's shared mapping; when that heartbeat is stale (the
 * sender's process died), the next decision in any process of the program
 * elects itself, at most once a second per program or host (CAS on the
 * shared elect_ns word), and starts the thread there; a forked child
 * closes the sender's sockets and runs no thread (pthread_atfork); a
 * decision may wake the thread; closing the state stops and joins it.
 *
 * Dependency inversion. The state files (cluster.c, redis_state.c) call
 * sl_sender_check and sl_sender_wake down here and know nothing of the
 * threads; sender.c calls no backend by name either: the backend's open
 * (cluster_open.c, redis_open.c) fills a struct sl_sender with its words,
 * its bound and its functions (gossip.c: sl_gossip_sender, redis.c:
 * sl_redis_sender), and sender.c calls those through the pointers. So the
 * files form a ladder: open -> backend thread -> state -> sender.
 */
#ifndef SL_SENDER_H
#define SL_SENDER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct sl_sender {
    /* Filled by the backend before its first start; a sender whose run is
     * NULL (a state made by a test or a reader) never elects, starts or
     * wakes anything. */
    const char *name;   /* "gossip", "redis": the log lines start with it */
    const char *verb;   /* "sends for", "syncs with": "NAME: this process (PID) now VERB TARGET" */
    const char *target; /* what it sends for: the listen address, Redis's address */
    bool tell_first;    /* say that line also when no sender ran before (heartbeat 0) */
    /* Shared words, in the backend's mapping. heartbeat: written by the
     * running sender each loop, read by deciders; elect_ns: CAS by deciders
     * (sl_sender_elect); pid: written at start, for the stats. */
    _Atomic uint64_t *heartbeat;
    _Atomic uint64_t *elect_ns;
    _Atomic int32_t *pid;
    uint64_t stale_ns; /* a heartbeat this old: its sender is dead */
    /* Process-local: whether the thread runs in this process (written by
     * start, stop and the fork handler; a test may set it so that
     * decisions start none), and the sender's sockets, -1 when closed,
     * which a forked child closes. */
    _Atomic int *running;
    int *fds;
    int nfds;
    /* The backend's functions, all called with arg. prepare (may be NULL):
     * before the thread, in the caller's thread: 0 to go on, 1 when another
     * process holds the sender's lock (gossip's bind), -1 with a message in
     * err. run: the thread, until sl_sender_stopping. wake (may be NULL):
     * makes a running thread look at its work now; keeps errno. */
    int (*prepare)(void *arg, char *err, size_t errlen);
    void *(*run)(void *arg);
    void (*wake)(void *arg);
    void *arg;

    /* the sender's own */
    pthread_t thread;
    _Atomic int stop;
};

/* Tries to start the thread in this process: prepare, then the thread
 * with every signal blocked; sets running, the heartbeat and the pid.
 * Returns 0 when started, 1 when prepare said another process holds it,
 * -1 with a message in err. */
int sl_sender_start(struct sl_sender *s, char *err, size_t errlen);

/* Stops and joins the thread when it runs in this process, closes its
 * sockets, and forgets s for the fork handler. */
void sl_sender_stop(struct sl_sender *s);

/* Whether the thread should end (its loop's condition). */
static inline bool sl_sender_stopping(const struct sl_sender *s)
{
    return atomic_load_explicit(&s->stop, memory_order_relaxed) != 0;
}

/* Has forked children of this process close s's sockets and clear
 * running (the thread does not come along). At most 8 senders; idempotent. */
void sl_sender_watch(struct sl_sender *s);

/* The election at `now`: true for the one caller that may start a sender,
 * when the heartbeat is at least stale_ns old and no election was tried
 * in the second before (the attempt is recorded: CAS on elect_ns). Starts
 * nothing. */
bool sl_sender_elect(struct sl_sender *s, uint64_t now);

/* Called on the decision path: when no sender runs in this process and
 * this caller wins the election, starts one here and says so (or why
 * not). errno is kept. */
void sl_sender_check_slow(struct sl_sender *s, uint64_t now);
static inline void sl_sender_check(struct sl_sender *s, uint64_t now)
{
    if (s->run && !atomic_load_explicit(s->running, memory_order_relaxed))
        sl_sender_check_slow(s, now);
}

/* Called by a decision that wants the work done now: wakes the thread
 * when it runs in this process (elsewhere it sees the shared word itself). */
static inline void sl_sender_wake(struct sl_sender *s)
{
    if (s->wake && atomic_load_explicit(s->running, memory_order_relaxed)) s->wake(s->arg);
}

#endif
