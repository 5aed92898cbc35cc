/* SPDX-License-Identifier: BSD-2-Clause */
/* threads.h - the threaded unit tests' one way to run their threads: n
 * threads, the i-th running fn on the i-th of an array of arguments, all
 * joined before it returns. Include after <cmocka.h>. */
#ifndef SL_TEST_THREADS_H
#define SL_TEST_THREADS_H

#include <pthread.h>
#include <stddef.h>

#define RUN_THREADS_MAX 16

/* args: n arguments of `size` bytes each, one per thread. */
static inline void run_threads(int n, void *(*fn)(void *), void *args, size_t size)
{
    pthread_t th[RUN_THREADS_MAX];
    assert_true(n > 0 && n <= RUN_THREADS_MAX);
    for (int i = 0; i < n; i++)
        assert_int_equal(pthread_create(&th[i], NULL, fn, (char *)args + (size_t)i * size), 0);
    for (int i = 0; i < n; i++)
        assert_int_equal(pthread_join(th[i], NULL), 0);
}

#endif
