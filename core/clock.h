/* SPDX-License-Identifier: BSD-2-Clause */
/* clock.h - the one place sluice reads the time.
 *
 * CLOCK_MONOTONIC in nanoseconds: shared by every process on the host, so
 * buckets in a shared table mean the same thing to all of them. Algorithms
 * never call this; they take `now` as a parameter.
 */
#ifndef SL_CLOCK_H
#define SL_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t sl_clock_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* CLOCK_REALTIME - CLOCK_MONOTONIC, in ns: what turns a monotonic time
 * into wall time, on which the hosts of a cluster number their windows. */
static inline int64_t sl_clock_wall_offset(void)
{
    struct timespec rt, mono;
    clock_gettime(CLOCK_REALTIME, &rt);
    clock_gettime(CLOCK_MONOTONIC, &mono);
    return ((int64_t)rt.tv_sec - (int64_t)mono.tv_sec) * 1000000000ll +
           ((int64_t)rt.tv_nsec - (int64_t)mono.tv_nsec);
}

#endif
