/* SPDX-License-Identifier: BSD-2-Clause */
/* test_table_learned.c - what `learn` rules learned, kept in the table
 * for readers (core/limit/table_learned.h): an entry written is read back
 * whole, a key learned again keeps one entry, the entries are bounded and,
 * once full, the one ending first gives way (a spread renewed at every
 * answer never pushes the other keys out), entries read while two threads
 * write are whole, and every field sl_learn_decide names has a number the
 * table keeps (core/http/learn.h). Times are numbers the test chose.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "../../core/http/learn.h"
#include "../../core/limit/table.h"
#include "../../core/limit/table_learned.h"
#include "testutil.h"

static struct sl_table *table(void)
{
    char err[256] = "";
    struct sl_table *t = sl_table_open(1024, NULL, SL_FULL_SHARED, err, sizeof err);
    if (!t) fail_msg("sl_table_open: %s", err);
    return t;
}

/* Key i: its hash and short hash follow from i, so a reader can tell a
 * whole entry from a torn one. */
static struct sl_learned_hold hold(int rule, uint64_t i, uint64_t at, uint64_t until)
{
    struct sl_learned_hold h = {.rule = rule,
                                .field = SL_LF_RETRY_AFTER,
                                .hash = 0x1000 + i,
                                .at_ns = at,
                                .until_ns = until};
    snprintf(h.key, sizeof h.key, "%06llx", (unsigned long long)(i & 0xffffff));
    return h;
}

static void note(struct sl_table *t, struct sl_learned_hold h)
{
    sl_table_note_learned(t, &h);
}

static size_t read_all(struct sl_table *t, struct sl_learned_hold *out)
{
    return sl_table_learned(t, out, SL_TABLE_LEARNED);
}

static const struct sl_learned_hold *find(const struct sl_learned_hold *v, size_t n, int rule,
                                          uint64_t hash)
{
    for (size_t i = 0; i < n; i++)
        if (v[i].rule == rule && v[i].hash == hash) return &v[i];
    return NULL;
}

static void an_entry_is_read_back_as_written(void **unused)
{
    (void)unused;
    struct sl_table *t = table();
    struct sl_learned_hold out[SL_TABLE_LEARNED];
    assert_int_equal(read_all(t, out), 0); /* a new table: nothing learned */
    struct sl_learned_hold h = {.rule = 3,
                                .field = SL_LF_OPENAI_REMAINING,
                                .key = "a1b2c3",
                                .hash = 0xfeedfacecafebeefull,
                                .at_ns = T0,
                                .until_ns = T0 + 60 * SEC,
                                .gap_ns = 250 * MS,
                                .left = 240};
    sl_table_note_learned(t, &h);
    assert_int_equal(read_all(t, out), 1);
    assert_int_equal(out[0].rule, 3);
    assert_int_equal(out[0].field, SL_LF_OPENAI_REMAINING);
    assert_string_equal(out[0].key, "a1b2c3");
    assert_int_equal(out[0].hash, 0xfeedfacecafebeefull);
    assert_int_equal(out[0].at_ns, T0);
    assert_int_equal(out[0].until_ns, T0 + 60 * SEC);
    assert_int_equal(out[0].gap_ns, 250 * MS);
    assert_int_equal(out[0].left, 240);
    assert_string_equal(sl_learn_field_name(out[0].field), "x-ratelimit-remaining-requests");
    sl_table_close(t);
}

static void a_key_learned_again_keeps_one_entry_with_the_latest(void **unused)
{
    (void)unused;
    struct sl_table *t = table();
    struct sl_learned_hold out[SL_TABLE_LEARNED];
    note(t, hold(0, 1, T0, T0 + 3 * SEC));
    struct sl_learned_hold again =
        hold(0, 1, T0 + SEC, T0 + 2 * SEC); /* shorter: still the latest */
    again.field = SL_LF_GITHUB_RESET;
    sl_table_note_learned(t, &again);
    note(t, hold(1, 1, T0, T0 + 9 * SEC)); /* another rule */
    size_t n = read_all(t, out);
    assert_int_equal(n, 2);
    const struct sl_learned_hold *h = find(out, n, 0, 0x1001);
    assert_non_null(h);
    assert_int_equal(h->at_ns, T0 + SEC);
    assert_int_equal(h->until_ns, T0 + 2 * SEC);
    assert_int_equal(h->field, SL_LF_GITHUB_RESET);
    assert_non_null(find(out, n, 1, 0x1001));
    /* one entry, not two: 62 more keys fill the 64 and none gives way */
    for (uint64_t i = 2; i < SL_TABLE_LEARNED; i++)
        note(t, hold(0, i, T0, T0 + 3 * SEC));
    n = read_all(t, out);
    assert_int_equal(n, SL_TABLE_LEARNED);
    for (uint64_t i = 1; i < SL_TABLE_LEARNED; i++)
        assert_non_null(find(out, n, 0, 0x1000 + i));
    assert_int_equal(find(out, n, 0, 0x1001)->at_ns, T0 + SEC); /* still the latest */
    sl_table_close(t);
}

/* Bounded: past SL_TABLE_LEARNED keys, each new one takes the entry
 * ending first; the ones kept are those with the most time to go. */
static void the_entries_are_bounded_and_the_one_ending_first_gives_way(void **unused)
{
    (void)unused;
    struct sl_table *t = table();
    struct sl_learned_hold out[SL_TABLE_LEARNED];
    size_t bytes = sl_table_bytes(t);
    /* keys 0..199, key i learned at T0 + i s and held 100 s: the entries
     * wrap, each new key taking the place of the one that ends first */
    for (uint64_t i = 0; i < 200; i++) {
        note(t, hold(0, i, T0 + i * SEC, T0 + (100 + i) * SEC));
        size_t n = read_all(t, out);
        assert_int_equal(n, i + 1 < SL_TABLE_LEARNED ? i + 1 : SL_TABLE_LEARNED);
        assert_non_null(find(out, n, 0, 0x1000 + i)); /* the newest is always kept */
        if (i >= SL_TABLE_LEARNED) /* the one that gave way: the earliest to end */
            assert_null(find(out, n, 0, 0x1000 + i - SL_TABLE_LEARNED));
    }
    size_t n = read_all(t, out);
    for (size_t j = 0; j < n; j++) /* the last 64: 136..199 */
        assert_true(out[j].hash >= 0x1000 + 200 - SL_TABLE_LEARNED);
    /* a short hold learned now is kept too, in place of the earliest to end
     * (136, until T0 + 236 s), though it ends before all of them */
    note(t, hold(0, 300, T0 + 200 * SEC, T0 + 201 * SEC));
    n = read_all(t, out);
    assert_non_null(find(out, n, 0, 0x1000 + 300));
    assert_null(find(out, n, 0, 0x1000 + 136));
    assert_non_null(find(out, n, 0, 0x1000 + 137));
    /* once ended, that one gives way first */
    note(t, hold(0, 500, T0 + 202 * SEC, T0 + 400 * SEC));
    n = read_all(t, out);
    assert_int_equal(n, SL_TABLE_LEARNED);
    assert_null(find(out, n, 0, 0x1000 + 300));
    assert_non_null(find(out, n, 0, 0x1000 + 137));
    assert_non_null(find(out, n, 0, 0x1000 + 500));
    assert_int_equal(sl_table_bytes(t), bytes); /* nothing grew */
    sl_table_close(t);
}

/* A spread is learned again at every answer: it rewrites its own entry
 * and the other keys' entries stay. */
static void a_spread_renewed_at_every_answer_pushes_no_other_key_out(void **unused)
{
    (void)unused;
    struct sl_table *t = table();
    struct sl_learned_hold out[SL_TABLE_LEARNED];
    /* the others end before the spread's window: were the spread to take a
     * new entry at each answer, theirs would be the ones to give way */
    for (uint64_t i = 0; i < SL_TABLE_LEARNED - 1; i++)
        note(t, hold(0, i, T0, T0 + 30 * SEC));
    for (uint64_t a = 0; a < 10000; a++) {
        struct sl_learned_hold s = hold(0, 999, T0 + a * MS, T0 + a * MS + 60 * SEC);
        s.gap_ns = 250 * MS;
        s.left = 240;
        sl_table_note_learned(t, &s);
    }
    size_t n = read_all(t, out);
    assert_int_equal(n, SL_TABLE_LEARNED);
    for (uint64_t i = 0; i < SL_TABLE_LEARNED - 1; i++)
        assert_non_null(find(out, n, 0, 0x1000 + i));
    const struct sl_learned_hold *s = find(out, n, 0, 0x1000 + 999);
    assert_non_null(s);
    assert_int_equal(s->at_ns, T0 + 9999 * MS);
    sl_table_close(t);
}

struct writer {
    struct sl_table *t;
    int rule;
    uint64_t torn;
};

static void *write_and_read(void *arg)
{
    struct writer *w = arg;
    struct sl_learned_hold out[SL_TABLE_LEARNED];
    for (uint64_t i = 0; i < 20000; i++) {
        uint64_t k = i % 150; /* more keys than entries: entries change hands */
        note(w->t, hold(w->rule, k, T0 + k, T0 + i));
        if (i % 16) continue;
        size_t n = read_all(w->t, out);
        for (size_t j = 0; j < n; j++) {
            uint64_t key = out[j].hash - 0x1000;
            char want[7];
            snprintf(want, sizeof want, "%06llx", (unsigned long long)key);
            /* whole: every field from the same write */
            if (key >= 150 || out[j].at_ns != T0 + key || strcmp(out[j].key, want) != 0 ||
                (out[j].rule != 0 && out[j].rule != 1) || out[j].field != SL_LF_RETRY_AFTER)
                w->torn++;
        }
    }
    return NULL;
}

/* Two threads writing and reading at once: every entry read is whole. */
static void entries_read_while_two_threads_write_are_whole(void **unused)
{
    (void)unused;
    struct sl_table *t = table();
    struct writer w[2] = {{t, 0, 0}, {t, 1, 0}};
    pthread_t th[2];
    for (int i = 0; i < 2; i++)
        assert_int_equal(pthread_create(&th[i], NULL, write_and_read, &w[i]), 0);
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    assert_int_equal(w[0].torn + w[1].torn, 0);
    struct sl_learned_hold out[SL_TABLE_LEARNED];
    size_t n = read_all(t, out);
    assert_true(n > 0 && n <= SL_TABLE_LEARNED);
    for (size_t i = 0; i < n; i++) /* one entry per key */
        for (size_t j = i + 1; j < n; j++)
            assert_false(out[i].rule == out[j].rule && out[i].hash == out[j].hash);
    sl_table_close(t);
}

/* Every field name sl_learn_decide gives has a number, and the number
 * names it again: what a response said reaches the readers by name. */
static void every_field_a_wait_comes_from_has_a_number(void **unused)
{
    (void)unused;
    static const struct {
        int status;
        const char *h1, *v1, *h2, *v2, *field;
    } cases[] = {
        {429, "Retry-After", "3", NULL, NULL, "retry-after"},
        {429, "retry-after-ms", "1500", NULL, NULL, "retry-after-ms"},
        {200, "RateLimit", "\"default\";r=0;t=30", NULL, NULL, "ratelimit"},
        {200, "RateLimit-Remaining", "0", "RateLimit-Reset", "30", "ratelimit-reset"},
        {200, "RateLimit-Remaining", "5", "RateLimit-Reset", "30", "ratelimit-remaining"},
        {200, "x-ratelimit-remaining-requests", "0", "x-ratelimit-reset-requests", "6s",
         "x-ratelimit-reset-requests"},
        {200, "x-ratelimit-remaining-requests", "5", "x-ratelimit-reset-requests", "6s",
         "x-ratelimit-remaining-requests"},
        {200, "anthropic-ratelimit-requests-remaining", "0", "anthropic-ratelimit-requests-reset",
         "2026-11-27T10:00:30Z", "anthropic-ratelimit-requests-reset"},
        {200, "anthropic-ratelimit-requests-remaining", "5", "anthropic-ratelimit-requests-reset",
         "2026-11-27T10:00:30Z", "anthropic-ratelimit-requests-remaining"},
        {200, "x-ratelimit-remaining", "0", "x-ratelimit-reset", "30", "x-ratelimit-reset"},
        {200, "x-ratelimit-remaining", "5", "x-ratelimit-reset", "30", "x-ratelimit-remaining"},
    };
    const int64_t now_wall = 1795348800ll * 1000000000ll; /* 2026-11-27T10:00:00Z */
    unsigned seen = 0;
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        struct sl_learn_resp f;
        sl_learn_resp_init(&f, cases[i].status);
        sl_learn_header(&f, cases[i].h1, strlen(cases[i].h1), cases[i].v1, strlen(cases[i].v1));
        if (cases[i].h2)
            sl_learn_header(&f, cases[i].h2, strlen(cases[i].h2), cases[i].v2, strlen(cases[i].v2));
        struct sl_learned o;
        assert_true(sl_learn_decide(&f, now_wall, 3600 * SEC, &o));
        assert_string_equal(o.field, cases[i].field);
        enum sl_learn_field n = sl_learn_field_of(o.field);
        assert_int_not_equal(n, SL_LF_UNKNOWN);
        assert_string_equal(sl_learn_field_name(n), o.field);
        seen |= 1u << n;
    }
    assert_int_equal(seen, ((1u << SL_LF_N) - 1) & ~1u); /* every number but "unknown" */
    assert_int_equal(sl_learn_field_of("x-unknown"), SL_LF_UNKNOWN);
    assert_string_equal(sl_learn_field_name(SL_LF_N + 7), "?");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(an_entry_is_read_back_as_written),
        cmocka_unit_test(a_key_learned_again_keeps_one_entry_with_the_latest),
        cmocka_unit_test(the_entries_are_bounded_and_the_one_ending_first_gives_way),
        cmocka_unit_test(a_spread_renewed_at_every_answer_pushes_no_other_key_out),
        cmocka_unit_test(entries_read_while_two_threads_write_are_whole),
        cmocka_unit_test(every_field_a_wait_comes_from_has_a_number),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
