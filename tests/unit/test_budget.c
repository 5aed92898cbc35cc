/* SPDX-License-Identifier: BSD-2-Clause */
/* test_budget.c - byte budgets (sl_limit_take, sl_table_take) and
 * concurrency places (sl_table_conn_*), time always injected. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../core/limit/table.h"
#include "testutil.h"

#define MB 1000000ull

static struct sl_limit bytes(uint64_t per_sec, uint64_t burst)
{
    struct sl_limit l;
    assert_int_equal(sl_limit_init(&l, SL_ALG_GCRA, per_sec, SEC, burst), 0);
    return l;
}

static struct sl_table *table(void)
{
    char err[256] = "";
    struct sl_table *t = sl_table_open(1024, NULL, SL_FULL_SHARED, err, sizeof err);
    if (!t) fail_msg("sl_table_open: %s", err);
    return t;
}

static uint64_t take(const struct sl_limit *l, uint64_t *s, uint64_t now, uint64_t want,
                     uint64_t *wait)
{
    uint64_t next, got = sl_limit_take(l, *s, now, want, 1, &next, wait);
    *s = next;
    return got;
}

static void take_grants_the_whole_burst_then_queues(void **unused)
{
    struct sl_limit l = bytes(2 * MB, 200000);
    uint64_t s = 0, wait;
    assert_int_equal(take(&l, &s, T0, 1 * MB, &wait), 200000);
    assert_int_equal(wait, 0);
    /* empty: the next byte is taken at once, usable when it has refilled */
    assert_int_equal(take(&l, &s, T0, 1 * MB, &wait), 1);
    assert_int_equal(wait, 500); /* one byte at 2 MB/s */
    assert_int_equal(take(&l, &s, T0, 1 * MB, &wait), 1);
    assert_int_equal(wait, 1000); /* queued behind the first */
}

static void take_grants_part_of_a_request_that_exceeds_the_budget(void **unused)
{
    struct sl_limit l = bytes(1 * MB, 1000);
    uint64_t s = 0, wait;
    assert_int_equal(take(&l, &s, T0, 600, &wait), 600);
    assert_int_equal(take(&l, &s, T0, 600, &wait), 400);
    assert_int_equal(take(&l, &s, T0 + 100 * US, 600, &wait), 100);
}

static void take_refills_at_exactly_the_rate_over_ten_seconds(void **unused)
{
    struct sl_limit l = bytes(2 * MB, 200000);
    uint64_t s = 0, wait, total = 0, now = T0;
    /* a reader asking for 16 KiB whenever it may, in quanta of 4 KiB when
     * it must wait, 10 s of injected time */
    while (now < T0 + 10 * SEC) {
        uint64_t next, got = sl_limit_take(&l, s, now, 16384, 4096, &next, &wait);
        s = next;
        total += got;
        now += wait; /* a queued quantum is used when it is due */
    }
    /* burst + rate * 10 s, give or take one read */
    assert_true(total >= 200000 + 20 * MB - 16384 && total <= 200000 + 20 * MB + 16384);
}

static void take_waits_for_a_quantum_not_for_one_byte(void **unused)
{
    struct sl_limit l = bytes(1 * MB, 1000);
    uint64_t s = 0, next, wait;
    assert_int_equal(sl_limit_take(&l, s, T0, 1000, 100, &next, &wait), 1000);
    s = next;
    assert_int_equal(sl_limit_take(&l, s, T0, 5000, 100, &next, &wait), 100);
    assert_int_equal(wait, 100 * US); /* 100 bytes at 1 MB/s */
}

static void take_refund_returns_unused_bytes(void **unused)
{
    struct sl_limit l = bytes(1 * MB, 1000);
    uint64_t s = 0, wait;
    assert_int_equal(take(&l, &s, T0, 1000, &wait), 1000);
    s = sl_limit_refund(&l, s, T0, 700);
    assert_int_equal(take(&l, &s, T0, 1000, &wait), 700);
}

static void table_take_shares_one_budget_per_key(void **unused)
{
    struct sl_table *t = table();
    int r = sl_table_rule(t, 7, "bytes");
    struct sl_limit l = bytes(1 * MB, 1000);
    struct sl_key a = {.rule = 7, .lo = 1}, b = {.rule = 7, .lo = 2};
    uint64_t wait;
    assert_int_equal(sl_table_take(t, r, &a, &l, T0, 800, 1, &wait), 800);
    assert_int_equal(sl_table_take(t, r, &a, &l, T0, 800, 1, &wait), 200);
    assert_int_equal(sl_table_take(t, r, &b, &l, T0, 800, 1, &wait), 800);
    sl_table_close(t);
}

static const struct sl_limit nominal = {.alg = SL_ALG_GCRA, .period_ns = SEC};

static void conns_admit_up_to_the_limit_and_free_a_place_on_release(void **unused)
{
    struct sl_table *t = table();
    int r = sl_table_rule(t, 9, "conns");
    struct sl_key k = {.rule = 9, .lo = 5};
    int32_t a = sl_table_conn_acquire(t, r, &k, &nominal, 2, T0);
    int32_t b = sl_table_conn_acquire(t, r, &k, &nominal, 2, T0);
    assert_true(a >= 0 && b >= 0 && a != b);
    assert_int_equal(sl_table_conn_acquire(t, r, &k, &nominal, 2, T0), -1);
    assert_int_equal(sl_table_conns(t, r, &k, &nominal, T0), 2);
    sl_table_conn_release(t, a);
    assert_int_equal(sl_table_conns(t, r, &k, &nominal, T0), 1);
    assert_true(sl_table_conn_acquire(t, r, &k, &nominal, 2, T0) >= 0);
    sl_table_close(t);
}

static void conns_inherited_by_fork_are_held_until_the_last_holder_releases(void **unused)
{
    struct sl_table *t = table();
    int r = sl_table_rule(t, 9, "conns");
    struct sl_key k = {.rule = 9, .lo = 6};
    int32_t a = sl_table_conn_acquire(t, r, &k, &nominal, 1, T0);
    assert_true(a >= 0);
    /* what the fork hooks do: mark before, claim in the child (same pid here) */
    sl_table_conn_prefork(t, a);
    sl_table_conn_postfork_child(t, a, getpid());
    sl_table_conn_release(t, a); /* the first holder closes */
    assert_int_equal(sl_table_conns(t, r, &k, &nominal, T0), 1);
    sl_table_conn_release(t, a); /* the last one */
    assert_int_equal(sl_table_conns(t, r, &k, &nominal, T0), 0);
    sl_table_close(t);
}

static void conns_held_by_a_dead_process_are_swept(void **unused)
{
    struct sl_table *t = table();
    int r = sl_table_rule(t, 9, "conns");
    struct sl_key k = {.rule = 9, .lo = 7};
    pid_t child = fork();
    if (child == 0) {
        _exit(sl_table_conn_acquire(t, r, &k, &nominal, 1, T0) >= 0 ? 0 : 1);
    }
    int status;
    assert_int_equal(waitpid(child, &status, 0), child);
    assert_int_equal(WEXITSTATUS(status), 0);
    assert_int_equal(sl_table_conns(t, r, &k, &nominal, T0), 1);
    /* the holder died without closing: the next acquire sweeps it away */
    assert_true(sl_table_conn_acquire(t, r, &k, &nominal, 1, T0 + SEC) >= 0);
    assert_int_equal(sl_table_conns(t, r, &k, &nominal, T0 + SEC), 1);
    sl_table_close(t);
}

static void conns_held_by_a_zombie_are_swept(void **unused)
{
    struct sl_table *t = table();
    int r = sl_table_rule(t, 9, "conns");
    struct sl_key k = {.rule = 9, .lo = 9};
    pid_t child = fork();
    if (child == 0) _exit(sl_table_conn_acquire(t, r, &k, &nominal, 1, T0) >= 0 ? 0 : 1);
    siginfo_t info;
    /* wait for the exit without reaping it: the child stays a zombie */
    assert_int_equal(waitid(P_PID, (id_t)child, &info, WEXITED | WNOWAIT), 0);
    assert_int_equal(info.si_status, 0);
    assert_int_equal(sl_table_conns(t, r, &k, &nominal, T0), 1);
    /* later than the last sweep of this process (sweeps run at most every 100 ms) */
    assert_true(sl_table_conn_acquire(t, r, &k, &nominal, 1, T0 + 2 * SEC) >= 0);
    int status;
    waitpid(child, &status, 0);
    sl_table_close(t);
}

static void conns_keep_a_slot_from_being_reused_while_open(void **unused)
{
    char err[256];
    struct sl_table *t = sl_table_open(64, NULL, SL_FULL_DENY, err, sizeof err);
    int r = sl_table_rule(t, 9, "conns");
    struct sl_key k = {.rule = 9, .lo = 8};
    assert_true(sl_table_conn_acquire(t, r, &k, &nominal, 1, T0) >= 0);
    /* a flood of other keys long after: the open connection's slot stays */
    for (uint64_t i = 100; i < 1000; i++) {
        struct sl_key o = {.rule = 9, .lo = i};
        struct sl_verdict v;
        sl_table_decide(t, r, &o, &nominal, T0 + 100 * SEC, 1, 0, &v);
    }
    assert_int_equal(sl_table_conns(t, r, &k, &nominal, T0 + 100 * SEC), 1);
    assert_int_equal(sl_table_conn_acquire(t, r, &k, &nominal, 1, T0 + 100 * SEC), -1);
    sl_table_close(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(take_grants_the_whole_burst_then_queues),
        cmocka_unit_test(take_grants_part_of_a_request_that_exceeds_the_budget),
        cmocka_unit_test(take_refills_at_exactly_the_rate_over_ten_seconds),
        cmocka_unit_test(take_waits_for_a_quantum_not_for_one_byte),
        cmocka_unit_test(take_refund_returns_unused_bytes),
        cmocka_unit_test(table_take_shares_one_budget_per_key),
        cmocka_unit_test(conns_admit_up_to_the_limit_and_free_a_place_on_release),
        cmocka_unit_test(conns_inherited_by_fork_are_held_until_the_last_holder_releases),
        cmocka_unit_test(conns_held_by_a_dead_process_are_swept),
        cmocka_unit_test(conns_held_by_a_zombie_are_swept),
        cmocka_unit_test(conns_keep_a_slot_from_being_reused_while_open),
    };
    return cmocka_run_group_tests(tests, NULL, NULL) != 0;
}
