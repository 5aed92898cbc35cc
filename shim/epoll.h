/* SPDX-License-Identifier: BSD-2-Clause */
/* epoll.h - epoll.c's shadow of the program's epoll sets, as the
 * readiness layer (ready.c) tells it what changed: a throttle, bytes
 * sluice holds, a close, a fork. */
#ifndef SL_EPOLL_H
#define SL_EPOLL_H

#include <stdbool.h>
#include <stdint.h>

#include "fd.h"

/* fd may be known to epoll.c (registered in a set sluice shadows, a set,
 * a waker, held bytes); read without a lock, so that closing any other
 * descriptor costs one load (ready.h: sl_ready_forget). */
extern _Atomic uint8_t sl_ready_maybe[SL_FD_MAX] __attribute__((visibility("hidden")));

/* Set once this process may hold bytes (a request connection, an
 * announcement): from then on every epoll wait is counted in its set's
 * slot and has a waker, so that held bytes can wake it (epoll.c). */
extern _Atomic uint8_t sl_epoll_counted __attribute__((visibility("hidden")));
void sl_epoll_count_waits(void);

void sl_epoll_throttle(int fd, uint64_t now);
void sl_epoll_forget(int fd); /* keeps errno */
void sl_epoll_held(int fd, uint64_t at, bool read);
void sl_epoll_after_fork_child(void);

#endif
