/* SPDX-License-Identifier: BSD-2-Clause */
/* test_key.c - address normalisation, CIDR blocks, bucket keys and hashes. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/un.h>

#include "../../core/limit/key.h"
#include "testutil.h"

static const uint64_t secret_a[4] = {1, 2, 3, 4};
static const uint64_t secret_b[4] = {5, 6, 7, 8};

static struct sl_addr v4(const char *text, uint16_t port)
{
    struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons(port)};
    assert_int_equal(inet_pton(AF_INET, text, &sin.sin_addr), 1);
    struct sl_addr a;
    assert_true(sl_addr_from_sockaddr(&a, (struct sockaddr *)&sin, sizeof sin));
    return a;
}

static struct sl_addr v6(const char *text, uint16_t port)
{
    struct sockaddr_in6 sin6 = {.sin6_family = AF_INET6, .sin6_port = htons(port)};
    assert_int_equal(inet_pton(AF_INET6, text, &sin6.sin6_addr), 1);
    struct sl_addr a;
    assert_true(sl_addr_from_sockaddr(&a, (struct sockaddr *)&sin6, sizeof sin6));
    return a;
}

static struct sl_cidr cidr(const char *text)
{
    struct sl_cidr c;
    assert_true(sl_cidr_parse(&c, text));
    return c;
}

static struct sl_rule rule(enum sl_per per, uint8_t prefix4, uint8_t prefix6)
{
    struct sl_rule r;
    memset(&r, 0, sizeof r);
    snprintf(r.name, sizeof r.name, "web");
    r.id = sl_name_hash(r.name);
    r.per = per;
    r.prefix4 = prefix4;
    r.prefix6 = prefix6;
    return r;
}

static struct sl_key key(const struct sl_rule *r, struct sl_addr a)
{
    struct sl_key k;
    sl_key_make(&k, r, &a);
    return k;
}

static bool key_eq(struct sl_key a, struct sl_key b)
{
    return a.rule == b.rule && a.hi == b.hi && a.lo == b.lo && a.extra == b.extra;
}

static void assert_formats(const struct sl_cidr *c, const char *want)
{
    char buf[64];
    sl_cidr_format(c, buf, sizeof buf);
    assert_string_equal(buf, want);
}

/* sl_key_make masks by words: the same bytes as masking each byte of the
 * address, for every prefix length of both families. */
static void key_masks_every_prefix_length_as_bytewise_masking(void **unused)
{
    (void)unused;
    struct sl_addr a6 = v6("2001:db8:ffff:ffff:ffff:ffff:ffff:ffff", 1);
    struct sl_addr a4 = v4("255.255.255.255", 1);
    for (unsigned plen = 0; plen <= 128; plen++) {
        struct sl_rule r = rule(SL_PER_PREFIX, (uint8_t)(plen <= 32 ? plen : 32), (uint8_t)plen);
        for (int fam = 0; fam < 2; fam++) {
            if (fam == 1 && plen > 32) break;
            struct sl_addr a = fam ? a4 : a6;
            unsigned bits = fam ? 96 + plen : plen;
            uint8_t want[16];
            for (unsigned i = 0; i < 16; i++) {
                unsigned keep = bits > i * 8 ? bits - i * 8 : 0;
                want[i] = keep >= 8 ? a.a[i] : (uint8_t)(a.a[i] & (0xff00 >> keep));
            }
            struct sl_key k = key(&r, a);
            uint8_t got[16];
            memcpy(got, &k.hi, 8);
            memcpy(got + 8, &k.lo, 8);
            assert_memory_equal(got, want, 16);
            assert_int_equal(k.extra, bits);
        }
    }
}

/* ---- sl_addr_from_sockaddr ------------------------------------------- */

static void ipv4_sockaddr_becomes_a_v4_mapped_address_with_its_port(void **unused)
{
    (void)unused;
    struct sl_addr a = v4("192.0.2.7", 8080);
    static const uint8_t want[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 192, 0, 2, 7};
    assert_memory_equal(a.a, want, 16);
    assert_int_equal(a.port, 8080);
    assert_true(a.v4);
}

static void ipv6_sockaddr_is_kept_as_is_with_its_port(void **unused)
{
    (void)unused;
    struct sl_addr a = v6("2001:db8::1", 443);
    uint8_t want[16];
    inet_pton(AF_INET6, "2001:db8::1", want);
    assert_memory_equal(a.a, want, 16);
    assert_int_equal(a.port, 443);
    assert_false(a.v4);
}

static void ipv4_mapped_ipv6_is_the_same_address_and_key_as_plain_ipv4(void **unused)
{
    (void)unused;
    struct sl_addr a = v4("198.51.100.9", 80), b = v6("::ffff:198.51.100.9", 80);
    assert_memory_equal(a.a, b.a, 16);
    assert_true(b.v4);
    struct sl_rule r = rule(SL_PER_PEER, 24, 64);
    assert_true(key_eq(key(&r, a), key(&r, b)));
}

static void sockaddr_shorter_than_its_family_needs_is_rejected(void **unused)
{
    (void)unused;
    struct sockaddr_in sin = {.sin_family = AF_INET};
    struct sockaddr_in6 sin6 = {.sin6_family = AF_INET6};
    struct sl_addr a;
    assert_false(sl_addr_from_sockaddr(&a, (struct sockaddr *)&sin, sizeof sin - 1));
    assert_false(sl_addr_from_sockaddr(&a, (struct sockaddr *)&sin6, sizeof sin6 - 1));
    assert_false(sl_addr_from_sockaddr(&a, (struct sockaddr *)&sin6, sizeof sin)); /* v4-sized */
    assert_false(sl_addr_from_sockaddr(&a, (struct sockaddr *)&sin, 1));
    assert_false(sl_addr_from_sockaddr(&a, (struct sockaddr *)&sin, 0));
    assert_false(sl_addr_from_sockaddr(&a, NULL, sizeof sin));
}

static void sockaddr_of_another_family_is_rejected(void **unused)
{
    (void)unused;
    struct sockaddr_un un = {.sun_family = AF_UNIX, .sun_path = "/tmp/x"};
    struct sockaddr_storage ss = {.ss_family = AF_PACKET};
    struct sl_addr a;
    assert_false(sl_addr_from_sockaddr(&a, (struct sockaddr *)&un, sizeof un));
    assert_false(sl_addr_from_sockaddr(&a, (struct sockaddr *)&ss, sizeof ss));
}

/* ---- CIDR blocks ----------------------------------------------------- */

static void cidr_ipv4_block_masks_host_bits_and_formats_normalised(void **unused)
{
    (void)unused;
    struct sl_cidr c = cidr("10.1.2.3/8");
    assert_int_equal(c.plen, 96 + 8);
    assert_formats(&c, "10.0.0.0/8");
    assert_true(sl_cidr_contains(&c, v4("10.255.0.1", 0).a));
    assert_false(sl_cidr_contains(&c, v4("11.0.0.0", 0).a));
}

static void cidr_bare_ipv4_address_is_a_32(void **unused)
{
    (void)unused;
    struct sl_cidr c = cidr("192.0.2.1");
    assert_int_equal(c.plen, 128);
    assert_formats(&c, "192.0.2.1/32");
    assert_true(sl_cidr_contains(&c, v4("192.0.2.1", 0).a));
    assert_false(sl_cidr_contains(&c, v4("192.0.2.2", 0).a));
}

static void cidr_prefix_not_a_multiple_of_8_splits_inside_a_byte(void **unused)
{
    (void)unused;
    struct sl_cidr c = cidr("192.168.5.9/22");
    assert_formats(&c, "192.168.4.0/22");
    assert_true(sl_cidr_contains(&c, v4("192.168.4.0", 0).a));
    assert_true(sl_cidr_contains(&c, v4("192.168.7.255", 0).a));
    assert_false(sl_cidr_contains(&c, v4("192.168.8.0", 0).a));
    assert_false(sl_cidr_contains(&c, v4("192.168.3.255", 0).a));

    struct sl_cidr d = cidr("2001:db8:ffff::/33");
    assert_formats(&d, "2001:db8:8000::/33");
    assert_true(sl_cidr_contains(&d, v6("2001:db8:8000::1", 0).a));
    assert_false(sl_cidr_contains(&d, v6("2001:db8:7fff::1", 0).a));
}

static void cidr_ipv6_block_contains_its_addresses_only(void **unused)
{
    (void)unused;
    struct sl_cidr c = cidr("2001:db8:1::/48");
    assert_int_equal(c.plen, 48);
    assert_formats(&c, "2001:db8:1::/48");
    assert_true(sl_cidr_contains(&c, v6("2001:db8:1:ffff::1", 0).a));
    assert_false(sl_cidr_contains(&c, v6("2001:db8:2::1", 0).a));
    assert_false(sl_cidr_contains(&c, v4("10.0.0.1", 0).a));
}

static void cidr_bracketed_ipv6_is_accepted_with_or_without_a_prefix(void **unused)
{
    (void)unused;
    struct sl_cidr c = cidr("[2001:db8::1]");
    assert_int_equal(c.plen, 128);
    assert_formats(&c, "2001:db8::1/128");
    struct sl_cidr d = cidr("[2001:db8::]/32");
    assert_formats(&d, "2001:db8::/32");
}

static void cidr_slash_0_contains_every_address_of_its_family(void **unused)
{
    (void)unused;
    struct sl_cidr all4 = cidr("0.0.0.0/0"), all6 = cidr("::/0");
    assert_formats(&all4, "0.0.0.0/0");
    assert_formats(&all6, "::/0");
    assert_true(sl_cidr_contains(&all4, v4("255.255.255.255", 0).a));
    assert_true(sl_cidr_contains(&all4, v4("0.0.0.0", 0).a));
    assert_false(sl_cidr_contains(&all4, v6("2001:db8::1", 0).a));
    assert_true(sl_cidr_contains(&all6, v6("2001:db8::1", 0).a));
    assert_true(sl_cidr_contains(&all6, v4("10.0.0.1", 0).a)); /* IPv4 lives in ::ffff:0:0/96 */
}

static void cidr_slash_128_contains_only_itself(void **unused)
{
    (void)unused;
    struct sl_cidr c = cidr("2001:db8::ff/128");
    assert_formats(&c, "2001:db8::ff/128");
    assert_true(sl_cidr_contains(&c, v6("2001:db8::ff", 0).a));
    assert_false(sl_cidr_contains(&c, v6("2001:db8::fe", 0).a));
    assert_false(sl_cidr_contains(&c, v6("2001:db8::1:ff", 0).a));
}

static void cidr_parse_rejects_malformed_text(void **unused)
{
    (void)unused;
    static const char *const bad[] = {
        "1.2.3.4/33",   "::/129",     "",          "abc",         "1.2.3.4/",
        "1.2.3.4/-1",   "1.2.3.4/8x", "1.2.3",     "/8",          "[::1",
        "::1]",         "[::1/64]",   "1.2.3.4.5", "2001:db8::g", "1.2.3.4/99999999999999999999",
        "1.2.3.4/33/1", "[]",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct sl_cidr c;
        if (sl_cidr_parse(&c, bad[i])) fail_msg("accepted \"%s\"", bad[i]);
    }
    char longtext[200];
    memset(longtext, '1', sizeof longtext - 1);
    longtext[sizeof longtext - 1] = 0;
    struct sl_cidr c;
    assert_false(sl_cidr_parse(&c, longtext));
}

static void cidr_format_reads_back_as_the_same_block(void **unused)
{
    (void)unused;
    static const char *const texts[] = {
        "10.0.0.0/8", "0.0.0.0/0", "192.0.2.1/32", "2001:db8::/32", "::/0", "::1/128", "fe80::/10",
    };
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        struct sl_cidr c = cidr(texts[i]), d;
        char buf[64];
        sl_cidr_format(&c, buf, sizeof buf);
        assert_string_equal(buf, texts[i]);
        assert_true(sl_cidr_parse(&d, buf));
        assert_memory_equal(&c, &d, sizeof c);
    }
}

static void cidr_list_contains_an_address_in_any_entry(void **unused)
{
    (void)unused;
    struct sl_cidr list[3] = {cidr("10.0.0.0/8"), cidr("2001:db8::/32"), cidr("192.0.2.0/24")};
    assert_true(sl_cidr_list_contains(list, 3, v4("192.0.2.200", 0).a));
    assert_true(sl_cidr_list_contains(list, 3, v6("2001:db8::5", 0).a));
    assert_false(sl_cidr_list_contains(list, 3, v4("172.16.0.1", 0).a));
    assert_false(sl_cidr_list_contains(list, 2, v4("192.0.2.200", 0).a));
    assert_false(sl_cidr_list_contains(list, 0, v4("10.0.0.1", 0).a));
}

static void addr_format_prints_ipv4_as_a_dotted_quad(void **unused)
{
    (void)unused;
    char buf[64];
    sl_addr_format(v6("::ffff:203.0.113.5", 0).a, buf, sizeof buf);
    assert_string_equal(buf, "203.0.113.5");
    sl_addr_format(v6("2001:db8::5", 0).a, buf, sizeof buf);
    assert_string_equal(buf, "2001:db8::5");
}

/* ---- keys ------------------------------------------------------------ */

static void key_per_peer_puts_one_ipv6_64_in_one_bucket(void **unused)
{
    (void)unused;
    struct sl_rule r = rule(SL_PER_PEER, 32, 64);
    struct sl_key a = key(&r, v6("2001:db8:0:1::1", 1000));
    struct sl_key b = key(&r, v6("2001:db8:0:1:ffff:ffff:ffff:ffff", 2000));
    struct sl_key c = key(&r, v6("2001:db8:0:2::1", 1000));
    assert_true(key_eq(a, b));
    assert_false(key_eq(a, c));
}

static void key_per_peer_keeps_ipv4_addresses_apart_at_32(void **unused)
{
    (void)unused;
    struct sl_rule r = rule(SL_PER_PEER, 32, 64);
    assert_false(key_eq(key(&r, v4("10.0.0.1", 0)), key(&r, v4("10.0.0.2", 0))));
    assert_true(key_eq(key(&r, v4("10.0.0.1", 1)), key(&r, v4("10.0.0.1", 2))));
}

static void key_with_prefix4_24_puts_one_ipv4_24_in_one_bucket(void **unused)
{
    (void)unused;
    struct sl_rule r = rule(SL_PER_PREFIX, 24, 48);
    assert_true(key_eq(key(&r, v4("203.0.113.1", 0)), key(&r, v4("203.0.113.254", 0))));
    assert_false(key_eq(key(&r, v4("203.0.113.1", 0)), key(&r, v4("203.0.114.1", 0))));
}

static void key_of_an_ipv4_peer_never_equals_a_zero_prefixed_ipv6_peer(void **unused)
{
    (void)unused;
    /* ::/64 and 0.0.0.0/24 both mask to mostly zero bytes; the v4-mapped
     * form and the prefix length in the key keep them apart */
    struct sl_rule r = rule(SL_PER_PEER, 24, 64);
    struct sl_key a = key(&r, v4("0.0.0.1", 0)), b = key(&r, v6("::ffff:0.0.0.9", 0));
    assert_true(key_eq(a, b)); /* one /24 written two ways */
    assert_false(key_eq(a, key(&r, v6("::1", 0))));
    assert_false(key_eq(a, key(&r, v6("::", 0))));
}

static void key_per_destination_includes_the_port(void **unused)
{
    (void)unused;
    struct sl_rule r = rule(SL_PER_DESTINATION, 32, 64);
    struct sl_key a = key(&r, v4("192.0.2.1", 443)), b = key(&r, v4("192.0.2.1", 80));
    assert_false(key_eq(a, b));
    assert_true(key_eq(a, key(&r, v4("192.0.2.1", 443))));
    assert_false(key_eq(a, key(&r, v4("192.0.2.2", 443))));
    /* the destination is exact: no /64 grouping */
    assert_false(key_eq(key(&r, v6("2001:db8::1", 443)), key(&r, v6("2001:db8::2", 443))));
}

static void key_per_rule_ignores_the_address_and_port(void **unused)
{
    (void)unused;
    struct sl_rule r = rule(SL_PER_RULE, 32, 64);
    struct sl_key a = key(&r, v4("192.0.2.1", 443));
    assert_true(key_eq(a, key(&r, v6("2001:db8::1", 80))));
    assert_true(key_eq(a, key(&r, v4("10.9.8.7", 1))));
}

static void key_differs_between_rules_for_the_same_peer(void **unused)
{
    (void)unused;
    struct sl_rule r = rule(SL_PER_PEER, 32, 64), s = r;
    s.id = sl_name_hash("api");
    assert_false(key_eq(key(&r, v4("192.0.2.1", 0)), key(&s, v4("192.0.2.1", 0))));
}

/* ---- hashes ---------------------------------------------------------- */

static void key_hash_is_never_0_or_1(void **unused)
{
    (void)unused;
    struct sl_key k = {.rule = 11, .hi = 22, .lo = 33, .extra = 44};
    /* a secret that makes the final multiply 0 */
    const uint64_t zero[4] = {0xe7037ed1a0b428dbull, 0, 0, 0};
    assert_true(sl_key_hash(&k, zero) >= 2);
    /* a secret that makes the final multiply 1: the first mum is 0 (hi ^ s1
     * == 0), the second is lo ^ s2 (extra ^ s3 == 1), and the last is by 1 */
    const uint64_t one[4] = {0xe7037ed1a0b428dbull ^ 1, k.hi, k.lo ^ 0x9e3779b97f4a7c14ull,
                             k.extra ^ 1};
    assert_true(sl_key_hash(&k, one) >= 2);
    uint64_t seed = 1;
    for (int i = 0; i < 100000; i++) {
        struct sl_key r = {rnd(&seed), rnd(&seed), rnd(&seed), rnd(&seed)};
        assert_true(sl_key_hash(&r, secret_a) >= 2);
    }
}

static void key_hash_depends_on_the_secret(void **unused)
{
    (void)unused;
    struct sl_key k = {.rule = sl_name_hash("web"), .lo = 0xffff0a000001ull << 16, .extra = 128};
    assert_int_not_equal(sl_key_hash(&k, secret_a), sl_key_hash(&k, secret_b));
    uint64_t seed = 3;
    int same = 0;
    for (int i = 0; i < 10000; i++) {
        struct sl_key r = {rnd(&seed), rnd(&seed), rnd(&seed), rnd(&seed)};
        same += sl_key_hash(&r, secret_a) == sl_key_hash(&r, secret_b);
    }
    assert_int_equal(same, 0);
}

static void key_hash_is_the_same_for_equal_keys_and_differs_for_neighbours(void **unused)
{
    (void)unused;
    struct sl_rule r = rule(SL_PER_PEER, 32, 64);
    struct sl_key a = key(&r, v4("192.0.2.1", 1)), b = key(&r, v4("192.0.2.1", 2));
    assert_int_equal(sl_key_hash(&a, secret_a), sl_key_hash(&b, secret_a));
    struct sl_key c = key(&r, v4("192.0.2.2", 1));
    assert_int_not_equal(sl_key_hash(&a, secret_a), sl_key_hash(&c, secret_a));
}

static void name_hash_is_64_bit_fnv1a_and_stable(void **unused)
{
    (void)unused;
    /* published FNV-1a 64 test vectors */
    assert_int_equal(sl_name_hash(""), 0xcbf29ce484222325ull);
    assert_int_equal(sl_name_hash("a"), 0xaf63dc4c8601ec8cull);
    assert_int_equal(sl_name_hash("foobar"), 0x85944171f73967e8ull);
    assert_int_equal(sl_name_hash("web"), sl_name_hash("web"));
    assert_int_not_equal(sl_name_hash("web"), sl_name_hash("Web"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(key_masks_every_prefix_length_as_bytewise_masking),
        cmocka_unit_test(ipv4_sockaddr_becomes_a_v4_mapped_address_with_its_port),
        cmocka_unit_test(ipv6_sockaddr_is_kept_as_is_with_its_port),
        cmocka_unit_test(ipv4_mapped_ipv6_is_the_same_address_and_key_as_plain_ipv4),
        cmocka_unit_test(sockaddr_shorter_than_its_family_needs_is_rejected),
        cmocka_unit_test(sockaddr_of_another_family_is_rejected),
        cmocka_unit_test(cidr_ipv4_block_masks_host_bits_and_formats_normalised),
        cmocka_unit_test(cidr_bare_ipv4_address_is_a_32),
        cmocka_unit_test(cidr_prefix_not_a_multiple_of_8_splits_inside_a_byte),
        cmocka_unit_test(cidr_ipv6_block_contains_its_addresses_only),
        cmocka_unit_test(cidr_bracketed_ipv6_is_accepted_with_or_without_a_prefix),
        cmocka_unit_test(cidr_slash_0_contains_every_address_of_its_family),
        cmocka_unit_test(cidr_slash_128_contains_only_itself),
        cmocka_unit_test(cidr_parse_rejects_malformed_text),
        cmocka_unit_test(cidr_format_reads_back_as_the_same_block),
        cmocka_unit_test(cidr_list_contains_an_address_in_any_entry),
        cmocka_unit_test(addr_format_prints_ipv4_as_a_dotted_quad),
        cmocka_unit_test(key_per_peer_puts_one_ipv6_64_in_one_bucket),
        cmocka_unit_test(key_per_peer_keeps_ipv4_addresses_apart_at_32),
        cmocka_unit_test(key_with_prefix4_24_puts_one_ipv4_24_in_one_bucket),
        cmocka_unit_test(key_of_an_ipv4_peer_never_equals_a_zero_prefixed_ipv6_peer),
        cmocka_unit_test(key_per_destination_includes_the_port),
        cmocka_unit_test(key_per_rule_ignores_the_address_and_port),
        cmocka_unit_test(key_differs_between_rules_for_the_same_peer),
        cmocka_unit_test(key_hash_is_never_0_or_1),
        cmocka_unit_test(key_hash_depends_on_the_secret),
        cmocka_unit_test(key_hash_is_the_same_for_equal_keys_and_differs_for_neighbours),
        cmocka_unit_test(name_hash_is_64_bit_fnv1a_and_stable),
    };
    return cmocka_run_group_tests(tests, NULL, NULL) != 0;
}
