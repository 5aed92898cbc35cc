/* SPDX-License-Identifier: BSD-2-Clause */
/* test_policy.c - the decision itself: which rules an event meets, and what
 * they decide together (core/policy/policy.c). Rules come from inline text through
 * conf/, the table is private, time is passed in by hand. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include "../../conf/conf.h"
#include "../../core/policy/connect.h"
#include "../../core/policy/policy.h"
#include "testutil.h"

struct fixture {
    struct sl_config *cfg;
    struct sl_table *table;
    struct sl_runtime rt;
};

static int no_names(const char *node, const char *service, const struct addrinfo *hints,
                    struct addrinfo **res)
{
    (void)node, (void)service, (void)hints, (void)res;
    return EAI_NONAME;
}

static void no_release(struct addrinfo *res)
{
    (void)res;
}

static struct fixture *make(const char *rules)
{
    struct fixture *f = calloc(1, sizeof *f);
    char err[512] = "";
    enum sl_on_error oe;
    sl_conf_set_resolver(no_names, no_release);
    f->cfg = sl_conf_load(NULL, rules, &oe, err, sizeof err);
    if (!f->cfg) fail_msg("%s: %s", rules, err);
    f->table = sl_table_open(1024, NULL, SL_FULL_SHARED, err, sizeof err);
    if (!f->table) fail_msg("table: %s", err);
    if (sl_runtime_init(&f->rt, f->cfg, f->table, err, sizeof err) != 0) fail_msg("%s", err);
    return f;
}

static void destroy(struct fixture *f)
{
    sl_runtime_fini(&f->rt);
    sl_table_close(f->table);
    sl_conf_free(f->cfg);
    free(f);
}

/* An IPv4 or (with a colon) IPv6 address as accept would read it. */
static struct sl_addr addr(const char *text, uint16_t port)
{
    struct sockaddr_storage ss = {0};
    struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
    struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
    bool v6 = strchr(text, ':') != NULL;
    if (v6) {
        s6->sin6_family = AF_INET6;
        s6->sin6_port = htons(port);
        assert_int_equal(inet_pton(AF_INET6, text, &s6->sin6_addr), 1);
    } else {
        s4->sin_family = AF_INET;
        s4->sin_port = htons(port);
        assert_int_equal(inet_pton(AF_INET, text, &s4->sin_addr), 1);
    }
    struct sl_addr a;
    assert_true(sl_addr_from_sockaddr(&a, (struct sockaddr *)&ss, v6 ? sizeof *s6 : sizeof *s4));
    return a;
}

static enum sl_outcome in_at(struct fixture *f, uint64_t now, struct sl_decision *d)
{
    struct sl_addr local = addr("127.0.0.1", 8080), peer = addr("10.0.0.9", 40000);
    sl_decide_in(&f->rt, &local, &peer, now, d);
    return d->outcome;
}

static uint64_t counter(struct fixture *f, int rule, enum sl_counter k)
{
    return sl_table_counter(f->table, f->rt.table_rule[rule], k);
}

/* What a listener's port mask (accept.c) and decide()'s short path for a
 * plain rule decide is what the rule-by-rule loop decides: the same
 * outcomes, rules, verdicts and counters, allows and denials, on twin
 * tables fed the same times; and a peer a `from` leaves out or an
 * exemption covers is not decided at all. */
static void the_listener_mask_and_short_path_decide_as_the_full_loop(void **unused)
{
    (void)unused;
    const char *cases[] = {
        "in port=8080 rate=2/s burst=3",
        "in port=9090 rate=1/s; in port=8080 rate=2/s burst=3",
        "in port=8080 rate=2/s burst=3 from=10.0.0.0/8",
        "in port=8080 rate=2/s burst=3 from=192.168.0.0/16",
        "in port=8080 rate=2/s burst=3 exempt=10.0.0.9/32",
        "in port=8080 rate=2/s burst=3 action=reply",
        "in port=8080 rate=1/s burst=1; in rate=2/s burst=3", /* two rules: the loop */
        "in port=8080 rate=2/s burst=3 dry_run=yes",          /* not plain: the loop */
    };
    struct sl_addr local = addr("127.0.0.1", 8080), peer = addr("10.0.0.9", 40000);
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        struct fixture *full = make(cases[c]), *fast = make(cases[c]);
        uint64_t rules = sl_in_rules_for_port(&fast->rt, 8080);
        for (int n = 0; n < 12; n++) {
            uint64_t now = T0 + (uint64_t)n * SEC / 5;
            struct sl_decision a, b;
            sl_decide_in(&full->rt, &local, &peer, now, &a);
            sl_decide_in_rules(&fast->rt, rules, &local, &peer, now, &b);
            assert_int_equal(a.outcome, b.outcome);
            assert_int_equal(a.rule, b.rule);
            assert_int_equal(a.took, b.took);
            assert_int_equal(a.wait_ns, b.wait_ns);
            assert_int_equal(a.v.allowed, b.v.allowed);
            assert_int_equal(a.v.retry_ns, b.v.retry_ns);
            assert_int_equal(a.v.reset_ns, b.v.reset_ns);
            assert_int_equal(a.v.limit, b.v.limit);
            assert_int_equal(a.bytes_rule[0], b.bytes_rule[0]);
            assert_int_equal(a.conn_rec[0], b.conn_rec[0]);
        }
        for (int r = 0; r < full->cfg->nrules; r++)
            for (int k = SL_C_ALLOWED; k <= SL_C_WOULD_LIMIT; k++)
                assert_int_equal(counter(full, r, k), counter(fast, r, k));
        destroy(full);
        destroy(fast);
    }
}

/* The lean decision (a listener's one rule that looks at the peer alone,
 * accept.c) decides as the full loop does, also when the thread's memo of
 * the last peer is met, missed and changed under it: peers in turn (two of
 * one /24, one IPv6), and, between any two decisions of one runtime,
 * decisions of another runtime on its own table and of one with another
 * rule on the same table (so the memo holds another table's key, another
 * rule's). Outcomes, denying verdicts and counters agree with a twin table
 * that only the loop decides. */
static void the_lean_decision_and_its_memo_decide_as_the_full_loop(void **unused)
{
    (void)unused;
    const char *cases[] = {
        "in port=8080 rate=2/s burst=3",
        "in port=8080 rate=2/s burst=3 action=reply",
        "in port=8080 rate=2/s burst=3 per=prefix prefix4=24",
        "in port=8080 rate=1/s burst=2 per=rule",
    };
    struct sl_addr local = addr("127.0.0.1", 8080);
    struct sl_addr peers[] = {addr("10.0.0.9", 40000), addr("10.0.0.9", 40001),
                              addr("10.0.0.10", 40000), addr("2001:db8::1", 40000),
                              addr("10.0.1.9", 40000)};
    int npeers = (int)(sizeof peers / sizeof *peers);
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        struct fixture *full = make(cases[c]), *lean = make(cases[c]),
                       *other = make("in port=8080 rate=5/s burst=1 per=prefix prefix4=16");
        /* a runtime of another rule on lean's table */
        struct sl_config *cfg2;
        char err[256] = "";
        enum sl_on_error oe;
        cfg2 = sl_conf_load(NULL, "in port=8080 rate=1/h burst=1 per=prefix prefix4=8 name=second",
                            &oe, err, sizeof err);
        assert_non_null(cfg2);
        struct sl_runtime rt2 = {0};
        assert_int_equal(sl_runtime_init(&rt2, cfg2, lean->table, err, sizeof err), 0);
        uint64_t rules = sl_in_rules_for_port(&lean->rt, 8080);
        assert_true(rules & lean->rt.lean_in);
        int i = __builtin_ctzll(rules), denials = 0;
        for (int n = 0; n < 200; n++) {
            uint64_t now = T0 + (uint64_t)n * SEC / 7;
            const struct sl_addr *peer = &peers[(n * 7 / 3 + n / 11) % npeers];
            struct sl_decision a, b, x;
            sl_decide_in(&full->rt, &local, peer, now, &a);
            bool pass = sl_decide_in_lean(&lean->rt, i, peer, now, &b);
            assert_int_equal(a.outcome, pass ? SL_PASS : SL_DENY);
            if (!pass) {
                denials++;
                assert_int_equal(b.outcome, SL_DENY);
                assert_int_equal(a.rule, b.rule);
                assert_int_equal(a.v.retry_ns, b.v.retry_ns);
                assert_int_equal(a.v.reset_ns, b.v.reset_ns);
                assert_int_equal(a.v.limit, b.v.limit);
            }
            if (n % 3 == 1) sl_decide_in_lean(&other->rt, 0, &peers[n % npeers], now, &x);
            if (n % 4 == 2) sl_decide_in_lean(&rt2, 0, &peers[(n + 1) % npeers], now, &x);
        }
        assert_true(denials > 10);
        for (int k = SL_C_ALLOWED; k <= SL_C_WOULD_LIMIT; k++)
            assert_int_equal(counter(full, 0, k), counter(lean, 0, k));
        sl_runtime_fini(&rt2);
        sl_conf_free(cfg2);
        destroy(other);
        destroy(full);
        destroy(lean);
    }
}

/* Rule 1 allows 3 an hour, rule 2 one a second. Ten tries denied by rule 2
 * must not use up rule 1: each of its grants is given back. */
static void a_later_denial_gives_back_what_earlier_rules_granted(void **unused)
{
    (void)unused;
    struct fixture *f = make("in port=8080 rate=3/h burst=3; in port=8080 rate=1/s burst=1");
    struct sl_decision d;
    assert_int_equal(in_at(f, T0, &d), SL_PASS);
    for (int i = 0; i < 10; i++) {
        assert_int_equal(in_at(f, T0, &d), SL_DENY);
        assert_int_equal(d.rule, 1);
    }
    assert_int_equal(in_at(f, T0 + 1 * SEC, &d), SL_PASS);
    assert_int_equal(in_at(f, T0 + 2 * SEC, &d), SL_PASS);
    assert_int_equal(in_at(f, T0 + 3 * SEC, &d), SL_DENY); /* rule 1's three are spent */
    assert_int_equal(d.rule, 0);
    assert_int_equal(counter(f, 0, SL_C_ALLOWED), 3);
    assert_int_equal(counter(f, 1, SL_C_LIMITED), 10);
    assert_int_equal(counter(f, 0, SL_C_LIMITED), 1);
    destroy(f);
}

/* A dry-run rule counts what it would limit and lets it pass; the rule
 * after it still decides. */
static void a_dry_run_rule_counts_and_lets_through(void **unused)
{
    (void)unused;
    struct fixture *f =
        make("in port=8080 rate=1/s burst=1 dry_run=yes; in port=8080 rate=3/s burst=3");
    struct sl_decision d;
    for (int i = 0; i < 3; i++)
        assert_int_equal(in_at(f, T0, &d), SL_PASS);
    assert_int_equal(in_at(f, T0, &d), SL_DENY);
    assert_int_equal(d.rule, 1);
    assert_int_equal(counter(f, 0, SL_C_WOULD_LIMIT), 3); /* tries 2, 3 and 4 */
    assert_int_equal(counter(f, 0, SL_C_LIMITED), 0);
    assert_int_equal(counter(f, 1, SL_C_LIMITED), 1);
    destroy(f);
}

static uint32_t conns_of(struct fixture *f, int rule, uint64_t now)
{
    const struct sl_rule *r = &f->cfg->rules[rule];
    struct sl_addr peer = addr("10.0.0.9", 40000);
    struct sl_key k;
    sl_key_make(&k, r, &peer);
    static const struct sl_limit nominal = {.alg = SL_ALG_GCRA, .period_ns = SL_NS_PER_SEC};
    return sl_table_conns(f->table, f->rt.table_rule[rule], &k,
                          r->limit.count ? &r->limit : &nominal, now);
}

/* A connection place taken by rule 1 is given back when rule 2 denies, and
 * the one a passing connection holds until it is released. */
static void a_later_denial_gives_back_the_connection_places_taken(void **unused)
{
    (void)unused;
    struct fixture *f = make("in port=8080 conns=1; in port=8080 rate=1/s burst=1");
    struct sl_decision d;
    assert_int_equal(in_at(f, T0, &d), SL_PASS);
    assert_true(d.conn_rec[0] >= 0);
    assert_int_equal(conns_of(f, 0, T0), 1);
    sl_conn_release(&f->rt, d.conn_rec);
    assert_int_equal(conns_of(f, 0, T0), 0);

    assert_int_equal(in_at(f, T0, &d), SL_DENY);
    assert_int_equal(d.rule, 1);
    assert_int_equal(d.conn_rec[0], -1);
    assert_int_equal(conns_of(f, 0, T0), 0);

    assert_int_equal(in_at(f, T0 + SEC, &d), SL_PASS); /* the place was not leaked */
    assert_int_equal(in_at(f, T0 + 2 * SEC, &d), SL_DENY);
    assert_true(d.conns_full); /* the first connection still holds it */
    assert_int_equal(d.rule, 0);
    destroy(f);
}

/* Addresses the program resolves are matched, and go to runtime state: the
 * config is byte for byte what was loaded. */
static void learned_addresses_match_and_leave_the_config_untouched(void **unused)
{
    (void)unused;
    struct fixture *f = make("out to=api.vendor.example port=443 rate=1/s burst=1 action=reject");
    struct sl_config *copy = malloc(sizeof *copy);
    memcpy(copy, f->cfg, sizeof *copy);
    struct sl_addr dst = addr("127.0.0.7", 443), other_port = addr("127.0.0.7", 80);
    assert_false(sl_out_matches(&f->rt, &dst));

    sl_learn_addr(&f->rt, "API.Vendor.Example.", dst.a);
    assert_true(sl_out_matches(&f->rt, &dst));
    assert_false(sl_out_matches(&f->rt, &other_port));
    sl_learn_addr(&f->rt, "api.vendor.example", dst.a); /* once only */
    assert_int_equal(f->rt.learned[0].naddr, 1);
    assert_memory_equal(copy, f->cfg, sizeof *copy);

    struct sl_decision d;
    sl_decide_out(&f->rt, &dst, T0, 0, &d);
    assert_int_equal(d.outcome, SL_PASS);
    sl_decide_out(&f->rt, &dst, T0, 0, &d);
    assert_int_equal(d.outcome, SL_DENY);
    free(copy);
    destroy(f);
}

/* A name learns at most SL_MAX_HOST_ADDR addresses. */
static void learning_stops_at_the_cap(void **unused)
{
    (void)unused;
    struct fixture *f = make("out to=api.vendor.example rate=1/s");
    for (int i = 0; i < SL_MAX_HOST_ADDR + 8; i++) {
        struct sl_addr a = addr("127.0.1.0", 443);
        a.a[15] = (uint8_t)i;
        sl_learn_addr(&f->rt, "api.vendor.example", a.a);
    }
    assert_int_equal(f->rt.learned[0].naddr, SL_MAX_HOST_ADDR);
    struct sl_addr last = addr("127.0.1.0", 443), over = addr("127.0.1.0", 443);
    last.a[15] = SL_MAX_HOST_ADDR - 1;
    over.a[15] = SL_MAX_HOST_ADDR;
    assert_true(sl_out_matches(&f->rt, &last));
    assert_false(sl_out_matches(&f->rt, &over));
    destroy(f);
}

/* The outbound connect's verdict (core/policy/connect.c), step by step
 * with the time passed in: a delay rule books GCRA turns up to max_delay
 * and refuses the one past it at once (counted); a reject rule refuses at
 * once; a connections-at-once place is asked for again until max_delay
 * from the first ask, then refused; a window is asked again too. */
static void a_connects_verdict_books_turns_within_max_delay(void **unused)
{
    (void)unused;
    struct fixture *f = make("out to=127.0.0.9 port=443 rate=10/s burst=1 max_delay=250ms");
    struct sl_addr dst = addr("127.0.0.9", 443);
    struct sl_decision d;
    int err = 0;
    assert_int_equal(sl_decide_connect(&f->rt, &dst, T0, 0, T0, &d, &err), SL_CONNECT_GO);
    assert_int_equal(sl_decide_connect(&f->rt, &dst, T0, 0, T0, &d, &err), SL_CONNECT_TURN);
    assert_int_equal(d.wait_ns, 100 * MS);
    assert_int_equal(sl_decide_connect(&f->rt, &dst, T0, 0, T0, &d, &err), SL_CONNECT_TURN);
    assert_int_equal(d.wait_ns, 200 * MS);
    assert_int_equal(sl_table_counter(f->table, f->rt.table_rule[0], SL_C_LIMITED), 0);
    /* 300 ms away: past max_delay, refused now rather than after the wait */
    assert_int_equal(sl_decide_connect(&f->rt, &dst, T0, 0, T0, &d, &err), SL_CONNECT_DENY);
    assert_int_equal(err, ETIMEDOUT);
    assert_int_equal(sl_table_counter(f->table, f->rt.table_rule[0], SL_C_LIMITED), 1);
    destroy(f);

    f = make("out to=127.0.0.9 port=443 rate=1/s burst=1 action=reject");
    assert_int_equal(sl_decide_connect(&f->rt, &dst, T0, 0, T0, &d, &err), SL_CONNECT_GO);
    assert_int_equal(sl_decide_connect(&f->rt, &dst, T0, 0, T0, &d, &err), SL_CONNECT_DENY);
    assert_int_equal(err, ECONNREFUSED);
    destroy(f);
}

static void a_connect_waits_for_a_place_until_max_delay_from_its_first_ask(void **unused)
{
    (void)unused;
    struct fixture *f = make("out to=127.0.0.9 port=443 conns=1 max_delay=1s");
    struct sl_addr dst = addr("127.0.0.9", 443);
    struct sl_decision held, d;
    int err = 0;
    assert_int_equal(sl_decide_connect(&f->rt, &dst, T0, 0, T0, &held, &err), SL_CONNECT_GO);
    assert_int_equal(sl_decide_connect(&f->rt, &dst, T0, 0, T0, &d, &err), SL_CONNECT_RETRY);
    assert_true(d.v.retry_ns > 0 && d.v.retry_ns <= SEC);
    uint64_t until = d.redecide_until;
    assert_int_equal(until, T0 + SEC);
    /* asked again half way: still full, the same last time */
    assert_int_equal(sl_decide_connect(&f->rt, &dst, 0, until, T0 + SEC / 2, &d, &err),
                     SL_CONNECT_RETRY);
    assert_int_equal(d.redecide_until, until);
    /* the place is given back: made at the next ask */
    sl_conn_release(&f->rt, held.conn_rec);
    assert_int_equal(sl_decide_connect(&f->rt, &dst, 0, until, T0 + SEC / 2 + MS, &held, &err),
                     SL_CONNECT_GO);
    /* another one, full again, out of time: refused with the delay errno */
    assert_int_equal(sl_decide_connect(&f->rt, &dst, 0, until, until - MS, &d, &err),
                     SL_CONNECT_DENY);
    assert_int_equal(err, ETIMEDOUT);
    assert_int_equal(sl_table_counter(f->table, f->rt.table_rule[0], SL_C_LIMITED), 1);
    destroy(f);

    f = make("out to=127.0.0.9 port=443 rate=2/s algorithm=fixed max_delay=2s");
    for (int i = 0; i < 2; i++)
        assert_int_equal(sl_decide_connect(&f->rt, &dst, T0, 0, T0, &d, &err), SL_CONNECT_GO);
    assert_int_equal(sl_decide_connect(&f->rt, &dst, T0, 0, T0, &d, &err), SL_CONNECT_RETRY);
    assert_int_equal(d.redecide_until, T0 + 2 * SEC);
    assert_int_equal(
        sl_decide_connect(&f->rt, &dst, 0, d.redecide_until, T0 + d.v.retry_ns, &d, &err),
        SL_CONNECT_GO);
    destroy(f);
}

int main(void)
{
    unsetenv("SLUICE_ON_ERROR");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_later_denial_gives_back_what_earlier_rules_granted),
        cmocka_unit_test(the_listener_mask_and_short_path_decide_as_the_full_loop),
        cmocka_unit_test(the_lean_decision_and_its_memo_decide_as_the_full_loop),
        cmocka_unit_test(a_dry_run_rule_counts_and_lets_through),
        cmocka_unit_test(a_later_denial_gives_back_the_connection_places_taken),
        cmocka_unit_test(learned_addresses_match_and_leave_the_config_untouched),
        cmocka_unit_test(learning_stops_at_the_cap),
        cmocka_unit_test(a_connects_verdict_books_turns_within_max_delay),
        cmocka_unit_test(a_connect_waits_for_a_place_until_max_delay_from_its_first_ask),
    };
    return cmocka_run_group_tests(tests, NULL, NULL) != 0;
}
