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

static inline uint64_t sl_timespec_to_ns(const struct timespec *ts)
{
    return (uint64_t)ts->tv_sec * 1000000000ull + (uint64_t)ts->tv_nsec;
}

/* Milliseconds for poll, rounded up so a wait never ends before its time. */
static inline int sl_ns_to_ms_ceil(uint64_t ns)
{
    uint64_t ms = (ns + 999999) / 1000000;
    return ms > 0x7fffffff ? 0x7fffffff : (int)ms;
}

#endif
