/* SPDX-License-Identifier: BSD-2-Clause */
/* test_hostport.c - ADDRESS:PORT, the one parser for gossip addresses. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>

#include "../../core/fleet/hostport.h"

static void canonical(const char *in, const char *want)
{
    struct sockaddr_storage ss;
    socklen_t len = 0;
    const char *bad = sl_hostport_parse(in, &ss, &len);
    if (bad) fail_msg("'%s' %s", in, bad);
    char out[64];
    assert_int_equal(sl_hostport_format(&ss, out, sizeof out), 0);
    assert_string_equal(out, want);
    assert_int_equal(len, ss.ss_family == AF_INET ? sizeof(struct sockaddr_in)
                                                  : sizeof(struct sockaddr_in6));
}

static void ipv4_and_bracketed_ipv6_parse_to_their_canonical_text(void **unused)
{
    (void)unused;
    canonical("10.0.0.2:7946", "10.0.0.2:7946");
    canonical("[2001:db8::2]:7946", "[2001:db8::2]:7946");
    canonical("[0:0:0::1]:1", "[::1]:1");
    canonical("127.0.0.1:65535", "127.0.0.1:65535");
}

static void the_port_is_in_network_order(void **unused)
{
    (void)unused;
    struct sockaddr_storage ss;
    socklen_t len;
    assert_null(sl_hostport_parse("127.0.0.1:7946", &ss, &len));
    assert_int_equal(ntohs(((struct sockaddr_in *)&ss)->sin_port), 7946);
}

static void names_unbracketed_ipv6_and_bad_ports_are_refused(void **unused)
{
    (void)unused;
    static const char *const bad_addr[] = {"localhost:7946", "::1:7946", "[::1]7946", "[::1",
                                           ":7946",          "10.0.0.2", "[]:1",      "1.2.3:4"};
    static const char *const bad_port[] = {
        "10.0.0.2:0", "10.0.0.2:65536", "10.0.0.2:", "10.0.0.2:+1", "10.0.0.2:80x", "[::1]:-1"};
    struct sockaddr_storage ss;
    socklen_t len;
    for (size_t i = 0; i < sizeof bad_addr / sizeof *bad_addr; i++) {
        const char *why = sl_hostport_parse(bad_addr[i], &ss, &len);
        if (!why) fail_msg("'%s' accepted", bad_addr[i]);
        assert_non_null(strstr(why, "address:port"));
    }
    for (size_t i = 0; i < sizeof bad_port / sizeof *bad_port; i++) {
        const char *why = sl_hostport_parse(bad_port[i], &ss, &len);
        if (!why) fail_msg("'%s' accepted", bad_port[i]);
        assert_non_null(strstr(why, "port"));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(ipv4_and_bracketed_ipv6_parse_to_their_canonical_text),
        cmocka_unit_test(the_port_is_in_network_order),
        cmocka_unit_test(names_unbracketed_ipv6_and_bad_ports_are_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL) != 0;
}
