/* SPDX-License-Identifier: BSD-2-Clause */
/* test_bodydigest.c - a request body's digest: HTTP/1 Content-Length and
 * chunked (the chunking is not part of it), HTTP/2 DATA of the request's
 * stream (padding and other streams left out); no digest when the body is
 * not whole in the bytes. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "../../core/http/bodydigest.h"
#include "h2_frames.h"

static struct sl_body_frame h1(bool chunked, uint64_t length)
{
    struct sl_body_frame h;
    memset(&h, 0, sizeof h);
    h.http_major = 1;
    h.chunked = chunked;
    h.has_length = !chunked && length;
    h.content_length = length;
    h.body = chunked || length;
    return h;
}

static bool digest(const struct sl_body_frame *h, uint32_t stream, const void *p, size_t n,
                   uint8_t out[SL_BODY_DIGEST_LEN])
{
    return sl_body_digest(h, stream, p, n, out);
}

static void a_body_is_the_same_however_it_is_framed(void **unused)
{
    (void)unused;
    uint8_t a[16], b[16], c[16], d[16], e[16];
    struct sl_body_frame len = h1(false, 11), ch = h1(true, 0);
    assert_true(digest(&len, 0,
                       "hello world"
                       "GET / HTTP/1.1\r\n",
                       27, a));
    assert_true(digest(&ch, 0, "5\r\nhello\r\n6;x=1\r\n world\r\n0\r\nT: 1\r\n\r\n", 37, b));
    assert_true(digest(&ch, 0, "b\r\nhello world\r\n0\r\n\r\n", 21, c));
    assert_memory_equal(a, b, 16);
    assert_memory_equal(a, c, 16);
    static struct h2out o;
    o.len = 0;
    struct sl_body_frame h2 = h1(false, 0);
    h2.http_major = 2;
    h2.body = true;
    h2frame(&o, 0, 0x8, 1, "\x03hello\0\0\0", 9); /* padded */
    h2frame(&o, 0, 0, 3, "other", 5);             /* another stream */
    h2frame(&o, 8, 0, 1, "\0\0\0\1", 4);          /* WINDOW_UPDATE */
    h2frame(&o, 0, 0x1, 1, " world", 6);          /* END_STREAM */
    assert_true(digest(&h2, 1, o.buf, o.len, d));
    assert_memory_equal(a, d, 16);
    /* another body differs */
    assert_true(digest(&len, 0, "hello World", 11, e));
    assert_memory_not_equal(a, e, 16);
}

static void a_body_not_whole_in_the_bytes_has_no_digest(void **unused)
{
    (void)unused;
    uint8_t out[16];
    struct sl_body_frame len = h1(false, 11), ch = h1(true, 0);
    assert_false(digest(&len, 0, "hello worl", 10, out));
    assert_false(digest(&ch, 0, "5\r\nhello\r\n", 10, out));
    assert_false(digest(&ch, 0, "5\r\nhello\r\n0\r\n", 13, out));
    assert_false(digest(&ch, 0, "zz\r\nhello\r\n0\r\n\r\n", 16, out)); /* not framed */
    assert_false(digest(&ch, 0, "fffffffffffffffffff\r\n", 21, out));
    static struct h2out o;
    o.len = 0;
    struct sl_body_frame h2 = h1(false, 0);
    h2.http_major = 2;
    h2.body = true;
    h2frame(&o, 0, 0, 1, "hello", 5); /* no END_STREAM yet */
    assert_false(digest(&h2, 1, o.buf, o.len, out));
    assert_false(digest(&h2, 1, o.buf, o.len - 1, out));
    /* no body: the empty body's digest, whatever follows */
    uint8_t e1[16], e2[16];
    struct sl_body_frame none = h1(false, 0);
    assert_true(digest(&none, 0, "", 0, e1));
    h2.body = false;
    assert_true(digest(&h2, 1, o.buf, o.len, e2));
    assert_memory_equal(e1, e2, 16);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_body_is_the_same_however_it_is_framed),
        cmocka_unit_test(a_body_not_whole_in_the_bytes_has_no_digest),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
