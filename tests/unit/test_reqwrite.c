/* SPDX-License-Identifier: BSD-2-Clause */
/* test_reqwrite.c - an outbound write decided in one call
 * (core/http/reqwrite.h): whole writes wait or fail as one, a part goes
 * before a wait when not whole, bytes a library did not send are decided
 * again without a second charge, a swallowed request is skipped with its
 * 429 announced, a reloaded runtime rebinds the connection, and an
 * HTTP/2 denial waits for the streams before it to end (within
 * max_delay). Time injected. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../../core/http/reqwrite.h"
#include "h2_frames.h"
#include "reqworld.h"
#include "testutil.h"

#define GET  "GET /x HTTP/1.1\r\nHost: a\r\nX-API-Key: k\r\n\r\n"
#define RESP "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"

/* Outbound, one request a second per X-API-Key value, burst `burst`. */
static struct req_world *world_out(uint64_t burst, enum sl_action action)
{
    struct req_world *w = calloc(1, sizeof *w);
    struct sl_rule *r = req_world_rule(w, 1, burst, action);
    r->req_per = SL_REQ_PER_HEADER;
    strcpy(r->req_per_name, "X-API-Key");
    req_world_start(w);
    req_world_outbound(w);
    return w;
}

static void world_free(struct req_world *w)
{
    req_world_stop(w);
    free(w);
}

static uint64_t allowed(const struct req_world *w)
{
    return sl_table_counter(w->table, 1, SL_C_ALLOWED);
}

static void a_whole_write_waits_as_one_and_goes_at_its_turn(void **unused)
{
    (void)unused;
    struct req_world *w = world_out(1, SL_ACT_DELAY);
    const char s[] = GET GET;
    struct sl_req_write d;
    /* the second head must wait a second: nothing of the write goes */
    sl_req_write(w->c, NULL, s, sizeof s - 1, T0, SL_REQ_WRITE_WHOLE, &d);
    assert_int_equal(d.what, SL_REQ_WAIT);
    assert_int_equal(d.n, 0);
    assert_true(d.wait_ns > 0 && d.wait_ns <= SEC);
    assert_int_equal(d.err, 0);
    sl_req_write(w->c, NULL, s, sizeof s - 1, T0 + d.wait_ns, SL_REQ_WRITE_WHOLE, &d);
    assert_int_equal(d.what, SL_REQ_WRITE);
    assert_int_equal(d.n, sizeof s - 1);
    assert_int_equal(allowed(w), 2);
    world_free(w);
}

static void a_part_goes_before_a_wait_when_not_whole(void **unused)
{
    (void)unused;
    struct req_world *w = world_out(1, SL_ACT_DELAY);
    const char s[] = GET GET;
    struct sl_req_write d;
    sl_req_write(w->c, NULL, s, sizeof s - 1, T0, 0, &d);
    assert_int_equal(d.what, SL_REQ_WRITE);
    assert_int_equal(d.n, sizeof GET - 1);
    sl_req_write(w->c, NULL, s + d.n, sizeof s - 1 - d.n, T0, 0, &d);
    assert_int_equal(d.what, SL_REQ_WAIT);
    world_free(w);
}

static void bytes_a_library_did_not_send_are_decided_again_without_a_second_charge(void **unused)
{
    (void)unused;
    struct req_world *w = world_out(3, SL_ACT_DELAY);
    const char s[] = GET GET;
    struct sl_req_write d;
    sl_req_write(w->c, NULL, s, sizeof s - 1, T0, SL_REQ_WRITE_WHOLE, &d);
    assert_int_equal(d.what, SL_REQ_WRITE);
    assert_int_equal(d.n, sizeof s - 1);
    assert_int_equal(allowed(w), 2);
    /* the library sent 10 bytes: the rest comes again */
    sl_req_unwritten(w->c, sizeof s - 1 - 10);
    sl_req_write(w->c, NULL, s + 10, sizeof s - 1 - 10, T0, SL_REQ_WRITE_WHOLE, &d);
    assert_int_equal(d.what, SL_REQ_WRITE);
    assert_int_equal(d.n, sizeof s - 1 - 10);
    assert_int_equal(allowed(w), 2); /* both heads were decided once */
    /* the next request is decided from where the stream really is */
    sl_req_write(w->c, NULL, GET, sizeof GET - 1, T0, SL_REQ_WRITE_WHOLE, &d);
    assert_int_equal(d.what, SL_REQ_WRITE);
    assert_int_equal(allowed(w), 3);
    sl_req_write(w->c, NULL, GET, sizeof GET - 1, T0, SL_REQ_WRITE_WHOLE, &d);
    assert_int_equal(d.what, SL_REQ_WAIT);
    world_free(w);
}

static void a_rejected_write_fails_with_the_rules_errno(void **unused)
{
    (void)unused;
    struct req_world *w = world_out(1, SL_ACT_REJECT);
    struct sl_req_write d;
    sl_req_write(w->c, NULL, GET, sizeof GET - 1, T0, SL_REQ_WRITE_WHOLE, &d);
    assert_int_equal(d.what, SL_REQ_WRITE);
    sl_req_write(w->c, NULL, GET, sizeof GET - 1, T0, SL_REQ_WRITE_WHOLE, &d);
    assert_int_equal(d.what, SL_REQ_FAIL);
    assert_int_equal(d.err, ECONNREFUSED);
    w->cfg.rules[0].err = ECONNRESET;
    sl_req_write(w->c, NULL, GET, sizeof GET - 1, T0, SL_REQ_WRITE_WHOLE, &d);
    assert_int_equal(d.what, SL_REQ_FAIL);
    assert_int_equal(d.err, ECONNRESET);
    world_free(w);
}

static void a_swallowed_request_waits_for_the_answers_then_is_skipped(void **unused)
{
    (void)unused;
    struct req_world *w = world_out(1, SL_ACT_REPLY);
    struct sl_req_write d;
    const char *q;
    sl_req_write(w->c, NULL, GET, sizeof GET - 1, T0, SL_REQ_WRITE_WHOLE, &d);
    assert_int_equal(d.what, SL_REQ_WRITE);
    /* the first request's response is not read yet: the 429 would come
     * before it, so the second waits (err: what a caller giving up says) */
    sl_req_write(w->c, NULL, GET, sizeof GET - 1, T0, SL_REQ_WRITE_WHOLE, &d);
    assert_int_equal(d.what, SL_REQ_WAIT);
    assert_int_equal(d.err, ECONNREFUSED);
    assert_int_equal(sl_req_inject_peek(w->c, &q), 0);
    sl_req_responses(w->c, RESP, sizeof RESP - 1);
    /* bytes that cannot be taken back (memory BIOs): refused, nothing queued */
    sl_req_write(w->c, NULL, GET, sizeof GET - 1, T0, SL_REQ_WRITE_NO_SKIP, &d);
    assert_int_equal(d.what, SL_REQ_FAIL);
    assert_int_equal(d.err, ECONNREFUSED);
    assert_int_equal(sl_req_inject_peek(w->c, &q), 0);
    sl_req_write(w->c, NULL, GET, sizeof GET - 1, T0, SL_REQ_WRITE_WHOLE, &d);
    assert_int_equal(d.what, SL_REQ_SKIP);
    assert_int_equal(d.n, sizeof GET - 1);
    assert_true(d.announce);
    assert_true(sl_req_inject_peek(w->c, &q) > 0);
    world_free(w);

    /* answers that cannot be counted: the turn never comes */
    w = world_out(1, SL_ACT_REPLY);
    sl_req_write(w->c, NULL, GET, sizeof GET - 1, T0, SL_REQ_WRITE_WHOLE, &d);
    sl_req_responses(w->c, "SSH-2.0-x\r\n", 11);
    sl_req_write(w->c, NULL, GET, sizeof GET - 1, T0, SL_REQ_WRITE_WHOLE, &d);
    assert_int_equal(d.what, SL_REQ_FAIL);
    assert_int_equal(d.err, ECONNREFUSED);
    world_free(w);
}

static void a_reloaded_runtime_rebinds_the_connection(void **unused)
{
    (void)unused;
    struct req_world *w = world_out(1, SL_ACT_DELAY);
    struct sl_runtime fresh = w->rt; /* as a reload publishes: the same rules */
    struct sl_req_write d;
    sl_req_write(w->c, &w->rt, GET, sizeof GET - 1, T0, SL_REQ_WRITE_WHOLE, &d);
    assert_ptr_equal(sl_req_conn_runtime(w->c), &w->rt);
    sl_req_write(w->c, &fresh, GET, sizeof GET - 1, T0 + SEC, SL_REQ_WRITE_WHOLE, &d);
    assert_ptr_equal(sl_req_conn_runtime(w->c), &fresh);
    assert_int_equal(d.what, SL_REQ_WRITE);
    sl_req_write(w->c, NULL, GET, sizeof GET - 1, T0 + SEC, SL_REQ_WRITE_WHOLE, &d);
    assert_ptr_equal(sl_req_conn_runtime(w->c), &fresh); /* NULL: no change */
    assert_int_equal(d.what, SL_REQ_WAIT);
    world_free(w);
}

/* The server's side: SETTINGS, then 200s that end streams 1 and 3. */
static size_t h2_answers(uint8_t *out)
{
    struct h2out o = {.len = 0};
    nghttp2_hd_deflater *d;
    assert_int_equal(nghttp2_hd_deflate_new(&d, 4096), 0);
    nghttp2_nv nv[] = {H2NV(":status", "200")};
    uint8_t blk[64];
    ssize_t n = nghttp2_hd_deflate_hd(d, blk, sizeof blk, nv, 1);
    assert_true(n > 0);
    nghttp2_hd_deflate_del(d);
    h2frame(&o, 4, 0, 0, "", 0);
    h2frame(&o, 1, 0x5, 1, blk, (size_t)n); /* END_HEADERS | END_STREAM */
    h2frame(&o, 1, 0x5, 3, blk + n - 1, 1); /* the same, indexed */
    memcpy(out, o.buf, o.len);
    return o.len;
}

/* Issue 34: grpc drops the whole connection when a write fails, the
 * streams in flight with it, answered ones included. So an outbound
 * HTTP/2 denial (reply, beyond max_delay: stream 5 needs 2 s, max_delay
 * is 1 s) waits while streams 1 and 3 are unanswered, and fails once
 * their answers end them; with no answer, it fails at max_delay. Before:
 * it failed at once. */
static void an_h2_denial_waits_for_the_streams_before_it(void **unused)
{
    (void)unused;
    for (int answered = 0; answered < 2; answered++) {
        struct req_world *w = world_out(1, SL_ACT_REPLY);
        static struct h2out o;
        size_t starts[3];
        h2_client(&o, starts);
        struct sl_req_write d;
        sl_req_write(w->c, NULL, o.buf, o.len, T0, 0, &d); /* stream 1 goes */
        assert_int_equal(d.what, SL_REQ_WRITE);
        assert_int_equal(d.n, starts[1]);
        sl_req_write(w->c, NULL, o.buf + starts[1], o.len - starts[1], T0 + SEC, 0, &d);
        assert_int_equal(d.what, SL_REQ_WRITE); /* stream 3 at its turn */
        assert_int_equal(d.n, starts[2] - starts[1]);
        uint64_t t = T0 + SEC;
        sl_req_write(w->c, NULL, o.buf + starts[2], o.len - starts[2], t, 0, &d);
        assert_int_equal(d.what, SL_REQ_WAIT); /* stream 5's denial waits */
        assert_true(d.wait_ns > 0 && d.wait_ns <= SEC / 100);
        t += SEC / 2;
        sl_req_write(w->c, NULL, o.buf + starts[2], o.len - starts[2], t, 0, &d);
        assert_int_equal(d.what, SL_REQ_WAIT);
        if (answered) {
            uint8_t a[256];
            size_t n = h2_answers(a);
            sl_req_responses(w->c, a, n - 10); /* stream 3 still in flight */
            sl_req_write(w->c, NULL, o.buf + starts[2], o.len - starts[2], t, 0, &d);
            assert_int_equal(d.what, SL_REQ_WAIT);
            sl_req_responses(w->c, a + n - 10, 10);
        } else {
            t += SEC / 2; /* max_delay after the first ask */
        }
        sl_req_write(w->c, NULL, o.buf + starts[2], o.len - starts[2], t, 0, &d);
        assert_int_equal(d.what, SL_REQ_FAIL);
        assert_int_equal(d.err, ECONNREFUSED);
        world_free(w);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_whole_write_waits_as_one_and_goes_at_its_turn),
        cmocka_unit_test(a_part_goes_before_a_wait_when_not_whole),
        cmocka_unit_test(bytes_a_library_did_not_send_are_decided_again_without_a_second_charge),
        cmocka_unit_test(a_rejected_write_fails_with_the_rules_errno),
        cmocka_unit_test(a_swallowed_request_waits_for_the_answers_then_is_skipped),
        cmocka_unit_test(a_reloaded_runtime_rebinds_the_connection),
        cmocka_unit_test(an_h2_denial_waits_for_the_streams_before_it),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
