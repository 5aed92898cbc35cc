/* SPDX-License-Identifier: BSD-2-Clause */
/* test_reqwrite.c - an outbound write decided in one call
 * (core/http/reqwrite.h): whole writes wait or fail as one, a part goes
 * before a wait when not whole, bytes a library did not send are decided
 * again without a second charge, a swallowed request is skipped with its
 * 429 announced, and a reloaded runtime rebinds the connection. Time
 * injected. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../../core/http/reqwrite.h"
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_whole_write_waits_as_one_and_goes_at_its_turn),
        cmocka_unit_test(a_part_goes_before_a_wait_when_not_whole),
        cmocka_unit_test(bytes_a_library_did_not_send_are_decided_again_without_a_second_charge),
        cmocka_unit_test(a_rejected_write_fails_with_the_rules_errno),
        cmocka_unit_test(a_swallowed_request_waits_for_the_answers_then_is_skipped),
        cmocka_unit_test(a_reloaded_runtime_rebinds_the_connection),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
