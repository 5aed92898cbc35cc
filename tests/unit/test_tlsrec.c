/* SPDX-License-Identifier: BSD-2-Clause */
/* test_tlsrec.c - the ClientHello's server name and ALPN offer, and
 * request bursts in the records of TLS sluice cannot decrypt. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "../../core/http/tlsrec.h"

/* A ClientHello record as a client writes it: SNI `name` (NULL: none),
 * ALPN protocols `alpn` (a wire-format list without its length; NULL:
 * none). Returns its length. */
static size_t hello(uint8_t *out, const char *name, const char *alpn, size_t alpn_len)
{
    uint8_t ext[600];
    size_t e = 0;
    if (name) {
        size_t n = strlen(name);
        uint8_t x[] = {0,
                       0,
                       (uint8_t)((n + 5) >> 8),
                       (uint8_t)(n + 5),
                       (uint8_t)((n + 3) >> 8),
                       (uint8_t)(n + 3),
                       0,
                       (uint8_t)(n >> 8),
                       (uint8_t)n};
        memcpy(ext + e, x, sizeof x);
        memcpy(ext + e + sizeof x, name, n);
        e += sizeof x + n;
    }
    if (alpn) {
        uint8_t x[] = {0,
                       16,
                       (uint8_t)((alpn_len + 2) >> 8),
                       (uint8_t)(alpn_len + 2),
                       (uint8_t)(alpn_len >> 8),
                       (uint8_t)alpn_len};
        memcpy(ext + e, x, sizeof x);
        memcpy(ext + e + sizeof x, alpn, alpn_len);
        e += sizeof x + alpn_len;
    }
    uint8_t body[800];
    size_t b = 0;
    body[b++] = 3, body[b++] = 3;
    memset(body + b, 0xab, 32), b += 32;                             /* random */
    body[b++] = 32, memset(body + b, 0xcd, 32), b += 32;             /* session id */
    body[b++] = 0, body[b++] = 4, memset(body + b, 0x13, 4), b += 4; /* 2 suites */
    body[b++] = 1, body[b++] = 0;                                    /* null compression */
    body[b++] = (uint8_t)(e >> 8), body[b++] = (uint8_t)e;
    memcpy(body + b, ext, e), b += e;
    size_t m = b + 4;
    uint8_t rec[] = {22, 3, 1, (uint8_t)(m >> 8), (uint8_t)m, 1, 0, (uint8_t)(b >> 8), (uint8_t)b};
    memcpy(out, rec, sizeof rec);
    memcpy(out + sizeof rec, body, b);
    return sizeof rec + b;
}

#define H1_ONLY "\x08http/1.1"
#define H2_H1   "\x02h2\x08http/1.1"

static void the_server_name_and_the_alpn_offer_are_read(void **unused)
{
    (void)unused;
    uint8_t buf[1024];
    struct sl_tls_hello h;
    size_t n = hello(buf, "api.vendor.example", H2_H1, sizeof H2_H1 - 1);
    assert_int_equal(sl_tls_hello_parse(buf, n, &h), 1);
    assert_string_equal(h.sni, "api.vendor.example");
    assert_true(h.alpn && h.alpn_h2 && h.alpn_h1 && !h.alpn_other);
    assert_false(sl_tls_hello_exact(&h));

    n = hello(buf, "localhost", H1_ONLY, sizeof H1_ONLY - 1);
    assert_int_equal(sl_tls_hello_parse(buf, n, &h), 1);
    assert_string_equal(h.sni, "localhost");
    assert_true(h.alpn_h1 && !h.alpn_h2);
    assert_true(sl_tls_hello_exact(&h));

    n = hello(buf, NULL, NULL, 0); /* an IP address: no SNI; no ALPN (HTTP/1.1 then) */
    assert_int_equal(sl_tls_hello_parse(buf, n, &h), 1);
    assert_string_equal(h.sni, "");
    assert_false(h.alpn);
    assert_true(sl_tls_hello_exact(&h));
}

static void a_cut_hello_asks_for_more_and_other_bytes_are_refused(void **unused)
{
    (void)unused;
    uint8_t buf[1024];
    struct sl_tls_hello h;
    size_t n = hello(buf, "a.example", H1_ONLY, sizeof H1_ONLY - 1);
    for (size_t cut = 0; cut < n; cut++)
        assert_int_equal(sl_tls_hello_parse(buf, cut, &h), 0);
    assert_int_equal(sl_tls_hello_parse("GET / HTTP/1.1\r\n\r\n", 18, &h), -1);
    buf[5] = 2; /* a ServerHello */
    assert_int_equal(sl_tls_hello_parse(buf, n, &h), -1);
}

static void a_name_with_control_bytes_is_dropped(void **unused)
{
    (void)unused;
    uint8_t buf[1024];
    struct sl_tls_hello h;
    size_t n = hello(buf, "evil\n.example", NULL, 0);
    assert_int_equal(sl_tls_hello_parse(buf, n, &h), 1);
    assert_string_equal(h.sni, "");
}

static void a_hello_split_over_two_records_is_joined(void **unused)
{
    (void)unused;
    uint8_t one[1024], two[1100];
    struct sl_tls_hello h;
    size_t n = hello(one, "split.example", H2_H1, sizeof H2_H1 - 1);
    size_t body = n - 5, first = 40;
    /* record 1: the first 40 bytes of the handshake message; record 2: the rest */
    memcpy(two, one, 5);
    two[3] = 0, two[4] = (uint8_t)first;
    memcpy(two + 5, one + 5, first);
    uint8_t hdr[] = {22, 3, 3, (uint8_t)((body - first) >> 8), (uint8_t)(body - first)};
    memcpy(two + 5 + first, hdr, 5);
    memcpy(two + 10 + first, one + 5 + first, body - first);
    assert_int_equal(sl_tls_hello_parse(two, n + 5, &h), 1);
    assert_string_equal(h.sni, "split.example");
    assert_true(h.alpn_h2);
}

/* A record of `type` with n body bytes appended at out + *at. */
static void rec(uint8_t *out, size_t *at, uint8_t type, size_t n)
{
    uint8_t hdr[] = {type, 3, 3, (uint8_t)(n >> 8), (uint8_t)n};
    memcpy(out + *at, hdr, 5);
    memset(out + *at + 5, 0x5a, n);
    *at += 5 + n;
}

static void each_burst_after_an_answer_is_one_request_tls12(void **unused)
{
    (void)unused;
    struct sl_tlsrec r;
    sl_tlsrec_init(&r);
    uint8_t w[4096];
    size_t n = 0;
    rec(w, &n, 22, 200); /* ClientHello */
    sl_tlsrec_feed(&r, w, n);
    sl_tlsrec_answered(&r); /* ServerHello .. ServerHelloDone */
    n = 0;
    rec(w, &n, 22, 70), rec(w, &n, 20, 1), rec(w, &n, 22, 40); /* key exchange, CCS, Finished */
    sl_tlsrec_feed(&r, w, n);
    sl_tlsrec_answered(&r); /* the server's CCS, Finished */
    assert_int_equal(r.bursts, 0);
    for (int i = 0; i < 3; i++) {
        n = 0;
        rec(w, &n, 23, 300);
        assert_int_equal(sl_tlsrec_peek(&r, w, n), 0); /* a burst begins at its first byte */
        sl_tlsrec_feed(&r, w, n);
        n = 0;
        rec(w, &n, 23, 50); /* the body, before any answer: the same request */
        assert_int_equal(sl_tlsrec_peek(&r, w, n), n);
        sl_tlsrec_feed(&r, w, n);
        assert_int_equal(r.bursts, (uint64_t)i + 1);
        sl_tlsrec_answered(&r);
    }
}

static void the_tls13_finished_is_not_a_request(void **unused)
{
    (void)unused;
    struct sl_tlsrec r;
    sl_tlsrec_init(&r);
    uint8_t w[4096];
    size_t n = 0;
    rec(w, &n, 22, 500);
    sl_tlsrec_feed(&r, w, n);
    sl_tlsrec_answered(&r);
    /* CCS, Finished (an application-data record), then the request, in one write */
    n = 0;
    rec(w, &n, 20, 1), rec(w, &n, 23, 53);
    size_t req = n;
    rec(w, &n, 23, 120);
    assert_int_equal(sl_tlsrec_peek(&r, w, n), req);
    sl_tlsrec_feed(&r, w, n);
    assert_int_equal(r.bursts, 1);
    /* the same, with the session tickets read between the two writes */
    sl_tlsrec_init(&r);
    sl_tlsrec_answered(&r);
    n = 0;
    rec(w, &n, 20, 1), rec(w, &n, 23, 53);
    assert_int_equal(sl_tlsrec_peek(&r, w, n), n);
    sl_tlsrec_feed(&r, w, n);
    sl_tlsrec_answered(&r);
    n = 0;
    rec(w, &n, 23, 120);
    sl_tlsrec_feed(&r, w, n);
    assert_int_equal(r.bursts, 1);
}

static void records_cut_anywhere_count_the_same(void **unused)
{
    (void)unused;
    uint8_t w[4096];
    size_t n = 0;
    rec(w, &n, 23, 100);
    size_t second = n;
    rec(w, &n, 23, 20);
    size_t third = n;
    rec(w, &n, 23, 70);
    for (size_t cut = 1; cut < n; cut++) {
        /* the first `cut` bytes written, then an answer, then the rest: the
         * first record that starts at or after the answer begins burst 2 */
        struct sl_tlsrec r;
        sl_tlsrec_init(&r);
        sl_tlsrec_feed(&r, w, cut);
        assert_int_equal(r.bursts, 1);
        sl_tlsrec_answered(&r);
        size_t want = cut <= second ? second - cut : cut <= third ? third - cut : n - cut;
        assert_int_equal(sl_tlsrec_peek(&r, w + cut, n - cut), want);
        sl_tlsrec_feed(&r, w + cut, n - cut);
        assert_false(r.bad);
        assert_int_equal(r.bursts, cut <= third ? 2 : 1);
    }
}

static void a_stream_that_is_not_tls_is_left_alone(void **unused)
{
    (void)unused;
    struct sl_tlsrec r;
    sl_tlsrec_init(&r);
    const char *get = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
    assert_int_equal(sl_tlsrec_peek(&r, get, strlen(get)), strlen(get));
    sl_tlsrec_feed(&r, get, strlen(get));
    assert_true(r.bad);
    assert_int_equal(r.bursts, 0);
    uint8_t w[64];
    size_t n = 0;
    rec(w, &n, 23, 10);
    assert_int_equal(sl_tlsrec_peek(&r, w, n), n);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_server_name_and_the_alpn_offer_are_read),
        cmocka_unit_test(a_cut_hello_asks_for_more_and_other_bytes_are_refused),
        cmocka_unit_test(a_name_with_control_bytes_is_dropped),
        cmocka_unit_test(a_hello_split_over_two_records_is_joined),
        cmocka_unit_test(each_burst_after_an_answer_is_one_request_tls12),
        cmocka_unit_test(the_tls13_finished_is_not_a_request),
        cmocka_unit_test(records_cut_anywhere_count_the_same),
        cmocka_unit_test(a_stream_that_is_not_tls_is_left_alone),
    };
    return cmocka_run_group_tests(tests, NULL, NULL) != 0;
}
