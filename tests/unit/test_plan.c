/* SPDX-License-Identifier: BSD-2-Clause */
/* test_plan.c - plans and their hashed key values. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "../../core/mem.h"
#include "../../core/limit/plan.h"

static struct sl_plan plan(const char *name, uint64_t per_second)
{
    struct sl_plan p;
    memset(&p, 0, sizeof p);
    snprintf(p.name, sizeof p.name, "%s", name);
    assert_int_equal(
        sl_limit_init(&p.req_limit, SL_ALG_GCRA, per_second, 1000000000ull, per_second), 0);
    return p;
}

static void a_key_value_finds_its_plan_and_unknown_values_none(void **unused)
{
    (void)unused;
    struct sl_plans *ps = sl_plans_new();
    assert_non_null(ps);
    struct sl_plan free_plan = plan("free", 3), premium = plan("premium", 100);
    int f = sl_plans_add(ps, &free_plan), p = sl_plans_add(ps, &premium);
    assert_int_equal(f, 0);
    assert_int_equal(p, 1);
    assert_int_equal(sl_plans_add_key(ps, p, "sk_gold", 7, 1), 0);
    assert_int_equal(sl_plans_add_key(ps, f, "sk_tin", 6, 2), 0);
    char many[32];
    for (int i = 0; i < 100; i++) {
        int n = snprintf(many, sizeof many, "tenant-%d", i);
        assert_int_equal(sl_plans_add_key(ps, i % 2, many, (size_t)n, 3), 0);
    }
    assert_int_equal(sl_plans_seal(ps), 0);
    assert_string_equal(sl_plans_find(ps, "sk_gold", 7)->name, "premium");
    assert_string_equal(sl_plans_find(ps, "sk_tin", 6)->name, "free");
    assert_string_equal(sl_plans_find(ps, "tenant-41", 9)->name, "premium");
    assert_string_equal(sl_plans_find(ps, "tenant-40", 9)->name, "free");
    assert_null(sl_plans_find(ps, "sk_gol", 6));
    assert_null(sl_plans_find(ps, "sk_gold ", 8));
    assert_null(sl_plans_find(ps, "", 0));
    assert_int_equal(sl_plans_keys(ps, p), 51);
    assert_int_equal(sl_plans_keys(ps, f), 51);
    sl_plans_free(ps);
}

static void a_value_is_kept_only_as_a_digest(void **unused)
{
    (void)unused;
    struct sl_plans *ps = sl_plans_new();
    struct sl_plan gold = plan("gold", 10);
    sl_plans_add(ps, &gold);
    static const char secret[] = "sk_live_0123456789abcdef";
    assert_int_equal(sl_plans_add_key(ps, 0, secret, sizeof secret - 1, 1), 0);
    sl_plans_seal(ps);
    /* the object holds no copy of the value (its entries are digests) */
    const unsigned char *mem = (const unsigned char *)ps;
    assert_null(memmem(mem, 4096, "sk_live_", 8)); /* the object is larger */
    assert_non_null(sl_plans_find(ps, secret, sizeof secret - 1));
    sl_plans_free(ps);
}

static void a_value_cannot_have_two_plans_nor_a_name_two_plans(void **unused)
{
    (void)unused;
    struct sl_plans *ps = sl_plans_new();
    struct sl_plan a = plan("a", 1), b = plan("b", 2), a2 = plan("a", 3);
    assert_int_equal(sl_plans_add(ps, &a), 0);
    assert_int_equal(sl_plans_add(ps, &b), 1);
    assert_int_equal(sl_plans_add(ps, &a2), -1);
    assert_int_equal(sl_plans_add_key(ps, 0, "k", 1, 7), 0);
    assert_int_equal(sl_plans_add_key(ps, 0, "j", 1, 8), 0);
    assert_int_equal(sl_plans_add_key(ps, 1, "k", 1, 9), 0);
    assert_int_equal(sl_plans_add_key(ps, 1, "j", 1, 12), 0);
    assert_int_equal(sl_plans_add_key(ps, 2, "x", 1, 10), -1);
    assert_int_equal(sl_plans_seal(ps), 9); /* the first line that gave a value again */
    sl_plans_free(ps);
}

static void no_plans_find_nothing(void **unused)
{
    (void)unused;
    assert_null(sl_plans_find(NULL, "k", 1));
    assert_int_equal(sl_plans_count(NULL), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_key_value_finds_its_plan_and_unknown_values_none),
        cmocka_unit_test(a_value_is_kept_only_as_a_digest),
        cmocka_unit_test(a_value_cannot_have_two_plans_nor_a_name_two_plans),
        cmocka_unit_test(no_plans_find_nothing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL) != 0;
}
