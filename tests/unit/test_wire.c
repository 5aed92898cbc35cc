/* SPDX-License-Identifier: BSD-2-Clause */
/* test_wire.c - the gossip datagram: what is accepted, and every way a
 * datagram is refused (truncated, oversized, not ours, forged, malformed). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <string.h>

#include "../../core/fleet/wire.h"

static uint8_t key[32] = {1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11, 12, 13, 14, 15, 16,
                          17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32};

static const struct sl_wire_hdr hdr = {.type = SL_WIRE_TYPE_COUNTS,
                                       .flags = SL_WIRE_FLAG_FULL,
                                       .node = 0x1122334455667788ull,
                                       .boot = 99,
                                       .seq = 7,
                                       .ts_ms = 1700000000000ull};

static size_t make(uint8_t *buf, size_t nrec)
{
    struct sl_wire_rec recs[SL_WIRE_MAX_RECS];
    for (size_t i = 0; i < nrec; i++)
        recs[i] = (struct sl_wire_rec){.hash = 1000 + i,
                                       .rule = 5,
                                       .window = 1234,
                                       .prev = (uint32_t)i,
                                       .curr = (uint32_t)(2 * i)};
    return sl_wire_encode(buf, &hdr, recs, nrec, key);
}

static void a_datagram_round_trips(void **st)
{
    uint8_t buf[SL_WIRE_MAX];
    size_t len = make(buf, 3);
    assert_int_equal(len, SL_WIRE_HDR + 3 * SL_WIRE_REC + SL_WIRE_MAC);
    struct sl_wire_hdr h;
    assert_int_equal(sl_wire_decode(buf, len, key, &h), SL_WIRE_OK);
    assert_int_equal(h.node, hdr.node);
    assert_int_equal(h.boot, 99);
    assert_int_equal(h.seq, 7);
    assert_int_equal(h.ts_ms, hdr.ts_ms);
    assert_int_equal(h.flags, SL_WIRE_FLAG_FULL);
    assert_int_equal(h.nrec, 3);
    struct sl_wire_rec r;
    sl_wire_rec_at(buf, 2, &r);
    assert_int_equal(r.hash, 1002);
    assert_int_equal(r.rule, 5);
    assert_int_equal(r.window, 1234);
    assert_int_equal(r.prev, 2);
    assert_int_equal(r.curr, 4);
}

static void a_full_datagram_fits_in_1200_bytes(void **st)
{
    uint8_t buf[SL_WIRE_MAX];
    size_t len = make(buf, SL_WIRE_MAX_RECS);
    assert_true(len <= SL_WIRE_MAX);
    struct sl_wire_hdr h;
    assert_int_equal(sl_wire_decode(buf, len, key, &h), SL_WIRE_OK);
    assert_int_equal(h.nrec, SL_WIRE_MAX_RECS);
}

static void every_truncation_is_refused(void **st)
{
    uint8_t buf[SL_WIRE_MAX];
    size_t len = make(buf, 4);
    struct sl_wire_hdr h;
    for (size_t l = 0; l < len; l++) {
        enum sl_wire_status s = sl_wire_decode(buf, l, key, &h);
        assert_true(s == SL_WIRE_TRUNCATED || s == SL_WIRE_MALFORMED || s == SL_WIRE_FORGED);
        if (l < SL_WIRE_HDR + SL_WIRE_MAC) assert_int_equal(s, SL_WIRE_TRUNCATED);
    }
    /* cut exactly one record: the header's count says more */
    assert_int_equal(sl_wire_decode(buf, len - SL_WIRE_REC, key, &h), SL_WIRE_TRUNCATED);
}

static void an_oversized_datagram_is_refused(void **st)
{
    uint8_t buf[SL_WIRE_MAX + 100];
    size_t len = make(buf, 2);
    struct sl_wire_hdr h;
    assert_int_equal(sl_wire_decode(buf, SL_WIRE_MAX + 1, key, &h), SL_WIRE_OVERSIZED);
    assert_int_equal(sl_wire_decode(buf, 65507, key, &h), SL_WIRE_OVERSIZED);
    (void)len;
}

static void other_protocols_and_versions_are_refused(void **st)
{
    uint8_t buf[SL_WIRE_MAX];
    size_t len = make(buf, 1);
    struct sl_wire_hdr h;
    buf[0] = 'X';
    assert_int_equal(sl_wire_decode(buf, len, key, &h), SL_WIRE_BAD_MAGIC);
    len = make(buf, 1);
    buf[4] = 2;
    assert_int_equal(sl_wire_decode(buf, len, key, &h), SL_WIRE_BAD_VERSION);
}

static void any_changed_byte_or_another_key_is_a_forgery(void **st)
{
    uint8_t buf[SL_WIRE_MAX];
    size_t len = make(buf, 2);
    struct sl_wire_hdr h;
    /* every byte after the fields checked before the MAC */
    for (size_t i = 8; i < len; i++) {
        if (i == 40 || i == 41) continue; /* record count: a size mismatch instead */
        make(buf, 2);
        buf[i] ^= 0x40;
        assert_int_equal(sl_wire_decode(buf, len, key, &h), SL_WIRE_FORGED);
    }
    make(buf, 2);
    uint8_t other[32] = {0};
    assert_int_equal(sl_wire_decode(buf, len, other, &h), SL_WIRE_FORGED);
}

static void authentic_nonsense_is_malformed(void **st)
{
    uint8_t buf[SL_WIRE_MAX];
    struct sl_wire_hdr h;
    /* a record count beyond what fits */
    size_t len = make(buf, 1);
    buf[40] = 200;
    assert_int_equal(sl_wire_decode(buf, len, key, &h), SL_WIRE_MALFORMED);
    /* trailing bytes */
    len = make(buf, 1);
    assert_int_equal(sl_wire_decode(buf, len + 5, key, &h), SL_WIRE_MALFORMED);
    /* a count no sliding window can hold, correctly signed */
    struct sl_wire_rec r = {.hash = 5, .rule = 1, .window = 1, .prev = 0, .curr = 1u << 21};
    len = sl_wire_encode(buf, &hdr, &r, 1, key);
    assert_int_equal(sl_wire_decode(buf, len, key, &h), SL_WIRE_MALFORMED);
    /* an unknown type, correctly signed */
    struct sl_wire_hdr odd = hdr;
    odd.type = 9;
    len = sl_wire_encode(buf, &odd, NULL, 0, key);
    assert_int_equal(sl_wire_decode(buf, len, key, &h), SL_WIRE_MALFORMED);
    /* sequence 0 is never sent */
    odd = hdr;
    odd.seq = 0;
    len = sl_wire_encode(buf, &odd, NULL, 0, key);
    assert_int_equal(sl_wire_decode(buf, len, key, &h), SL_WIRE_MALFORMED);
}

static void status_names_cover_every_reason(void **st)
{
    for (int i = 0; i < SL_WIRE_NSTATUS; i++)
        assert_non_null(sl_wire_status_names[i]);
    assert_string_equal(sl_wire_status_names[SL_WIRE_FORGED], "forged");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_datagram_round_trips),
        cmocka_unit_test(a_full_datagram_fits_in_1200_bytes),
        cmocka_unit_test(every_truncation_is_refused),
        cmocka_unit_test(an_oversized_datagram_is_refused),
        cmocka_unit_test(other_protocols_and_versions_are_refused),
        cmocka_unit_test(any_changed_byte_or_another_key_is_a_forgery),
        cmocka_unit_test(authentic_nonsense_is_malformed),
        cmocka_unit_test(status_names_cover_every_reason),
    };
    return cmocka_run_group_tests(tests, NULL, NULL) != 0;
}
