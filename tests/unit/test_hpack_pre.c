/* SPDX-License-Identifier: BSD-2-Clause */
/* test_hpack_pre.c - the HPACK pre-pass: field bytes pass as they are,
 * size updates are kept out and reported by value, wherever they stand and
 * however the block is split; a malformed integer stops it; Huffman
 * strings are runs of their own, read as nginx reads their padding. */
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
            if (r != SL_HPRE_UPDATE) { /* Huffman strings too: fed, as they are here */
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

/* Integers as nghttp2 reads them: five continuation bytes while the value
 * fits 32 bits. Found by fuzz_hpack_pre from an empty corpus: a size update
 * of 34 written with two zero bytes more ("\x3f\x83\x80\x80\x80\x00"),
 * which nghttp2 takes, was refused (seen failing: bad). */
static void an_integer_past_what_nghttp2_reads_is_refused(void **unused)
{
    (void)unused;
    char fields[64], ups[64];
    size_t nf;
    bool boundary, bad;
    run("\x82\x3f\xff\xff\xff\xff\x81\x01", 8, 0, fields, &nf, ups, &boundary, &bad);
    assert_true(bad); /* a sixth byte */
    assert_false(boundary);
    assert_string_equal(ups, "");
    /* over 32 bits */
    run("\x82\x3f\xff\xff\xff\xff\x10", 7, 0, fields, &nf, ups, &boundary, &bad);
    assert_true(bad);
    run("\x3f\xff\xff\xff\x7f", 5, 0, fields, &nf, ups, &boundary, &bad); /* 4 bytes: taken */
    assert_false(bad);
    assert_string_equal(ups, "268435486"); /* 31 + 2^28 - 1 */
    run("\x3f\x83\x80\x80\x80\x00", 6, 0, fields, &nf, ups, &boundary, &bad);
    assert_false(bad);
    assert_true(boundary);
    assert_string_equal(ups, "34");
}

/* The runs of a block with Huffman strings: one run per string (length
 * first), however split, its end and length said. */
static void a_huffman_string_is_a_run_of_its_own(void **unused)
{
    (void)unused;
    /* GET, literal new name: "ab" raw, value Huffman (2 bytes), indexed
     * 62, literal name 4: Huffman, length 130 (two-byte prefix) */
    static uint8_t blk[160] = "\x82\x40\x02"
                              "ab\x82\x60\x7f\xbe\x04\xff\x03";
    size_t n = 12 + 130;
    memset(blk + 12, 0xff, 130);
    for (size_t piece = 1; piece <= n; piece++) {
        struct sl_hpre p;
        sl_hpre_begin(&p);
        char trace[256] = "";
        for (size_t off = 0; off < n;) {
            size_t m = piece < n - off ? piece : n - off;
            while (m > 0) {
                enum sl_hpre_run r;
                size_t k = sl_hpre_feed(&p, blk + off, m, &r);
                if (r == SL_HPRE_HUFF && p.huff_end) {
                    size_t l = strlen(trace);
                    snprintf(trace + l, sizeof trace - l, "%s%u@%zu", l ? " " : "", p.huff_len,
                             off + k);
                }
                assert_true(r != SL_HPRE_UPDATE);
                off += k;
                m -= k;
            }
        }
        assert_string_equal(trace, "2@8 130@142");
        assert_true(sl_hpre_at_boundary(&p));
    }
}

static size_t huff_len(const char *s, size_t n)
{
    return sl_hpre_huff_len((const uint8_t *)s, n);
}

/* nginx 1.22 reads 8 to 29 bits of ones after the last symbol (measured):
 * the bytes of padding alone go; 30 ones (EOS) or a 0 bit stay, refused. */
static void huffman_padding_is_trimmed_as_nginx_reads_it(void **unused)
{
    (void)unused;
    /* "/export": 40 bits, no padding */
    assert_int_equal(huff_len("\x60\xbe\x6b\x3d\x89", 5), 5);
    assert_int_equal(huff_len("\x60\xbe\x6b\x3d\x89\xff", 6), 5);
    assert_int_equal(huff_len("\x60\xbe\x6b\x3d\x89\xff\xff\xff", 8), 5);
    assert_int_equal(huff_len("\x60\xbe\x6b\x3d\x89\xff\xff\xff\xff", 9), 9); /* 32: EOS */
    assert_int_equal(huff_len("\x60\xbe\x6b\x3d\x89\xfe", 6), 6);             /* a 0 bit */
    assert_int_equal(huff_len("\x60\xbe\x6b\x3d\x89\x7f", 6), 6);             /* a symbol, '?' */
    /* "/ab": 17 bits, the last byte 0xff holds a bit of 'b': kept */
    assert_int_equal(huff_len("\x60\x71\xff", 3), 3);
    assert_int_equal(huff_len("\x60\x71\xff\xff", 4), 3);
    assert_int_equal(huff_len("\x60\x71\xff\xff\xff", 5), 3);     /* 23 */
    assert_int_equal(huff_len("\x60\x71\xff\xff\xff\xff", 6), 6); /* 31: EOS */
    /* "/a": 11 bits; 5 + 24 = 29 ones taken; "/xa" 18 bits: 6 + 24 = 30 not */
    assert_int_equal(huff_len("\x60\x7f\xff\xff\xff", 5), 2);
    assert_int_equal(huff_len("\x63\xc8\xff\xff\xff\xff", 6), 6);
    assert_int_equal(huff_len("\x63\xc8\xff\xff\xff", 5), 3);
    /* padding alone: the empty string */
    assert_int_equal(huff_len("\xff", 1), 0);
    assert_int_equal(huff_len("\xff\xff\xff", 3), 0);
    assert_int_equal(huff_len("\xff\xff\xff\xff", 4), 4);
    assert_int_equal(huff_len("", 0), 0);
    /* 0x1f, a 28-bit code of ones but one bit (ffffffbf), then a byte */
    assert_int_equal(huff_len("\xff\xff\xff\xbf\xff", 5), 4);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(size_updates_are_kept_out_wherever_they_stand),
        cmocka_unit_test(a_block_cut_inside_a_representation_is_not_at_a_boundary),
        cmocka_unit_test(an_integer_past_what_nghttp2_reads_is_refused),
        cmocka_unit_test(a_huffman_string_is_a_run_of_its_own),
        cmocka_unit_test(huffman_padding_is_trimmed_as_nginx_reads_it),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
