/* SPDX-License-Identifier: BSD-2-Clause */
/* test_reqmatch.c - paths in normal form, globs, routes, methods, hosts. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "../../core/http/reqmatch.h"

static void assert_normal(const char *path, const char *want)
{
    char out[128];
    assert_true(sl_path_normalise(path, strlen(path), out, sizeof out));
    assert_string_equal(out, want);
}

static void paths_are_compared_as_the_server_reads_them(void **unused)
{
    (void)unused;
    assert_normal("/export", "/export");
    assert_normal("/%65xport", "/export");
    assert_normal("//export", "/export");
    assert_normal("/a/./export", "/a/export");
    assert_normal("/a/b/../export", "/a/export");
    assert_normal("/../../export", "/export");
    assert_normal("/a/..", "/");
    assert_normal("/a/.", "/a/");
    assert_normal("/a%2Fb", "/a/b");
    assert_normal("/50%", "/50%");
    assert_normal("/%zz", "/%zz");
    assert_normal("/%00x", "/_x");
    assert_normal("*", "*");
}

static void a_path_too_long_for_the_buffer_is_refused(void **unused)
{
    (void)unused;
    char out[8];
    assert_false(sl_path_normalise("/abcdefghij", 11, out, sizeof out));
    assert_true(sl_path_normalise("/abcdef", 7, out, sizeof out));
}

static bool glob(const char *p, const char *s)
{
    return sl_glob_match(p, s, strlen(s), false);
}

static void globs_match_whole_strings(void **unused)
{
    (void)unused;
    assert_true(glob("/api/*/export", "/api/v1/export"));
    assert_true(glob("/api/*/export", "/api/v1/x/export"));
    assert_false(glob("/api/*/export", "/api/v1/export/x"));
    assert_true(glob("/v?/x", "/v2/x"));
    assert_false(glob("/v?/x", "/v22/x"));
    assert_true(glob("/v[0-9]", "/v7"));
    assert_false(glob("/v[!0-9]", "/v7"));
    assert_true(glob("/v[!0-9]", "/vx"));
    assert_true(glob("*", ""));
    assert_true(glob("/a*b*c", "/aXbYbZc"));
    assert_false(glob("/a*b*c", "/aXbYbZ"));
    assert_true(glob("/[", "/["));
    assert_true(sl_glob_match("*.EXAMPLE.com", "api.example.COM", 15, true));
    assert_false(sl_glob_match("*.EXAMPLE.com", "api.example.COM", 15, false));
}

static struct sl_rule rule_with_routes(const char *a, const char *b)
{
    struct sl_rule r;
    memset(&r, 0, sizeof r);
    snprintf(r.routes[r.nroutes++], SL_ROUTE_MAX, "%s", a);
    if (b) snprintf(r.routes[r.nroutes++], SL_ROUTE_MAX, "%s", b);
    return r;
}

static void a_route_prefix_matches_whole_segments(void **unused)
{
    (void)unused;
    struct sl_rule r = rule_with_routes("/search", "/export/");
    assert_true(sl_route_matches(&r, "/search"));
    assert_true(sl_route_matches(&r, "/search/books"));
    assert_false(sl_route_matches(&r, "/searchable"));
    assert_true(sl_route_matches(&r, "/export/all"));
    assert_false(sl_route_matches(&r, "/export"));
    assert_false(sl_route_matches(&r, "/"));
    struct sl_rule root = rule_with_routes("/", NULL);
    assert_true(sl_route_matches(&root, "/anything"));
}

static void a_route_with_a_star_is_a_glob(void **unused)
{
    (void)unused;
    struct sl_rule r = rule_with_routes("/api/*/export", NULL);
    assert_true(sl_route_matches(&r, "/api/v2/export"));
    assert_false(sl_route_matches(&r, "/api/v2/exports"));
}

static void no_routes_methods_or_hosts_match_everything(void **unused)
{
    (void)unused;
    struct sl_rule r;
    memset(&r, 0, sizeof r);
    assert_true(sl_route_matches(&r, "/x"));
    assert_true(sl_method_matches(&r, "PATCH", 5));
    assert_true(sl_host_matches(&r, "a", 1));
}

static void methods_are_compared_exactly(void **unused)
{
    (void)unused;
    struct sl_rule r;
    memset(&r, 0, sizeof r);
    strcpy(r.methods[r.nmethods++], "POST");
    strcpy(r.methods[r.nmethods++], "PUT");
    assert_true(sl_method_matches(&r, "POST", 4));
    assert_true(sl_method_matches(&r, "PUT", 3));
    assert_false(sl_method_matches(&r, "GET", 3));
    assert_false(sl_method_matches(&r, "post", 4));
    assert_false(sl_method_matches(&r, "POS", 3));
}

static void hosts_ignore_case_port_and_trailing_dot(void **unused)
{
    (void)unused;
    struct sl_rule r;
    memset(&r, 0, sizeof r);
    strcpy(r.req_hosts[r.nreq_hosts++], "api.example.com");
    strcpy(r.req_hosts[r.nreq_hosts++], "*.test");
    strcpy(r.req_hosts[r.nreq_hosts++], "[::1]");
    assert_true(sl_host_matches(&r, "API.example.com:8080", 20));
    assert_true(sl_host_matches(&r, "api.example.com.", 16));
    assert_true(sl_host_matches(&r, "x.y.TEST", 8));
    assert_true(sl_host_matches(&r, "[::1]:80", 8));
    assert_false(sl_host_matches(&r, "example.com", 11));
    assert_false(sl_host_matches(&r, "api.example.com.evil", 20));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(paths_are_compared_as_the_server_reads_them),
        cmocka_unit_test(a_path_too_long_for_the_buffer_is_refused),
        cmocka_unit_test(globs_match_whole_strings),
        cmocka_unit_test(a_route_prefix_matches_whole_segments),
        cmocka_unit_test(a_route_with_a_star_is_a_glob),
        cmocka_unit_test(no_routes_methods_or_hosts_match_everything),
        cmocka_unit_test(methods_are_compared_exactly),
        cmocka_unit_test(hosts_ignore_case_port_and_trailing_dot),
    };
    return cmocka_run_group_tests(tests, NULL, NULL) != 0;
}
