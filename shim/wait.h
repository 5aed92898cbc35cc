/* SPDX-License-Identifier: BSD-2-Clause */
/* wait.h - waiting inside a call the shim holds, as that call would wait.
 *
 * A blocking recv held for byte budget, or a connect held for its turn,
 * must keep the contract of the call it stands in for:
 *   - SO_RCVTIMEO / SO_SNDTIMEO still end it, with EAGAIN, counted from the
 *     start of the call;
 *   - a signal whose handler was installed without SA_RESTART ends it with
 *     EINTR (the kernel would have); one with SA_RESTART, or a signal that
 *     is ignored or has its default action, does not.
 * The kernel knows which signal interrupted a sleep; a preloaded library
 * does not. After EINTR, sl_wait_* look at the handlers the program has
 * installed: the wait ends with EINTR when some caught signal lacks
 * SA_RESTART (the program then handles EINTR anyway), and resumes when
 * every handler asks for restarts. That costs one sigaction per signal,
 * only after an interruption.
 *
 * Also the one home for the non-blocking check of a descriptor and for
 * the nanosecond conversions the wait wrappers need.
 */
#ifndef SL_WAIT_H
#define SL_WAIT_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

/* The socket's SO_RCVTIMEO or SO_SNDTIMEO (optname) as a deadline from
 * `start` (CLOCK_MONOTONIC ns); 0 when it has none. Keeps errno. */
uint64_t sl_wait_deadline(int fd, int optname, uint64_t start);

/* Sleeps until `until`. Returns 0 once it has come; -1 with errno EAGAIN
 * when `deadline` (0: none) comes first; -1 with EINTR as the file comment
 * says. */
int sl_wait_until(uint64_t until, uint64_t deadline);

/* Waits until fd reports one of `events` (poll events) or an error/hangup.
 * Returns 0, or -1 with EAGAIN at `deadline` (0: none) or EINTR as above. */
int sl_wait_fd(int fd, short events, uint64_t deadline);

/* As sl_wait_until and sl_wait_fd, with the thread's signal mask set to
 * `mask` for the wait only (ppoll swaps it atomically). A caller that
 * blocks signals between its waits then finds a signal that came between
 * two waits (or together with a wake-up) pending at the next wait, where
 * it interrupts as above, instead of having its handler run unnoticed. */
int sl_wait_until_masked(uint64_t until, uint64_t deadline, const sigset_t *mask);
int sl_wait_fd_masked(int fd, short events, uint64_t deadline, const sigset_t *mask);

/* After an EINTR: true when the call should go on (every caught signal
 * has SA_RESTART). */
bool sl_wait_restarts(void);

/* O_NONBLOCK is set on fd. Keeps errno. */
bool sl_fd_nonblocking(int fd);

static inline struct timespec sl_ns_to_timespec(uint64_t ns)
{
    struct timespec ts = {.tv_sec = (time_t)(ns / 1000000000ull),
                          .tv_nsec = (long)(ns % 1000000000ull)};
    return ts;
}

/* A wait wrapper's timeout in ns: -1 for none (NULL), saturating at
 * INT64_MAX; -2 for a value the kernel would refuse (EINVAL: the caller
 * passes the call through and lets it say so). */
static inline int64_t sl_timeout_ns(long sec, long nsec)
{
    if (sec < 0 || nsec < 0 || nsec >= 1000000000L) return -2;
    if (sec >= INT64_MAX / 1000000000LL - 1) return INT64_MAX;
    return (int64_t)sec * 1000000000LL + nsec;
}
#define SL_TIMESPEC_NS(ts) ((ts) ? sl_timeout_ns((ts)->tv_sec, (ts)->tv_nsec) : -1)
#define SL_TIMEVAL_NS(tv)                                                                          \
    ((tv) ? (tv)->tv_usec >= 1000000 ? -2 : sl_timeout_ns((tv)->tv_sec, (tv)->tv_usec * 1000L) : -1)

#endif
