/* SPDX-License-Identifier: BSD-2-Clause */
/* test_names.c - the destination name in a ClientHello (SNI) or a request
 * head (Host): core/http/names.h. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "../../core/http/names.h"

/* A ClientHello record with one extension before server_name (so the
 * walk over extensions is exercised) and the name given. */
static size_t hello(unsigned char *b, const char *name)
{
    size_t n = strlen(name), i = 0, ext = 4 + 4 + 2 + 3 + n; /* a 0-byte ext + SNI */
    size_t hs = 2 + 32 + 1 + 2 + 2 + 1 + 1 + 2 + ext;
    b[i++] = 22, b[i++] = 3, b[i++] = 1, b[i++] = (unsigned char)((hs + 4) >> 8),
    b[i++] = (unsigned char)(hs + 4);
    b[i++] = 1, b[i++] = 0, b[i++] = (unsigned char)(hs >> 8), b[i++] = (unsigned char)hs;
    b[i++] = 3, b[i++] = 3;
    memset(b + i, 0xab, 32), i += 32;
    b[i++] = 0;                                           /* session id */
    b[i++] = 0, b[i++] = 2, b[i++] = 0x13, b[i++] = 0x01; /* one cipher suite */
    b[i++] = 1, b[i++] = 0;                               /* compression: null */
    b[i++] = (unsigned char)(ext >> 8), b[i++] = (unsigned char)ext;
    b[i++] = 0, b[i++] = 23, b[i++] = 0, b[i++] = 0; /* extended_master_secret, empty */
    b[i++] = 0, b[i++] = 0, b[i++] = (unsigned char)((n + 5) >> 8), b[i++] = (unsigned char)(n + 5);
    b[i++] = (unsigned char)((n + 3) >> 8), b[i++] = (unsigned char)(n + 3);
    b[i++] = 0, b[i++] = (unsigned char)(n >> 8), b[i++] = (unsigned char)n;
    memcpy(b + i, name, n);
    return i + n;
}

static void the_sni_of_a_client_hello_is_found(void **unused)
{
    (void)unused;
    unsigned char b[512];
    char out[256];
    size_t len = hello(b, "api.vendor.example");
    assert_true(sl_name_sni(b, len, out, sizeof out));
    assert_string_equal(out, "api.vendor.example");
    /* cut anywhere before its last byte: no name, and no read past len */
    for (size_t cut = 0; cut < len; cut++)
        assert_false(sl_name_sni(b, cut, out, sizeof out));
    assert_false(sl_name_sni(b, len, out, 10)); /* no room */
    b[0] = 23;                                  /* application data */
    assert_false(sl_name_sni(b, len, out, sizeof out));
}

static void a_name_with_other_bytes_is_no_name(void **unused)
{
    (void)unused;
    unsigned char b[512];
    char out[256];
    assert_false(sl_name_sni(b, hello(b, "evil\r\nname"), out, sizeof out));
    assert_false(sl_name_sni(b, hello(b, ""), out, sizeof out));
}

static void the_host_of_a_request_head_is_found_without_its_port(void **unused)
{
    (void)unused;
    char out[256];
    const char *h = "GET /v1 HTTP/1.1\r\nUser-Agent: x\r\nHOST:  Api.Vendor.Example:8443\r\n\r\n";
    assert_true(sl_name_host(h, strlen(h), out, sizeof out));
    assert_string_equal(out, "Api.Vendor.Example"); /* case is the matcher's business */
    h = "GET / HTTP/1.1\nHost: a.example\n\n";
    assert_true(sl_name_host(h, strlen(h), out, sizeof out));
    assert_string_equal(out, "a.example");
}

static void a_host_cut_or_missing_or_odd_is_no_name(void **unused)
{
    (void)unused;
    char out[256];
    const char *h = "GET / HTTP/1.1\r\nHost: api.vendor.example\r\n\r\n";
    assert_false(sl_name_host(h, strlen("GET / HTTP/1.1\r\nHost: api.ven"), out, sizeof out));
    h = "GET / HTTP/1.1\r\nAccept: */*\r\n\r\nHost: late.example\r\n";
    assert_false(sl_name_host(h, strlen(h), out, sizeof out)); /* a body's, not the head's */
    h = "GET / HTTP/1.1\r\nHost: [::1]:80\r\n\r\n";
    assert_false(sl_name_host(h, strlen(h), out, sizeof out));
    h = "GET / HTTP/1.1\r\nHost: a/b\r\n\r\n";
    assert_false(sl_name_host(h, strlen(h), out, sizeof out));
    h = "GET / HTTP/1.1\r\nHostile: a.example\r\n\r\n";
    assert_false(sl_name_host(h, strlen(h), out, sizeof out));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_sni_of_a_client_hello_is_found),
        cmocka_unit_test(a_name_with_other_bytes_is_no_name),
        cmocka_unit_test(the_host_of_a_request_head_is_found_without_its_port),
        cmocka_unit_test(a_host_cut_or_missing_or_odd_is_no_name),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
