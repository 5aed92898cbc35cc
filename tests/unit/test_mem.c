/* SPDX-License-Identifier: BSD-2-Clause */
/* test_mem.c - sluice's own heap: zeroed blocks, reuse, size classes,
 * realloc, large mappings, the failure hook, a forked child, and threads.
 * In sanitizer builds the heap is libc's (sl_mem_usable says 0) and only
 * the checks that hold for any allocator run. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "../../core/mem.h"

static int own_heap(void)
{
    void *p = sl_alloc(1);
    size_t u = sl_mem_usable(p);
    sl_free(p);
    return u != 0;
}

static int all_zero(const unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i]) return 0;
    return 1;
}

static void zeroed_even_when_reused(void **st)
{
    for (size_t n = 1; n <= 200000; n = n * 3 + 1) {
        unsigned char *p = sl_alloc(n);
        assert_non_null(p);
        assert_true(all_zero(p, n));
        assert_int_equal((uintptr_t)p % 16, 0);
        memset(p, 0xa5, n);
        sl_free(p);
        unsigned char *q = sl_alloc(n); /* the same class: likely the same block */
        assert_non_null(q);
        assert_true(all_zero(q, n));
        sl_free(q);
    }
}

static void classes_fit_with_little_slack(void **st)
{
    if (!own_heap()) skip();
    for (size_t n = 1; n <= 64 * 1024; n++) {
        void *p = sl_alloc(n);
        size_t u = sl_mem_usable(p);
        assert_true(u >= n);
        if (n > 32) assert_true(u * 4 <= n * 5 + 4); /* at most 25% slack */
        sl_free(p);
    }
}

static void freed_block_is_reused(void **st)
{
    if (!own_heap()) skip();
    void *p = sl_alloc(1000);
    sl_free(p);
    void *q = sl_alloc(1000);
    assert_ptr_equal(p, q);
    sl_free(q);
}

static void realloc_keeps_contents(void **st)
{
    char *p = sl_realloc(NULL, 10);
    memcpy(p, "0123456789", 10);
    p = sl_realloc(p, 100000); /* small to large */
    assert_memory_equal(p, "0123456789", 10);
    p[99999] = 'x';
    p = sl_realloc(p, 300000); /* large to large */
    assert_memory_equal(p, "0123456789", 10);
    assert_int_equal(p[99999], 'x');
    p = sl_realloc(p, 5); /* large to small */
    assert_memory_equal(p, "01234", 5);
    assert_null(sl_realloc(p, 0));
}

static void failure_hook(void **st)
{
    sl_mem_fail_after(2);
    void *a = sl_alloc(8), *b = sl_alloc(100000), *c = sl_alloc(8);
    sl_mem_fail_after(-1);
    assert_non_null(a);
    assert_non_null(b);
    assert_null(c);
    sl_free(a);
    sl_free(b);
    assert_null(sl_alloc(0));
    char *d = sl_strdup("abc");
    assert_string_equal(d, "abc");
    sl_free(d);
}

static void *churn(void *arg)
{
    void *keep[64] = {0};
    unsigned x = (unsigned)(uintptr_t)arg;
    for (int i = 0; i < 20000; i++) {
        x = x * 1103515245 + 12345;
        int k = (x >> 8) % 64;
        sl_free(keep[k]);
        size_t n = 1 + (x >> 12) % 5000;
        keep[k] = sl_alloc(n);
        if (!keep[k] || !all_zero(keep[k], n)) return (void *)1;
        memset(keep[k], (int)k, n);
    }
    for (int k = 0; k < 64; k++)
        sl_free(keep[k]);
    return NULL;
}

static void threads_and_fork(void **st)
{
    pthread_t t[4];
    for (uintptr_t i = 0; i < 4; i++)
        pthread_create(&t[i], NULL, churn, (void *)(i + 1));
    /* A fork while the others allocate: the child must be able to allocate
     * (the lock is held across fork, never inherited locked). Only for
     * sluice's own heap: a sanitizer's allocator can deadlock a child
     * forked while other threads allocate, which is its business. */
    for (int i = 0; own_heap() && i < 20; i++) {
        pid_t pid = fork();
        if (pid == 0) {
            void *p = sl_alloc(333);
            _exit(p && churn((void *)9) == NULL ? 0 : 1);
        }
        int status;
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    for (int i = 0; i < 4; i++) {
        void *r;
        pthread_join(t[i], &r);
        assert_null(r);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(zeroed_even_when_reused),
        cmocka_unit_test(classes_fit_with_little_slack),
        cmocka_unit_test(freed_block_is_reused),
        cmocka_unit_test(realloc_keeps_contents),
        cmocka_unit_test(failure_hook),
        cmocka_unit_test(threads_and_fork),
    };
    return cmocka_run_group_tests(tests, NULL, NULL) != 0;
}
