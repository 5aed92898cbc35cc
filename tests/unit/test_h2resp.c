/* SPDX-License-Identifier: BSD-2-Clause */
/* test_h2resp.c - HTTP/2 response heads for learn: final heads reported
 * by stream with their rate-limit fields; interim heads, trailers and
 * pushed requests inflated (the dynamic table kept) and not reported;
 * padding, priority and CONTINUATION; the same reports for every split of
 * the stream into two reads and byte by byte; framing and HPACK errors
 * stop the reading. Pairing: every final head's status and fields, each
 * stream's end (END_STREAM on HEADERS and DATA, RST_STREAM), a GOAWAY's
 * last stream, and the DATA payloads without their padding, in order,
 * for every split. Header blocks are made with nghttp2's deflater. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <nghttp2/nghttp2.h>
#include <stdio.h>
#include <string.h>

#include "../../core/http/h2resp.h"
#include "h2_frames.h"

#define MAXREP 8

struct pairs_seen;

struct seen {
    int n;
    uint32_t stream[MAXREP];
    int status[MAXREP];
    struct sl_learn_when retry[MAXREP];
    int64_t openai_left[MAXREP];
    struct pairs_seen *pairs;
};

static void on_head(void *arg, uint32_t stream, const struct sl_learn_resp *f)
{
    struct seen *s = arg;
    assert_true(s->n < MAXREP);
    s->stream[s->n] = stream;
    s->status[s->n] = f->status;
    s->retry[s->n] = f->retry_after;
    s->openai_left[s->n] = f->fam[SL_FAM_OPENAI].remaining;
    s->n++;
}

static size_t block(nghttp2_hd_deflater *d, const nghttp2_nv *nv, size_t n, uint8_t *out)
{
    ssize_t r = nghttp2_hd_deflate_hd(d, out, 4096, nv, n);
    assert_true(r > 0);
    return (size_t)r;
}

/* The server's side: SETTINGS; on stream 1 a 100 Continue, then a 429 with
 * Retry-After (PADDED, its block split over a CONTINUATION), DATA and
 * trailers that say Retry-After too; a PUSH_PROMISE; on stream 3 a 200
 * with OpenAI's fields, PRIORITY flag set; on stream 5 a 503 whose fields
 * the pushed block's table entries index; a 200 with no field on 7. */
static void server_stream(struct h2out *o)
{
    nghttp2_hd_deflater *d;
    assert_int_equal(nghttp2_hd_deflate_new(&d, 4096), 0);
    uint8_t b[4096], f[4200];
    size_t n;
    o->len = 0;
    h2frame(o, 4, 0, 0, "\x00\x03\x00\x00\x00\x64", 6); /* SETTINGS */

    nghttp2_nv cont[] = {H2NV(":status", "100")};
    n = block(d, cont, 1, b);
    h2frame(o, 1, 0x4, 1, b, n);

    nghttp2_nv r429[] = {H2NV(":status", "429"), H2NV("content-type", "application/json"),
                         H2NV("retry-after", "3"), H2NV("x-request-id", "abcdefghijklmnop")};
    n = block(d, r429, 4, b);
    size_t half = n / 2;
    f[0] = 4; /* pad length */
    memcpy(f + 1, b, half);
    memset(f + 1 + half, 0, 4);
    h2frame(o, 1, 0x8, 1, f, 1 + half + 4);    /* HEADERS, PADDED, no END_HEADERS */
    h2frame(o, 9, 0x4, 1, b + half, n - half); /* CONTINUATION, END_HEADERS */
    h2frame(o, 0, 0, 1, "{\"error\":1}", 11);  /* DATA */
    nghttp2_nv trailers[] = {H2NV("retry-after", "9")};
    n = block(d, trailers, 1, b);
    h2frame(o, 1, 0x5, 1, b, n); /* trailers: END_HEADERS | END_STREAM */

    nghttp2_nv push[] = {H2NV(":method", "GET"), H2NV(":path", "/pushed"),
                         H2NV("x-ratelimit-remaining-requests", "7")};
    n = block(d, push, 3, b);
    memcpy(f, "\x00\x00\x00\x02", 4); /* promised stream 2 */
    memcpy(f + 4, b, n);
    h2frame(o, 5, 0x4, 3, f, 4 + n);

    nghttp2_nv r200[] = {H2NV(":status", "200"), H2NV("x-ratelimit-remaining-requests", "0"),
                         H2NV("x-ratelimit-reset-requests", "1.5s")};
    n = block(d, r200, 3, b);
    memcpy(f, "\x00\x00\x00\x00\x10", 5); /* priority: depends on 0, weight 16 */
    memcpy(f + 5, b, n);
    h2frame(o, 1, 0x24, 3, f, 5 + n);

    nghttp2_nv r503[] = {H2NV(":status", "503"), H2NV("x-ratelimit-remaining-requests", "7"),
                         H2NV("retry-after", "3")};
    n = block(d, r503, 3, b);
    h2frame(o, 1, 0x4, 5, b, n);

    nghttp2_nv plain[] = {H2NV(":status", "200"), H2NV("content-type", "application/json")};
    n = block(d, plain, 2, b);
    h2frame(o, 1, 0x5, 7, b, n);
    nghttp2_hd_deflate_del(d);
}

static void expect_all(const struct seen *s)
{
    assert_int_equal(s->n, 3);
    assert_int_equal(s->stream[0], 1);
    assert_int_equal(s->status[0], 429);
    assert_int_equal(s->retry[0].kind, SL_WHEN_REL);
    assert_int_equal(s->retry[0].ns, 3000000000ll);
    assert_int_equal(s->stream[1], 3);
    assert_int_equal(s->status[1], 200);
    assert_int_equal(s->openai_left[1], 0);
    assert_int_equal(s->stream[2], 5);
    assert_int_equal(s->status[2], 503);
    assert_int_equal(s->openai_left[2], 7);
    assert_int_equal(s->retry[2].ns, 3000000000ll);
}

static void final_heads_are_reported_by_stream(void **unused)
{
    (void)unused;
    static struct h2out o;
    server_stream(&o);
    struct sl_h2resp r;
    struct seen s = {0};
    sl_h2resp_init(&r, on_head, &s);
    sl_h2resp_feed(&r, o.buf, o.len);
    assert_false(sl_h2resp_lost(&r));
    expect_all(&s);
    sl_h2resp_fini(&r);
}

static void every_split_reads_the_same(void **unused)
{
    (void)unused;
    static struct h2out o;
    server_stream(&o);
    for (size_t cut = 0; cut <= o.len; cut++) {
        struct sl_h2resp r;
        struct seen s = {0};
        sl_h2resp_init(&r, on_head, &s);
        sl_h2resp_feed(&r, o.buf, cut);
        sl_h2resp_feed(&r, o.buf + cut, o.len - cut);
        assert_false(sl_h2resp_lost(&r));
        expect_all(&s);
        sl_h2resp_fini(&r);
    }
    struct sl_h2resp r;
    struct seen s = {0};
    sl_h2resp_init(&r, on_head, &s);
    for (size_t i = 0; i < o.len; i++)
        sl_h2resp_feed(&r, o.buf + i, 1);
    expect_all(&s);
    sl_h2resp_fini(&r);
}

static struct sl_h2resp *fed(struct sl_h2resp *r, struct seen *s, const struct h2out *o)
{
    sl_h2resp_init(r, on_head, s);
    sl_h2resp_feed(r, o->buf, o->len);
    return r;
}

static void errors_stop_the_reading(void **unused)
{
    (void)unused;
    struct h2out o;
    struct sl_h2resp r;
    struct seen s = {0};
    uint8_t b[64];
    nghttp2_hd_deflater *d;
    assert_int_equal(nghttp2_hd_deflate_new(&d, 4096), 0);
    nghttp2_nv r429[] = {H2NV(":status", "429"), H2NV("retry-after", "3")};
    size_t n = block(d, r429, 2, b);
    nghttp2_hd_deflate_del(d);

    o.len = 0; /* a CONTINUATION with no block open */
    h2frame(&o, 9, 0x4, 1, b, n);
    h2frame(&o, 1, 0x4, 1, b, n);
    assert_true(sl_h2resp_lost(fed(&r, &s, &o)));
    assert_int_equal(s.n, 0);
    sl_h2resp_fini(&r);

    o.len = 0; /* another frame inside an open block */
    h2frame(&o, 1, 0, 1, b, 1);
    h2frame(&o, 0, 0, 1, "x", 1);
    assert_true(sl_h2resp_lost(fed(&r, &s, &o)));
    sl_h2resp_fini(&r);

    o.len = 0; /* padding longer than the frame */
    uint8_t f[64] = {200};
    memcpy(f + 1, b, n);
    h2frame(&o, 1, 0xc, 1, f, 1 + n);
    assert_true(sl_h2resp_lost(fed(&r, &s, &o)));
    sl_h2resp_fini(&r);

    o.len = 0; /* an index past the table */
    h2frame(&o, 1, 0x4, 1, "\xff\x7f", 2);
    h2frame(&o, 1, 0x4, 3, b, n);
    assert_true(sl_h2resp_lost(fed(&r, &s, &o)));
    assert_int_equal(s.n, 0);
    sl_h2resp_fini(&r);

    o.len = 0; /* a block that ends inside a field */
    h2frame(&o, 1, 0x4, 1, b, n - 1);
    assert_true(sl_h2resp_lost(fed(&r, &s, &o)));
    assert_int_equal(s.n, 0);
    sl_h2resp_fini(&r);

    o.len = 0; /* HEADERS on stream 0 */
    h2frame(&o, 1, 0x4, 0, b, n);
    assert_true(sl_h2resp_lost(fed(&r, &s, &o)));
    sl_h2resp_fini(&r);
}

/* What sl_h2resp_pair reports, as text: "s1:429" a status, "e1" an end,
 * "g7" a GOAWAY; fields counted. */
struct pairs_seen {
    char log[256];
    int fields;
    char data[256]; /* "D<stream>:" then its bytes, each time the stream changes */
    uint32_t data_stream;
};

static void log_event(struct pairs_seen *p, const char *fmt, uint32_t a, int b)
{
    size_t n = strlen(p->log);
    snprintf(p->log + n, sizeof p->log - n, fmt, a, b);
}

static void p_status(void *arg, uint32_t stream, int status)
{
    log_event(((struct seen *)arg)->pairs, "s%u:%d ", stream, status);
}

static void p_field(void *arg, uint32_t stream, const char *name, size_t nlen, const char *value,
                    size_t vlen)
{
    (void)stream, (void)name, (void)nlen, (void)value, (void)vlen;
    ((struct seen *)arg)->pairs->fields++;
}

static void p_data(void *arg, uint32_t stream, const uint8_t *p, size_t n)
{
    struct pairs_seen *s = ((struct seen *)arg)->pairs;
    size_t at = strlen(s->data);
    if (stream != s->data_stream)
        at += (size_t)snprintf(s->data + at, sizeof s->data - at, "D%u:", stream);
    s->data_stream = stream;
    assert_true(at + n < sizeof s->data);
    memcpy(s->data + at, p, n);
    s->data[at + n] = 0;
}

static void p_end(void *arg, uint32_t stream)
{
    log_event(((struct seen *)arg)->pairs, "e%u ", stream, 0);
}

static void p_goaway(void *arg, uint32_t last)
{
    log_event(((struct seen *)arg)->pairs, "g%u ", last, 0);
}

static const struct sl_h2resp_pairs pairs = {
    .status = p_status, .field = p_field, .data = p_data, .end = p_end, .goaway = p_goaway};

/* server_stream, then the end of stream 3 (DATA), 5 reset, a GOAWAY. */
static void ended_stream(struct h2out *o)
{
    server_stream(o);
    h2frame(o, 0, 0x8, 3,
            "\x02"
            "ab\0\0",
            5);                                                 /* DATA, PADDED */
    h2frame(o, 0, 0x1, 3, "{}", 2);                             /* DATA, END_STREAM */
    h2frame(o, 3, 0, 5, "\x00\x00\x00\x08", 4);                 /* RST_STREAM, CANCEL */
    h2frame(o, 7, 0, 0, "\x00\x00\x00\x07\x00\x00\x00\x00", 8); /* GOAWAY, last 7 */
    h2frame(o, 0, 0x1, 9, "x", 1); /* DATA on a stream never answered: its end */
}

static void pairs_report_statuses_fields_and_ends(void **unused)
{
    (void)unused;
    static struct h2out o;
    ended_stream(&o);
    const char *want = "s1:429 e1 s3:200 s5:503 s7:200 e7 e3 e5 g7 e9 ";
    for (size_t cut = 0; cut <= o.len; cut++) {
        struct sl_h2resp r;
        struct pairs_seen p = {{0}, 0, {0}, 0};
        struct seen s = {.pairs = &p};
        sl_h2resp_init(&r, on_head, &s);
        sl_h2resp_pair(&r, &pairs);
        sl_h2resp_feed(&r, o.buf, cut);
        sl_h2resp_feed(&r, o.buf + cut, o.len - cut);
        assert_false(sl_h2resp_lost(&r));
        assert_string_equal(p.log, want);
        assert_int_equal(p.fields, 3 + 2 + 2 + 1);                  /* stream 1's, 3's, 5's, 7's */
        assert_string_equal(p.data, "D1:{\"error\":1}D3:ab{}D9:x"); /* padding taken off */
        expect_all(&s);
        sl_h2resp_fini(&r);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(final_heads_are_reported_by_stream),
        cmocka_unit_test(every_split_reads_the_same),
        cmocka_unit_test(errors_stop_the_reading),
        cmocka_unit_test(pairs_report_statuses_fields_and_ends),
    };
    return cmocka_run_group_tests(tests, NULL, NULL) != 0;
}
