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

#include <pthread.h>
#include <sodium.h>
#include <stdio.h>
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
    char longv[600], mid[100], mid2[100];
    memset(longv, 'v', sizeof longv);
    memset(mid, 'm', sizeof mid);
    memcpy(mid2, mid, sizeof mid);
    mid2[sizeof mid2 - 1] = 'M';
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
        /* longer than the process's memory keeps: the thread's memo */
        {&r1, mid, 100, s1},
        {&r1, mid, 100, s1},
        {&r2, mid, 100, s1},
        {&r1, mid, 100, s2},
        {&r1, mid2, 100, s2},
        {&r1, mid, 99, s2},
        {&r1, mid, 100, s2},
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

/* c holds exactly the copies want[0..n), in order. */
/* The process's memory of values (reqkey.c `values`): a value hashed
 * before, by this thread or another, is not hashed again, under the same
 * secret only; and what it hands back is always the value's own hash. */
static void a_value_seen_before_is_found_not_hashed(void **unused)
{
    (void)unused;
    uint64_t s1[4] = {1, 2, 3, 4}, s2[4] = {1, 2, 3, 5};
    struct sl_rule r = {.id = 7, .req_per = SL_REQ_PER_HEADER};
    char v[80];
    for (size_t i = 0; i < sizeof v; i++)
        v[i] = (char)('a' + i % 26);
    struct sl_key got, want;
    /* every length from 1 to 80, twice in turn with four other values
     * between: the second is found when the value fits (<= 64 bytes), and
     * right either way (a longer one is the thread's memo's, which keeps
     * every fourth value after a miss: a_long_value_repeated_is_hashed_
     * at_most_until_the_memo_keeps_it) */
    static const char *between[4] = {"between0", "between1", "between2", "between3"};
    for (size_t len = 1; len <= sizeof v; len++) {
        uint64_t before = sl_req_key_hashed();
        sl_req_key_value(&got, &r, v, len, s1);
        reference(&want, &r, v, len, s1);
        same_key(&got, &want);
        assert_true(sl_req_key_hashed() - before <= 1);
        for (int i = 0; i < 4; i++)
            sl_req_key_value(&got, &r, between[i], 8, s1);
        uint64_t mid = sl_req_key_hashed();
        sl_req_key_value(&got, &r, v, len, s1);
        same_key(&got, &want);
        if (len <= 64) assert_int_equal(sl_req_key_hashed() - mid, 0);
        assert_true(sl_req_key_hashed() - mid <= 1);
    }
    /* one byte else at the end of a word, and a value shorter by a byte */
    sl_req_key_value(&got, &r, "abcdefghijklmnop", 16, s1);
    sl_req_key_value(&got, &r, "between", 7, s1);
    sl_req_key_value(&got, &r, "abcdefghijklmnoq", 16, s1);
    reference(&want, &r, "abcdefghijklmnoq", 16, s1);
    same_key(&got, &want);
    sl_req_key_value(&got, &r, "abcdefghijklmno", 15, s1);
    reference(&want, &r, "abcdefghijklmno", 15, s1);
    same_key(&got, &want);
    /* another secret: hashed again, under it */
    sl_req_key_value(&got, &r, "between", 7, s1);
    uint64_t before = sl_req_key_hashed();
    sl_req_key_value(&got, &r, "abcdefghijklmno", 15, s2);
    reference(&want, &r, "abcdefghijklmno", 15, s2);
    same_key(&got, &want);
    assert_int_equal(sl_req_key_hashed() - before, 1);
}

/* The memory of values keeps the table hash of the key the rule that
 * kept a value made of it (reqkey.c `values`): asked again by that rule
 * it is handed back, not made; by another rule, or one of another `per`
 * (another extra), with the same value found, the table hash is that
 * rule's own. Each is found, not hashed again. */
static void a_value_found_gives_the_table_hash_of_the_rule_that_asks(void **unused)
{
    (void)unused;
    uint64_t s1[4] = {21, 22, 23, 24};
    struct sl_rule a = {.id = 31, .req_per = SL_REQ_PER_HEADER};
    struct sl_rule b = {.id = 32, .req_per = SL_REQ_PER_HEADER};
    struct sl_rule q = {.id = 31, .req_per = SL_REQ_PER_QUERY}; /* a's id, another extra */
    const struct sl_rule *order[] = {&a, &a, &b, &q, &a, &b, &q};
    static const char v[] = "tenant-0099-table-hash";
    size_t len = sizeof v - 1;
    struct sl_key got, want;
    sl_req_key_value_hash(&got, &a, v, len, s1); /* kept, with a's table hash */
    uint64_t before = sl_req_key_hashed();
    for (size_t i = 0; i < sizeof order / sizeof order[0]; i++) {
        uint64_t h = sl_req_key_value_hash(&got, order[i], v, len, s1);
        reference(&want, order[i], v, len, s1);
        same_key(&got, &want);
        assert_int_equal(h, sl_key_hash(&want, s1));
        uint64_t one = 0;
        assert_true(sl_req_key_one_hash(&got, order[i], v, len, s1, &one));
        assert_int_equal(one, sl_key_hash(&want, s1));
    }
    assert_int_equal(sl_req_key_hashed() - before, 0);
}

/* A value that is one key gets the key and table hash sl_req_key_value_hash
 * gives it, found or hashed; a list (a comma anywhere, past the bytes
 * hashed too) gets none, even after the same bytes were hashed as a value
 * over and over: the memories of values keep no list, so a value found
 * there is known to be one key without being looked at again. Short
 * (the process's memory), long (the thread's memo) and over-long values. */
static void a_value_answered_as_one_key_is_never_a_list(void **unused)
{
    (void)unused;
    uint64_t s1[4] = {9, 8, 7, 6};
    struct sl_rule r = {.id = 3, .req_per = SL_REQ_PER_HEADER};
    static char v[SL_REQ_VALUE_MAX + 40];
    const size_t lens[] = {5, 64, 100, 256, SL_REQ_VALUE_MAX + 40};
    for (size_t i = 0; i < sizeof lens / sizeof *lens; i++) {
        size_t len = lens[i];
        for (size_t j = 0; j < len; j++)
            v[j] = (char)('a' + (j + i) % 26);
        struct sl_key got, want;
        uint64_t h, hw;
        for (int round = 0; round < 6; round++) { /* found from the second or the fifth on */
            hw = sl_req_key_value_hash(&want, &r, v, len, s1);
            assert_true(sl_req_key_one_hash(&got, &r, v, len, s1, &h));
            same_key(&got, &want);
            assert_int_equal(h, hw);
        }
        v[len - 2] = ','; /* past SL_REQ_VALUE_MAX for the last length */
        for (int round = 0; round < 6; round++) {
            sl_req_key_value_hash(&want, &r, v, len, s1);
            assert_false(sl_req_key_one_hash(&got, &r, v, len, s1, &h));
        }
    }
}

/* A value too long for the process's memory (a JWT as the key), sent
 * request after request on one thread: the memo keeps it by its fourth
 * miss at the latest, and then finds it; short values between do not put
 * it out (they skip the memo). */
static void a_long_value_repeated_is_hashed_at_most_until_the_memo_keeps_it(void **unused)
{
    (void)unused;
    uint64_t s1[4] = {21, 22, 23, 24};
    struct sl_rule r = {.id = 5, .req_per = SL_REQ_PER_HEADER};
    char jwt[200];
    for (size_t i = 0; i < sizeof jwt; i++)
        jwt[i] = (char)('A' + i % 57);
    struct sl_key got, want;
    reference(&want, &r, jwt, sizeof jwt, s1);
    uint64_t before = sl_req_key_hashed();
    for (int i = 0; i < 4; i++) {
        sl_req_key_value(&got, &r, jwt, sizeof jwt, s1);
        same_key(&got, &want);
    }
    assert_true(sl_req_key_hashed() - before <= 4);
    before = sl_req_key_hashed();
    for (int i = 0; i < 4; i++) {
        sl_req_key_value(&got, &r, "short-key", 9, s1);
        uint64_t h = sl_req_key_value_hash(&got, &r, jwt, sizeof jwt, s1);
        same_key(&got, &want);
        assert_int_equal(h, sl_key_hash(&want, s1));
    }
    assert_true(sl_req_key_hashed() - before <= 1); /* short-key, once */
    /* one byte else at its end: hashed, and its own key */
    jwt[sizeof jwt - 1] ^= 1;
    reference(&want, &r, jwt, sizeof jwt, s1);
    before = sl_req_key_hashed();
    sl_req_key_value(&got, &r, jwt, sizeof jwt, s1);
    same_key(&got, &want);
    assert_int_equal(sl_req_key_hashed() - before, 1);
}

/* Where reqkey.c files a value (its cheap hash: the set, and the way
 * it picked before), as its value_hash computes them; values of 8 to 16
 * bytes. */
static unsigned value_set(const char *v, size_t len, unsigned *hash_way)
{
    uint64_t first, last = 0;
    memcpy(&first, v, 8);
    size_t rem = len - (len - 1) / 8 * 8;
    memcpy(&last, v + len - 8, 8);
    last >>= (8 - rem) * 8;
    uint64_t h = (first ^ len) * 0x9e3779b97f4a7c15ull ^ last * 0xc2b2ae3d27d4eb4full;
    h ^= h >> 29;
    *hash_way = (unsigned)(h >> 54 & 1);
    return (unsigned)(h >> 55);
}

/* Two values of one set are both kept, whichever way their hashes pick:
 * a third takes the way used less lately. Before, a bit of the hash
 * picked the way (the sets were direct-mapped): B, whose bit is A's, put
 * A out, and A was hashed again. */
static void two_values_of_one_set_are_both_kept(void **unused)
{
    (void)unused;
    uint64_t s1[4] = {11, 12, 13, 14};
    struct sl_rule r = {.id = 9, .req_per = SL_REQ_PER_HEADER};
    char a[17], b[17], c[17];
    unsigned wa, wb, wc;
    snprintf(a, sizeof a, "key-%012u", 0u);
    unsigned set = value_set(a, 16, &wa), found = 0;
    for (unsigned i = 1; i < 1000000 && found < 2; i++) {
        char *x = found ? c : b;
        snprintf(x, 17, "key-%012u", i);
        unsigned w;
        if (value_set(x, 16, &w) == set && w == wa) found++;
    }
    assert_int_equal(found, 2);
    value_set(b, 16, &wb);
    value_set(c, 16, &wc);
    struct sl_key got;
    sl_req_key_value(&got, &r, a, 16, s1);
    sl_req_key_value(&got, &r, b, 16, s1);
    uint64_t before = sl_req_key_hashed();
    sl_req_key_value(&got, &r, a, 16, s1); /* found (the memo holds b) */
    sl_req_key_value(&got, &r, b, 16, s1);
    assert_int_equal(sl_req_key_hashed() - before, 0);
    /* c puts out the one used less lately: a; b is still found */
    sl_req_key_value(&got, &r, c, 16, s1);
    sl_req_key_value(&got, &r, b, 16, s1);
    before = sl_req_key_hashed();
    sl_req_key_value(&got, &r, c, 16, s1);
    sl_req_key_value(&got, &r, b, 16, s1);
    assert_int_equal(sl_req_key_hashed() - before, 0);
    sl_req_key_value(&got, &r, a, 16, s1);
    assert_int_equal(sl_req_key_hashed() - before, 1);
}

/* Threads hashing 600 values (more than the memory holds: entries are
 * written over while others read them) in different orders: every key
 * handed back is the value's own. A torn read (a value of one writer, a
 * hash of another) would fail. */
#define HASHERS 4
#define NVALUES 600
static struct sl_key value_want[NVALUES];
static char value_text[NVALUES][48];

static void *hasher(void *arg)
{
    uint64_t seed = (uint64_t)(uintptr_t)arg * 7919 + 1, bad = 0, secret[4] = {9, 8, 7, 6};
    struct sl_rule r = {.id = 3, .req_per = SL_REQ_PER_HEADER};
    for (int i = 0; i < 200000; i++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        size_t n = (size_t)(seed >> 33) % NVALUES;
        struct sl_key k;
        sl_req_key_value(&k, &r, value_text[n], strlen(value_text[n]), secret);
        bad += k.hi != value_want[n].hi || k.lo != value_want[n].lo;
    }
    return (void *)(uintptr_t)bad;
}

static void threads_sharing_the_memory_of_values_get_their_own_hashes(void **unused)
{
    (void)unused;
    uint64_t secret[4] = {9, 8, 7, 6};
    struct sl_rule r = {.id = 3, .req_per = SL_REQ_PER_HEADER};
    for (int n = 0; n < NVALUES; n++) {
        snprintf(value_text[n], sizeof value_text[n], "sk-%0*d", 8 + n % 37, n);
        reference(&value_want[n], &r, value_text[n], strlen(value_text[n]), secret);
    }
    pthread_t t[HASHERS];
    for (uintptr_t i = 0; i < HASHERS; i++)
        pthread_create(&t[i], NULL, hasher, (void *)i);
    uintptr_t bad = 0;
    for (int i = 0; i < HASHERS; i++) {
        void *b;
        pthread_join(t[i], &b);
        bad += (uintptr_t)b;
    }
    assert_int_equal(bad, 0);
}

static void copies_are(const struct sl_req_copies *c, const char *const *want, unsigned n)
{
    assert_false(c->many);
    assert_int_equal(c->n, n);
    for (unsigned i = 0; i < n; i++) {
        assert_int_equal(c->len[i], strlen(want[i]));
        assert_memory_equal(c->v[i], want[i], c->len[i]);
    }
}

#define COPIES(c, ...)                                                                             \
    copies_are(c, (const char *const[]){__VA_ARGS__},                                              \
               sizeof((const char *const[]){__VA_ARGS__}) / sizeof(const char *))

/* Issue 31 item 7: a header's lines joined "a, b" (node's join, or two
 * lines) are copies; first, last, or each distinct one; more than
 * SL_REQ_COPIES_MAX distinct: many (the rule of doubt). */
static void a_header_list_gives_its_copies_first_last_or_each(void **unused)
{
    (void)unused;
    struct sl_req_copies c;
    const char *v = "rand-1, R ,, R,\tx";
    sl_header_copies(v, strlen(v), SL_COPY_EACH, &c);
    COPIES(&c, "rand-1", "R", "x");
    sl_header_copies(v, strlen(v), SL_COPY_FIRST, &c);
    COPIES(&c, "rand-1");
    sl_header_copies(v, strlen(v), SL_COPY_LAST, &c);
    COPIES(&c, "x");
    sl_header_copies("k", 1, SL_COPY_EACH, &c);
    COPIES(&c, "k");
    sl_header_copies("", 0, SL_COPY_EACH, &c); /* an empty value: one empty copy, as before */
    COPIES(&c, "");
    v = "a, b, c, d, e";
    sl_header_copies(v, strlen(v), SL_COPY_EACH, &c);
    assert_true(c.many);
    sl_header_copies(v, strlen(v), SL_COPY_LAST, &c);
    COPIES(&c, "e");
    v = "a, b, a, b, a, b"; /* repeats are one copy each */
    sl_header_copies(v, strlen(v), SL_COPY_EACH, &c);
    COPIES(&c, "a", "b");
}

/* CGI/PHP: X-API-Key and X_API_KEY are one variable. */
static void header_names_fold_case_and_dash_with_underscore(void **unused)
{
    (void)unused;
    assert_true(sl_req_header_name_eq("X-API-Key", 9, "x_api_key", 9));
    assert_true(sl_req_header_name_eq("X_API_KEY", 9, "x-api-key", 9));
    assert_false(sl_req_header_name_eq("X-API-Key", 9, "X-API-Kex", 9));
    assert_false(sl_req_header_name_eq("X-API-Key", 9, "X-API-Keys", 10));
}

/* PHP's mangling of query names: `api.key`, `api key` (and `api+key`,
 * `api%20key`), ` api_key` and `api[key` are all $_GET['api_key'], which
 * reads the last; `api_key[]` is an array, never the key. Values decode. */
static void query_copies_follow_phps_names_and_take_every_occurrence(void **unused)
{
    (void)unused;
    char buf[256];
    struct sl_req_copies c;
    const char *q = "api_key=rand-1&api.key=R&api+key=b%2C&%20api_key=c&api[key=d&api_key[]=no&"
                    "apikey=no&api_key=R";
    sl_query_copies(q, strlen(q), "api_key", SL_COPY_EACH, buf, sizeof buf, &c);
    assert_true(c.many); /* rand-1, R, "b,", c, d: five */
    q = "api_key=rand-1&api.key=R&api%20key=R&api_key[x]=no";
    sl_query_copies(q, strlen(q), "api_key", SL_COPY_EACH, buf, sizeof buf, &c);
    COPIES(&c, "rand-1", "R");
    sl_query_copies(q, strlen(q), "api_key", SL_COPY_FIRST, buf, sizeof buf, &c);
    COPIES(&c, "rand-1");
    sl_query_copies(q, strlen(q), "api_key", SL_COPY_LAST, buf, sizeof buf, &c);
    COPIES(&c, "R");
    q = "x=1&api[key=d%41";
    sl_query_copies(q, strlen(q), "api.key", SL_COPY_EACH, buf, sizeof buf,
                    &c); /* the rule's too */
    COPIES(&c, "dA");
    q = "x=1";
    sl_query_copies(q, strlen(q), "api_key", SL_COPY_EACH, buf, sizeof buf, &c);
    assert_int_equal(c.n, 0);
    q = "api_key=0123456789&api_key=abcdefghij"; /* decoded values that do not fit: doubt */
    sl_query_copies(q, strlen(q), "api_key", SL_COPY_EACH, buf, 16, &c);
    assert_true(c.many);
}

/* Cookies: a name twice in one line, or across Cookie lines (joined by
 * "; "), are copies (PHP reads the first, python's SimpleCookie the last). */
static void cookie_copies_in_one_line_and_across_lines(void **unused)
{
    (void)unused;
    struct sl_req_copies c;
    const char *h = "sid=rand-1; theme=dark; sid=\"R\"; xsid=no; sid=R";
    sl_cookie_copies(h, strlen(h), "sid", SL_COPY_EACH, &c);
    COPIES(&c, "rand-1", "R");
    sl_cookie_copies(h, strlen(h), "sid", SL_COPY_FIRST, &c);
    COPIES(&c, "rand-1");
    sl_cookie_copies(h, strlen(h), "sid", SL_COPY_LAST, &c);
    COPIES(&c, "R");
}

int main(void)
{
    if (sodium_init() < 0) return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_repeated_value_keeps_its_key_and_a_change_of_anything_changes_it),
        cmocka_unit_test(a_key_from_another_secret_differs),
        cmocka_unit_test(a_value_seen_before_is_found_not_hashed),
        cmocka_unit_test(a_value_found_gives_the_table_hash_of_the_rule_that_asks),
        cmocka_unit_test(a_value_answered_as_one_key_is_never_a_list),
        cmocka_unit_test(two_values_of_one_set_are_both_kept),
        cmocka_unit_test(a_long_value_repeated_is_hashed_at_most_until_the_memo_keeps_it),
        cmocka_unit_test(threads_sharing_the_memory_of_values_get_their_own_hashes),
        cmocka_unit_test(a_header_list_gives_its_copies_first_last_or_each),
        cmocka_unit_test(header_names_fold_case_and_dash_with_underscore),
        cmocka_unit_test(query_copies_follow_phps_names_and_take_every_occurrence),
        cmocka_unit_test(cookie_copies_in_one_line_and_across_lines),
    };
    return cmocka_run_group_tests(tests, NULL, NULL) != 0;
}
