/* SPDX-License-Identifier: BSD-2-Clause */
/* test_reqkey.c - request keys: the hash of a key value is SipHash under
 * the table's secret, and the per-thread memo that skips it (and the
 * key's table hash) while a value repeats never hands back a stale hash
 * (another value, another secret, another rule). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <sodium.h>
#include <string.h>

#include "../../core/http/reqkey.h"

/* The key as computed from scratch, without the memo. */
static void reference(struct sl_key *k, const struct sl_rule *r, const char *v, size_t len,
                      const uint64_t secret[4])
{
    unsigned char out[crypto_shorthash_siphashx24_BYTES];
    unsigned char key[crypto_shorthash_siphashx24_KEYBYTES];
    memcpy(key, secret, sizeof key);
    crypto_shorthash_siphashx24(out, (const unsigned char *)v, len, key);
    k->rule = r->id;
    memcpy(&k->hi, out, 8);
    memcpy(&k->lo, out + 8, 8);
    k->extra = SL_REQ_KEY_BUCKET | SL_REQ_KEY_VALUE | (uint64_t)r->req_per;
}

static void same_key(const struct sl_key *a, const struct sl_key *b)
{
    assert_int_equal(a->rule, b->rule);
    assert_int_equal(a->hi, b->hi);
    assert_int_equal(a->lo, b->lo);
    assert_int_equal(a->extra, b->extra);
}

static void a_repeated_value_keeps_its_key_and_a_change_of_anything_changes_it(void **unused)
{
    (void)unused;
    uint64_t s1[4] = {1, 2, 3, 4}, s2[4] = {5, 6, 7, 8};
    struct sl_rule r1 = {.id = 11, .req_per = SL_REQ_PER_HEADER};
    struct sl_rule r2 = {.id = 12, .req_per = SL_REQ_PER_QUERY};
    char longv[600];
    memset(longv, 'v', sizeof longv);
    const struct {
        const struct sl_rule *r;
        const char *v;
        size_t len;
        const uint64_t *secret;
    } steps[] = {
        {&r1, "key-0042", 8, s1},
        {&r1, "key-0042", 8, s1}, /* a hit */
        {&r2, "key-0042", 8, s1}, /* another rule, same hash */
        {&r1, "key-0042", 8, s2}, /* a new secret */
        {&r1, "key-0043", 8, s2}, /* another value */
        {&r1, "key-004", 7, s2},  /* a prefix of it */
        {&r1, "", 0, s2},
        {&r1, "", 0, s2}, /* empty */
        {&r1, NULL, 600, s2},
        {&r1, NULL, 600, s2}, /* too long to keep */
        {&r1, "key-0042", 8, s1},
        /* the same length, one byte else: in the first word, the last */
        {&r1, "abcdefghijklmnopqrst", 20, s1},
        {&r1, "abcXefghijklmnopqrst", 20, s1},
        {&r1, "abcXefghijklmnopqrsX", 20, s1},
        {&r1, "short", 5, s1},
        {&r1, "shorT", 5, s1},
    };
    /* the key alone, then with its table hash, then the two in turn (a
     * value remembered without its hash, then asked with it) */
    for (int pass = 0; pass < 3; pass++) {
        for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
            const char *v = steps[i].v ? steps[i].v : longv;
            struct sl_key got, want;
            reference(&want, steps[i].r, v, steps[i].len, steps[i].secret);
            if (pass == 0 || (pass == 2 && i % 2 == 0)) {
                sl_req_key_value(&got, steps[i].r, v, steps[i].len, steps[i].secret);
            } else {
                uint64_t h =
                    sl_req_key_value_hash(&got, steps[i].r, v, steps[i].len, steps[i].secret);
                assert_int_equal(h, sl_key_hash(&want, steps[i].secret));
            }
            same_key(&got, &want);
        }
    }
}

static void a_key_from_another_secret_differs(void **unused)
{
    (void)unused;
    uint64_t s1[4] = {1, 2, 3, 4}, s2[4] = {1, 9, 3, 4};
    struct sl_rule r = {.id = 1, .req_per = SL_REQ_PER_HEADER};
    struct sl_key a, b;
    sl_req_key_value(&a, &r, "abc", 3, s1);
    sl_req_key_value(&b, &r, "abc", 3, s2);
    assert_true(a.hi != b.hi || a.lo != b.lo);
}

int main(void)
{
    if (sodium_init() < 0) return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_repeated_value_keeps_its_key_and_a_change_of_anything_changes_it),
        cmocka_unit_test(a_key_from_another_secret_differs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL) != 0;
}
