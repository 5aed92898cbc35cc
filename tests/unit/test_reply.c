/* SPDX-License-Identifier: BSD-2-Clause */
/* test_reply.c - the built-in 429 and its RateLimit fields. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../core/http/reply.h"
#include "testutil.h"

/* The value of header `name` in a reply (first match), or NULL. */
static const char *field(const char *reply, const char *name, char *out, size_t len)
{
    char pat[64];
    snprintf(pat, sizeof pat, "\r\n%s: ", name);
    const char *at = strstr(reply, pat);
    if (!at) return NULL;
    at += strlen(pat);
    const char *end = strstr(at, "\r\n");
    size_t n = (size_t)(end - at) < len - 1 ? (size_t)(end - at) : len - 1;
    memcpy(out, at, n);
    out[n] = 0;
    return out;
}

static void assert_field(const char *reply, const char *name, const char *want)
{
    char buf[256];
    const char *got = field(reply, name, buf, sizeof buf);
    if (!got) fail_msg("no %s in:\n%s", name, reply);
    assert_string_equal(got, want);
}

static void the_429_reports_the_bucket_in_whole_seconds_rounded_up(void **unused)
{
    (void)unused;
    struct sl_verdict v = {
        .retry_ns = 1500 * MS, .reset_ns = 11 * SEC + 1, .remaining = 0, .limit = 5};
    char buf[SL_REPLY_MAX];
    size_t n = sl_reply_429(buf, sizeof buf, &v);
    assert_int_equal(n, strlen(buf));
    assert_true(strncmp(buf, "HTTP/1.1 429 Too Many Requests\r\n", 32) == 0);
    assert_field(buf, "Retry-After", "2");
    assert_field(buf, "RateLimit-Limit", "5");
    assert_field(buf, "RateLimit-Remaining", "0");
    assert_field(buf, "RateLimit-Reset", "12");
    assert_field(buf, "X-RateLimit-Limit", "5");
    assert_field(buf, "X-RateLimit-Remaining", "0");
    assert_field(buf, "X-RateLimit-Reset", "12");
    assert_field(buf, "Connection", "close");
    assert_null(strstr(buf, "RateLimit-Policy"));
}

static void retry_after_is_never_zero(void **unused)
{
    (void)unused;
    struct sl_verdict v = {.retry_ns = 0, .limit = 1};
    char buf[SL_REPLY_MAX];
    sl_reply_429(buf, sizeof buf, &v);
    assert_field(buf, "Retry-After", "1");
}

static void the_body_length_matches_content_length(void **unused)
{
    (void)unused;
    struct sl_verdict v = {.retry_ns = SEC, .limit = 1};
    char buf[SL_REPLY_MAX], cl[16];
    size_t n = sl_reply_429(buf, sizeof buf, &v);
    const char *body = strstr(buf, "\r\n\r\n");
    assert_non_null(body);
    body += 4;
    assert_non_null(field(buf, "Content-Length", cl, sizeof cl));
    assert_int_equal((size_t)atoi(cl), n - (size_t)(body - buf));
}

static void a_policy_adds_the_draft_10_structured_fields(void **unused)
{
    (void)unused;
    struct sl_verdict v = {.retry_ns = 3 * SEC, .reset_ns = 12 * SEC, .remaining = 0, .limit = 100};
    struct sl_reply_policy p = {.name = "api", .quota = 100, .window_s = 60};
    char buf[SL_REPLY_MAX];
    sl_reply_429_policy(buf, sizeof buf, &v, &p);
    assert_field(buf, "RateLimit-Policy", "\"api\";q=100;w=60");
    assert_field(buf, "RateLimit", "\"api\";r=0;t=12");
    assert_field(buf, "Connection", "close");
    /* the fields come before the blank line that ends the head */
    assert_true(strstr(buf, "RateLimit:") < strstr(buf, "\r\n\r\n"));
}

static void a_policy_name_cannot_break_the_header(void **unused)
{
    (void)unused;
    struct sl_verdict v = {.retry_ns = SEC, .limit = 1};
    struct sl_reply_policy p = {.name = "a\"b\\c\r\nX: y", .quota = 1, .window_s = 0};
    char buf[SL_REPLY_MAX];
    sl_reply_429_policy(buf, sizeof buf, &v, &p);
    assert_field(buf, "RateLimit-Policy", "\"a\\\"b\\\\c__X: y\";q=1;w=1");
    assert_null(strstr(buf, "\r\nX: y"));
}

static void the_longest_reply_fits_the_buffer(void **unused)
{
    (void)unused;
    struct sl_verdict v = {.retry_ns = UINT64_MAX / 4,
                           .reset_ns = UINT64_MAX / 4,
                           .remaining = UINT64_MAX,
                           .limit = UINT64_MAX};
    char name[48];
    memset(name, '"', sizeof name - 1);
    name[sizeof name - 1] = 0;
    struct sl_reply_policy p = {.name = name, .quota = UINT64_MAX, .window_s = UINT64_MAX};
    char buf[SL_REPLY_MAX];
    size_t n = sl_reply_429_policy(buf, sizeof buf, &v, &p);
    assert_true(n < sizeof buf - 1); /* not truncated */
    assert_non_null(strstr(buf, "\r\n\r\nToo Many Requests\n"));
}

static void the_outbound_429_keeps_the_connection(void **unused)
{
    (void)unused;
    struct sl_verdict v = {.retry_ns = 3 * SEC, .reset_ns = 12 * SEC, .remaining = 0, .limit = 100};
    struct sl_reply_policy p = {.name = "api", .quota = 100, .window_s = 60};
    char keep[SL_REPLY_MAX], close[SL_REPLY_MAX];
    size_t n = sl_reply_429_keep(keep, sizeof keep, &v, &p);
    size_t m = sl_reply_429_policy(close, sizeof close, &v, &p);
    assert_null(strstr(keep, "Connection:"));
    assert_int_equal(n + strlen("Connection: close\r\n"), m);
    assert_field(keep, "Retry-After", "3");
    assert_field(keep, "RateLimit", "\"api\";r=0;t=12");
    assert_non_null(strstr(keep, "\r\n\r\nToo Many Requests\n"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_429_reports_the_bucket_in_whole_seconds_rounded_up),
        cmocka_unit_test(retry_after_is_never_zero),
        cmocka_unit_test(the_body_length_matches_content_length),
        cmocka_unit_test(a_policy_adds_the_draft_10_structured_fields),
        cmocka_unit_test(a_policy_name_cannot_break_the_header),
        cmocka_unit_test(the_longest_reply_fits_the_buffer),
        cmocka_unit_test(the_outbound_429_keeps_the_connection),
    };
    return cmocka_run_group_tests(tests, NULL, NULL) != 0;
}
