/* SPDX-License-Identifier: BSD-2-Clause */
/* test_hpack_pre.c - the HPACK size update pre-pass: field bytes pass as
 * they are, size updates are kept out and reported by value, wherever they
 * stand and however the block is split; a malformed integer stops it. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "../../core/http/hpack_pre.h"

/* Runs the block through the pre-pass in pieces of `piece` bytes (0:
 * whole): the field bytes in *fields, the updates as text ("0 4096"). */
static void run(const char *blk, size_t n, size_t piece, char *fields, size_t *nf, char *ups,
                bool *boundary, bool *bad)
{
    struct sl_hpre p;
    sl_hpre_begin(&p);
    *nf = 0;
    ups[0] = '\0';
    for (size_t off = 0; off < n;) {
        size_t m = piece && piece < n - off ? piece : n - off;
        while (m > 0) {
            enum sl_hpre_run r;
            size_t k = sl_hpre_feed(&p, (const uint8_t *)blk + off, m, &r);
            assert_true(k >= 1 && k <= m);
            if (r == SL_HPRE_FIELD) {
                memcpy(fields + *nf, blk + off, k);
                *nf += k;
            } else if (p.update) {
                size_t l = strlen(ups);
                snprintf(ups + l, 64 - l, "%s%u", l ? " " : "", p.size);
            }
            off += k;
            m -= k;
        }
    }
    *boundary = sl_hpre_at_boundary(&p);
    *bad = p.bad;
}

static void size_updates_are_kept_out_wherever_they_stand(void **unused)
{
    (void)unused;
    /* GET, update 4096, literal new name "ab: c" indexed, update 0,
     * literal never-indexed name index 4 value "xy" (Huffman flag set),
     * update 31 (two bytes), indexed 62 */
    static const char blk[] = "\x82\x3f\xe1\x1f\x40\x02"
                              "ab\x01"
                              "c\x20\x14\x82xy\x3f\x00\xbe";
    static const char want[] = "\x82\x40\x02"
                               "ab\x01"
                               "c\x14\x82xy\xbe";
    size_t n = sizeof blk - 1;
    for (size_t piece = 0; piece <= n; piece++) {
        char fields[64], ups[64];
        size_t nf;
        bool boundary, bad;
        run(blk, n, piece, fields, &nf, ups, &boundary, &bad);
        assert_int_equal(nf, sizeof want - 1);
        assert_memory_equal(fields, want, nf);
        assert_string_equal(ups, "4096 0 31");
        assert_true(boundary);
        assert_false(bad);
    }
}

static void a_block_cut_inside_a_representation_is_not_at_a_boundary(void **unused)
{
    (void)unused;
    char fields[64], ups[64];
    size_t nf;
    bool boundary, bad;
    run("\x40\x02"
        "a",
        3, 0, fields, &nf, ups, &boundary, &bad); /* name cut short */
    assert_false(boundary);
    run("\x3f\xe1", 2, 0, fields, &nf, ups, &boundary, &bad); /* update cut short */
    assert_false(boundary);
    assert_string_equal(ups, "");
    assert_int_equal(nf, 0);
}

static void an_integer_longer_than_four_continuation_bytes_is_refused(void **unused)
{
    (void)unused;
    char fields[64], ups[64];
    size_t nf;
    bool boundary, bad;
    run("\x82\x3f\xff\xff\xff\xff\x01", 7, 0, fields, &nf, ups, &boundary, &bad);
    assert_true(bad);
    assert_false(boundary);
    assert_string_equal(ups, "");
    run("\x3f\xff\xff\xff\x7f", 5, 0, fields, &nf, ups, &boundary, &bad); /* 4 bytes: taken */
    assert_false(bad);
    assert_string_equal(ups, "268435486"); /* 31 + 2^28 - 1 */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(size_updates_are_kept_out_wherever_they_stand),
        cmocka_unit_test(a_block_cut_inside_a_representation_is_not_at_a_boundary),
        cmocka_unit_test(an_integer_longer_than_four_continuation_bytes_is_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
