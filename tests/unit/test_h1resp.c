/* SPDX-License-Identifier: BSD-2-Clause */
/* test_h1resp.c - counting the responses a client reads (core/http/h1resp.h):
 * framing by Content-Length, chunked and end of stream, bytes split
 * anywhere, HEAD, interim 1xx, and what makes the count lost; the fast
 * path for common heads (core/http/h1resp_fast.h) beside http-parser
 * alone, event for event. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
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

/* What the callbacks saw, in order: "s<index>:<status>" and "d<index>". */
struct seen {
    char log[512];
    size_t len;
};

static void saw_status(void *arg, uint64_t index, int status)
{
    struct seen *s = arg;
    s->len += (size_t)snprintf(s->log + s->len, sizeof s->log - s->len, "s%llu:%d ",
                               (unsigned long long)index, status);
}

static void saw_done(void *arg, uint64_t index)
{
    struct seen *s = arg;
    s->len += (size_t)snprintf(s->log + s->len, sizeof s->log - s->len, "d%llu ",
                               (unsigned long long)index);
}

static void watched(struct sl_h1resp *r, struct seen *s, bool slow)
{
    memset(s, 0, sizeof *s);
    sl_h1resp_init(r);
    if (slow) sl_h1resp_slow_only(r);
    sl_h1resp_statuses(r, saw_status, s);
    sl_h1resp_ends(r, saw_done, s);
}

#define NGINX_HEAD                                                                                 \
    "HTTP/1.1 200 OK\r\nServer: nginx/1.22.1\r\nDate: Fri, 27 Nov 2026 12:00:00 GMT\r\n"           \
    "Content-Type: application/octet-stream\r\nContent-Length: 13\r\n"                             \
    "Last-Modified: Fri, 27 Nov 2026 11:00:00 GMT\r\nConnection: keep-alive\r\n"                   \
    "ETag: \"6567a0b0-d\"\r\nAccept-Ranges: bytes\r\n\r\n"

static void a_common_head_is_read_in_one_pass_and_its_body_skipped_by_length(void **unused)
{
    (void)unused;
    struct sl_h1resp r;
    struct seen s;
    watched(&r, &s, false);
    sl_h1resp_sent(&r, "GET");
    sl_h1resp_sent(&r, "GET");
    const char head[] = NGINX_HEAD;
    sl_h1resp_feed(&r, head, sizeof head - 1); /* nginx's writev: the head, then the file */
    assert_string_equal(s.log, "s0:200 ");
    assert_int_equal(r.body_left, 13); /* the fast path's: http-parser never saw the head */
    sl_h1resp_feed(&r, "sluice ", 7);
    sl_h1resp_feed(&r, "bench\n" NGINX_HEAD "sluice bench\n", 6 + sizeof head - 1 + 13);
    assert_string_equal(s.log, "s0:200 d0 s1:200 d1 ");
    assert_int_equal(sl_h1resp_outstanding(&r), 0);
}

static void uncommon_heads_go_to_http_parser_and_the_fast_path_comes_back(void **unused)
{
    (void)unused;
    struct sl_h1resp r;
    struct seen s;
    watched(&r, &s, false);
    for (int i = 0; i < 4; i++)
        sl_h1resp_sent(&r, "GET");
    const char a[] = "HTTP/1.1 100 Continue\r\n\r\n" OK_CH "HTTP/1.1 404 Not Found\r\n"
                     "content-length: 2\r\n\r\nno";
    sl_h1resp_feed(&r, a, sizeof a - 1);
    assert_string_equal(s.log, "s0:200 d0 s1:404 d1 ");
    const char b[] = "HTTP/1.1 429 Too Many Requests\r\nContent-Length: 0\r\n\r\n";
    sl_h1resp_feed(&r, b, sizeof b - 1);
    assert_string_equal(s.log, "s0:200 d0 s1:404 d1 s2:429 d2 ");
    const char c[] = "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 1\r\n\r\nx";
    sl_h1resp_feed(&r, c, sizeof c - 1);
    assert_string_equal(s.log, "s0:200 d0 s1:404 d1 s2:429 d2 s3:200 d3 ");
    sl_h1resp_sent(&r, "GET"); /* the next common head is the fast path's again */
    const char head[] = NGINX_HEAD;
    sl_h1resp_feed(&r, head, sizeof head - 1);
    assert_int_equal(r.body_left, 13);
    assert_int_equal(sl_h1resp_outstanding(&r), 1);
}

static void a_body_cut_by_the_end_of_the_stream_loses_what_follows(void **unused)
{
    (void)unused;
    for (int slow = 0; slow < 2; slow++) {
        struct sl_h1resp r;
        struct seen s;
        watched(&r, &s, slow);
        sl_h1resp_sent(&r, "GET");
        sl_h1resp_feed(&r, OK_CL, sizeof OK_CL - 2); /* a body byte short */
        sl_h1resp_eof(&r);
        assert_int_equal(sl_h1resp_outstanding(&r), 1);
        sl_h1resp_feed(&r, "c", 1);
        assert_int_equal(sl_h1resp_outstanding(&r), UINT64_MAX);
        assert_string_equal(s.log, "s0:200 ");
    }
}

/* The fast path and http-parser alone, fed the same stream split at
 * every place into two reads, with requests sent before and between:
 * the same events, the same count after each read and at the end. */
static void both_readers_count_alike(const char *stream, const char *methods)
{
    size_t len = strlen(stream);
    for (size_t cut = 0; cut <= len; cut++) {
        struct sl_h1resp r[2];
        struct seen s[2];
        uint64_t out[2][3];
        for (int slow = 0; slow < 2; slow++) {
            watched(&r[slow], &s[slow], slow);
            const char *m = methods;
            for (; *m && *m != '|'; m++)
                sl_h1resp_sent(&r[slow], *m == 'H' ? "HEAD" : *m == 'C' ? "CONNECT" : "GET");
            sl_h1resp_feed(&r[slow], stream, cut);
            out[slow][0] = sl_h1resp_outstanding(&r[slow]);
            for (m += *m == '|'; *m; m++)
                sl_h1resp_sent(&r[slow], *m == 'H' ? "HEAD" : *m == 'C' ? "CONNECT" : "GET");
            sl_h1resp_feed(&r[slow], stream + cut, len - cut);
            out[slow][1] = sl_h1resp_outstanding(&r[slow]);
            sl_h1resp_eof(&r[slow]);
            out[slow][2] = sl_h1resp_outstanding(&r[slow]);
        }
        assert_string_equal(s[0].log, s[1].log);
        assert_memory_equal(out[0], out[1], sizeof out[0]);
    }
}

static void the_fast_path_counts_as_http_parser_does_split_anywhere(void **unused)
{
    (void)unused;
    both_readers_count_alike(NGINX_HEAD "sluice bench\n" NGINX_HEAD "sluice bench\n", "GG");
    both_readers_count_alike(NGINX_HEAD "sluice bench\n" NGINX_HEAD "sluice", "G|G");
    both_readers_count_alike(OK_CL OK_CL OK_CL, "HGC"); /* HEAD: no body; CONNECT: a tunnel */
    both_readers_count_alike(OK_CL "\r\n" OK_CL, "GG"); /* a blank line between */
    both_readers_count_alike(OK_CL OK_CL, "G");         /* the second answers nothing */
    both_readers_count_alike("HTTP/1.1 204 No Content\r\nContent-Length: 3\r\n\r\nabc" OK_CL,
                             "GG"); /* a 204's length is read, as http-parser does */
    both_readers_count_alike("HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\n"
                             "abc",
                             "G");
    both_readers_count_alike("HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: "
                             "chunked\r\n\r\n0\r\n\r\n",
                             "G");
    /* http-parser flags Transfer-Encoding once a name's first 17 bytes
     * are it, whatever follows (then, beside a length, it gives up) */
    both_readers_count_alike("HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-EncodingA: "
                             "chunked\r\n\r\nabc" OK_CL,
                             "GG");
    both_readers_count_alike("HTTP/1.1 200 OK\r\nTransfer-Encoding-X: x\r\n"
                             "Content-Length: 3\r\n\r\nabc" OK_CL,
                             "GG");
    both_readers_count_alike("HTTP/1.1 200 OK\r\nContent-Length: 3 \r\nX: \x01\r\n\r\nabc", "G");
    both_readers_count_alike("HTTP/1.1 200 OK\r\nX:\r\n y\r\nContent-Length: 1\r\n\r\na", "G");
    both_readers_count_alike("HTTP/1.1 200 OK\r\nX: a\tb\x7f\r\nContent-Length: 1\r\n\r\na", "G");
    both_readers_count_alike("HTTP/1.1 200 OK\nContent-Length: 1\n\na" OK_CL, "GG");
    both_readers_count_alike("HTTP/1.0 200 OK\r\nContent-Length: 1\r\n\r\na" OK_CL, "GG");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(responses_split_anywhere_are_counted_at_their_end),
        cmocka_unit_test(head_responses_have_no_body_and_interim_ones_do_not_count),
        cmocka_unit_test(a_response_to_the_end_of_the_stream_counts_at_eof),
        cmocka_unit_test(garbage_unsolicited_answers_and_upgrades_lose_the_count),
        cmocka_unit_test(a_common_head_is_read_in_one_pass_and_its_body_skipped_by_length),
        cmocka_unit_test(uncommon_heads_go_to_http_parser_and_the_fast_path_comes_back),
        cmocka_unit_test(a_body_cut_by_the_end_of_the_stream_loses_what_follows),
        cmocka_unit_test(the_fast_path_counts_as_http_parser_does_split_anywhere),
    };
    return cmocka_run_group_tests(tests, NULL, NULL) != 0;
}
