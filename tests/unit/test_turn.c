/* SPDX-License-Identifier: BSD-2-Clause */
/* test_turn.c - connections taking turns at one key's byte budget
 * (core/limit/turn.c), time injected: a lone connection gets the whole rate
 * whatever the burst, two or eight share it evenly and in order, and
 * together they get exactly the rate. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "../../core/limit/turn.h"
#include "testutil.h"

#define KB 1000ull
#define MB 1000000ull

struct conn {
    struct sl_turn turn;
    uint64_t due;   /* when it calls next */
    uint64_t moved; /* bytes granted so far */
    int turns;      /* grants */
};

struct sim {
    struct sl_table *t;
    int rule;
    struct sl_key key;
    struct sl_limit l;
    uint64_t quantum;
};

static void sim_open(struct sim *s, uint64_t rate, uint64_t burst)
{
    char err[256] = "";
    s->t = sl_table_open(1024, NULL, SL_FULL_SHARED, err, sizeof err);
    if (!s->t) fail_msg("sl_table_open: %s", err);
    s->rule = sl_table_rule(s->t, 3, "bytes");
    s->key = (struct sl_key){.rule = 3, .lo = 42};
    assert_int_equal(sl_limit_init(&s->l, SL_ALG_GCRA, rate, SEC, burst), 0);
    s->quantum = rate / 50; /* what core/policy/policy.c uses */
}

/* One call of connection c at c->due asking for `want` bytes (at most two
 * quanta, as shim/io.c asks): a grant is used at once and the connection
 * calls again `late` later (the time its real call and the program take);
 * a refusal sends it to sleep until its turn, and it wakes `late` after
 * that. Returns the grant. */
static uint64_t call(struct sim *s, struct conn *c, uint64_t want, uint64_t late)
{
    if (want > 2 * s->quantum) want = 2 * s->quantum;
    uint64_t at,
        got = sl_turn_take(s->t, s->rule, &s->key, &s->l, s->quantum, &c->turn, c->due, want, &at);
    if (got) {
        c->moved += got;
        c->turns++;
        c->due += late;
    } else {
        assert_true(at > c->due);
        c->due = at + late;
    }
    return got;
}

/* Runs n connections, each asking for megabytes whenever it may (nginx's
 * sendfile), the earliest due first, until `end`. */
static void run(struct sim *s, struct conn *c, int n, uint64_t late, uint64_t end, int *order,
                int norder)
{
    int k = 0;
    for (;;) {
        int i = 0;
        for (int j = 1; j < n; j++)
            if (c[j].due < c[i].due) i = j;
        if (c[i].due >= end) return;
        if (call(s, &c[i], 4 * MB, late) && k < norder) order[k++] = i;
    }
}

/* The case: 3 MB/s, burst 64 KB, a quantum of 60 KB. The turn
 * taking this replaced made the connection with the last grant wait one
 * quantum longer: the bucket, holding at most 64 KB, overflowed meanwhile
 * and a lone connection moved 0.53 of the rate. */
static void lone_connection_gets_the_whole_rate_with_a_small_burst(void **unused)
{
    uint64_t bursts[] = {16 * KB, 64 * KB, 256 * KB, 1 * MB};
    for (size_t b = 0; b < sizeof bursts / sizeof bursts[0]; b++) {
        struct sim s;
        sim_open(&s, 3 * MB, bursts[b]);
        struct conn c = {.due = T0};
        /* each call takes 200 us of the program's time, each wake-up is
         * that late too: less than the smallest burst's 5.3 ms, so no
         * byte may be lost */
        run(&s, &c, 1, 200 * US, T0 + 10 * SEC, NULL, 0);
        uint64_t want = bursts[b] + 30 * MB;
        if (c.moved + s.quantum < want || c.moved > want + s.quantum)
            fail_msg("burst %llu: moved %llu in 10 s, expected %llu within a quantum",
                     (unsigned long long)bursts[b], (unsigned long long)c.moved,
                     (unsigned long long)want);
        sl_table_close(s.t);
    }
}

static void lone_connection_waits_exactly_for_its_quantum(void **unused)
{
    struct sim s;
    sim_open(&s, 3 * MB, 64 * KB);
    struct conn c = {.due = T0};
    assert_int_equal(call(&s, &c, 4 * MB, 0), 64 * KB); /* the burst */
    assert_int_equal(call(&s, &c, 4 * MB, 0), 0);       /* empty: queued */
    /* 60 KB at 3 MB/s is 20 ms, and not more (a byte's time is a whole
     * number of picoseconds, 333333 here: 20 ns less in 20 ms) */
    assert_in_range(c.due, T0 + 20 * MS - 1 * US, T0 + 20 * MS);
    assert_int_equal(call(&s, &c, 4 * MB, 0), 60 * KB);
    assert_int_equal(call(&s, &c, 4 * MB, 0), 0);
    assert_in_range(c.due, T0 + 40 * MS - 1 * US, T0 + 40 * MS);
    sl_table_close(s.t);
}

static void two_connections_alternate_and_share_evenly(void **unused)
{
    struct sim s;
    sim_open(&s, 3 * MB, 64 * KB);
    struct conn c[2] = {{.due = T0}, {.due = T0}};
    int order[200];
    run(&s, c, 2, 200 * US, T0 + 10 * SEC, order, 200);
    /* after the burst (the first grant), they take turns: never the same
     * connection twice in a row */
    for (int k = 2; k < 200; k++)
        if (order[k] == order[k - 1])
            fail_msg("connection %d had turns %d and %d", order[k], k - 1, k);
    uint64_t total = c[0].moved + c[1].moved, want = 64 * KB + 30 * MB;
    assert_true(total + s.quantum >= want && total <= want + s.quantum);
    uint64_t d = c[0].moved > c[1].moved ? c[0].moved - c[1].moved : c[1].moved - c[0].moved;
    assert_true(d <= 64 * KB + s.quantum);
    sl_table_close(s.t);
}

static void eight_connections_share_evenly_and_exactly(void **unused)
{
    struct sim s;
    sim_open(&s, 2 * MB, 16 * KB);
    struct conn c[8];
    for (int i = 0; i < 8; i++)
        c[i] = (struct conn){.due = T0 + (uint64_t)i * 100 * US}; /* they arrive one by one */
    run(&s, c, 8, 100 * US, T0 + 10 * SEC, NULL, 0);
    uint64_t total = 0;
    for (int i = 0; i < 8; i++)
        total += c[i].moved;
    uint64_t want = 16 * KB + 20 * MB;
    assert_true(total + 8 * 16 * KB >= want && total <= want + 16 * KB);
    for (int i = 0; i < 8; i++)
        if (c[i].moved + 2 * 16 * KB < total / 8 || c[i].moved > total / 8 + 2 * 16 * KB)
            fail_msg("connection %d moved %llu of %llu", i, (unsigned long long)c[i].moved,
                     (unsigned long long)total);
    sl_table_close(s.t);
}

static void a_held_turn_is_kept_until_due_and_given_back_on_drop(void **unused)
{
    struct sim s;
    sim_open(&s, 1 * MB, 20 * KB); /* quantum 20 KB */
    struct sl_turn a = {0}, b = {0};
    uint64_t at;
    assert_int_equal(sl_turn_take(s.t, s.rule, &s.key, &s.l, s.quantum, &a, T0, 40 * KB, &at),
                     20 * KB);
    assert_int_equal(sl_turn_take(s.t, s.rule, &s.key, &s.l, s.quantum, &a, T0, 40 * KB, &at), 0);
    assert_int_equal(at, T0 + 20 * MS);
    /* early: still not due, the place is kept */
    assert_int_equal(
        sl_turn_take(s.t, s.rule, &s.key, &s.l, s.quantum, &a, T0 + 5 * MS, 40 * KB, &at), 0);
    assert_int_equal(at, T0 + 20 * MS);
    /* b queues behind a */
    assert_int_equal(
        sl_turn_take(s.t, s.rule, &s.key, &s.l, s.quantum, &b, T0 + 5 * MS, 40 * KB, &at), 0);
    assert_int_equal(at, T0 + 40 * MS);
    /* a closes: its place is given back, so the next to queue is due when
     * b's bytes have refilled, not after a's too */
    sl_turn_drop(s.t, s.rule, &s.key, &s.l, &a, T0 + 6 * MS);
    struct sl_turn c = {0};
    assert_int_equal(
        sl_turn_take(s.t, s.rule, &s.key, &s.l, s.quantum, &c, T0 + 6 * MS, 40 * KB, &at), 0);
    assert_int_equal(at, T0 + 40 * MS);
    /* b, when due, gets what it asked for up to its place; a smaller call
     * uses part and gives the rest back */
    assert_int_equal(
        sl_turn_take(s.t, s.rule, &s.key, &s.l, s.quantum, &b, T0 + 40 * MS, 5 * KB, &at), 5 * KB);
    sl_table_close(s.t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(lone_connection_gets_the_whole_rate_with_a_small_burst),
        cmocka_unit_test(lone_connection_waits_exactly_for_its_quantum),
        cmocka_unit_test(two_connections_alternate_and_share_evenly),
        cmocka_unit_test(eight_connections_share_evenly_and_exactly),
        cmocka_unit_test(a_held_turn_is_kept_until_due_and_given_back_on_drop),
    };
    return cmocka_run_group_tests(tests, NULL, NULL) != 0;
}
