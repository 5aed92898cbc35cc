/* SPDX-License-Identifier: BSD-2-Clause */
/* test_h1resp.c - counting the responses a client reads (core/http/h1resp.h):
 * framing by Content-Length, chunked and end of stream, bytes split
 * anywhere, HEAD, interim 1xx, and what makes the count lost. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "../../core/http/h1resp.h"

#define OK_CL "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc"
#define OK_CH "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nab\r\n0\r\n\r\n"

static void feed_bytewise(struct sl_h1resp *r, const char *s)
{
    for (size_t i = 0; s[i]; i++)
        sl_h1resp_feed(r, s + i, 1);
}

static void responses_split_anywhere_are_counted_at_their_end(void **unused)
{
    (void)unused;
    struct sl_h1resp r;
    sl_h1resp_init(&r);
    sl_h1resp_sent(&r, "GET");
    sl_h1resp_sent(&r, "POST");
    assert_int_equal(sl_h1resp_outstanding(&r), 2);
    const char a[] = OK_CL;
    sl_h1resp_feed(&r, a, sizeof a - 2); /* all but the last body byte */
    assert_int_equal(sl_h1resp_outstanding(&r), 2);
    sl_h1resp_feed(&r, a + sizeof a - 2, 1);
    assert_int_equal(sl_h1resp_outstanding(&r), 1);
    feed_bytewise(&r, OK_CH);
    assert_int_equal(sl_h1resp_outstanding(&r), 0);
}

static void head_responses_have_no_body_and_interim_ones_do_not_count(void **unused)
{
    (void)unused;
    struct sl_h1resp r;
    sl_h1resp_init(&r);
    sl_h1resp_sent(&r, "HEAD");
    sl_h1resp_sent(&r, "GET");
    feed_bytewise(&r, "HTTP/1.1 100 Continue\r\n\r\n");
    assert_int_equal(sl_h1resp_outstanding(&r), 2);
    feed_bytewise(&r, "HTTP/1.1 200 OK\r\nContent-Length: 99\r\n\r\n"); /* HEAD: no body */
    assert_int_equal(sl_h1resp_outstanding(&r), 1);
    feed_bytewise(&r, OK_CL);
    assert_int_equal(sl_h1resp_outstanding(&r), 0);
}

static void a_response_to_the_end_of_the_stream_counts_at_eof(void **unused)
{
    (void)unused;
    struct sl_h1resp r;
    sl_h1resp_init(&r);
    sl_h1resp_sent(&r, "GET");
    feed_bytewise(&r, "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nall of it");
    assert_int_equal(sl_h1resp_outstanding(&r), 1);
    sl_h1resp_eof(&r);
    assert_int_equal(sl_h1resp_outstanding(&r), 0);
}

static void garbage_unsolicited_answers_and_upgrades_lose_the_count(void **unused)
{
    (void)unused;
    struct sl_h1resp r;
    sl_h1resp_init(&r);
    sl_h1resp_sent(&r, "GET");
    sl_h1resp_feed(&r, "SSH-2.0-x\r\n", 11);
    assert_int_equal(sl_h1resp_outstanding(&r), UINT64_MAX);

    sl_h1resp_init(&r); /* an answer to nothing: the count cannot be trusted */
    const char a[] = OK_CL;
    sl_h1resp_feed(&r, a, sizeof a - 1);
    assert_int_equal(sl_h1resp_outstanding(&r), UINT64_MAX);

    sl_h1resp_init(&r);
    sl_h1resp_sent(&r, "GET");
    feed_bytewise(&r, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n");
    assert_int_equal(sl_h1resp_outstanding(&r), UINT64_MAX);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(responses_split_anywhere_are_counted_at_their_end),
        cmocka_unit_test(head_responses_have_no_body_and_interim_ones_do_not_count),
        cmocka_unit_test(a_response_to_the_end_of_the_stream_counts_at_eof),
        cmocka_unit_test(garbage_unsolicited_answers_and_upgrades_lose_the_count),
    };
    return cmocka_run_group_tests(tests, NULL, NULL) != 0;
}
