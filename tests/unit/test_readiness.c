/* SPDX-License-Identifier: BSD-2-Clause */
/* test_readiness.c - core/limit/readiness.c: event masks, timeout cutting, the
 * kernel operation a registration needs, and the shadow table. Time is
 * passed in; nothing sleeps. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <poll.h>
#include <sys/epoll.h>

#include "../../core/mem.h"
#include "../../core/limit/readiness.h"
#include "testutil.h"

static void throttled_directions_are_those_still_in_the_future(void **state)
{
    uint64_t wake = SL_RD_FOREVER;
    assert_int_equal(sl_rd_throttled(0, 0, T0, &wake), 0);
    assert_true(wake == SL_RD_FOREVER);
    assert_int_equal(sl_rd_throttled(T0 + 5 * MS, T0 - 1, T0, &wake), SL_RD_RECV);
    assert_true(wake == T0 + 5 * MS);
    wake = SL_RD_FOREVER;
    assert_int_equal(sl_rd_throttled(T0 + 5 * MS, T0 + 2 * MS, T0, &wake), SL_RD_RECV | SL_RD_SEND);
    assert_true(wake == T0 + 2 * MS);
    wake = SL_RD_FOREVER;
    assert_int_equal(sl_rd_throttled(T0, T0, T0, &wake), 0); /* the time has come */
}

static void masks_take_the_direction_and_never_errors(void **state)
{
    short p = sl_rd_poll_mask(SL_RD_RECV);
    assert_true(p & POLLIN && p & POLLRDNORM && !(p & POLLOUT));
    assert_false(p & (POLLERR | POLLHUP | POLLNVAL));
    p = sl_rd_poll_mask(SL_RD_SEND);
    assert_true(p & POLLOUT && !(p & POLLIN));
    uint32_t e = sl_rd_epoll_mask(SL_RD_RECV | SL_RD_SEND);
    assert_true(e & EPOLLIN && e & EPOLLOUT && e & EPOLLRDHUP);
    assert_false(e & (EPOLLERR | EPOLLHUP | EPOLLET | EPOLLONESHOT | EPOLLPRI));
    assert_int_equal(sl_rd_epoll_mask(SL_RD_PARK), sl_rd_epoll_mask(SL_RD_RECV | SL_RD_SEND));
}

static void wait_is_cut_to_the_refill_and_rounded_up_in_ms(void **state)
{
    uint64_t dl = sl_rd_deadline(T0, 1000 * (int64_t)MS);
    assert_true(dl == T0 + SEC);
    assert_true(sl_rd_deadline(T0, -1) == SL_RD_FOREVER);
    assert_true(sl_rd_wait_ns(T0, dl, T0 + 300 * US) == 300 * US);
    assert_int_equal(sl_rd_ms(300 * US), 1); /* never 0 while a refill is ahead: no busy loop */
    assert_int_equal(sl_rd_ms(2 * MS), 2);
    assert_int_equal(sl_rd_ms(2 * MS + 1), 3);
    assert_true(sl_rd_wait_ns(T0, dl, SL_RD_FOREVER) == SEC);
    assert_true(sl_rd_wait_ns(T0, SL_RD_FOREVER, SL_RD_FOREVER) == SL_RD_FOREVER);
    assert_int_equal(sl_rd_ms(SL_RD_FOREVER), -1);
    assert_true(sl_rd_wait_ns(T0 + 2 * SEC, dl, SL_RD_FOREVER) == 0);
    assert_int_equal(sl_rd_ms(1000 * DAY), INT32_MAX);
}

static struct sl_rd_reg reg(uint32_t events)
{
    struct sl_rd_reg r = {.epfd = 3, .fd = 7, .events = events, .applied = events, .used = true};
    return r;
}

static void throttle_masks_a_registration_and_restore_gives_it_back(void **state)
{
    struct sl_rd_reg r = reg(EPOLLIN | EPOLLOUT | EPOLLET);
    uint32_t ev;
    assert_int_equal(sl_rd_plan(&r, SL_RD_RECV, SL_RD_THROTTLE, &ev), SL_RD_MOD);
    assert_int_equal(ev, EPOLLOUT | EPOLLET);
    r.applied = ev;
    assert_int_equal(sl_rd_plan(&r, SL_RD_RECV, SL_RD_RESTORE, &ev), SL_RD_KEEP); /* not yet */
    assert_int_equal(sl_rd_plan(&r, 0, SL_RD_RESTORE, &ev), SL_RD_MOD);           /* the new edge */
    assert_int_equal(ev, EPOLLIN | EPOLLOUT | EPOLLET);
}

static void a_throttle_on_an_unasked_direction_changes_nothing(void **state)
{
    struct sl_rd_reg r = reg(EPOLLOUT);
    uint32_t ev;
    assert_int_equal(sl_rd_plan(&r, SL_RD_RECV, SL_RD_THROTTLE, &ev), SL_RD_KEEP);
}

static void held_back_connect_leaves_the_kernel_and_comes_back_with_add(void **state)
{
    struct sl_rd_reg r = reg(EPOLLOUT);
    uint32_t ev;
    assert_int_equal(sl_rd_plan(&r, SL_RD_PARK, SL_RD_THROTTLE, &ev), SL_RD_DEL);
    r.parked = true;
    assert_int_equal(sl_rd_plan(&r, SL_RD_PARK, SL_RD_RESTORE, &ev), SL_RD_KEEP);
    assert_int_equal(sl_rd_plan(&r, 0, SL_RD_RESTORE, &ev), SL_RD_ADD);
    assert_int_equal(ev, EPOLLOUT);
}

static void oneshot_is_only_rearmed_when_the_program_rearmed_it(void **state)
{
    struct sl_rd_reg r = reg(EPOLLIN | EPOLLONESHOT);
    uint32_t ev;
    /* it may have fired: a throttle does not touch it, nor does the restore */
    assert_int_equal(sl_rd_plan(&r, SL_RD_RECV, SL_RD_THROTTLE, &ev), SL_RD_KEEP);
    assert_int_equal(sl_rd_plan(&r, 0, SL_RD_RESTORE, &ev), SL_RD_KEEP);
    /* the program re-arms while throttled: masked, then re-armed at the refill */
    assert_int_equal(sl_rd_plan(&r, SL_RD_RECV, SL_RD_PROGRAM, &ev), SL_RD_MOD);
    assert_int_equal(ev, EPOLLONESHOT);
    r.applied = ev;
    assert_int_equal(sl_rd_plan(&r, 0, SL_RD_RESTORE, &ev), SL_RD_MOD);
    assert_int_equal(ev, EPOLLIN | EPOLLONESHOT);
}

static void exclusive_is_never_masked(void **state)
{
    struct sl_rd_reg r = reg(EPOLLIN | EPOLLEXCLUSIVE);
    uint32_t ev;
    assert_int_equal(sl_rd_plan(&r, SL_RD_RECV, SL_RD_THROTTLE, &ev), SL_RD_KEEP);
}

static void done_lists_what_differs_and_unlists_what_matches(void **state)
{
    struct sl_rd_table t = {0};
    struct sl_rd_reg *r = sl_rd_insert(&t, 3, 7);
    assert_non_null(r);
    r->events = r->applied = EPOLLIN;
    assert_true(sl_rd_done(&t, r, SL_RD_MOD, 0, T0 + MS));
    assert_int_equal(t.nlist, 1);
    int32_t eps[4], fds[4];
    uint64_t next = SL_RD_FOREVER;
    assert_int_equal(sl_rd_due(&t, 3, T0, eps, fds, 4, &next), 0);
    assert_true(next == T0 + MS);
    next = SL_RD_FOREVER;
    assert_int_equal(sl_rd_due(&t, 3, T0 + MS, eps, fds, 4, &next), 1);
    assert_int_equal(fds[0], 7);
    assert_int_equal(sl_rd_due(&t, 4, T0 + MS, eps, fds, 4, &next), 0); /* another epfd's */
    assert_false(sl_rd_done(&t, r, SL_RD_MOD, EPOLLIN, SL_RD_FOREVER));
    assert_int_equal(t.nlist, 0);
    sl_rd_table_free(&t);
}

static void table_survives_growth_and_deletion_in_any_order(void **state)
{
    struct sl_rd_table t = {0};
    uint64_t seed = 42;
    enum { N = 3000 };
    for (int fd = 0; fd < N; fd++) {
        struct sl_rd_reg *r = sl_rd_insert(&t, 3 + fd % 3, fd);
        assert_non_null(r);
        r->data = (uint64_t)fd;
    }
    assert_int_equal(t.n, N);
    assert_int_equal(t.nep, 3);
    int gone[N] = {0};
    for (int i = 0; i < N; i++) {
        int fd = (int)(rnd(&seed) % N);
        if (gone[fd]) continue;
        gone[fd] = 1;
        sl_rd_remove_fd(&t, fd);
    }
    for (int fd = 0; fd < N; fd++) {
        struct sl_rd_reg *r = sl_rd_find(&t, 3 + fd % 3, fd);
        if (gone[fd]) {
            assert_null(r);
        } else {
            assert_non_null(r);
            assert_true(r->data == (uint64_t)fd);
        }
    }
    for (int fd = 0; fd < N; fd++)
        sl_rd_remove(&t, 3 + fd % 3, fd);
    assert_int_equal(t.n, 0);
    assert_int_equal(t.nep, 0); /* an epfd with no registrations and no waiters is forgotten */
    sl_rd_table_free(&t);
}

static void out_of_memory_is_reported_not_crashed(void **state)
{
    struct sl_rd_table t = {0};
    sl_mem_fail_after(0);
    assert_null(sl_rd_insert(&t, 3, 7));
    sl_mem_fail_after(-1);
    assert_non_null(sl_rd_insert(&t, 3, 7));
    sl_rd_table_free(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(throttled_directions_are_those_still_in_the_future),
        cmocka_unit_test(masks_take_the_direction_and_never_errors),
        cmocka_unit_test(wait_is_cut_to_the_refill_and_rounded_up_in_ms),
        cmocka_unit_test(throttle_masks_a_registration_and_restore_gives_it_back),
        cmocka_unit_test(a_throttle_on_an_unasked_direction_changes_nothing),
        cmocka_unit_test(held_back_connect_leaves_the_kernel_and_comes_back_with_add),
        cmocka_unit_test(oneshot_is_only_rearmed_when_the_program_rearmed_it),
        cmocka_unit_test(exclusive_is_never_masked),
        cmocka_unit_test(done_lists_what_differs_and_unlists_what_matches),
        cmocka_unit_test(table_survives_growth_and_deletion_in_any_order),
        cmocka_unit_test(out_of_memory_is_reported_not_crashed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL) != 0;
}
