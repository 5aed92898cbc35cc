/* SPDX-License-Identifier: BSD-2-Clause */
/* test_table.c - the shared bucket table: claiming, counters, exact totals
 * under threads, the full-table policies, slot reuse, named tables and
 * sharing across fork.
 *
 * Keys are built by hand ({rule, 0, i, 128}): the table only hashes them.
 * `now` is always a number the test chose; in the threaded tests it is
 * fixed, so the exact totals do not depend on scheduling.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../core/limit/quota.h"
#include "../../core/limit/table.h"
#include "testutil.h"
#include "threads.h"

#define WEB_ID 0x1111ull
#define API_ID 0x2222ull

static struct sl_table *table(uint32_t slots, enum sl_on_full on_full)
{
    char err[256] = "";
    struct sl_table *t = sl_table_open(slots, NULL, on_full, err, sizeof err);
    if (!t) fail_msg("sl_table_open: %s", err);
    return t;
}

static struct sl_limit gcra(uint64_t count, uint64_t period, uint64_t burst)
{
    struct sl_limit l;
    assert_int_equal(sl_limit_init(&l, SL_ALG_GCRA, count, period, burst), 0);
    return l;
}

static struct sl_key key(uint64_t rule_id, uint64_t i)
{
    return (struct sl_key){.rule = rule_id, .hi = 0, .lo = i, .extra = 128};
}

static bool decide(struct sl_table *t, int rule, uint64_t rule_id, uint64_t i,
                   const struct sl_limit *l, uint64_t now)
{
    struct sl_key k = key(rule_id, i);
    struct sl_verdict v;
    sl_table_decide(t, rule, &k, l, now, 1, 0, &v);
    return v.allowed;
}

/* ---- basics ---------------------------------------------------------- */

static void table_rounds_slots_up_to_four_times_a_prime_of_at_least_68(void **unused)
{
    (void)unused;
    static const uint32_t asked[] = {0, 1, 64, 65, 1000, 1024};
    static const uint32_t got[] = {68, 68, 68, 68, 1004, 1028};
    for (int i = 0; i < 6; i++) {
        struct sl_table *t = table(asked[i], SL_FULL_SHARED);
        assert_int_equal(sl_table_slots(t), got[i]);
        assert_int_equal(sl_table_used(t), 0);
        sl_table_close(t);
    }
}

static void table_registers_a_rule_once_and_finds_it_again(void **unused)
{
    (void)unused;
    struct sl_table *t = table(64, SL_FULL_SHARED);
    assert_int_equal(sl_table_rule(t, WEB_ID, "web"), 0);
    assert_int_equal(sl_table_rule(t, API_ID, "api"), 1);
    assert_int_equal(sl_table_rule(t, WEB_ID, "web"), 0);
    uint64_t id;
    char name[SL_NAME_MAX];
    assert_true(sl_table_rule_info(t, 1, &id, name, sizeof name));
    assert_int_equal(id, API_ID);
    assert_string_equal(name, "api");
    assert_false(sl_table_rule_info(t, 2, &id, name, sizeof name));
    assert_false(sl_table_rule_info(t, -1, &id, name, sizeof name));
    assert_false(sl_table_rule_info(t, SL_MAX_RULES, &id, name, sizeof name));
    sl_table_close(t);
}

static void table_refuses_a_rule_past_the_maximum(void **unused)
{
    (void)unused;
    struct sl_table *t = table(64, SL_FULL_SHARED);
    for (int i = 0; i < SL_MAX_RULES; i++)
        assert_int_equal(sl_table_rule(t, 100 + i, "r"), i);
    assert_int_equal(sl_table_rule(t, 99, "one too many"), -1);
    assert_int_equal(sl_table_rule(t, 100 + 7, "r"), 7); /* known ones still found */
    sl_table_close(t);
}

static void table_claims_a_slot_for_a_new_key_and_finds_it_again(void **unused)
{
    (void)unused;
    struct sl_table *t = table(64, SL_FULL_SHARED);
    int r = sl_table_rule(t, WEB_ID, "web");
    struct sl_limit l = gcra(1, HOUR, 3);
    for (int i = 0; i < 3; i++)
        assert_true(decide(t, r, WEB_ID, 1, &l, T0));
    assert_false(decide(t, r, WEB_ID, 1, &l, T0));
    assert_int_equal(sl_table_used(t), 1);
    assert_int_equal(sl_table_counter(t, r, SL_C_CLAIMED), 1);
    assert_int_equal(sl_table_counter(t, r, SL_C_OVERFLOW), 0);
    assert_int_equal(sl_table_counter(t, r, SL_C_REUSED), 0);
    sl_table_close(t);
}

static void table_gives_each_key_its_own_bucket(void **unused)
{
    (void)unused;
    struct sl_table *t = table(64, SL_FULL_SHARED);
    int r = sl_table_rule(t, WEB_ID, "web");
    struct sl_limit l = gcra(1, HOUR, 2);
    for (uint64_t k = 0; k < 10; k++) {
        assert_true(decide(t, r, WEB_ID, k, &l, T0));
        assert_true(decide(t, r, WEB_ID, k, &l, T0));
        assert_false(decide(t, r, WEB_ID, k, &l, T0));
    }
    assert_int_equal(sl_table_used(t), 10);
    assert_int_equal(sl_table_counter(t, r, SL_C_CLAIMED), 10);
    sl_table_close(t);
}

/* A decision given the key's hash (sl_table_decide_lean_h, for a caller
 * that remembers it) takes from the same bucket as one given the key. */
static void a_decision_by_the_keys_hash_shares_the_keys_bucket(void **unused)
{
    (void)unused;
    struct sl_table *t = table(64, SL_FULL_SHARED);
    int r = sl_table_rule(t, WEB_ID, "web");
    struct sl_limit l = gcra(1, HOUR, 3);
    for (uint64_t i = 0; i < 10; i++) {
        struct sl_key k = key(WEB_ID, i);
        uint64_t h = sl_key_hash(&k, sl_table_secret(t));
        struct sl_verdict v;
        sl_table_decide_lean_h(t, r, h, &l, T0, 1, 0, &v);
        assert_true(v.allowed);
        assert_true(decide(t, r, WEB_ID, i, &l, T0));
        sl_table_decide_lean_h(t, r, h, &l, T0, 1, 0, &v);
        assert_true(v.allowed);
        assert_false(decide(t, r, WEB_ID, i, &l, T0)); /* three taken, two by the hash */
        sl_table_decide_lean_h(t, r, h, &l, T0, 1, 0, &v);
        assert_false(v.allowed);
    }
    assert_int_equal(sl_table_used(t), 10);
    assert_int_equal(sl_table_counter(t, r, SL_C_CLAIMED), 10);
    sl_table_close(t);
}

/* A remembered slot is taken only while it holds the key: deciding key A
 * with B's slot remembered decides A's bucket (spent: denied) and leaves
 * A's slot remembered, which the next decision takes. */
static void a_remembered_slot_is_taken_only_while_it_holds_the_key(void **unused)
{
    (void)unused;
    struct sl_table *t = table(64, SL_FULL_SHARED);
    int r = sl_table_rule(t, WEB_ID, "web");
    struct sl_limit l = gcra(1, HOUR, 1);
    struct sl_key a = key(WEB_ID, 1), b = key(WEB_ID, 2);
    uint64_t ha = sl_key_hash(&a, sl_table_secret(t)), hb = sl_key_hash(&b, sl_table_secret(t));
    struct sl_verdict v;
    int64_t slot_a = -1, slot_b = -1;
    sl_table_decide_lean_at(t, r, ha, &slot_a, &l, T0, &v); /* A's one is spent */
    assert_true(v.allowed);
    sl_table_decide_lean_at(t, r, hb, &slot_b, &l, T0, &v); /* B's too */
    assert_true(v.allowed);
    assert_true(slot_a >= 0 && slot_b >= 0 && slot_a != slot_b);
    assert_false(decide(t, r, WEB_ID, 1, &l, T0)); /* the slot is the key's own bucket */
    int64_t at = slot_b;
    sl_table_decide_lean_at(t, r, ha, &at, &l, T0 + HOUR, &v); /* A's refilled one */
    assert_true(v.allowed);
    assert_int_equal(at, slot_a);
    sl_table_decide_lean_at(t, r, ha, &at, &l, T0 + HOUR, &v);
    assert_false(v.allowed);
    assert_int_equal(at, slot_a);
    at = -1;
    sl_table_decide_lean_at(t, r, hb, &at, &l, T0 + HOUR, &v);
    assert_true(v.allowed); /* B's bucket, untouched by A's decisions */
    assert_int_equal(at, slot_b);
    sl_table_close(t);
}

static void table_keeps_the_same_address_apart_under_two_rules(void **unused)
{
    (void)unused;
    struct sl_table *t = table(64, SL_FULL_SHARED);
    int web = sl_table_rule(t, WEB_ID, "web"), api = sl_table_rule(t, API_ID, "api");
    struct sl_limit l = gcra(1, HOUR, 1);
    assert_true(decide(t, web, WEB_ID, 5, &l, T0));
    assert_true(decide(t, api, API_ID, 5, &l, T0));
    assert_false(decide(t, web, WEB_ID, 5, &l, T0));
    assert_int_equal(sl_table_counter(t, web, SL_C_CLAIMED), 1);
    assert_int_equal(sl_table_counter(t, api, SL_C_CLAIMED), 1);
    sl_table_close(t);
}

static void table_counters_add_up_per_rule(void **unused)
{
    (void)unused;
    struct sl_table *t = table(64, SL_FULL_SHARED);
    int web = sl_table_rule(t, WEB_ID, "web"), api = sl_table_rule(t, API_ID, "api");
    sl_table_count(t, web, SL_C_ALLOWED, 5);
    sl_table_count(t, web, SL_C_ALLOWED, 2);
    sl_table_count(t, web, SL_C_LIMITED, 1);
    sl_table_count(t, api, SL_C_ERRORS, 9);
    sl_table_count(t, -1, SL_C_ERRORS, 100); /* no rule: ignored */
    assert_int_equal(sl_table_counter(t, web, SL_C_ALLOWED), 7);
    assert_int_equal(sl_table_counter(t, web, SL_C_LIMITED), 1);
    assert_int_equal(sl_table_counter(t, web, SL_C_ERRORS), 0);
    assert_int_equal(sl_table_counter(t, api, SL_C_ERRORS), 9);
    assert_int_equal(sl_table_counter(t, api, SL_C_ALLOWED), 0);
    assert_string_equal(sl_counter_names[SL_C_OVERFLOW], "overflow");
    sl_table_close(t);
}

static void table_refund_gives_the_key_one_token_back(void **unused)
{
    (void)unused;
    struct sl_table *t = table(64, SL_FULL_SHARED);
    int r = sl_table_rule(t, WEB_ID, "web");
    struct sl_limit l = gcra(1, HOUR, 2);
    struct sl_key k = key(WEB_ID, 3);
    assert_true(decide(t, r, WEB_ID, 3, &l, T0));
    assert_true(decide(t, r, WEB_ID, 3, &l, T0));
    assert_false(decide(t, r, WEB_ID, 3, &l, T0));
    sl_table_refund(t, r, &k, &l, T0, 1);
    assert_true(decide(t, r, WEB_ID, 3, &l, T0));
    assert_false(decide(t, r, WEB_ID, 3, &l, T0));
    sl_table_close(t);
}

/* ---- exact totals under threads -------------------------------------- */

#define NTHREADS 4

struct worker {
    struct sl_table *t;
    int rule;
    const struct sl_limit *l;
    uint64_t nkeys, rounds, seed;
    pthread_barrier_t *start;
    uint64_t allowed[64]; /* per key */
};

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    pthread_barrier_wait(w->start);
    for (uint64_t r = 0; r < w->rounds; r++) {
        uint64_t first = rnd(&w->seed) % w->nkeys; /* threads walk the keys out of step */
        for (uint64_t j = 0; j < w->nkeys; j++) {
            uint64_t k = (first + j) % w->nkeys;
            if (decide(w->t, w->rule, WEB_ID, k, w->l, T0)) {
                w->allowed[k]++;
                sl_table_count(w->t, w->rule, SL_C_ALLOWED, 1);
            } else {
                sl_table_count(w->t, w->rule, SL_C_LIMITED, 1);
            }
        }
    }
    return NULL;
}

/* Runs NTHREADS workers; returns the allowed count per key, summed. */
static void run_workers(struct sl_table *t, int rule, const struct sl_limit *l, uint64_t nkeys,
                        uint64_t rounds, uint64_t *allowed)
{
    static struct worker w[NTHREADS];
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, NTHREADS);
    for (int i = 0; i < NTHREADS; i++) {
        w[i] = (struct worker){.t = t,
                               .rule = rule,
                               .l = l,
                               .nkeys = nkeys,
                               .rounds = rounds,
                               .seed = (uint64_t)i + 1,
                               .start = &start};
    }
    run_threads(NTHREADS, worker_main, w, sizeof w[0]);
    pthread_barrier_destroy(&start);
    memset(allowed, 0, nkeys * sizeof *allowed);
    for (int i = 0; i < NTHREADS; i++)
        for (uint64_t k = 0; k < nkeys; k++)
            allowed[k] += w[i].allowed[k];
}

static void threads_on_one_hot_key_pass_exactly_the_burst(void **unused)
{
    (void)unused;
    struct sl_table *t = table(64, SL_FULL_SHARED);
    int r = sl_table_rule(t, WEB_ID, "web");
    struct sl_limit l = gcra(1, HOUR, 1000);
    uint64_t allowed;
    run_workers(t, r, &l, 1, 20000, &allowed);
    assert_int_equal(allowed, 1000);
    assert_int_equal(sl_table_counter(t, r, SL_C_ALLOWED), 1000);
    assert_int_equal(sl_table_counter(t, r, SL_C_LIMITED), NTHREADS * 20000 - 1000);
    assert_int_equal(sl_table_counter(t, r, SL_C_CLAIMED), 1);
    assert_int_equal(sl_table_used(t), 1);
    sl_table_close(t);
}

static void threads_on_many_keys_pass_exactly_each_key_s_burst(void **unused)
{
    (void)unused;
    struct sl_table *t = table(1024, SL_FULL_SHARED);
    int r = sl_table_rule(t, WEB_ID, "web");
    struct sl_limit l = gcra(1, HOUR, 37);
    uint64_t allowed[64];
    run_workers(t, r, &l, 64, 100, allowed);
    for (int k = 0; k < 64; k++)
        assert_int_equal(allowed[k], 37);
    assert_int_equal(sl_table_counter(t, r, SL_C_ALLOWED), 64 * 37);
    assert_int_equal(sl_table_counter(t, r, SL_C_CLAIMED), 64); /* each key claimed once */
    assert_int_equal(sl_table_counter(t, r, SL_C_OVERFLOW), 0);
    assert_int_equal(sl_table_used(t), 64);
    sl_table_close(t);
}

/* ---- a full table ---------------------------------------------------- */

/* Fills every slot with a live key of rule `r` (one request each at T0 on
 * a 1/h limit: busy for an hour). Keys that found no slot on the way went
 * to the overflow bucket; the ones with a slot are listed in `slotted`. */
static uint64_t fill(struct sl_table *t, int r, const struct sl_limit *l, uint64_t *slotted)
{
    uint64_t n = 0;
    for (uint64_t i = 0; sl_table_used(t) < sl_table_slots(t); i++) {
        assert_true(i < 100000);
        uint64_t before = sl_table_counter(t, r, SL_C_OVERFLOW);
        decide(t, r, WEB_ID, i, l, T0);
        if (sl_table_counter(t, r, SL_C_OVERFLOW) == before) slotted[n++] = i;
    }
    assert_int_equal(n, sl_table_slots(t));
    assert_int_equal(sl_table_counter(t, r, SL_C_CLAIMED), n);
    return n;
}

static void full_table_shared_lets_exactly_one_burst_through_for_all_new_keys(void **unused)
{
    (void)unused;
    struct sl_table *t = table(64, SL_FULL_SHARED);
    int web = sl_table_rule(t, WEB_ID, "web"), api = sl_table_rule(t, API_ID, "api");
    struct sl_limit busy = gcra(1, HOUR, 1), l = gcra(1, HOUR, 5);
    uint64_t slotted[128];
    fill(t, web, &busy, slotted);

    uint64_t passed = 0;
    for (uint64_t i = 0; i < 200; i++)
        passed += decide(t, api, API_ID, i, &l, T0 + MIN);
    assert_int_equal(passed, 5);
    assert_int_equal(sl_table_counter(t, api, SL_C_OVERFLOW), 200);
    assert_int_equal(sl_table_counter(t, api, SL_C_CLAIMED), 0);
    assert_int_equal(sl_table_counter(t, api, SL_C_REUSED), 0);
    assert_int_equal(sl_table_used(t), sl_table_slots(t));
    sl_table_close(t);
}

static void full_table_gives_no_amnesty_to_keys_that_already_have_a_slot(void **unused)
{
    (void)unused;
    struct sl_table *t = table(64, SL_FULL_SHARED);
    int web = sl_table_rule(t, WEB_ID, "web"), api = sl_table_rule(t, API_ID, "api");
    struct sl_limit busy = gcra(1, HOUR, 1);
    uint64_t slotted[128];
    fill(t, web, &busy, slotted);
    for (int i = 0; i < 64; i++)
        assert_false(decide(t, web, WEB_ID, slotted[i], &busy, T0));

    /* a flood of new keys finds the table full... */
    for (uint64_t i = 0; i < 1000; i++)
        decide(t, api, API_ID, i, &busy, T0 + MIN);
    assert_int_equal(sl_table_counter(t, api, SL_C_OVERFLOW), 1000);

    /* ...and every exhausted key is still exhausted, in its own slot */
    uint64_t claimed = sl_table_counter(t, web, SL_C_CLAIMED);
    uint64_t overflow = sl_table_counter(t, web, SL_C_OVERFLOW);
    for (int i = 0; i < 64; i++)
        assert_false(decide(t, web, WEB_ID, slotted[i], &busy, T0 + MIN));
    assert_int_equal(sl_table_counter(t, web, SL_C_CLAIMED), claimed);
    assert_int_equal(sl_table_counter(t, web, SL_C_OVERFLOW), overflow);
    sl_table_close(t);
}

static void full_table_overflow_buckets_are_per_rule(void **unused)
{
    (void)unused;
    struct sl_table *t = table(64, SL_FULL_SHARED);
    int web = sl_table_rule(t, WEB_ID, "web");
    int a = sl_table_rule(t, API_ID, "api"), b = sl_table_rule(t, 0x3333, "ws");
    struct sl_limit busy = gcra(1, HOUR, 1), l = gcra(1, HOUR, 3);
    uint64_t slotted[128];
    fill(t, web, &busy, slotted);
    uint64_t pa = 0, pb = 0;
    for (uint64_t i = 0; i < 50; i++)
        pa += decide(t, a, API_ID, i, &l, T0);
    for (uint64_t i = 0; i < 50; i++)
        pb += decide(t, b, 0x3333, i, &l, T0);
    assert_int_equal(pa, 3);
    assert_int_equal(pb, 3);
    sl_table_close(t);
}

static void full_table_deny_denies_keys_that_find_no_slot(void **unused)
{
    (void)unused;
    struct sl_table *t = table(64, SL_FULL_DENY);
    int web = sl_table_rule(t, WEB_ID, "web"), api = sl_table_rule(t, API_ID, "api");
    struct sl_limit busy = gcra(1, HOUR, 1), l = gcra(1, HOUR, 5);
    uint64_t slotted[128];
    fill(t, web, &busy, slotted);
    struct sl_key k = key(API_ID, 1);
    struct sl_verdict v;
    sl_table_decide(t, api, &k, &l, T0, 1, 0, &v);
    assert_false(v.allowed);
    assert_true(v.retry_ns > 0);
    assert_int_equal(v.limit, 5);
    assert_int_equal(sl_table_counter(t, api, SL_C_OVERFLOW), 1);
    sl_table_close(t);
}

static void full_table_allow_passes_keys_that_find_no_slot(void **unused)
{
    (void)unused;
    struct sl_table *t = table(64, SL_FULL_ALLOW);
    int web = sl_table_rule(t, WEB_ID, "web"), api = sl_table_rule(t, API_ID, "api");
    struct sl_limit busy = gcra(1, HOUR, 1), l = gcra(1, HOUR, 5);
    uint64_t slotted[128];
    fill(t, web, &busy, slotted);
    uint64_t passed = 0;
    for (uint64_t i = 0; i < 100; i++)
        passed += decide(t, api, API_ID, i, &l, T0);
    assert_int_equal(passed, 100);
    assert_int_equal(sl_table_counter(t, api, SL_C_OVERFLOW), 100);
    sl_table_close(t);
}

static void full_table_keeps_a_live_slot_from_a_new_key(void **unused)
{
    (void)unused;
    struct sl_table *t = table(64, SL_FULL_SHARED);
    int web = sl_table_rule(t, WEB_ID, "web"), api = sl_table_rule(t, API_ID, "api");
    struct sl_limit busy = gcra(1, HOUR, 1);
    uint64_t slotted[128];
    fill(t, web, &busy, slotted);
    /* one nanosecond before the busy keys' buckets refill */
    for (uint64_t i = 0; i < 100; i++)
        decide(t, api, API_ID, i, &busy, T0 + HOUR - 1);
    assert_int_equal(sl_table_counter(t, api, SL_C_REUSED), 0);
    assert_int_equal(sl_table_counter(t, api, SL_C_OVERFLOW), 100);
    sl_table_close(t);
}

static void idle_slots_are_reused_by_new_keys_with_fresh_buckets(void **unused)
{
    (void)unused;
    struct sl_table *t = table(64, SL_FULL_SHARED);
    int web = sl_table_rule(t, WEB_ID, "web"), api = sl_table_rule(t, API_ID, "api");
    struct sl_limit busy = gcra(1, HOUR, 1), l = gcra(1, HOUR, 2);
    uint64_t slotted[128];
    fill(t, web, &busy, slotted);
    size_t bytes = sl_table_bytes(t);

    uint64_t later = T0 + HOUR; /* every busy bucket has just refilled */
    uint64_t reused = 0;
    for (uint64_t i = 0; i < 32; i++) {
        uint64_t before = sl_table_counter(t, api, SL_C_REUSED);
        bool first = decide(t, api, API_ID, i, &l, later);
        if (sl_table_counter(t, api, SL_C_REUSED) == before) continue; /* overflowed */
        reused++;
        /* a reused slot starts fresh and then is the key's own */
        assert_true(first);
        assert_true(decide(t, api, API_ID, i, &l, later));
        assert_false(decide(t, api, API_ID, i, &l, later));
        assert_int_equal(sl_table_counter(t, api, SL_C_REUSED), before + 1);
    }
    assert_true(reused >= 16); /* the first 16 keys cannot all miss 64 idle slots */
    assert_int_equal(reused + sl_table_counter(t, api, SL_C_OVERFLOW), 32);
    assert_int_equal(sl_table_counter(t, api, SL_C_CLAIMED), 0);
    assert_int_equal(sl_table_used(t), sl_table_slots(t));
    assert_int_equal(sl_table_bytes(t), bytes);
    sl_table_close(t);
}

/* A table of `slots` (rounded up) whose every slot holds a web key of 1
 * an hour spent at T0, so idle from T0 + HOUR, and its api rule in *api:
 * where threads meeting new keys at once must reuse slots. */
static struct sl_table *idle_full_table(uint32_t slots, int *api)
{
    struct sl_table *t = table(slots, SL_FULL_SHARED);
    int web = sl_table_rule(t, WEB_ID, "web");
    *api = sl_table_rule(t, API_ID, "api");
    struct sl_limit busy = gcra(1, HOUR, 1);
    uint64_t *slotted = malloc(sl_table_slots(t) * sizeof *slotted);
    assert_non_null(slotted);
    fill(t, web, &busy, slotted);
    free(slotted);
    return t;
}

/* Threads taking idle slots for the same new keys at once: a thread that
 * met a slot being reused (REUSING) for its own key passed it and reused
 * another, so the key had two slots and one more admission. Found in the
 * cluster table's twin first (CI, under ASan); here every key has a 1/h
 * limit, so a second admission of any key is the defect. */
struct reuser {
    struct sl_table *t;
    int rule;
    const struct sl_limit *l;
    pthread_barrier_t *start;
    uint8_t allowed[2048];
};

static void *reuser_main(void *arg)
{
    struct reuser *w = arg;
    pthread_barrier_wait(w->start);
    for (uint64_t k = 0; k < 2048; k++)
        w->allowed[k] = decide(w->t, w->rule, API_ID, k, w->l, T0 + HOUR);
    return NULL;
}

static void threads_reusing_slots_for_one_new_key_give_it_one(void **unused)
{
    (void)unused;
    int api;
    struct sl_table *t = idle_full_table(4096, &api);
    struct sl_limit l = gcra(1, HOUR, 1);
    static struct reuser w[NTHREADS];
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, NTHREADS);
    for (int i = 0; i < NTHREADS; i++)
        w[i] = (struct reuser){.t = t, .rule = api, .l = &l, .start = &start};
    run_threads(NTHREADS, reuser_main, w, sizeof w[0]);
    pthread_barrier_destroy(&start);
    uint64_t twice = 0;
    for (uint64_t k = 0; k < 2048; k++) {
        int n = 0;
        for (int i = 0; i < NTHREADS; i++)
            n += w[i].allowed[k];
        twice += n > 1 ? (uint64_t)n - 1 : 0;
    }
    /* Before the first fix, 1,369-1,583 of the 2,048 keys. Before the
     * second, 1-9 keys in three runs of four, each (18 logged) a key given
     * two neighbouring slots: a thread read a slot's tag (an idle key's),
     * then its state after another thread had taken the slot for the same
     * key and spent it, passed it as busy, and gave the key the next idle
     * slot too. find_room reads the tag again after the state now. None
     * in 460 runs since, 400 of them beside two busy loops on two CPUs.
     * (A slot taken from a key between its lookup and its step is
     * a_slot_taken_between_lookup_and_step_is_looked_for_again's.) */
    if (twice)
        print_message("admitted twice: %llu keys, overflow %llu, reused %llu\n",
                      (unsigned long long)twice,
                      (unsigned long long)sl_table_counter(t, api, SL_C_OVERFLOW),
                      (unsigned long long)sl_table_counter(t, api, SL_C_REUSED));
    assert_int_equal(twice, 0);
    sl_table_close(t);
}

/* The same for connection places: threads taking the one place of new
 * keys at once, on a table whose slots are all idle, give each key one.
 * A key given two slots had two places; and a place taken on a slot
 * being given to another key went with the slot (the reuser now looks at
 * the places after its tag, the taker at the tag after its place). Before
 * the fixes 28 runs of 50 gave 1 to 8 keys two places; none in 300 since,
 * some beside two busy loops on two CPUs. */
#define PLACED 2048
struct placer {
    struct sl_table *t;
    int rule;
    const struct sl_limit *l;
    pthread_barrier_t *start;
    int32_t rec[PLACED];
};

static void *placer_main(void *arg)
{
    struct placer *w = arg;
    pthread_barrier_wait(w->start);
    for (uint64_t k = 0; k < PLACED; k++) {
        struct sl_key kk = key(API_ID, k);
        w->rec[k] = sl_table_conn_acquire(w->t, w->rule, &kk, w->l, 1, T0 + HOUR);
    }
    return NULL;
}

static void threads_taking_places_for_new_keys_give_each_its_one(void **unused)
{
    (void)unused;
    int api;
    struct sl_table *t = idle_full_table(16384, &api); /* 4,096 records */
    struct sl_limit l = gcra(1, HOUR, 1);
    static struct placer w[NTHREADS];
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, NTHREADS);
    for (int i = 0; i < NTHREADS; i++)
        w[i] = (struct placer){.t = t, .rule = api, .l = &l, .start = &start};
    run_threads(NTHREADS, placer_main, w, sizeof w[0]);
    pthread_barrier_destroy(&start);
    uint64_t twice = 0, none = 0;
    for (uint64_t k = 0; k < PLACED; k++) {
        int n = 0;
        for (int i = 0; i < NTHREADS; i++) {
            assert_true(w[i].rec[k] >= -1); /* a record for each place */
            n += w[i].rec[k] >= 0;
        }
        twice += n > 1 ? (uint64_t)n - 1 : 0;
        none += n == 0;
    }
    if (twice || none)
        print_message("two places: %llu keys, none: %llu\n", (unsigned long long)twice,
                      (unsigned long long)none);
    assert_int_equal(twice, 0);
    assert_int_equal(none, 0);
    sl_table_close(t);
}

/* A key's slot given to another key between the lookup and the step: a
 * slot just claimed and not yet stepped on is idle (state 0), and a thread
 * filling a full table may take it then (as it may take a long idle key's
 * slot as that key comes back). The step then fell on the other key's
 * state and was reported kept, and the key had no slot: its next request
 * found a fresh budget (in threads: one admission over the limit, the
 * threaded test's residue). Here the step itself plays the other thread
 * (sl_table_apply calls it between the lookup and the exchange). */
struct interloper {
    struct sl_table *t;
    int rule;
    const struct sl_limit *l;
    uint64_t now;
    int calls;
    bool took;
    uint64_t key; /* the key that took it */
};

static uint64_t spend_after_an_interloper(uint64_t old, void *arg)
{
    (void)old;
    struct interloper *x = arg;
    if (x->calls++ == 0) /* new keys until one takes the only idle slot: this one */
        for (uint64_t i = 0; i < 1000 && !x->took; i++) {
            uint64_t reused = sl_table_counter(x->t, x->rule, SL_C_REUSED);
            decide(x->t, x->rule, 0x4444, i, x->l, x->now);
            x->took = sl_table_counter(x->t, x->rule, SL_C_REUSED) > reused;
            x->key = i;
        }
    return x->now + HOUR; /* a spent bucket of 1 an hour */
}

/* The same interloper, in a step that gives back a request of 1 an hour. */
static uint64_t refund_after_an_interloper(uint64_t old, void *arg)
{
    spend_after_an_interloper(old, arg);
    return old > HOUR ? old - HOUR : 0;
}

/* Fills table t with web keys (rule web) of 1 an hour spent at T0, but
 * for the web key 1000000, of 1 a second: from T0 + SEC its slot is the
 * table's only idle one. */
static void one_idle_slot(struct sl_table *t, int web)
{
    struct sl_limit busy = gcra(1, HOUR, 1), brief = gcra(1, SEC, 1);
    decide(t, web, WEB_ID, 1000000, &brief, T0);
    for (uint64_t i = 0; sl_table_used(t) < sl_table_slots(t); i++) {
        assert_true(i < 100000);
        decide(t, web, WEB_ID, i, &busy, T0);
    }
}

static void a_slot_taken_between_lookup_and_step_is_looked_for_again(void **unused)
{
    (void)unused;
    struct sl_table *t = table(64, SL_FULL_SHARED);
    int web = sl_table_rule(t, WEB_ID, "web"), api = sl_table_rule(t, API_ID, "api");
    int ws = sl_table_rule(t, 0x4444, "ws");
    struct sl_limit l = gcra(1, HOUR, 1);
    one_idle_slot(t, web);
    uint64_t now = T0 + MIN;
    struct interloper x = {.t = t, .rule = ws, .l = &l, .now = now};
    bool kept = false;
    uint64_t k1 = 0;
    for (; k1 < 1000 && x.calls == 0; k1++) { /* a key whose probes meet the idle slot */
        struct sl_key k = key(API_ID, k1);
        kept = sl_table_apply(t, api, &k, &l, 0, now, spend_after_an_interloper, &x);
    }
    assert_int_equal(sl_table_counter(t, api, SL_C_REUSED), 1);
    assert_true(x.took); /* the other key has the slot */
    /* Before the fix: kept, and the key found a fresh budget (allowed).
     * Now the key is looked for again, and the full table has no room. */
    assert_false(kept);
    assert_false(kept && decide(t, api, API_ID, k1 - 1, &l, now));
    sl_table_close(t);
}

/* A give-back (a refund, or a quota's) racing the reuse of its key's
 * slot: the slot is given to another key, which spends, between the
 * lookup and the exchange (the step plays that thread). A give-back must
 * not fall on the new key: its next request of 1 an hour would pass. As
 * sl_table_apply's step (what the quota's refund used) it did, and
 * sl_table_refund's exchange (no step to play in) could the same. Now
 * nothing is given back. */
static void a_give_back_never_falls_on_a_key_given_the_slot(void **unused)
{
    (void)unused;
    struct sl_table *t = table(64, SL_FULL_SHARED);
    int web = sl_table_rule(t, WEB_ID, "web");
    int ws = sl_table_rule(t, 0x4444, "ws");
    struct sl_limit l = gcra(1, HOUR, 1);
    one_idle_slot(t, web);
    uint64_t now = T0 + MIN;
    struct interloper x = {.t = t, .rule = ws, .l = &l, .now = now};
    struct sl_key k = key(WEB_ID, 1000000);
    bool given = sl_table_give_back(t, &k, refund_after_an_interloper, &x);
    assert_true(x.took);                                 /* the other key has the slot, and spent */
    assert_false(decide(t, ws, 0x4444, x.key, &l, now)); /* as sl_table_apply: passed */
    assert_false(given);
    sl_table_close(t);
}

static void table_memory_never_grows(void **unused)
{
    (void)unused;
    struct sl_table *t = table(64, SL_FULL_SHARED);
    size_t bytes = sl_table_bytes(t);
    int web = sl_table_rule(t, WEB_ID, "web");
    struct sl_limit busy = gcra(1, HOUR, 1);
    for (uint64_t round = 0; round < 10; round++)
        for (uint64_t i = 0; i < 500; i++)
            decide(t, web, WEB_ID, round * 1000 + i, &busy, T0 + round * HOUR);
    assert_int_equal(sl_table_bytes(t), bytes);
    assert_int_equal(sl_table_slots(t), 68);
    assert_int_equal(sl_table_used(t), sl_table_slots(t));
    assert_true(sl_table_counter(t, web, SL_C_REUSED) > 0);
    assert_true(sl_table_counter(t, web, SL_C_OVERFLOW) > 0);
    sl_table_close(t);
}

/* ---- a flood of one-off keys (issue 18.6) ------------------------------ */

/* One request of key i: its bucket, then its daily quota word, as
 * core/http/reqdecide.c charges them. */
struct quota_arg {
    uint64_t limit, end, now;
    bool allowed;
};

static uint64_t quota_step(uint64_t old, void *arg)
{
    struct quota_arg *q = arg;
    uint64_t next;
    struct sl_verdict v;
    q->allowed = sl_quota_step(old, q->limit, 1, q->end, q->now, &next, &v);
    return next;
}

static bool request(struct sl_table *t, int r, uint64_t i, const struct sl_limit *l, uint64_t quota,
                    uint64_t now)
{
    if (!decide(t, r, WEB_ID, i, l, now)) return false;
    struct sl_key qk = key(WEB_ID, i);
    qk.extra |= 1; /* the quota word's own key */
    struct quota_arg q = {.limit = quota, .end = T0 + 24 * HOUR, .now = now};
    return !sl_table_apply(t, r, &qk, sl_quota_slot_limit(), quota, now, quota_step, &q) ||
           q.allowed;
}

/* The review's attack, scaled up: 100,000 one-off keys in 3.5 s against
 * the default table (65,644 slots), each with a daily quota word that
 * lives until midnight. Before eviction an honest new key then got 0 of
 * its 20 (the overflow bucket, drained by the flood), and an honest key
 * that had used its budget would have had it back had the flood been
 * given its slot. */
static void one_off_keys_leave_an_honest_new_key_its_whole_budget(void **unused)
{
    (void)unused;
    struct sl_table *t = table(65536, SL_FULL_SHARED);
    int web = sl_table_rule(t, WEB_ID, "web");
    struct sl_limit l = gcra(20, MIN, 20);
    const uint64_t quota = 1000, honest = 1ull << 40, spent = honest + 1;
    for (int n = 0; n < 20; n++) /* an honest key spends its whole burst */
        assert_true(request(t, web, spent, &l, quota, T0));
    assert_false(request(t, web, spent, &l, quota, T0));

    for (uint64_t i = 0; i < 100000; i++) /* 35 us apart: 3.5 s */
        request(t, web, i, &l, quota, T0 + i * 35000);
    uint64_t end = T0 + 100000 * 35000ull;
    assert_true(sl_table_counter(t, web, SL_C_REUSED) > 60000); /* the flood filled the table */

    uint64_t passed = 0;
    for (int n = 0; n < 25; n++)
        passed += request(t, web, honest, &l, quota, end);
    assert_int_equal(passed, 20);
    /* the spent key kept its slot: 3.5 s at 20/min refilled one request */
    passed = 0;
    for (int n = 0; n < 5; n++)
        passed += request(t, web, spent, &l, quota, end);
    assert_int_equal(passed, 1);
    sl_table_close(t);
}

/* Of the keys in a full table, the one that used the least of its limit
 * goes first: a key that used 3 of 5 stays while keys that used 1 go. */
static void a_full_table_evicts_the_least_used_key_first(void **unused)
{
    (void)unused;
    struct sl_table *t = table(64, SL_FULL_SHARED);
    int web = sl_table_rule(t, WEB_ID, "web");
    struct sl_limit l = gcra(5, HOUR, 5);
    const uint64_t busy = 1ull << 40;
    for (int n = 0; n < 3; n++)
        assert_true(decide(t, web, WEB_ID, busy, &l, T0));
    for (uint64_t i = 0; i < 1000; i++) /* every other key makes one request */
        assert_true(decide(t, web, WEB_ID, i, &l, T0));
    assert_int_equal(sl_table_counter(t, web, SL_C_OVERFLOW), 0);
    uint64_t passed = 0;
    for (int n = 0; n < 5; n++)
        passed += decide(t, web, WEB_ID, busy, &l, T0);
    assert_int_equal(passed, 2);
    sl_table_close(t);
}

/* A quota word at its limit is never evicted, one seen once always may
 * be: so quota words of one-off keys do not pin the table until midnight,
 * and an exhausted quota is not forgiven by a flood. */
static void quota_words_at_their_limit_stay_and_others_make_room(void **unused)
{
    (void)unused;
    struct sl_table *t = table(64, SL_FULL_DENY);
    int web = sl_table_rule(t, WEB_ID, "web");
    struct sl_limit l = gcra(1000, SEC, 1000);
    const uint64_t spent = 1ull << 40;
    for (int n = 0; n < 3; n++)
        assert_true(request(t, web, spent, &l, 3, T0));
    for (uint64_t i = 0; i < 1000; i++)
        assert_true(request(t, web, i, &l, 3, T0 + MIN + i));
    assert_int_equal(sl_table_counter(t, web, SL_C_OVERFLOW), 0);
    assert_false(request(t, web, spent, &l, 3, T0 + 2 * MIN));
    sl_table_close(t);
}

/* Window algorithms are judged by their counts the same way. */
static void window_keys_at_their_count_stay_and_others_make_room(void **unused)
{
    (void)unused;
    for (enum sl_alg alg = SL_ALG_SLIDING; alg <= SL_ALG_FIXED; alg++) {
        struct sl_table *t = table(64, SL_FULL_DENY);
        int web = sl_table_rule(t, WEB_ID, "web");
        struct sl_limit l;
        assert_int_equal(sl_limit_init(&l, alg, 2, HOUR, 0), 0);
        const uint64_t spent = 1ull << 40;
        assert_true(decide(t, web, WEB_ID, spent, &l, T0));
        assert_true(decide(t, web, WEB_ID, spent, &l, T0));
        for (uint64_t i = 0; i < 1000; i++)
            assert_true(decide(t, web, WEB_ID, i, &l, T0 + i));
        assert_int_equal(sl_table_counter(t, web, SL_C_OVERFLOW), 0);
        assert_false(decide(t, web, WEB_ID, spent, &l, T0 + MIN));
        sl_table_close(t);
    }
}

/* Threads flooding one-off keys while keys at their limit ask again: each
 * spent key's requests pass exactly as many times as its bucket allows
 * (none), however the evictions race with them and with each other. */
struct flooder {
    struct sl_table *t;
    int rule;
    const struct sl_limit *l;
    uint64_t first, n;
    pthread_barrier_t *start;
    uint64_t spent_passed;
};

#define SPENT 32

static void *flood_main(void *arg)
{
    struct flooder *f = arg;
    pthread_barrier_wait(f->start);
    for (uint64_t i = 0; i < f->n; i++) {
        decide(f->t, f->rule, WEB_ID, f->first + i, f->l, T0 + 1);
        f->spent_passed += decide(f->t, f->rule, WEB_ID, (1ull << 40) + i % SPENT, f->l, T0 + 1);
    }
    return NULL;
}

static void threads_flooding_one_off_keys_never_evict_a_spent_key(void **unused)
{
    (void)unused;
    struct sl_table *t = table(256, SL_FULL_DENY);
    int r = sl_table_rule(t, WEB_ID, "web");
    struct sl_limit l = gcra(2, HOUR, 2);
    for (uint64_t k = 0; k < SPENT; k++) { /* spent: 2 of 2 */
        assert_true(decide(t, r, WEB_ID, (1ull << 40) + k, &l, T0));
        assert_true(decide(t, r, WEB_ID, (1ull << 40) + k, &l, T0));
    }
    static struct flooder f[NTHREADS];
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, NTHREADS);
    for (int i = 0; i < NTHREADS; i++)
        f[i] = (struct flooder){
            .t = t, .rule = r, .l = &l, .first = (uint64_t)i * 100000, .n = 20000, .start = &start};
    run_threads(NTHREADS, flood_main, f, sizeof f[0]);
    pthread_barrier_destroy(&start);
    uint64_t passed = 0;
    for (int i = 0; i < NTHREADS; i++)
        passed += f[i].spent_passed;
    assert_int_equal(passed, 0);
    assert_true(sl_table_counter(t, r, SL_C_REUSED) > 10000); /* the flood evicted its own */
    sl_table_close(t);
}

/* ---- named tables and fork ------------------------------------------- */

static char shared_name[64];

static int unlink_named(void **unused)
{
    (void)unused;
    char path[80];
    snprintf(path, sizeof path, "/sluice.%s", shared_name);
    shm_unlink(path);
    return 0;
}

static int name_table(void **unused)
{
    snprintf(shared_name, sizeof shared_name, "test-%ld", (long)getpid());
    return unlink_named(unused); /* a leftover from a crashed run */
}

static void named_table_opened_twice_shares_its_buckets(void **unused)
{
    (void)unused;
    char err[256] = "";
    struct sl_table *a = sl_table_open(64, shared_name, SL_FULL_SHARED, err, sizeof err);
    if (!a) fail_msg("%s", err);
    struct sl_table *b = sl_table_open(4096, shared_name, SL_FULL_SHARED, err, sizeof err);
    if (!b) fail_msg("%s", err);
    assert_int_equal(sl_table_slots(b), 68); /* the creator's size wins */
    int ra = sl_table_rule(a, WEB_ID, "web"), rb = sl_table_rule(b, WEB_ID, "web");
    assert_int_equal(ra, rb);
    struct sl_limit l = gcra(1, HOUR, 3);
    for (int i = 0; i < 3; i++)
        assert_true(decide(a, ra, WEB_ID, 9, &l, T0));
    assert_false(decide(b, rb, WEB_ID, 9, &l, T0));
    assert_true(decide(b, rb, WEB_ID, 10, &l, T0));
    assert_int_equal(sl_table_used(a), 2);
    assert_int_equal(sl_table_counter(a, ra, SL_C_CLAIMED), 2);
    sl_table_close(a);
    sl_table_close(b);
}

static void attached_table_reads_the_counters_and_rules(void **unused)
{
    (void)unused;
    char err[256] = "";
    struct sl_table *t = sl_table_open(64, shared_name, SL_FULL_SHARED, err, sizeof err);
    if (!t) fail_msg("%s", err);
    int r = sl_table_rule(t, API_ID, "api");
    sl_table_count(t, r, SL_C_ALLOWED, 41);
    sl_table_count(t, r, SL_C_LIMITED, 2);

    struct sl_table *ro = sl_table_attach(shared_name, err, sizeof err);
    if (!ro) fail_msg("%s", err);
    assert_int_equal(sl_table_slots(ro), 68);
    assert_int_equal(sl_table_bytes(ro), sl_table_bytes(t));
    assert_int_equal(sl_table_counter(ro, r, SL_C_ALLOWED), 41);
    assert_int_equal(sl_table_counter(ro, r, SL_C_LIMITED), 2);
    uint64_t id;
    char name[SL_NAME_MAX];
    assert_true(sl_table_rule_info(ro, r, &id, name, sizeof name));
    assert_int_equal(id, API_ID);
    assert_string_equal(name, "api");
    sl_table_close(ro);
    sl_table_close(t);
}

static void attaching_a_missing_table_fails_with_a_message(void **unused)
{
    (void)unused;
    char err[256] = "";
    assert_null(sl_table_attach(shared_name, err, sizeof err));
    assert_non_null(strstr(err, shared_name));
}

static void forked_child_decisions_are_seen_by_the_parent(void **unused)
{
    (void)unused;
    struct sl_table *t = table(64, SL_FULL_SHARED);
    int r = sl_table_rule(t, WEB_ID, "web");
    struct sl_limit l = gcra(1, HOUR, 3);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) { /* no cmocka in the child: report by exit status */
        int ok = 0;
        for (int i = 0; i < 3; i++)
            ok += decide(t, r, WEB_ID, 4, &l, T0);
        sl_table_count(t, r, SL_C_ALLOWED, (uint64_t)ok);
        _exit(ok == 3 ? 0 : 1);
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    assert_false(decide(t, r, WEB_ID, 4, &l, T0));
    assert_int_equal(sl_table_counter(t, r, SL_C_ALLOWED), 3);
    assert_int_equal(sl_table_counter(t, r, SL_C_CLAIMED), 1);
    assert_int_equal(sl_table_used(t), 1);
    sl_table_close(t);
}

/* The ring of recent denials: in order, each whole, and a reader that
 * comes late is told how many it missed. */
static void denials_are_read_in_order_and_late_readers_count_what_they_missed(void **state)
{
    (void)state;
    struct sl_table *t = table(1024, SL_FULL_SHARED);
    int r = sl_table_rule(t, WEB_ID, "web");
    uint64_t from = 0, lost = 0;
    struct sl_denial out[64];
    assert_int_equal(sl_table_denials(t, &from, out, 64, &lost), 0);
    for (uint64_t i = 0; i < 10; i++) {
        struct sl_key k = key(WEB_ID, i);
        sl_table_note_denial(t, r | (i == 9 ? SL_DENIAL_DRY : 0), &k, T0 + i);
    }
    assert_int_equal(sl_table_denials(t, &from, out, 64, &lost), 10);
    assert_int_equal(lost, 0);
    for (int i = 0; i < 10; i++) {
        assert_int_equal(out[i].at_ns, T0 + (uint64_t)i);
        assert_int_equal(out[i].rule, r);
        assert_int_equal(out[i].key.lo, (uint64_t)i);
        assert_int_equal(out[i].key.rule, WEB_ID);
        assert_int_equal(out[i].dry, i == 9);
    }
    assert_int_equal(sl_table_denials(t, &from, out, 64, &lost), 0); /* nothing new */
    for (uint64_t i = 0; i < 3000; i++) {
        struct sl_key k = key(WEB_ID, 100 + i);
        sl_table_note_denial(t, r, &k, T0 + 100 + i);
    }
    size_t got = 0, n;
    uint64_t last = 0;
    while ((n = sl_table_denials(t, &from, out, 64, &lost)) > 0) {
        for (size_t i = 0; i < n; i++) {
            assert_true(out[i].key.lo > last); /* oldest first, none twice */
            last = out[i].key.lo;
        }
        got += n;
    }
    assert_int_equal(got, 2048);         /* the ring's size */
    assert_int_equal(lost, 3000 - 2048); /* overwritten before this reader came */
    assert_int_equal(last, 100 + 2999);  /* up to the newest */
    sl_table_close(t);
}

/* A rule's queue: the delayed decisions whose turn is still to come. */
static void queue_counts_the_turns_still_to_come(void **state)
{
    (void)state;
    struct sl_table *t = table(1024, SL_FULL_SHARED);
    int r = sl_table_rule(t, WEB_ID, "web");
    for (uint64_t i = 1; i <= 4; i++)
        sl_table_count_wait(t, r, T0, i * SEC); /* turns at T0 + 1..4 s */
    uint32_t waiting;
    uint64_t longest, total;
    sl_table_queue(t, r, T0, &waiting, &longest, &total);
    assert_int_equal(waiting, 4);
    assert_int_equal(longest, 4 * SEC);
    assert_int_equal(total, 10 * SEC);
    sl_table_queue(t, r, T0 + 2 * SEC + 1, &waiting, &longest, &total);
    assert_int_equal(waiting, 2);
    assert_int_equal(longest, 2 * SEC - 1);
    assert_int_equal(sl_table_counter(t, r, SL_C_DELAYED), 4);
    for (uint64_t i = 0; i < 100; i++) /* more than it keeps: the last 59 */
        sl_table_count_wait(t, r, T0, 10 * SEC + i);
    sl_table_queue(t, r, T0, &waiting, &longest, &total);
    assert_int_equal(waiting, 59);
    assert_int_equal(longest, 10 * SEC + 99);
    sl_table_close(t);
}

struct ring_writer {
    struct sl_table *t;
    int rule;
    uint64_t base;
};

static void *write_denials(void *arg)
{
    struct ring_writer *w = arg;
    for (uint64_t i = 0; i < 20000; i++) {
        struct sl_key k = {
            .rule = WEB_ID, .hi = (w->base + i) * 7, .lo = w->base + i, .extra = 128};
        sl_table_note_denial(w->t, w->rule, &k, T0 + i);
    }
    return NULL;
}

/* Two writers and a reader at once: every entry read is whole (its two
 * halves written together), and read or counted lost, never both. */
static void denials_read_while_written_are_whole(void **state)
{
    (void)state;
    struct sl_table *t = table(1024, SL_FULL_SHARED);
    int r = sl_table_rule(t, WEB_ID, "web");
    struct ring_writer a = {t, r, 1}, b = {t, r, 1u << 30};
    pthread_t ta, tb;
    pthread_create(&ta, NULL, write_denials, &a);
    pthread_create(&tb, NULL, write_denials, &b);
    uint64_t from = 0, lost = 0, got = 0;
    struct sl_denial out[256];
    for (int rounds = 0; rounds < 100000 && from < 40000; rounds++) {
        size_t n = sl_table_denials(t, &from, out, 256, &lost);
        for (size_t i = 0; i < n; i++)
            assert_int_equal(out[i].key.hi, out[i].key.lo * 7);
        got += n;
    }
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    size_t n;
    while ((n = sl_table_denials(t, &from, out, 256, &lost)) > 0)
        got += n;
    assert_int_equal(got + lost, 40000);
    sl_table_close(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(table_rounds_slots_up_to_four_times_a_prime_of_at_least_68),
        cmocka_unit_test(table_registers_a_rule_once_and_finds_it_again),
        cmocka_unit_test(table_refuses_a_rule_past_the_maximum),
        cmocka_unit_test(table_claims_a_slot_for_a_new_key_and_finds_it_again),
        cmocka_unit_test(table_gives_each_key_its_own_bucket),
        cmocka_unit_test(a_decision_by_the_keys_hash_shares_the_keys_bucket),
        cmocka_unit_test(a_remembered_slot_is_taken_only_while_it_holds_the_key),
        cmocka_unit_test(table_keeps_the_same_address_apart_under_two_rules),
        cmocka_unit_test(table_counters_add_up_per_rule),
        cmocka_unit_test(table_refund_gives_the_key_one_token_back),
        cmocka_unit_test(threads_on_one_hot_key_pass_exactly_the_burst),
        cmocka_unit_test(threads_on_many_keys_pass_exactly_each_key_s_burst),
        cmocka_unit_test(full_table_shared_lets_exactly_one_burst_through_for_all_new_keys),
        cmocka_unit_test(full_table_gives_no_amnesty_to_keys_that_already_have_a_slot),
        cmocka_unit_test(full_table_overflow_buckets_are_per_rule),
        cmocka_unit_test(full_table_deny_denies_keys_that_find_no_slot),
        cmocka_unit_test(full_table_allow_passes_keys_that_find_no_slot),
        cmocka_unit_test(full_table_keeps_a_live_slot_from_a_new_key),
        cmocka_unit_test(idle_slots_are_reused_by_new_keys_with_fresh_buckets),
        cmocka_unit_test(threads_reusing_slots_for_one_new_key_give_it_one),
        cmocka_unit_test(a_slot_taken_between_lookup_and_step_is_looked_for_again),
        cmocka_unit_test(threads_taking_places_for_new_keys_give_each_its_one),
        cmocka_unit_test(a_give_back_never_falls_on_a_key_given_the_slot),
        cmocka_unit_test(table_memory_never_grows),
        cmocka_unit_test(one_off_keys_leave_an_honest_new_key_its_whole_budget),
        cmocka_unit_test(a_full_table_evicts_the_least_used_key_first),
        cmocka_unit_test(quota_words_at_their_limit_stay_and_others_make_room),
        cmocka_unit_test(window_keys_at_their_count_stay_and_others_make_room),
        cmocka_unit_test(threads_flooding_one_off_keys_never_evict_a_spent_key),
        cmocka_unit_test_setup_teardown(named_table_opened_twice_shares_its_buckets, name_table,
                                        unlink_named),
        cmocka_unit_test_setup_teardown(attached_table_reads_the_counters_and_rules, name_table,
                                        unlink_named),
        cmocka_unit_test_setup_teardown(attaching_a_missing_table_fails_with_a_message, name_table,
                                        unlink_named),
        cmocka_unit_test(forked_child_decisions_are_seen_by_the_parent),
        cmocka_unit_test(denials_are_read_in_order_and_late_readers_count_what_they_missed),
        cmocka_unit_test(queue_counts_the_turns_still_to_come),
        cmocka_unit_test(denials_read_while_written_are_whole),
    };
    return cmocka_run_group_tests(tests, NULL, NULL) != 0;
}
