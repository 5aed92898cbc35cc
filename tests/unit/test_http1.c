/* test_http1.c - the HTTP/1 request-head scanner: heads found whole, split
 * byte by byte, pipelined, across bodies (Content-Length and chunked), and
 * everything that is not plain HTTP/1 passed through. The differential test
 * feeds a corpus in random splits and expects exactly the heads one
 * whole-buffer feed finds.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../core/http1.h"

#define MAXH 32

struct seen {
    int n;
    uint64_t start[MAXH];
    char method[MAXH][16], path[MAXH][128], query[MAXH][128], host[MAXH][64], key[MAXH][64],
        cookie[MAXH][128], idem[MAXH][64];
};

static void copy(char *dst, size_t cap, const char *s, size_t n)
{
    if (!s) {
        snprintf(dst, cap, "(none)");
        return;
    }
    if (n >= cap) n = cap - 1;
    memcpy(dst, s, n);
    dst[n] = 0;
}

/* Feeds text in pieces of `step` bytes (0: all at once), recording heads. */
static void scan(struct sl_h1 *h, const char *text, size_t len, size_t step, struct seen *s)
{
    size_t off = 0;
    while (off < len) {
        size_t piece = step ? step : len - off;
        if (piece > len - off) piece = len - off;
        size_t used = 0;
        while (used < piece) {
            struct sl_h1_head hd;
            bool got;
            used += sl_h1_feed(h, text + off + used, piece - used, &hd, &got);
            if (!got) continue;
            assert_true(s->n < MAXH);
            int i = s->n++;
            s->start[i] = hd.start;
            copy(s->method[i], 16, hd.method, hd.method_len);
            copy(s->path[i], 128, hd.path, hd.path_len);
            copy(s->query[i], 128, hd.query, hd.query_len);
            copy(s->host[i], 64, hd.host, hd.host_len);
            copy(s->key[i], 64, hd.header, hd.header_len);
            copy(s->cookie[i], 128, hd.cookie, hd.cookie_len);
            copy(s->idem[i], 64, hd.idem, hd.idem_len);
        }
        off += piece;
    }
}

static const char PIPELINE[] =
    "GET /a?x=1&key=k1 HTTP/1.1\r\nHost: example.test\r\nX-API-Key: alpha\r\n\r\n"
    "POST /upload HTTP/1.1\r\nHost: example.test\r\nContent-Length: 11\r\nx-api-key: beta\r\n\r\n"
    "hello world"
    "PUT /chunked HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
    "5\r\nGET /\r\n3\r\nabc\r\n0\r\n\r\n"
    "GET /last HTTP/1.0\r\nCookie: a=1; session=s3cr3t\r\nIdempotency-Key: idem-1\r\n\r\n";

static void pipelined_heads_are_all_found_with_their_parts(void **state)
{
    (void)state;
    struct sl_h1 h;
    struct seen s = {0};
    sl_h1_init(&h, "X-Api-Key");
    scan(&h, PIPELINE, sizeof PIPELINE - 1, 0, &s);
    assert_int_equal(s.n, 4);
    assert_string_equal(s.method[0], "GET");
    assert_string_equal(s.path[0], "/a");
    assert_string_equal(s.query[0], "x=1&key=k1");
    assert_string_equal(s.host[0], "example.test");
    assert_string_equal(s.key[0], "alpha");
    assert_int_equal(s.start[0], 0);
    assert_string_equal(s.method[1], "POST");
    assert_string_equal(s.key[1], "beta"); /* header names are case-insensitive */
    assert_string_equal(s.query[1], "(none)");
    /* the body "hello world" was skipped, and a chunk that looks like a
     * request ("GET /") is body, not a head */
    assert_string_equal(s.method[2], "PUT");
    assert_string_equal(s.path[2], "/chunked");
    assert_string_equal(s.key[2], "(none)");
    assert_string_equal(s.path[3], "/last");
    assert_string_equal(s.cookie[3], "a=1; session=s3cr3t");
    assert_string_equal(s.idem[3], "idem-1");
    /* each head starts right where the previous request ended */
    const char *second = strstr(PIPELINE, "POST");
    assert_int_equal(s.start[1], (uint64_t)(second - PIPELINE));
    const char *last = strstr(PIPELINE, "GET /last");
    assert_int_equal(s.start[3], (uint64_t)(last - PIPELINE));
    assert_false(sl_h1_passthrough(&h));
}

static void byte_by_byte_finds_the_same_heads(void **state)
{
    (void)state;
    struct sl_h1 a, b;
    struct seen whole = {0}, bytes = {0};
    sl_h1_init(&a, "x-api-key");
    sl_h1_init(&b, "x-api-key");
    scan(&a, PIPELINE, sizeof PIPELINE - 1, 0, &whole);
    scan(&b, PIPELINE, sizeof PIPELINE - 1, 1, &bytes);
    assert_int_equal(whole.n, bytes.n);
    assert_memory_equal(&whole, &bytes, sizeof whole);
}

static void a_head_is_reported_only_when_complete(void **state)
{
    (void)state;
    static const char req[] = "GET /x HTTP/1.1\r\nHost: a\r\n\r\n";
    struct sl_h1 h;
    struct seen s = {0};
    sl_h1_init(&h, NULL);
    scan(&h, req, sizeof req - 2, 0, &s); /* all but the last LF */
    assert_int_equal(s.n, 0);
    assert_true(sl_h1_in_head(&h));
    assert_int_equal(h.head_start, 0);
    scan(&h, req + sizeof req - 2, 1, 0, &s);
    assert_int_equal(s.n, 1);
}

static void a_copy_looks_ahead_without_moving_the_original(void **state)
{
    (void)state;
    static const char req[] =
        "GET /one HTTP/1.1\r\nHost: a\r\n\r\nGET /two HTTP/1.1\r\nHost: a\r\n\r\n";
    struct sl_h1 h, ahead;
    struct seen s = {0}, t = {0};
    sl_h1_init(&h, NULL);
    scan(&h, req, 10, 0, &s); /* part of the first head */
    sl_h1_copy(&ahead, &h);
    scan(&ahead, req + 10, sizeof req - 1 - 10, 0, &t);
    assert_int_equal(t.n, 2);
    assert_string_equal(t.path[0], "/one");
    assert_int_equal(t.start[1], strstr(req, "GET /two") - req);
    assert_int_equal(h.pos, 10); /* the original is where it was */
    scan(&h, req + 10, sizeof req - 1 - 10, 3, &s);
    assert_int_equal(s.n, 2);
    assert_string_equal(s.path[1], "/two");
}

static void upgrade_connect_and_garbage_pass_through(void **state)
{
    (void)state;
    static const char ws[] = "GET /chat HTTP/1.1\r\nHost: a\r\nUpgrade: websocket\r\n"
                             "Connection: Upgrade\r\n\r\nGET /not-http HTTP/1.1\r\n\r\n";
    struct sl_h1 h;
    struct seen s = {0};
    sl_h1_init(&h, NULL);
    scan(&h, ws, sizeof ws - 1, 0, &s);
    assert_int_equal(s.n, 1); /* the upgrade request itself is a request */
    assert_true(sl_h1_passthrough(&h));

    static const char conn[] = "CONNECT example.test:443 HTTP/1.1\r\nHost: example.test\r\n\r\nxx";
    struct seen c = {0};
    sl_h1_init(&h, NULL);
    scan(&h, conn, sizeof conn - 1, 0, &c);
    assert_int_equal(c.n, 1);
    assert_true(sl_h1_passthrough(&h));

    static const char junk[] = "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03";
    struct seen j = {0};
    sl_h1_init(&h, NULL);
    scan(&h, junk, sizeof junk - 1, 0, &j);
    assert_int_equal(j.n, 0);
    assert_true(sl_h1_passthrough(&h));

    static const char h2[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
    struct seen p = {0};
    sl_h1_init(&h, NULL);
    scan(&h, h2, sizeof h2 - 1, 0, &p);
    assert_true(sl_h1_passthrough(&h));
}

static void an_oversized_head_passes_through(void **state)
{
    (void)state;
    size_t n = SL_H1_HEAD_MAX + 100;
    char *big = malloc(n + 64);
    int k = snprintf(big, 64, "GET / HTTP/1.1\r\nX-Pad: ");
    memset(big + k, 'a', n - (size_t)k);
    struct sl_h1 h;
    struct seen s = {0};
    sl_h1_init(&h, NULL);
    scan(&h, big, n, 1000, &s);
    assert_int_equal(s.n, 0);
    assert_true(sl_h1_passthrough(&h));
    free(big);
}

static void long_values_are_cut_not_overrun(void **state)
{
    (void)state;
    char req[4096];
    char key[1500];
    memset(key, 'k', sizeof key - 1);
    key[sizeof key - 1] = 0;
    int n = snprintf(req, sizeof req, "GET / HTTP/1.1\r\nX-Key: %s\r\n\r\n", key);
    struct sl_h1 h;
    sl_h1_init(&h, "x-key");
    struct sl_h1_head hd;
    bool got;
    size_t used = sl_h1_feed(&h, req, (size_t)n, &hd, &got);
    assert_true(got);
    assert_true(used <= (size_t)n);
    assert_int_equal(hd.header_len, SL_H1_VALUE_MAX - 1);
}

/* Differential: random splits of a corpus give the heads one whole feed
 * gives. */
static void random_splits_match_one_whole_feed(void **state)
{
    (void)state;
    static const char *const corpus[] = {
        PIPELINE,
        "GET / HTTP/1.1\r\n\r\n",
        "\r\n\r\nGET /after-crlf HTTP/1.1\r\nHost: x\r\n\r\n",
        "POST /p HTTP/1.1\r\nContent-Length: 0\r\n\r\nDELETE /d HTTP/1.1\r\n\r\n",
        "POST /c HTTP/1.1\r\nTransfer-Encoding: "
        "chunked\r\n\r\n1a;ext=1\r\nabcdefghijklmnopqrstuvwxyz\r\n"
        "0\r\nTrailer: t\r\n\r\nGET /t HTTP/1.1\r\n\r\n",
        "GET /a HTTP/1.1\r\nHost: a\r\n\r\nBROKEN\r\n\r\n",
    };
    srand(12345);
    for (size_t c = 0; c < sizeof corpus / sizeof *corpus; c++) {
        size_t len = strlen(corpus[c]);
        struct sl_h1 h;
        struct seen whole = {0};
        sl_h1_init(&h, "x-api-key");
        scan(&h, corpus[c], len, 0, &whole);
        for (int trial = 0; trial < 200; trial++) {
            struct seen split = {0};
            sl_h1_init(&h, "x-api-key");
            size_t off = 0;
            while (off < len) {
                size_t piece = 1 + (size_t)rand() % 17;
                if (piece > len - off) piece = len - off;
                scan(&h, corpus[c] + off, piece, 0, &split);
                off += piece;
            }
            assert_memory_equal(&whole, &split, sizeof whole);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(pipelined_heads_are_all_found_with_their_parts),
        cmocka_unit_test(byte_by_byte_finds_the_same_heads),
        cmocka_unit_test(a_head_is_reported_only_when_complete),
        cmocka_unit_test(a_copy_looks_ahead_without_moving_the_original),
        cmocka_unit_test(upgrade_connect_and_garbage_pass_through),
        cmocka_unit_test(an_oversized_head_passes_through),
        cmocka_unit_test(long_values_are_cut_not_overrun),
        cmocka_unit_test(random_splits_match_one_whole_feed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL) != 0;
}
