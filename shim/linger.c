/* SPDX-License-Identifier: BSD-2-Clause */
/* linger.c - connections answered by a `reply` rule, kept open briefly.
 *
 * Closing a socket whose receive queue holds the client's request, or that
 * receives it a moment later, makes the kernel answer with a reset, and a
 * client may then lose the reply it was sent (the reason for nginx's
 * lingering_close). So after writing the reply and shutting down our side,
 * the descriptor waits here until the client closes, or for at most 2 s,
 * reading and discarding what arrives. The list is serviced, without ever
 * blocking, on every accept of a process with inbound rules; it is private
 * to the process and emptied in a forked child, which must not hold the
 * parent's connections open.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../core/clock.h"
#include "shim.h"

#define LINGER_SLOTS 256
#define LINGER_NS    (2 * SL_NS_PER_SEC)

struct lingering_fd {
    _Atomic int fd1; /* fd + 1; 0: free. Owner: whoever swapped it non-zero. */
    _Atomic uint64_t deadline;
};

static struct lingering_fd lingering[LINGER_SLOTS];
_Atomic int sl_nlingering;

/* Reads what the peer sent; true when it has closed or failed. */
static bool drained(int fd)
{
    char buf[4096];
    for (int i = 0; i < 16; i++) {
        ssize_t n = REAL(recv)(fd, buf, sizeof buf, MSG_DONTWAIT);
        if (n == 0) return true;
        if (n < 0) return errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR;
    }
    return false;
}

void sl_linger_add(int fd)
{
    if (!drained(fd)) {
        for (int i = 0; i < LINGER_SLOTS; i++) {
            int zero = 0;
            if (atomic_load_explicit(&lingering[i].fd1, memory_order_relaxed)) continue;
            atomic_store(&lingering[i].deadline, sl_clock_now() + LINGER_NS);
            if (atomic_compare_exchange_strong(&lingering[i].fd1, &zero, fd + 1)) {
                atomic_fetch_add(&sl_nlingering, 1);
                return;
            }
        }
    }
    REAL(close)(fd);
}

void sl_linger_service_slow(void)
{
    uint64_t now = sl_clock_now();
    for (int i = 0; i < LINGER_SLOTS; i++) {
        int fd1 = atomic_load_explicit(&lingering[i].fd1, memory_order_relaxed);
        if (!fd1) continue;
        if (!drained(fd1 - 1) && now < atomic_load(&lingering[i].deadline)) continue;
        if (!atomic_compare_exchange_strong(&lingering[i].fd1, &fd1, 0)) continue;
        atomic_fetch_sub(&sl_nlingering, 1);
        REAL(close)(fd1 - 1);
    }
}

void sl_linger_after_fork_child(void)
{
    for (int i = 0; i < LINGER_SLOTS; i++) {
        int fd1 = atomic_exchange(&lingering[i].fd1, 0);
        if (fd1) REAL(close)(fd1 - 1);
    }
    atomic_store(&sl_nlingering, 0);
}
