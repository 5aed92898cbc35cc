/* SPDX-License-Identifier: BSD-2-Clause */
/* test_gate.c - the shim's request gate (shim/gate.h) over a fake
 * transport: heads split anywhere reach the program whole and in order, a
 * held head waits its turn (non-blocking: EAGAIN and the readiness layer
 * told the turn; blocking: one wait until it), a denial ends the stream
 * (reply: end of file and the 429 kept; reject: ECONNRESET); outbound, a
 * head waits its turn, a swallowed request's 429 is queued behind the
 * responses owed before it (counted in what the program reads through
 * the gate, to the end of the stream) and read first, a reject fails the
 * write with the rule's errno. The clock is injected; the readiness layer
 * and the waits are stubbed here; the rule and its runtime: reqworld.h. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "../../core/log.h"
#include "../../core/http/request.h"
#include "../../core/limit/table.h"
#include "../../shim/gate.h"
#include "../../shim/ready.h"
#include "../../shim/wait.h"
#include "reqworld.h"
#include "testutil.h"

/* ---- the world: the clock, and stubs for ready.c and wait.c ---- */

static uint64_t clock_ns = T0;
static uint64_t fake_now(void)
{
    return clock_ns;
}

static uint64_t throttled_until, held_at, held_out_at, waited_until;
static int waits;

void sl_ready_throttle(int fd, struct sl_fd *e, enum sl_io io, uint64_t until_ns)
{
    (void)fd, (void)e, (void)io;
    throttled_until = until_ns;
}

void sl_ready_held_read(int fd, struct sl_fd *e, uint64_t at)
{
    (void)fd, (void)e;
    held_at = at;
}

void sl_ready_held(int fd, struct sl_fd *e, uint64_t at)
{
    (void)fd, (void)e;
    held_out_at = at;
}

bool sl_fd_nonblocking(int fd)
{
    (void)fd;
    return false; /* the calls say MSG_DONTWAIT when they do not block */
}

uint64_t sl_wait_deadline(int fd, int optname, uint64_t start)
{
    (void)fd, (void)optname, (void)start;
    return 0;
}

/* A blocking wait: time passes until `until`. */
int sl_wait_until(uint64_t until, uint64_t deadline)
{
    (void)deadline;
    waits++;
    waited_until = until;
    if (until > clock_ns) clock_ns = until;
    return 0;
}

int sl_wait_until_masked(uint64_t until, uint64_t deadline, const sigset_t *mask)
{
    (void)mask;
    return sl_wait_until(until, deadline);
}

/* ---- the fake transport: the peer's bytes, arriving in pieces ---- */

struct peer {
    const char *bytes;
    size_t len, off;
    size_t piece; /* each read gets at most this many */
    bool more;    /* more() gets the next piece too (it arrived); false: EAGAIN */
    int end;      /* after the last byte: 0 EAGAIN, 1 end of stream (0), 2 a TLS end (-1) */
};

static ssize_t take(struct peer *p, void *buf, size_t n)
{
    if (p->off == p->len) return p->end == 1 ? 0 : (errno = EAGAIN, -1);
    size_t k = p->len - p->off;
    if (k > p->piece) k = p->piece;
    if (k > n) k = n;
    memcpy(buf, p->bytes + p->off, k);
    p->off += k;
    return (ssize_t)k;
}

static ssize_t fake_read(const struct sl_transport *t, void *buf, size_t n)
{
    return take(t->ctx, buf, n);
}

static ssize_t fake_more(const struct sl_transport *t, void *buf, size_t n)
{
    struct peer *p = t->ctx;
    return p->more ? take(p, buf, n) : (errno = EAGAIN, -1);
}

struct world {
    struct req_world r; /* the rule, its table and runtime, the connection */
    struct sl_gate g;
    struct sl_fd e;
};

static struct world *world(uint64_t count, uint64_t burst, enum sl_action action)
{
    struct world *w = calloc(1, sizeof *w);
    req_world_rule(&w->r, count, burst, action)->max_delay_ns = 10 * SEC;
    req_world_start(&w->r);
    clock_ns = T0;
    throttled_until = held_at = held_out_at = waited_until = 0;
    waits = 0;
    w->g.conn = w->r.c;
    w->g.clock = fake_now;
    return w;
}

/* The same rule outbound: the program's requests to 127.0.0.1. */
static struct world *world_out(uint64_t count, uint64_t burst, enum sl_action action)
{
    struct world *w = world(count, burst, action);
    req_world_outbound(&w->r);
    w->g.dir = SL_OUT;
    return w;
}

/* The program writes buf through the gate as a socket would: what the
 * gate lets go is "sent" (the gate counted it passed); returns the gate's
 * answer. */
static ssize_t gate_write(struct world *w, const char *buf, size_t len, bool *swallowed)
{
    return sl_gate_write(&w->g, &w->e, 7, buf, len, NULL, true, false, swallowed);
}

static void world_free(struct world *w)
{
    sl_gate_end(&w->g);
    req_world_stop(&w->r);
    free(w);
}

static ssize_t gate_read(struct world *w, struct peer *p, void *buf, size_t n, bool nonblock,
                         enum sl_tls_how *how)
{
    struct sl_transport t = {.read = fake_read,
                             .more = fake_more,
                             .fd = 7,
                             .flags = nonblock ? MSG_DONTWAIT : 0,
                             .ctx = p};
    return sl_gate_read(&w->g, &w->e, &t, buf, n, false, how);
}

#define GET  "GET /a HTTP/1.1\r\nHost: x\r\n\r\n"
#define POST "POST /b HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc"

/* ---- the tests ---- */

static void heads_split_anywhere_reach_the_program_whole_and_in_order(void **unused)
{
    (void)unused;
    const char s[] = GET POST GET;
    for (size_t piece = 1; piece <= sizeof s - 1; piece++) {
        for (int more = 0; more < 2; more++) {
            struct world *w = world(100, 100, SL_ACT_DELAY);
            struct peer p = {.bytes = s, .len = sizeof s - 1, .piece = piece, .more = more};
            char got[sizeof s];
            size_t n = 0;
            enum sl_tls_how how;
            for (int calls = 0; n < sizeof s - 1; calls++) {
                assert_true(calls < 1000);
                size_t room = 1 + (size_t)calls % 7; /* the program's buffers vary too */
                ssize_t k = gate_read(w, &p, got + n, room, true, &how);
                if (k < 0) {
                    assert_int_equal(errno, EAGAIN);
                    continue; /* nothing there now: the next piece "arrives" */
                }
                assert_true(k > 0);
                n += (size_t)k;
            }
            assert_memory_equal(got, s, sizeof s - 1);
            assert_int_equal(sl_table_counter(w->r.table, 1, SL_C_ALLOWED), 3);
            world_free(w);
        }
    }
}

static void a_held_head_waits_its_turn_non_blocking(void **unused)
{
    (void)unused;
    struct world *w = world(1, 1, SL_ACT_DELAY); /* 1/s, burst 1 */
    const char s[] = GET GET;
    struct peer p = {.bytes = s, .len = sizeof s - 1, .piece = sizeof s, .more = true};
    char buf[256];
    enum sl_tls_how how;
    ssize_t k = gate_read(w, &p, buf, sizeof buf, true, &how);
    assert_int_equal(k, sizeof GET - 1); /* the first head; the second stays stashed */
    assert_int_equal(w->g.stash_len, sizeof GET - 1);
    assert_int_equal(held_at, T0 + SEC); /* announced at its turn, not now */
    errno = 0;
    assert_int_equal(gate_read(w, &p, buf, sizeof buf, true, &how), -1);
    assert_int_equal(errno, EAGAIN);
    assert_int_equal(how, SL_TLS_WANT_READ);
    assert_int_equal(throttled_until, T0 + SEC);
    assert_int_equal(waits, 0);
    clock_ns = T0 + SEC; /* its turn */
    k = gate_read(w, &p, buf, sizeof buf, true, &how);
    assert_int_equal(k, sizeof GET - 1);
    assert_memory_equal(buf, GET, sizeof GET - 1);
    assert_int_equal(w->g.stash_len, 0);
    assert_int_equal(held_at, 0); /* nothing left to announce */
    world_free(w);
}

/* req.c's fast path reads into the program's buffer itself and hands the
 * bytes to sl_gate_took: the same decisions as sl_gate_read's first read. */
static void bytes_already_read_are_decided_as_the_gates_own_read(void **unused)
{
    (void)unused;
    struct world *w = world(1, 1, SL_ACT_DELAY); /* 1/s, burst 1 */
    char buf[256];
    memcpy(buf, GET GET, sizeof GET GET - 1);
    errno = 1234;
    /* two heads: the first passes, the second waits in the stash for its turn */
    assert_int_equal(sl_gate_took(&w->g, &w->e, 7, buf, sizeof GET GET - 1), sizeof GET - 1);
    assert_int_equal(errno, 1234);
    assert_int_equal(w->g.stash_len, sizeof GET - 1);
    assert_int_equal(held_at, T0 + SEC); /* announced at its turn, not now */
    /* the program reads the stashed head at its turn, through the gate */
    struct peer p = {.bytes = "", .len = 0, .piece = 1, .more = false};
    enum sl_tls_how how;
    clock_ns = T0 + SEC;
    assert_int_equal(gate_read(w, &p, buf, sizeof buf, true, &how), sizeof GET - 1);
    assert_memory_equal(buf, GET, sizeof GET - 1);
    assert_int_equal(w->g.stash_len, 0);
    /* one head alone that must wait: all of it stashed, the gate's read goes on */
    memcpy(buf, GET, sizeof GET - 1);
    assert_int_equal(sl_gate_took(&w->g, &w->e, 7, buf, sizeof GET - 1), SL_GATE_MORE);
    assert_int_equal(w->g.stash_len, sizeof GET - 1);
    errno = 0;
    assert_int_equal(gate_read(w, &p, buf, sizeof buf, true, &how), -1);
    assert_int_equal(errno, EAGAIN);
    assert_int_equal(throttled_until, T0 + 2 * SEC);
    /* a head that may pass: all of it, nothing stashed */
    clock_ns = T0 + 10 * SEC;
    assert_int_equal(gate_read(w, &p, buf, sizeof buf, true, &how), sizeof GET - 1);
    memcpy(buf, GET, sizeof GET - 1);
    clock_ns = T0 + 20 * SEC;
    assert_int_equal(sl_gate_took(&w->g, &w->e, 7, buf, sizeof GET - 1), sizeof GET - 1);
    assert_int_equal(w->g.stash_len, 0);
    assert_int_equal(sl_table_counter(w->r.table, 1, SL_C_ALLOWED), 4);
    world_free(w);
}

static void a_held_head_waits_its_turn_blocking(void **unused)
{
    (void)unused;
    struct world *w = world(1, 1, SL_ACT_DELAY);
    const char s[] = GET GET;
    struct peer p = {.bytes = s, .len = sizeof s - 1, .piece = sizeof s, .more = true};
    char buf[256];
    enum sl_tls_how how;
    assert_int_equal(gate_read(w, &p, buf, sizeof buf, false, &how), sizeof GET - 1);
    assert_int_equal(gate_read(w, &p, buf, sizeof buf, false, &how), sizeof GET - 1);
    assert_int_equal(waits, 1);
    assert_int_equal(waited_until, T0 + SEC);
    world_free(w);
}

static void a_denied_head_ends_the_stream_with_its_429_kept(void **unused)
{
    (void)unused;
    struct world *w = world(1, 1, SL_ACT_REPLY);
    const char s[] = GET POST;
    struct peer p = {.bytes = s, .len = sizeof s - 1, .piece = 5, .more = true};
    char buf[256];
    enum sl_tls_how how;
    assert_int_equal(gate_read(w, &p, buf, sizeof buf, true, &how), sizeof GET - 1);
    assert_int_equal(gate_read(w, &p, buf, sizeof buf, true, &how), 0); /* end of file */
    assert_int_equal(how, SL_TLS_EOF);
    assert_int_equal(w->g.phase, SL_GATE_ENDED);
    assert_int_equal(w->g.stash_len, 0); /* the denied request is dropped, zeroed */
    assert_non_null(strstr(w->g.reply, "HTTP/1.1 429 "));
    assert_int_equal(w->g.reply_len, strlen(w->g.reply));
    /* and stays ended, whatever arrives */
    assert_int_equal(gate_read(w, &p, buf, sizeof buf, true, &how), 0);
    world_free(w);
}

static void a_rejected_head_resets(void **unused)
{
    (void)unused;
    struct world *w = world(1, 1, SL_ACT_REJECT);
    const char s[] = GET GET;
    struct peer p = {.bytes = s, .len = sizeof s - 1, .piece = sizeof s, .more = true};
    char buf[256];
    enum sl_tls_how how;
    assert_int_equal(gate_read(w, &p, buf, sizeof buf, true, &how), sizeof GET - 1);
    errno = 0;
    assert_int_equal(gate_read(w, &p, buf, sizeof buf, true, &how), -1);
    assert_int_equal(errno, ECONNRESET);
    assert_int_equal(how, SL_TLS_RESET);
    assert_int_equal(w->g.phase, SL_GATE_RESET);
    world_free(w);
}

static void the_stash_is_allocated_only_when_a_head_is_held_back(void **unused)
{
    (void)unused;
    struct world *w = world(100, 100, SL_ACT_DELAY);
    const char s[] = GET GET;
    struct peer p = {.bytes = s, .len = sizeof s - 1, .piece = sizeof s, .more = true};
    char buf[256];
    enum sl_tls_how how;
    assert_int_equal(gate_read(w, &p, buf, sizeof buf, true, &how), sizeof s - 1);
    assert_null(w->g.stash); /* everything passed straight into the program's buffer */
    world_free(w);
}

/* issue 21: nginx (edge-triggered, EPOLLRDHUP) takes a short read for
 * "drained" and reads again only at the next edge. A read served from the
 * stash alone came back short while bytes that arrived meanwhile (their
 * edge already reported) sat in the kernel: the connection stalled. A read
 * that empties the stash takes what the transport has too, as bare. */
static void a_read_that_empties_the_stash_takes_what_arrived_too(void **unused)
{
    (void)unused;
    struct world *w = world(100, 100, SL_ACT_DELAY);
    const char s[] = GET GET GET GET;
    const size_t h = sizeof GET - 1;
    struct peer p = {.bytes = s, .len = 3 * h, .piece = sizeof s, .more = true};
    char got[sizeof s];
    enum sl_tls_how how;
    /* ends inside the second head: the first passes, the rest is stashed */
    assert_int_equal(gate_read(w, &p, got, h + 5, true, &how), h);
    assert_int_equal(w->g.stash_len, 5);
    /* completes it from the transport (all of the third head too), gives
     * what fits: complete heads stay stashed, announced */
    size_t n = h;
    assert_int_equal(gate_read(w, &p, got + n, h + 12, true, &how), h + 12);
    n += h + 12;
    assert_int_equal(w->g.stash_len, 3 * h - n);
    assert_int_equal(held_at, T0);
    /* the fourth head arrives (its edge fired while the program was busy) */
    p.len = 4 * h;
    ssize_t k = gate_read(w, &p, got + n, sizeof got - n, true, &how);
    assert_int_equal(k, 4 * h - n); /* before the fix: only the stash, a short read */
    n += (size_t)k;
    assert_memory_equal(got, s, 4 * h);
    assert_int_equal(w->g.stash_len, 0);
    assert_int_equal(held_at, 0);
    assert_int_equal(sl_table_counter(w->r.table, 1, SL_C_ALLOWED), 4);
    /* and nothing more: EAGAIN, as the socket says */
    errno = 0;
    assert_int_equal(gate_read(w, &p, got, sizeof got, true, &how), -1);
    assert_int_equal(errno, EAGAIN);
    world_free(w);
}

static void an_outbound_head_waits_its_turn(void **unused)
{
    (void)unused;
    struct world *w = world_out(1, 1, SL_ACT_DELAY);
    const char s[] = GET GET;
    bool swallowed;
    assert_int_equal(gate_write(w, s, sizeof s - 1, &swallowed), sizeof GET - 1); /* cut */
    errno = 0;
    assert_int_equal(gate_write(w, s + sizeof GET - 1, sizeof GET - 1, &swallowed), -1);
    assert_int_equal(errno, EAGAIN);
    assert_int_equal(throttled_until, T0 + SEC); /* writable at its turn */
    clock_ns = T0 + SEC;
    assert_int_equal(gate_write(w, s + sizeof GET - 1, sizeof GET - 1, &swallowed), sizeof GET - 1);
    assert_false(swallowed);
    world_free(w);
}

/* Which failure is the end: a socket's 0, or a TLS library's -1 that its
 * error function calls the peer's close. */
static bool fake_ended(const struct sl_transport *t, ssize_t r)
{
    const struct peer *p = t->ctx;
    return p->end == 2 ? r < 0 && p->off == p->len : r == 0;
}

/* A socket's readv: the buffers fill in order. */
static ssize_t fake_readv(const struct sl_transport *t, const struct iovec *iov, int cnt)
{
    ssize_t n = 0;
    for (int i = 0; i < cnt; i++) {
        ssize_t k = take(t->ctx, iov[i].iov_base, iov[i].iov_len);
        if (k <= 0) return n ? n : k;
        n += k;
        if ((size_t)k < iov[i].iov_len) break;
    }
    return n;
}

/* The program reads the server's side of an outbound connection through
 * the gate, into one buffer of n1 bytes or two (n1, then n2). */
static ssize_t reply_read(struct world *w, struct peer *p, char *buf, size_t n1, size_t n2,
                          bool peek, bool *own)
{
    struct sl_transport t = {
        .read = fake_read, .readv = n2 ? fake_readv : NULL, .ended = fake_ended, .fd = 7, .ctx = p};
    struct iovec v[2] = {{.iov_base = buf, .iov_len = n1}, {.iov_base = buf + n1, .iov_len = n2}};
    return sl_gate_read_replies(&w->g, &w->e, &t, v, n2 ? 2 : 1, peek, own);
}

/* Outbound under a `reply` rule at 1/s: the first of two pipelined
 * requests went (a short write, cut before the second). */
static struct world *first_sent(void)
{
    struct world *w = world_out(1, 1, SL_ACT_REPLY);
    bool swallowed;
    assert_int_equal(gate_write(w, GET GET, 2 * (sizeof GET - 1), &swallowed), sizeof GET - 1);
    assert_false(swallowed);
    return w;
}

/* The second request's write: denied, it is swallowed once the response
 * to the first was read; until then it waits (-1, EAGAIN). */
static ssize_t write_second(struct world *w, bool *swallowed)
{
    errno = 0;
    return gate_write(w, GET, sizeof GET - 1, swallowed);
}

static void a_429_is_queued_behind_the_responses_owed(void **unused)
{
    (void)unused;
    struct world *w = first_sent();
    const char resp[] = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
    char buf[1024];
    bool swallowed, own;
    /* the response is owed: the write waits (writable again soon), and
     * nothing is queued */
    assert_int_equal(write_second(w, &swallowed), -1);
    assert_int_equal(errno, EAGAIN);
    assert_true(throttled_until > T0);
    struct peer p = {.bytes = resp, .len = sizeof resp - 1, .piece = 10};
    errno = 0;
    assert_int_equal(reply_read(w, &(struct peer){0}, buf, sizeof buf, 0, false, &own), -1);
    assert_int_equal(errno, EAGAIN);
    assert_false(own);
    /* the program reads the response, in two pieces, counted by the gate */
    assert_int_equal(reply_read(w, &p, buf, sizeof buf, 0, false, &own), 10);
    assert_false(own);
    assert_int_equal(write_second(w, &swallowed), -1);
    assert_int_equal(errno, EAGAIN); /* still owed */
    p.piece = 100;                   /* the rest arrived: it fills two buffers, in order */
    assert_int_equal(reply_read(w, &p, buf, 3, sizeof buf - 3, false, &own), sizeof resp - 1 - 10);
    assert_memory_equal(buf, resp + 10, sizeof resp - 1 - 10);
    assert_int_equal(write_second(w, &swallowed), sizeof GET - 1);
    assert_true(swallowed);            /* reported written, never sent */
    assert_int_equal(held_out_at, T0); /* the socket is announced readable: a 429 waits */
    /* the 429 is read first (a peek keeps it; two buffers fill in order),
     * then what the server sends */
    assert_int_equal(reply_read(w, &p, buf, 12, 0, true, &own), 12);
    assert_true(own);
    assert_memory_equal(buf, "HTTP/1.1 429", 12);
    assert_int_equal(held_out_at, T0); /* a peek took nothing */
    ssize_t n = reply_read(w, &p, buf, 5, sizeof buf - 5, false, &own);
    assert_true(n > 12);
    assert_true(own);
    assert_memory_equal(buf, "HTTP/1.1 429", 12);
    assert_non_null(memmem(buf, (size_t)n, "\r\n\r\n", 4));
    assert_int_equal(held_out_at, 0); /* none left to announce */
    const char more[] = "HTTP/1.1 200 OK\r\n\r\n";
    struct peer q = {.bytes = more, .len = sizeof more - 1, .piece = 100};
    assert_int_equal(reply_read(w, &q, buf, sizeof buf, 0, false, &own), sizeof more - 1);
    assert_false(own);
    world_free(w);
}

/* A response that ends with the connection (no length) is complete at
 * the end of the stream: a socket's read of 0, or a TLS library's failure
 * its transport calls the end (the transport's `ended`). */
static void the_end_of_the_stream_completes_the_response_owed(void **unused)
{
    (void)unused;
    for (int end = 1; end <= 2; end++) {
        struct world *w = first_sent();
        const char resp[] = "HTTP/1.1 200 OK\r\n\r\nuntil the end";
        char buf[256];
        bool swallowed, own;
        struct peer p = {.bytes = resp, .len = sizeof resp - 1, .piece = 100, .end = end};
        assert_int_equal(reply_read(w, &p, buf, sizeof buf, 0, false, &own), sizeof resp - 1);
        assert_int_equal(write_second(w, &swallowed), -1); /* its end is not known yet */
        assert_int_equal(errno, EAGAIN);
        assert_int_equal(reply_read(w, &p, buf, sizeof buf, 0, false, &own), end == 1 ? 0 : -1);
        assert_false(own);
        assert_int_equal(write_second(w, &swallowed), sizeof GET - 1);
        assert_true(swallowed);
        world_free(w);
    }
}

static void an_outbound_reject_fails_the_write_with_the_rules_errno(void **unused)
{
    (void)unused;
    struct world *w = world_out(1, 1, SL_ACT_REJECT);
    w->r.cfg.rules[0].err = EACCES;
    const char s[] = GET;
    bool swallowed;
    assert_int_equal(gate_write(w, s, sizeof s - 1, &swallowed), sizeof GET - 1);
    errno = 0;
    assert_int_equal(gate_write(w, s, sizeof s - 1, &swallowed), -1);
    assert_int_equal(errno, EACCES);
    world_free(w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(heads_split_anywhere_reach_the_program_whole_and_in_order),
        cmocka_unit_test(a_held_head_waits_its_turn_non_blocking),
        cmocka_unit_test(a_held_head_waits_its_turn_blocking),
        cmocka_unit_test(bytes_already_read_are_decided_as_the_gates_own_read),
        cmocka_unit_test(a_denied_head_ends_the_stream_with_its_429_kept),
        cmocka_unit_test(a_rejected_head_resets),
        cmocka_unit_test(the_stash_is_allocated_only_when_a_head_is_held_back),
        cmocka_unit_test(a_read_that_empties_the_stash_takes_what_arrived_too),
        cmocka_unit_test(an_outbound_head_waits_its_turn),
        cmocka_unit_test(a_429_is_queued_behind_the_responses_owed),
        cmocka_unit_test(the_end_of_the_stream_completes_the_response_owed),
        cmocka_unit_test(an_outbound_reject_fails_the_write_with_the_rules_errno),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
