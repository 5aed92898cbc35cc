/* SPDX-License-Identifier: BSD-2-Clause */
/* test_conf.c - conf/: files, inline rules, defaults, the exact error
 * messages, on_error when a load fails, printing, host names, byte and
 * concurrency limits, the gossip section.
 *
 * Fixtures live in tests/fixtures (or $SLUICE_FIXTURES) and are named for
 * what they hold. Host names never reach real DNS: a fake resolver knows
 * api.vendor.example (127.0.0.7) and nothing else. Git does not keep file
 * modes, so setup() makes the fixture key files mode 600 before each test
 * (a key file others can read is refused).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../conf/conf.h"
#include "../../conf/conf_int.h"
#include "../../core/limit/key.h"
#include "testutil.h"

static const char *fixture(const char *name)
{
    static char buf[8][512];
    static int next;
    const char *dir = getenv("SLUICE_FIXTURES");
    char *b = buf[next++ % 8];
    snprintf(b, sizeof buf[0], "%s%s%s", dir ? dir : "tests/fixtures/", dir ? "/" : "", name);
    return b;
}
#define FIXTURE(name) fixture(name)

/* ---- a resolver that knows one name ------------------------------------ */

static int resolver_calls;

static int fake_resolve(const char *node, const char *service, const struct addrinfo *hints,
                        struct addrinfo **res)
{
    resolver_calls++;
    assert_int_equal(hints->ai_flags & AI_ADDRCONFIG, 0);
    if (strcmp(node, "api.vendor.example") != 0) return EAI_NONAME;
    struct addrinfo *ai = calloc(1, sizeof *ai + sizeof(struct sockaddr_in));
    struct sockaddr_in *sin = (struct sockaddr_in *)(ai + 1);
    sin->sin_family = AF_INET;
    inet_pton(AF_INET, "127.0.0.7", &sin->sin_addr);
    ai->ai_family = AF_INET;
    ai->ai_socktype = SOCK_STREAM;
    ai->ai_addr = (struct sockaddr *)sin;
    ai->ai_addrlen = sizeof *sin;
    *res = ai;
    return 0;
}

static void fake_release(struct addrinfo *res)
{
    free(res);
}

static int setup(void **state)
{
    assert_int_equal(chmod(FIXTURE("gossip.key"), 0600), 0);
    assert_int_equal(chmod(FIXTURE("gossip-key-bad.key"), 0600), 0);
    sl_conf_set_resolver(fake_resolve, fake_release);
    unsetenv("SLUICE_ON_ERROR");
    resolver_calls = 0;
    return 0;
}

/* ---- helpers ------------------------------------------------------------ */

static struct sl_config *load_ok(const char *file, const char *rules)
{
    char err[512] = "";
    enum sl_on_error oe;
    struct sl_config *c = sl_conf_load(file, rules, &oe, err, sizeof err);
    if (!c) fail_msg("load failed: %s", err);
    return c;
}

/* Loads what must fail; returns the message. */
static const char *load_err(const char *file, const char *rules)
{
    static char err[512];
    enum sl_on_error oe;
    err[0] = 0;
    struct sl_config *c = sl_conf_load(file, rules, &oe, err, sizeof err);
    if (c) {
        sl_conf_free(c);
        fail_msg("load of %s / %s succeeded", file ? file : "-", rules ? rules : "-");
    }
    assert_null(strchr(err, '\n'));
    return err;
}

static void assert_error(const char *file, const char *rules, const char *expected)
{
    assert_string_equal(load_err(file, rules), expected);
}

/* Same, for a fixture: `rest` follows "<path>:". */
static void assert_file_error(const char *name, const char *rest)
{
    char expected[512];
    snprintf(expected, sizeof expected, "%s:%s", FIXTURE(name), rest);
    assert_error(FIXTURE(name), NULL, expected);
}

static void assert_cidr(const struct sl_cidr *c, const char *text)
{
    char buf[64];
    sl_cidr_format(c, buf, sizeof buf);
    assert_string_equal(buf, text);
}

static const struct sl_rule *rule(const struct sl_config *c, const char *name)
{
    for (int i = 0; i < c->nrules; i++)
        if (strcmp(c->rules[i].name, name) == 0) return &c->rules[i];
    fail_msg("no rule %s", name);
    return NULL;
}

static char *print_to_string(const struct sl_config *c)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    assert_non_null(f);
    sl_conf_print(c, f);
    fclose(f);
    return text;
}

/* Prints c to a temporary file, loads it back and prints that. */
static void assert_prints_same_after_reload(const struct sl_config *c)
{
    char path[] = "/tmp/sluice-conf-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    char *first = print_to_string(c);
    assert_int_equal(write(fd, first, strlen(first)), (ssize_t)strlen(first));
    close(fd);
    struct sl_config *again = load_ok(path, NULL);
    char *second = print_to_string(again);
    assert_string_equal(first, second);
    assert_int_equal(again->nrules, c->nrules);
    for (int i = 0; i < c->nrules; i++) {
        const struct sl_rule *a = &c->rules[i], *b = &again->rules[i];
        assert_string_equal(a->name, b->name);
        assert_memory_equal(&a->limit, &b->limit, sizeof a->limit);
        assert_memory_equal(&a->recv_limit, &b->recv_limit, sizeof a->recv_limit);
        assert_memory_equal(&a->send_limit, &b->send_limit, sizeof a->send_limit);
        assert_string_equal(a->rate_text, b->rate_text);
        assert_string_equal(a->recv_rate_text, b->recv_rate_text);
        assert_string_equal(a->send_rate_text, b->send_rate_text);
        assert_int_equal(a->conns, b->conns);
        assert_int_equal(a->scope, b->scope);
        assert_int_equal(a->nports, b->nports);
        assert_int_equal(a->reply_len, b->reply_len);
    }
    assert_memory_equal(&c->gossip, &again->gossip, sizeof c->gossip);
    sl_conf_free(again);
    free(first);
    free(second);
    unlink(path);
}

/* A key file in a new temporary directory, with the given text and mode.
 * Returns its path (static); remove_key() cleans up. */
static const char *write_key(const char *text, mode_t mode)
{
    static char dir[64], path[128];
    snprintf(dir, sizeof dir, "/tmp/sluice-key-XXXXXX");
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/gossip.key", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    assert_int_equal(chmod(path, mode), 0);
    return path;
}

static void remove_key(const char *path)
{
    char dir[128];
    snprintf(dir, sizeof dir, "%s", path);
    *strrchr(dir, '/') = 0;
    unlink(path);
    rmdir(dir);
}

#define KEY_HEX "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"

/* ---- every option ------------------------------------------------------- */

static void all_options_file_sets_every_global(void **state)
{
    struct sl_config *c = load_ok(FIXTURE("all-options.conf"), NULL);
    assert_int_equal(c->table_slots, 4096);
    assert_string_equal(c->shared, "team.api-1");
    assert_true(c->dry_run);
    assert_int_equal(c->on_error, SL_ON_ERROR_CLOSED);
    assert_int_equal(c->on_full, SL_FULL_DENY);
    assert_false(c->inherit);
    assert_int_equal(c->log, SL_LOG_SYSLOG);
    assert_int_equal(c->log_level, SL_LOG_DEBUG);
    assert_int_equal(c->nrules, 2);
    assert_string_equal(c->source, FIXTURE("all-options.conf"));
    sl_conf_free(c);
}

static void all_options_file_sets_every_gossip_option(void **state)
{
    struct sl_config *c = load_ok(FIXTURE("all-options.conf"), NULL);
    const struct sl_gossip *g = &c->gossip;
    assert_true(g->enabled);
    assert_string_equal(g->listen, "127.0.0.2:7946");
    assert_int_equal(g->npeers, 2);
    assert_string_equal(g->peers[0], "127.0.0.3:7946");
    assert_string_equal(g->peers[1], "[::1]:7946");
    assert_int_equal(g->interval_ns, 250 * MS);
    assert_int_equal(g->peer_timeout_ns, 2 * SEC);
    assert_int_equal(g->alone_share_pct, 60);
    assert_true(g->key_file[0] == '/');
    assert_non_null(strstr(g->key_file, "/gossip.key"));
    for (int i = 0; i < 32; i++)
        assert_int_equal(g->key[i], i); /* 000102...1f */
    sl_conf_free(c);
}

static void all_options_file_sets_every_field_of_the_inbound_rule(void **state)
{
    struct sl_config *c = load_ok(FIXTURE("all-options.conf"), NULL);
    const struct sl_rule *r = &c->rules[0];
    assert_string_equal(r->name, "web");
    assert_true(r->id == sl_name_hash("web"));
    assert_int_equal(r->dir, SL_IN);
    assert_int_equal(r->nports, 3);
    assert_int_equal(r->ports[0].lo, 80);
    assert_int_equal(r->ports[0].hi, 80);
    assert_int_equal(r->ports[1].lo, 443);
    assert_int_equal(r->ports[2].lo, 8000);
    assert_int_equal(r->ports[2].hi, 8100);
    assert_int_equal(r->nlocal, 2);
    assert_cidr(&r->local[0], "127.0.0.1/32");
    assert_cidr(&r->local[1], "::1/128");
    assert_int_equal(r->nfrom, 2);
    assert_cidr(&r->from[0], "10.0.0.0/8");
    assert_cidr(&r->from[1], "2001:db8::/32");
    assert_int_equal(r->nexempt, 1);
    assert_cidr(&r->exempt[0], "10.1.2.3/32");
    assert_int_equal(r->nto, 0);
    assert_int_equal(r->nhosts, 0);
    assert_string_equal(r->rate_text, "20/s");
    assert_int_equal(r->limit.alg, SL_ALG_SLIDING); /* scope = cluster */
    assert_int_equal(r->limit.count, 20);
    assert_int_equal(r->limit.period_ns, SEC);
    assert_int_equal(r->limit.burst, 10);
    assert_string_equal(r->recv_rate_text, "512KB/s");
    assert_int_equal(r->recv_limit.alg, SL_ALG_GCRA);
    assert_int_equal(r->recv_limit.count, 512000);
    assert_int_equal(r->recv_limit.period_ns, SEC);
    assert_int_equal(r->recv_limit.burst, 65536);
    assert_string_equal(r->send_rate_text, "2MB/s");
    assert_int_equal(r->send_limit.count, 2000000);
    assert_int_equal(r->send_limit.burst, 1048576);
    assert_int_equal(r->conns, 5);
    assert_int_equal(r->scope, SL_SCOPE_CLUSTER);
    assert_int_equal(r->per, SL_PER_PREFIX);
    assert_int_equal(r->prefix4, 20);
    assert_int_equal(r->prefix6, 40);
    assert_int_equal(r->action, SL_ACT_REPLY);
    const char *body = "HTTP/1.1 429 Too Many Requests\r\nContent-Length: 5\r\n\r\nslow\n";
    assert_int_equal(r->reply_len, strlen(body));
    assert_memory_equal(r->reply, body, strlen(body));
    assert_non_null(strstr(r->reply_path, "/reply-429-custom.txt"));
    assert_true(r->reply_path[0] == '/');
    assert_false(r->dry_run); /* the global says yes, the rule no */
    sl_conf_free(c);
}

static void all_options_file_sets_every_field_of_the_outbound_rule(void **state)
{
    struct sl_config *c = load_ok(FIXTURE("all-options.conf"), NULL);
    const struct sl_rule *r = &c->rules[1];
    assert_string_equal(r->name, "api");
    assert_true(r->id == sl_name_hash("api"));
    assert_int_equal(r->dir, SL_OUT);
    assert_int_equal(r->nports, 1);
    assert_int_equal(r->ports[0].lo, 443);
    assert_int_equal(r->ports[0].hi, 443);
    assert_int_equal(r->nto, 2);
    assert_cidr(&r->to[0], "192.0.2.0/24");
    assert_cidr(&r->to[1], "2001:db8::1/128");
    assert_int_equal(r->nhosts, 1);
    assert_string_equal(r->hosts[0].name, "api.vendor.example"); /* lower case, no dot */
    assert_int_equal(r->hosts[0].port, 0);
    assert_int_equal(r->hosts[0].naddr, 1);
    assert_int_equal(r->nexempt, 1);
    assert_cidr(&r->exempt[0], "192.0.2.9/32");
    assert_string_equal(r->rate_text, "100/10s");
    assert_int_equal(r->limit.alg, SL_ALG_SLIDING);
    assert_int_equal(r->limit.count, 100);
    assert_int_equal(r->limit.period_ns, 10 * SEC);
    assert_int_equal(r->limit.burst, 5);
    assert_string_equal(r->recv_rate_text, "1GiB/s");
    assert_int_equal(r->recv_limit.count, 1073741824);
    assert_int_equal(r->recv_limit.burst, 1000);
    assert_string_equal(r->send_rate_text, "3B/s");
    assert_int_equal(r->send_limit.count, 3);
    assert_int_equal(r->send_limit.burst, 3);
    assert_int_equal(r->conns, 1000000);
    assert_int_equal(r->scope, SL_SCOPE_LOCAL);
    assert_int_equal(r->per, SL_PER_DESTINATION);
    assert_int_equal(r->action, SL_ACT_REJECT);
    assert_null(r->reply);
    assert_int_equal(r->max_delay_ns, 500 * MS);
    assert_int_equal(r->err, EHOSTUNREACH);
    assert_false(r->dry_run);
    sl_conf_free(c);
}

/* ---- defaults ----------------------------------------------------------- */

static void nothing_to_load_gives_defaults_and_no_rules(void **state)
{
    struct sl_config *c = load_ok(NULL, NULL);
    assert_int_equal(c->table_slots, 65536);
    assert_string_equal(c->shared, "");
    assert_false(c->dry_run);
    assert_int_equal(c->on_error, SL_ON_ERROR_OPEN);
    assert_int_equal(c->on_full, SL_FULL_SHARED);
    assert_true(c->inherit);
    assert_int_equal(c->log, SL_LOG_STDERR);
    assert_int_equal(c->log_level, SL_LOG_INFO);
    assert_int_equal(c->nrules, 0);
    assert_string_equal(c->source, "defaults");
    assert_false(c->gossip.enabled);
    sl_conf_free(c);

    c = load_ok(NULL, "  ; ");
    assert_string_equal(c->source, "defaults");
    sl_conf_free(c);
}

static void inbound_rule_defaults_to_peer_reject_gcra_and_burst_n(void **state)
{
    struct sl_config *c = load_ok(FIXTURE("defaults.conf"), NULL);
    const struct sl_rule *r = rule(c, "web");
    assert_int_equal(r->nports, 0);
    assert_int_equal(r->nlocal, 0);
    assert_int_equal(r->nfrom, 0);
    assert_int_equal(r->nexempt, 0);
    assert_int_equal(r->limit.alg, SL_ALG_GCRA);
    assert_int_equal(r->limit.burst, 20);
    assert_int_equal(r->per, SL_PER_PEER);
    assert_int_equal(r->prefix4, 32);
    assert_int_equal(r->prefix6, 64);
    assert_int_equal(r->action, SL_ACT_REJECT);
    assert_null(r->reply);
    assert_int_equal(r->reply_len, 0);
    assert_false(r->dry_run);
    sl_conf_free(c);
}

static void a_rule_has_no_byte_or_concurrency_limit_and_local_scope_by_default(void **state)
{
    struct sl_config *c = load_ok(FIXTURE("defaults.conf"), NULL);
    for (int i = 0; i < c->nrules; i++) {
        const struct sl_rule *r = &c->rules[i];
        assert_int_equal(r->recv_limit.count, 0);
        assert_int_equal(r->send_limit.count, 0);
        assert_string_equal(r->recv_rate_text, "");
        assert_string_equal(r->send_rate_text, "");
        assert_int_equal(r->conns, 0);
        assert_int_equal(r->scope, SL_SCOPE_LOCAL);
    }
    assert_false(c->gossip.enabled);
    sl_conf_free(c);
}

static void outbound_rule_defaults_to_rule_delay_10s_and_etimedout(void **state)
{
    struct sl_config *c = load_ok(FIXTURE("defaults.conf"), NULL);
    const struct sl_rule *r = rule(c, "api");
    assert_int_equal(r->per, SL_PER_RULE);
    assert_int_equal(r->action, SL_ACT_DELAY);
    assert_int_equal(r->max_delay_ns, 10 * SEC);
    assert_int_equal(r->err, ETIMEDOUT);
    assert_int_equal(r->limit.burst, 10);
    assert_string_equal(r->rate_text, "10/m");
    assert_int_equal(r->limit.period_ns, MIN);
    assert_false(r->dry_run);
    sl_conf_free(c);
}

static void outbound_reject_defaults_to_econnrefused(void **state)
{
    struct sl_config *c = load_ok(NULL, "out to=192.0.2.1 rate=1/s action=reject");
    assert_int_equal(c->rules[0].err, ECONNREFUSED);
    sl_conf_free(c);
}

static void per_prefix_defaults_to_24_and_48_bit_prefixes(void **state)
{
    struct sl_config *c = load_ok(NULL, "in rate=1/s per=prefix");
    assert_int_equal(c->rules[0].prefix4, 24);
    assert_int_equal(c->rules[0].prefix6, 48);
    sl_conf_free(c);
}

static void rule_dry_run_defaults_to_the_global_dry_run(void **state)
{
    struct sl_config *c = load_ok(NULL, "global dry_run=yes; in rate=1/s; in rate=1/s dry_run=no");
    assert_true(c->rules[0].dry_run);
    assert_false(c->rules[1].dry_run);
    sl_conf_free(c);
}

/* ---- values ------------------------------------------------------------- */

static void rates_are_normalised_to_the_largest_exact_unit(void **state)
{
    struct sl_config *c = load_ok(NULL, "in rate=100/60s; in rate=5/1h; in rate=7/d; "
                                        "in rate=3/1500ms; in rate=2/90s");
    assert_string_equal(c->rules[0].rate_text, "100/m");
    assert_string_equal(c->rules[1].rate_text, "5/h");
    assert_string_equal(c->rules[2].rate_text, "7/d");
    assert_int_equal(c->rules[2].limit.period_ns, DAY);
    assert_string_equal(c->rules[3].rate_text, "3/1500ms");
    assert_string_equal(c->rules[4].rate_text, "2/90s");
    sl_conf_free(c);
}

static void max_delay_takes_every_unit_and_zero(void **state)
{
    struct sl_config *c = load_ok(NULL, "out to=192.0.2.1 rate=1/s max_delay=250us; "
                                        "out to=192.0.2.1 rate=1/s max_delay=2m; "
                                        "out to=192.0.2.1 rate=1/s max_delay=1h; "
                                        "out to=192.0.2.1 rate=1/s max_delay=0");
    assert_int_equal(c->rules[0].max_delay_ns, 250 * US);
    assert_int_equal(c->rules[1].max_delay_ns, 2 * MIN);
    assert_int_equal(c->rules[2].max_delay_ns, HOUR);
    assert_int_equal(c->rules[3].max_delay_ns, 0);
    sl_conf_free(c);
}

static void errno_takes_a_name_or_a_positive_number(void **state)
{
    struct sl_config *c = load_ok(NULL, "out to=192.0.2.1 rate=1/s errno=ECONNRESET; "
                                        "out to=192.0.2.1 rate=1/s errno=200");
    assert_int_equal(c->rules[0].err, ECONNRESET);
    assert_int_equal(c->rules[1].err, 200);
    sl_conf_free(c);
}

static void an_address_with_a_port_in_to_gives_the_rule_its_ports(void **state)
{
    struct sl_config *c =
        load_ok(NULL, "out to=10.0.0.1:443,[2001:db8::2]:8443,10.0.0.3:443 rate=1/s");
    const struct sl_rule *r = &c->rules[0];
    assert_int_equal(r->nto, 3);
    assert_cidr(&r->to[1], "2001:db8::2/128");
    assert_int_equal(r->nports, 2);
    assert_int_equal(r->ports[0].lo, 443);
    assert_int_equal(r->ports[1].lo, 8443);
    sl_conf_free(c);
}

/* ---- byte and concurrency limits --------------------------------------- */

static void byte_rates_take_decimal_and_binary_units(void **state)
{
    struct sl_config *c = load_ok(NULL, "in recv_rate=2MB/s; in recv_rate=1MiB/s; "
                                        "in recv_rate=512KB/s; in send_rate=1GB/s; "
                                        "in send_rate=3B/s; in send_rate=2000/s; "
                                        "in send_rate=1024000B/s; in send_rate=1536KiB/s; "
                                        "in send_rate=1000GB/s");
    static const struct {
        uint64_t bytes;
        const char *text;
    } want[] = {
        {2000000, "2MB/s"},
        {1048576, "1MiB/s"},
        {512000, "512KB/s"},
        {1000000000, "1GB/s"},
        {3, "3B/s"},
        {2000, "2KB/s"},
        {1024000, "1024KB/s"},
        {1572864, "1536KiB/s"},
        {1000000000000ull, "1000GB/s"},
    };
    for (int i = 0; i < 9; i++) {
        const struct sl_rule *r = &c->rules[i];
        const struct sl_limit *l = i < 3 ? &r->recv_limit : &r->send_limit;
        const char *text = i < 3 ? r->recv_rate_text : r->send_rate_text;
        assert_int_equal(l->alg, SL_ALG_GCRA);
        assert_int_equal(l->count, want[i].bytes);
        assert_int_equal(l->period_ns, SEC);
        assert_string_equal(text, want[i].text);
        assert_int_equal((i < 3 ? &r->send_limit : &r->recv_limit)->count, 0);
    }
    sl_conf_free(c);
}

static void byte_bursts_default_to_a_tenth_of_a_second_and_take_units(void **state)
{
    struct sl_config *c = load_ok(NULL, "in recv_rate=2MB/s; in send_rate=5B/s; "
                                        "in recv_rate=1MiB/s recv_burst=64KiB; "
                                        "in send_rate=1MB/s send_burst=1500; "
                                        "in send_rate=1MB/s send_burst=2MB");
    assert_int_equal(c->rules[0].recv_limit.burst, 200000);
    assert_int_equal(c->rules[1].send_limit.burst, 1); /* at least one byte */
    assert_int_equal(c->rules[2].recv_limit.burst, 65536);
    assert_int_equal(c->rules[3].send_limit.burst, 1500);
    assert_int_equal(c->rules[4].send_limit.burst, 2000000);
    sl_conf_free(c);
}

static void bandwidth_limits_file_sets_both_directions_with_and_without_a_rate(void **state)
{
    struct sl_config *c = load_ok(FIXTURE("bandwidth-limits.conf"), NULL);
    const struct sl_rule *r = rule(c, "downloads");
    assert_int_equal(r->limit.count, 0); /* no connection rate */
    assert_string_equal(r->rate_text, "");
    assert_string_equal(r->send_rate_text, "2MB/s");
    assert_int_equal(r->send_limit.count, 2000000);
    assert_int_equal(r->send_limit.period_ns, SEC);
    assert_int_equal(r->send_limit.burst, 200000);
    assert_int_equal(r->send_limit.interval_ps, 500000); /* 0.5 ns a byte */
    assert_string_equal(r->recv_rate_text, "512KB/s");
    assert_int_equal(r->recv_limit.count, 512000);
    assert_int_equal(r->recv_limit.burst, 65536);
    assert_int_equal(r->conns, 0);

    r = rule(c, "mirror");
    assert_string_equal(r->rate_text, "10/s");
    assert_int_equal(r->limit.count, 10);
    assert_string_equal(r->recv_rate_text, "1MiB/s");
    assert_int_equal(r->recv_limit.count, 1048576);
    assert_int_equal(r->recv_limit.burst, 104857);
    assert_string_equal(r->send_rate_text, "1GiB/s");
    assert_int_equal(r->send_limit.count, 1073741824);
    assert_int_equal(r->send_limit.burst, 1000000);
    sl_conf_free(c);
}

static void conns_alone_is_a_whole_rule_and_delay_waits_for_a_place(void **state)
{
    struct sl_config *c = load_ok(FIXTURE("conns-only.conf"), NULL);
    const struct sl_rule *r = rule(c, "db");
    assert_int_equal(r->conns, 20);
    static const struct sl_limit none;
    assert_memory_equal(&r->limit, &none, sizeof none);
    assert_memory_equal(&r->recv_limit, &none, sizeof none);
    assert_memory_equal(&r->send_limit, &none, sizeof none);
    assert_int_equal(r->action, SL_ACT_REJECT);
    r = rule(c, "api");
    assert_int_equal(r->conns, 4);
    assert_int_equal(r->limit.count, 0);
    assert_int_equal(r->action, SL_ACT_DELAY);
    assert_int_equal(r->max_delay_ns, 2 * SEC);
    sl_conf_free(c);
}

static void burst_and_algorithm_without_a_rate_are_ignored(void **state)
{
    struct sl_config *c = load_ok(NULL, "in conns=3 burst=5 algorithm=sliding");
    static const struct sl_limit none;
    assert_memory_equal(&c->rules[0].limit, &none, sizeof none);
    char *text = print_to_string(c);
    assert_null(strstr(text, "rate"));
    assert_null(strstr(text, "burst"));
    assert_null(strstr(text, "algorithm"));
    assert_non_null(strstr(text, "    conns       = 3\n"));
    free(text);
    sl_conf_free(c);
}

static void inline_rules_take_byte_rates_conns_and_scope(void **state)
{
    struct sl_config *c = load_ok(NULL, "in port=80 send_rate=2MB/s conns=5; "
                                        "out to=192.0.2.1 recv_rate=1MiB/s recv_burst=1KiB "
                                        "conns=1000000 scope=local");
    const struct sl_rule *r = &c->rules[0];
    assert_int_equal(r->ports[0].lo, 80);
    assert_int_equal(r->send_limit.count, 2000000);
    assert_int_equal(r->recv_limit.count, 0);
    assert_int_equal(r->conns, 5);
    assert_int_equal(r->limit.count, 0);
    r = &c->rules[1];
    assert_int_equal(r->recv_limit.count, 1048576);
    assert_int_equal(r->recv_limit.burst, 1024);
    assert_int_equal(r->conns, 1000000);
    assert_int_equal(r->scope, SL_SCOPE_LOCAL);
    sl_conf_free(c);
}

/* ---- gossip ------------------------------------------------------------- */

static void gossip_three_nodes_file_fills_interval_timeout_and_share(void **state)
{
    struct sl_config *c = load_ok(FIXTURE("gossip-three-nodes.conf"), NULL);
    const struct sl_gossip *g = &c->gossip;
    assert_true(g->enabled);
    assert_string_equal(g->listen, "127.0.0.2:7946");
    assert_int_equal(g->npeers, 2);
    assert_string_equal(g->peers[0], "127.0.0.3:7946");
    assert_string_equal(g->peers[1], "127.0.0.4:7946");
    assert_int_equal(g->interval_ns, 20 * MS);
    assert_int_equal(g->peer_timeout_ns, 200 * MS); /* 10 intervals */
    assert_int_equal(g->alone_share_pct, 34);       /* ceil(100 / 3) */
    assert_true(g->key_file[0] == '/');
    assert_non_null(strstr(g->key_file, "/gossip.key"));
    for (int i = 0; i < 32; i++)
        assert_int_equal(g->key[i], i);
    assert_int_equal(c->rules[0].scope, SL_SCOPE_CLUSTER);
    assert_int_equal(c->rules[0].limit.count, 300);
    sl_conf_free(c);
}

static void alone_share_defaults_to_an_equal_share_rounded_up(void **state)
{
    const char *key = write_key(KEY_HEX "\n", 0600);
    static const struct {
        const char *peers;
        uint32_t share;
    } cases[] = {
        {"10.0.0.2:1", 50},
        {"10.0.0.2:1,10.0.0.3:1,10.0.0.4:1", 25},
        {"10.0.0.2:1,10.0.0.3:1,10.0.0.4:1,10.0.0.5:1,10.0.0.6:1,10.0.0.7:1", 15},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char rules[512];
        snprintf(rules, sizeof rules, "gossip listen=10.0.0.1:1 peers=%s key_file=%s",
                 cases[i].peers, key);
        struct sl_config *c = load_ok(NULL, rules);
        assert_int_equal(c->gossip.alone_share_pct, cases[i].share);
        sl_conf_free(c);
    }
    remove_key(key);
}

static void a_cluster_rule_counts_a_sliding_window_and_refuses_another_algorithm(void **state)
{
    const char *key = write_key(KEY_HEX "\n", 0600);
    char rules[512];
    snprintf(rules, sizeof rules,
             "in rate=10/s scope=cluster; gossip listen=127.0.0.2:7946 peers=127.0.0.3:7946 "
             "key_file=%s",
             key);
    struct sl_config *c = load_ok(NULL, rules);
    assert_int_equal(c->rules[0].limit.alg, SL_ALG_SLIDING);
    sl_conf_free(c);
    snprintf(rules, sizeof rules,
             "in rate=10/s scope=cluster algorithm=gcra; gossip listen=127.0.0.2:7946 "
             "peers=127.0.0.3:7946 key_file=%s",
             key);
    assert_error(NULL, rules,
                 "inline rule 1: inbound \"in-1\": option 'algorithm': 'gcra' is not available "
                 "with scope = cluster (it counts a sliding window)");
    remove_key(key);
}

static void an_inline_gossip_section_takes_every_option_in_any_order(void **state)
{
    /* the group may read the key; white space may follow it */
    const char *key = write_key(KEY_HEX " \n\t\n", 0640);
    char rules[512];
    snprintf(rules, sizeof rules, /* the cluster rule comes before the section it needs */
             "in rate=10/s scope=cluster; "
             "gossip listen=[2001:DB8::0:1]:7946 peers=[::ffff:10.0.0.3]:7946,10.0.0.4:65535 "
             "interval=20ms alone_share=100 key_file=%s",
             key);
    struct sl_config *c = load_ok(NULL, rules);
    const struct sl_gossip *g = &c->gossip;
    assert_string_equal(g->listen, "[2001:db8::1]:7946");
    assert_string_equal(g->peers[0], "[::ffff:10.0.0.3]:7946");
    assert_string_equal(g->peers[1], "10.0.0.4:65535");
    assert_int_equal(g->interval_ns, 20 * MS);
    assert_int_equal(g->peer_timeout_ns, 200 * MS);
    assert_int_equal(g->alone_share_pct, 100);
    assert_int_equal(g->key[31], 0x1f);
    assert_int_equal(c->rules[0].scope, SL_SCOPE_CLUSTER);
    assert_prints_same_after_reload(c);
    sl_conf_free(c);
    remove_key(key);
}

static void byte_and_conns_errors_each_get_their_own_words(void **state)
{
    assert_error(NULL, "in recv_rate=2Mb/s",
                 "inline rule 1: inbound \"in-1\": option 'recv_rate': '2Mb/s' is not a byte rate "
                 "(N/s with B, KB, MB, GB, KiB, MiB or GiB: 512KB/s, 2MB/s, 1GiB/s)");
    assert_error(NULL, "in send_rate=2MB",
                 "inline rule 1: inbound \"in-1\": option 'send_rate': '2MB' is not a byte rate "
                 "(N/s with B, KB, MB, GB, KiB, MiB or GiB: 512KB/s, 2MB/s, 1GiB/s)");
    assert_error(NULL, "in send_rate=2MB/m",
                 "inline rule 1: inbound \"in-1\": option 'send_rate': '2MB/m' is not a byte rate "
                 "(N/s with B, KB, MB, GB, KiB, MiB or GiB: 512KB/s, 2MB/s, 1GiB/s)");
    assert_error(NULL, "in recv_rate=0KB/s",
                 "inline rule 1: inbound \"in-1\": option 'recv_rate': '0KB/s' is not a byte "
                 "rate: it must be at least 1B/s");
    assert_error(NULL, "in recv_rate=1001GB/s",
                 "inline rule 1: inbound \"in-1\": option 'recv_rate': '1001GB/s' is not a byte "
                 "rate: it must be at most 1000GB/s");
    assert_error(NULL, "in recv_rate=1MB/s recv_burst=64kb",
                 "inline rule 1: inbound \"in-1\": option 'recv_burst': '64kb' is not a number of "
                 "bytes (N or N with B, KB, MB, GB, KiB, MiB or GiB)");
    assert_error(NULL, "in recv_rate=1MB/s recv_burst=0",
                 "inline rule 1: inbound \"in-1\": option 'recv_burst': '0' is not a number of "
                 "bytes: it must be at least 1B");
    assert_error(NULL, "in recv_rate=1MB/s send_burst=64KiB",
                 "inline rule 1: inbound \"in-1\": option 'send_burst': '64KiB' needs send_rate");
    assert_error(NULL, "out to=192.0.2.1 send_rate=1B/s send_burst=1000GB",
                 "inline rule 1: outbound \"out-1\": option 'send_burst': '1000GB' is too large "
                 "for send_rate 1B/s (at most 4611686018B)");
    /* issue 31, defect 9: a connection rate's burst, like a request rate's */
    assert_error(NULL, "in rate=1/d burst=53376",
                 "inline rule 1: inbound \"in-1\": option 'burst': '53376' is too large for rate "
                 "1/d (at most 53375)");
    assert_error(NULL, "in rate=1/m burst=77000000",
                 "inline rule 1: inbound \"in-1\": option 'burst': '77000000' is too large for "
                 "rate 1/m (at most 76861433)");
    assert_error(NULL, "in conns=1000001",
                 "inline rule 1: inbound \"in-1\": option 'conns': '1000001' is out of range "
                 "(0..1000000)");
    assert_error(NULL, "in conns=-1",
                 "inline rule 1: inbound \"in-1\": option 'conns': '-1' is not a whole number");
    assert_error(NULL, "in rate=1/s scope=global",
                 "inline rule 1: inbound \"in-1\": option 'scope': 'global' is not one of local, "
                 "cluster, redis");
}

static void a_cluster_rule_needs_a_gossip_section_and_a_rate(void **state)
{
    assert_file_error("cluster-without-gossip.conf",
                      "2: inbound \"api\": option 'scope': 'cluster' needs a gossip section");
    assert_error(NULL, "in rate=1/s; out to=192.0.2.1 rate=1/s scope=cluster",
                 "inline rule 2: outbound \"out-1\": option 'scope': 'cluster' needs a gossip "
                 "section");
    assert_error(NULL, "in conns=5 send_rate=1MB/s scope=cluster",
                 "inline rule 1: inbound \"in-1\": option 'scope': 'cluster' needs a rate (a "
                 "cluster shares the connection rate only)");
}

static void gossip_errors_each_get_their_own_words(void **state)
{
    char rules[512];
    const char *key = FIXTURE("gossip.key");
#define GOSSIP_ERROR(opts, words)                                                                  \
    do {                                                                                           \
        snprintf(rules, sizeof rules, "gossip key_file=%s %s", key, opts);                         \
        assert_error(NULL, rules, "inline rule 1: gossip: " words);                                \
    } while (0)
    GOSSIP_ERROR("peers=10.0.0.2:1", "option 'listen' is missing");
    GOSSIP_ERROR("listen=10.0.0.1:1", "option 'peers' is missing");
    assert_error(NULL, "gossip listen=10.0.0.1:1 peers=10.0.0.2:1",
                 "inline rule 1: gossip: option 'key_file' is missing");
    GOSSIP_ERROR("listen=gossip.example:7946",
                 "option 'listen': 'gossip.example:7946' is not address:port (like "
                 "10.0.0.2:7946 or [2001:db8::2]:7946; no host names)");
    GOSSIP_ERROR("listen=10.0.0.1", "option 'listen': '10.0.0.1' is not address:port (like "
                                    "10.0.0.2:7946 or [2001:db8::2]:7946; no host names)");
    GOSSIP_ERROR("listen=2001:db8::1:7946",
                 "option 'listen': '2001:db8::1:7946' is not address:port (like 10.0.0.2:7946 or "
                 "[2001:db8::2]:7946; no host names)");
    GOSSIP_ERROR("listen=10.0.0.1:0",
                 "option 'listen': '10.0.0.1:0' has a port that is not 1..65535");
    GOSSIP_ERROR("listen=[::1]:65536",
                 "option 'listen': '[::1]:65536' has a port that is not 1..65535");
    GOSSIP_ERROR("peers=10.0.0.2:1,10.0.0.3:1,10.0.0.2:1",
                 "option 'peers': '10.0.0.2:1' is listed twice");
    GOSSIP_ERROR("peers=1.0.0.1:1,1.0.0.2:1,1.0.0.3:1,1.0.0.4:1,1.0.0.5:1,1.0.0.6:1,1.0.0.7:1,"
                 "1.0.0.8:1,1.0.0.9:1,1.0.0.10:1,1.0.0.11:1,1.0.0.12:1,1.0.0.13:1,1.0.0.14:1,"
                 "1.0.0.15:1,1.0.0.16:1,1.0.0.17:1",
                 "option 'peers': '1.0.0.17:1' is one entry too many (at most 16)");
    GOSSIP_ERROR("interval=0", "option 'interval': '0' is out of range (1ms..10s)");
    GOSSIP_ERROR("interval=11s", "option 'interval': '11s' is out of range (1ms..10s)");
    GOSSIP_ERROR("interval=fast", "option 'interval': 'fast' is not a duration (like 250us, "
                                  "500ms, 10s, 2m, 1h, 1d)");
    GOSSIP_ERROR("listen=10.0.0.1:1 peers=10.0.0.2:1 interval=1s peer_timeout=1s",
                 "option 'peer_timeout': '1s' must be longer than interval (1s)");
    GOSSIP_ERROR("listen=10.0.0.1:1 peers=10.0.0.2:1 peer_timeout=10ms",
                 "option 'peer_timeout': '10ms' must be longer than interval (20ms)");
    GOSSIP_ERROR("listen=10.0.0.1:1 peers=10.0.0.2:1 peer_timeout=0",
                 "option 'peer_timeout': '0' must be longer than interval (20ms)");
    GOSSIP_ERROR("alone_share=0", "option 'alone_share': '0' is out of range (1..100)");
    GOSSIP_ERROR("alone_share=101", "option 'alone_share': '101' is out of range (1..100)");
    GOSSIP_ERROR("listn=10.0.0.1:1", "option 'listn' is unknown");
#undef GOSSIP_ERROR
}

static void a_second_gossip_section_is_refused(void **state)
{
    assert_file_error("gossip-twice.conf",
                      "8: gossip: there is already a gossip section on line 2");
    char rules[512];
    snprintf(rules, sizeof rules, "gossip listen=10.0.0.1:1 peers=10.0.0.2:1 key_file=%s",
             FIXTURE("gossip.key"));
    assert_error(FIXTURE("gossip-three-nodes.conf"), rules,
                 "inline rule 1: gossip: there is already a gossip section on line 3");
    char twice[2 * sizeof rules + 2];
    snprintf(twice, sizeof twice, "%s; %s", rules, rules);
    assert_error(NULL, twice,
                 "inline rule 2: gossip: there is already a gossip section in inline rule 1");
}

static void a_key_file_must_hold_64_hex_characters(void **state)
{
    assert_file_error("gossip-key-bad.conf",
                      "5: gossip: option 'key_file': 'gossip-key-bad.key' does not hold a key: "
                      "64 hex characters (32 bytes)");
    static const char *const bad[] = {
        "",
        KEY_HEX "00\n",                                                     /* 66 characters */
        "0102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f\n", /* 62 */
        "  " KEY_HEX "\n",                                                  /* white space first */
        KEY_HEX "\n# a comment\n",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const char *key = write_key(bad[i], 0600);
        char rules[256], expected[512];
        snprintf(rules, sizeof rules, "gossip listen=10.0.0.1:1 peers=10.0.0.2:1 key_file=%s", key);
        snprintf(expected, sizeof expected,
                 "inline rule 1: gossip: option 'key_file': '%s' does not hold a key: 64 hex "
                 "characters (32 bytes)",
                 key);
        assert_error(NULL, rules, expected);
        remove_key(key);
    }
}

static void a_key_file_others_can_read_or_write_is_refused(void **state)
{
    static const struct {
        mode_t mode;
        const char *words;
    } cases[] = {
        {0644, "can be read by every user: chmod 600 it"},
        {0602, "can be written by every user: chmod 600 it"},
    };
    for (size_t i = 0; i < 2; i++) {
        const char *key = write_key(KEY_HEX "\n", cases[i].mode);
        char rules[256], expected[512];
        snprintf(rules, sizeof rules, "gossip listen=10.0.0.1:1 peers=10.0.0.2:1 key_file=%s", key);
        snprintf(expected, sizeof expected, "inline rule 1: gossip: option 'key_file': '%s' %s",
                 key, cases[i].words);
        assert_error(NULL, rules, expected);
        remove_key(key);
    }
    assert_error(NULL, "gossip listen=10.0.0.1:1 peers=10.0.0.2:1 key_file=/nonexistent/k",
                 "inline rule 1: gossip: option 'key_file': '/nonexistent/k' cannot be read: No "
                 "such file or directory");
    assert_error(NULL, "gossip listen=10.0.0.1:1 peers=10.0.0.2:1 key_file=/tmp",
                 "inline rule 1: gossip: option 'key_file': '/tmp' is not a regular file");
}

/* ---- host names --------------------------------------------------------- */

static void a_host_name_is_resolved_at_load_with_the_injected_resolver(void **state)
{
    struct sl_config *c = load_ok(FIXTURE("outbound-api.conf"), NULL);
    const struct sl_host *h = &c->rules[0].hosts[0];
    assert_string_equal(h->name, "api.vendor.example");
    assert_int_equal(h->port, 443);
    assert_int_equal(h->naddr, 1);
    char buf[64];
    sl_addr_format(h->addr[0], buf, sizeof buf);
    assert_string_equal(buf, "127.0.0.7");
    static const uint8_t mapped[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 127, 0, 0, 7};
    assert_memory_equal(h->addr[0], mapped, 16);
    assert_int_equal(c->rules[0].max_delay_ns, 30 * SEC);
    assert_int_equal(resolver_calls, 2);
    sl_conf_free(c);
}

static void a_host_name_that_does_not_resolve_is_kept_with_no_addresses(void **state)
{
    struct sl_config *c = load_ok(FIXTURE("outbound-api.conf"), NULL);
    assert_int_equal(c->rules[0].nhosts, 2);
    assert_string_equal(c->rules[0].hosts[1].name, "nowhere.invalid");
    assert_int_equal(c->rules[0].hosts[1].naddr, 0);
    assert_int_equal(c->rules[0].hosts[1].port, 0);
    sl_conf_free(c);
}

/* ---- inline rules ------------------------------------------------------- */

static void inline_rules_take_the_same_options_and_lists(void **state)
{
    char rules[1024];
    snprintf(rules, sizeof rules,
             "in port=80,443,8000-8100 from=10.0.0.0/8,192.168.0.0/16 rate=20/s burst=10 "
             "algorithm=fixed action=reply reply='%s'",
             FIXTURE("reply-429-custom.txt"));
    struct sl_config *c = load_ok(NULL, rules);
    const struct sl_rule *r = &c->rules[0];
    assert_int_equal(r->nports, 3);
    assert_int_equal(r->ports[2].hi, 8100);
    assert_int_equal(r->nfrom, 2);
    assert_cidr(&r->from[1], "192.168.0.0/16");
    assert_int_equal(r->limit.burst, 10);
    assert_int_equal(r->limit.alg, SL_ALG_FIXED);
    assert_int_equal(r->action, SL_ACT_REPLY);
    assert_non_null(r->reply);
    assert_string_equal(c->source, "inline rules");
    sl_conf_free(c);
}

static void inline_rules_are_named_per_direction_unless_named(void **state)
{
    struct sl_config *c = load_ok(NULL, "in rate=1/s; out to=192.0.2.1 rate=1/s; "
                                        "inbound rate=2/s name=web; in rate=3/s; "
                                        "outbound to=192.0.2.2 rate=1/s");
    assert_int_equal(c->nrules, 5);
    assert_string_equal(c->rules[0].name, "in-1");
    assert_string_equal(c->rules[1].name, "out-1");
    assert_string_equal(c->rules[2].name, "web");
    assert_string_equal(c->rules[3].name, "in-3");
    assert_string_equal(c->rules[4].name, "out-2");
    sl_conf_free(c);
}

static void inline_quotes_keep_spaces_and_commas_in_one_value(void **state)
{
    /* the quoted comma does not split the list: one entry, not an address */
    assert_error(NULL, "in rate=1/s from=\"10.0.0.0/8,192.168.0.0/16\"",
                 "inline rule 1: inbound \"in-1\": option 'from': '10.0.0.0/8,192.168.0.0/16' "
                 "is not an address or address block");
    assert_error(NULL, "in rate='20 / s'",
                 "inline rule 1: inbound \"in-1\": option 'rate': '20 / s' is not a rate "
                 "(N/s, N/m, N/h, N/d or N/<duration>)");
    /* a quoted ';' does not end the rule; ${} is not expanded */
    assert_error(NULL, "in rate=1/s name='a;${HOME}'",
                 "inline rule 1: inbound \"a;${HOME}\": 'a;${HOME}' is not a name "
                 "(1 to 47 of A-Z a-z 0-9 _ . -)");
}

static void inline_errors_name_the_rule_by_its_number(void **state)
{
    assert_error(NULL, "in rate=1/s; out rate=5/m",
                 "inline rule 2: outbound \"out-1\": option 'to' is missing");
    assert_error(NULL, ";in rate=1/s;in rate=1/x",
                 "inline rule 3: inbound \"in-2\": option 'rate': '1/x' is not a rate "
                 "(N/s, N/m, N/h, N/d or N/<duration>)");
    assert_error(NULL, "in rate=1/s; sideways rate=1/s",
                 "inline rule 2: 'sideways' is not in, out, global, gossip or redis");
    assert_error(NULL, "in rate", "inline rule 1: 'rate' is not key=value");
    assert_error(NULL, "in rate='1/s", "inline rule 1: has an unterminated quote");
    assert_error(NULL, "in rate=1/s ratee=2/s",
                 "inline rule 1: inbound \"in-1\": option 'ratee' is unknown");
    assert_error(NULL, "global table_slots=12",
                 "inline rule 1: option 'table_slots': '12' is out of range (64..1073741824)");
}

static void inline_rules_follow_file_rules_and_their_globals_win(void **state)
{
    struct sl_config *c = load_ok(FIXTURE("defaults.conf"),
                                  "global log=none table_slots=128; in rate=5/s name=extra");
    char source[600];
    snprintf(source, sizeof source, "%s + inline rules", FIXTURE("defaults.conf"));
    assert_string_equal(c->source, source);
    assert_int_equal(c->log, SL_LOG_NONE);
    assert_int_equal(c->table_slots, 128);
    assert_int_equal(c->nrules, 3);
    assert_string_equal(c->rules[0].name, "web");
    assert_string_equal(c->rules[1].name, "api");
    assert_string_equal(c->rules[2].name, "extra");
    sl_conf_free(c);
}

static void an_inline_rule_may_not_reuse_a_file_rule_name(void **state)
{
    assert_error(FIXTURE("defaults.conf"), "in rate=1/s name=web",
                 "inline rule 1: inbound \"web\": rule name 'web' is already used on line 2");
}

/* ---- error messages ----------------------------------------------------- */

static void a_rule_that_limits_nothing_is_reported_on_the_rule_line(void **state)
{
    assert_file_error("limit-missing.conf", "2: inbound \"web\": needs at least one of rate, "
                                            "recv_rate, send_rate or conns");
    assert_error(NULL, "in port=80 conns=0",
                 "inline rule 1: inbound \"in-1\": needs at least one of rate, recv_rate, "
                 "send_rate or conns");
}

static void an_unknown_option_is_reported_on_its_line_after_comments(void **state)
{
    assert_file_error("unknown-option.conf", "7: inbound \"web\": option 'burts' is unknown");
}

static void a_bad_rate_names_file_line_option_and_value(void **state)
{
    assert_file_error("broken-on-error-closed.conf",
                      "5: inbound \"web\": option 'rate': '20/x' is not a rate "
                      "(N/s, N/m, N/h, N/d or N/<duration>)");
}

static void an_inbound_option_in_an_outbound_rule_is_refused(void **state)
{
    assert_file_error("reply-for-outbound.conf",
                      "4: outbound \"api\": option 'reply' is only for inbound rules");
    assert_error(NULL, "in rate=1/s to=192.0.2.1",
                 "inline rule 1: inbound \"in-1\": option 'to' is only for outbound rules");
    assert_error(NULL, "in rate=1/s per=destination",
                 "inline rule 1: inbound \"in-1\": option 'per': 'destination' is only for "
                 "outbound rules");
    /* outbound reply answers requests: a connection rule has none */
    assert_error(NULL, "out to=192.0.2.1 rate=1/s action=reply",
                 "inline rule 1: outbound \"out-1\": option 'action': 'reply' needs req_rate on "
                 "an outbound rule (the 429 answers a request, a connect has none)");
    enum sl_on_error oe;
    char err[256] = "";
    struct sl_config *c =
        sl_conf_load(NULL, "out to=192.0.2.1 req_rate=1/s action=reply", &oe, err, sizeof err);
    if (!c) fail_msg("load failed: %s", err);
    assert_int_equal(c->rules[0].action, SL_ACT_REPLY);
    assert_int_equal(c->rules[0].dir, SL_OUT);
    sl_conf_free(c);
}

static void a_rule_name_used_twice_is_refused(void **state)
{
    assert_file_error("duplicate-rule-name.conf",
                      "5: outbound \"web\": rule name 'web' is already used on line 1");
}

static void a_global_out_of_range_is_reported_without_a_section(void **state)
{
    assert_file_error("table-slots-too-small.conf",
                      "1: option 'table_slots': '16' is out of range (64..1073741824)");
}

static void an_unterminated_string_is_reported_where_it_starts(void **state)
{
    assert_file_error("unterminated-string.conf", "2: unterminated string");
}

static void a_syntax_error_keeps_libconfuse_words(void **state)
{
    assert_file_error("syntax-missing-brace.conf",
                      "2: missing opening brace for section 'inbound'");
}

static void an_empty_reply_file_is_refused(void **state)
{
    assert_file_error("reply-empty.conf",
                      "4: inbound \"web\": option 'reply': 'reply-empty.txt' is empty");
    assert_error(NULL, "in rate=1/s action=reply reply=/nonexistent/429.txt",
                 "inline rule 1: inbound \"in-1\": option 'reply': '/nonexistent/429.txt' "
                 "cannot be read: No such file or directory");
    char rules[1024], expected[1024];
    snprintf(rules, sizeof rules, "in rate=1/s reply='%s'", FIXTURE("reply-429-custom.txt"));
    snprintf(expected, sizeof expected,
             "inline rule 1: inbound \"in-1\": option 'reply': '%s' needs action = reply",
             FIXTURE("reply-429-custom.txt"));
    assert_error(NULL, rules, expected);
}

static void a_window_algorithm_refuses_a_count_it_cannot_hold(void **state)
{
    assert_file_error("window-count-too-large.conf",
                      "1: inbound \"web\": option 'rate': '2000000/s' is more than algorithm "
                      "sliding can count (at most 1048575 per period)");
}

static void a_missing_file_cannot_be_read(void **state)
{
    assert_error("/nonexistent/no-such.conf", NULL,
                 "/nonexistent/no-such.conf: cannot read: No such file or directory");
}

static void bad_values_each_get_their_own_words(void **state)
{
    assert_error(NULL, "in rate=1/s burst=0",
                 "inline rule 1: inbound \"in-1\": option 'burst': '0' must be at least 1");
    assert_error(NULL, "in rate=1/s burst=ten",
                 "inline rule 1: inbound \"in-1\": option 'burst': 'ten' is not a whole number");
    assert_error(NULL, "in rate=1/s prefix6=129",
                 "inline rule 1: inbound \"in-1\": option 'prefix6': '129' is out of range "
                 "(0..128)");
    assert_error(NULL, "in rate=0/s",
                 "inline rule 1: inbound \"in-1\": option 'rate': '0/s' is not a rate: N must "
                 "be at least 1");
    assert_error(NULL, "in rate=1/s port=0",
                 "inline rule 1: inbound \"in-1\": option 'port': '0' is not a port (1..65535) "
                 "or a range of ports (8000-8100)");
    assert_error(NULL, "in rate=1/s port=90-80",
                 "inline rule 1: inbound \"in-1\": option 'port': '90-80' is not a range: it "
                 "ends before it starts");
    assert_error(NULL, "in rate=1/s algorithm=leaky",
                 "inline rule 1: inbound \"in-1\": option 'algorithm': 'leaky' is not one of "
                 "gcra, sliding, fixed, log");
    assert_error(NULL, "out to=192.0.2.1 rate=1/s max_delay=10",
                 "inline rule 1: outbound \"out-1\": option 'max_delay': '10' is not a duration "
                 "(like 250us, 500ms, 10s, 2m, 1h, 1d)");
    assert_error(NULL, "out to=192.0.2.1 rate=1/s errno=EFOO",
                 "inline rule 1: outbound \"out-1\": option 'errno': 'EFOO' is not an errno "
                 "(ECONNREFUSED, ETIMEDOUT, EHOSTUNREACH, ENETUNREACH, ECONNRESET, EAGAIN, "
                 "EACCES, EPERM, ECONNABORTED, EADDRNOTAVAIL or a number 1..4095)");
    assert_error(NULL, "out to=bad_host!:80 rate=1/s",
                 "inline rule 1: outbound \"out-1\": option 'to': 'bad_host!:80' is not an "
                 "address, address block or host name");
    assert_error(NULL, "out to=10.0.0.1:443 port=80 rate=1/s",
                 "inline rule 1: outbound \"out-1\": option 'to': '10.0.0.1:443' has a port, "
                 "and the rule a port list: use one");
    assert_error(NULL, "global shared='a b'",
                 "inline rule 1: option 'shared': 'a b' is not a name (1 to 47 of A-Z a-z 0-9 _ "
                 ". -)");
    assert_error(NULL, "global on_full=maybe",
                 "inline rule 1: option 'on_full': 'maybe' is not one of shared, deny, allow");
    assert_error(NULL, "global inherit=perhaps",
                 "inline rule 1: option 'inherit': 'perhaps' is not yes or no");
}

static void more_than_the_maximum_of_rules_is_refused(void **state)
{
    char rules[4096] = "";
    for (int i = 0; i <= SL_MAX_RULES; i++)
        strcat(rules, "in rate=1/s;");
    assert_error(NULL, rules,
                 "inline rule 65: inbound \"in-65\": is one rule too many (at most 64)");
}

static void more_than_the_maximum_of_ports_is_refused(void **state)
{
    assert_error(NULL, "in rate=1/s port=1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17",
                 "inline rule 1: inbound \"in-1\": option 'port': '17' is one entry too many (at "
                 "most 16)");
}

/* ---- on_error ----------------------------------------------------------- */

static void on_error_closed_is_read_from_a_file_that_fails_later(void **state)
{
    enum sl_on_error oe = SL_ON_ERROR_OPEN;
    char err[256];
    assert_null(sl_conf_load(FIXTURE("broken-on-error-closed.conf"), NULL, &oe, err, sizeof err));
    assert_int_equal(oe, SL_ON_ERROR_CLOSED);
}

static void on_error_closed_is_found_by_scanning_when_parsing_stops_before_it(void **state)
{
    enum sl_on_error oe = SL_ON_ERROR_OPEN;
    char err[512];
    assert_null(sl_conf_load(FIXTURE("broken-before-on-error.conf"), NULL, &oe, err, sizeof err));
    char expected[600];
    snprintf(expected, sizeof expected, "%s:3: option 'table_slots': 'lots' is not a whole number",
             FIXTURE("broken-before-on-error.conf"));
    assert_string_equal(err, expected);
    assert_int_equal(oe, SL_ON_ERROR_CLOSED);
}

static void on_error_from_an_inline_global_holds_when_the_file_is_missing(void **state)
{
    enum sl_on_error oe = SL_ON_ERROR_OPEN;
    char err[256];
    assert_null(
        sl_conf_load("/nonexistent/no-such.conf", "global on_error=closed", &oe, err, sizeof err));
    assert_int_equal(oe, SL_ON_ERROR_CLOSED);
    assert_null(sl_conf_load(NULL, "global on_error=closed; in rate=1/x", &oe, err, sizeof err));
    assert_int_equal(oe, SL_ON_ERROR_CLOSED);
}

static void on_error_defaults_to_open_when_a_load_fails(void **state)
{
    enum sl_on_error oe = SL_ON_ERROR_CLOSED;
    char err[256];
    assert_null(sl_conf_load(FIXTURE("limit-missing.conf"), NULL, &oe, err, sizeof err));
    assert_int_equal(oe, SL_ON_ERROR_OPEN);
}

static void sluice_on_error_in_the_environment_overrides_the_file(void **state)
{
    enum sl_on_error oe;
    char err[256];
    setenv("SLUICE_ON_ERROR", "closed", 1);
    assert_null(sl_conf_load(FIXTURE("limit-missing.conf"), NULL, &oe, err, sizeof err));
    assert_int_equal(oe, SL_ON_ERROR_CLOSED);
    struct sl_config *c = sl_conf_load(NULL, NULL, &oe, err, sizeof err);
    assert_non_null(c);
    assert_int_equal(c->on_error, SL_ON_ERROR_CLOSED);
    sl_conf_free(c);

    setenv("SLUICE_ON_ERROR", "open", 1);
    assert_null(sl_conf_load(FIXTURE("broken-on-error-closed.conf"), NULL, &oe, err, sizeof err));
    assert_int_equal(oe, SL_ON_ERROR_OPEN);
    c = sl_conf_load(FIXTURE("all-options.conf"), NULL, &oe, err, sizeof err);
    assert_int_equal(c->on_error, SL_ON_ERROR_OPEN);
    assert_int_equal(oe, SL_ON_ERROR_OPEN);
    sl_conf_free(c);

    setenv("SLUICE_ON_ERROR", "shut", 1);
    assert_null(sl_conf_load(NULL, NULL, &oe, err, sizeof err));
    assert_string_equal(err, "SLUICE_ON_ERROR: 'shut' is not open or closed");
    unsetenv("SLUICE_ON_ERROR");
}

/* ---- on_error = closed holds for every error (issue 12, defect 6) ------ */

/* Writes len bytes to a new temporary file; the caller unlinks path. */
static void write_temp(char path[32], const char *data, size_t len)
{
    strcpy(path, "/tmp/sluice-conf-XXXXXX");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, data, len), (ssize_t)len);
    close(fd);
}

/* Loads path; the load must fail with `why` after "<path>: " (NULL: any
 * message) and report on_error = closed. */
static void assert_closed_after(const char *path, const char *rules, const char *why)
{
    enum sl_on_error oe = SL_ON_ERROR_OPEN;
    char err[512], expected[600];
    assert_null(sl_conf_load(path, rules, &oe, err, sizeof err));
    if (why) {
        snprintf(expected, sizeof expected, "%s: %s", path, why);
        assert_string_equal(err, expected);
    }
    assert_int_equal(oe, SL_ON_ERROR_CLOSED);
}

static void on_error_closed_holds_for_a_file_with_a_nul_byte(void **state)
{
    static const char text[] = "on_error = closed\ninbound \"a\" { rate = \"1/s\" \0 }\n";
    char path[32];
    write_temp(path, text, sizeof text - 1);
    assert_closed_after(path, NULL, "holds a NUL byte");
    unlink(path);
}

static void on_error_closed_holds_for_a_file_over_1_mib(void **state)
{
    size_t len = (1u << 20) + 100;
    char *text = malloc(len), path[32];
    memset(text, '\n', len);
    memcpy(text, "on_error = closed\n", 18);
    write_temp(path, text, len);
    free(text);
    assert_closed_after(path, NULL, "is larger than 1 MiB");
    unlink(path);
}

static void on_error_closed_holds_after_an_unterminated_string_or_comment(void **state)
{
    static const char string[] = "on_error = closed\ninbound \"a\" {\n rate = \"1/s\n}\n";
    static const char comment[] = "on_error = closed /* on_error = open\n";
    char path[32];
    write_temp(path, string, sizeof string - 1);
    assert_closed_after(path, NULL, NULL);
    unlink(path);
    write_temp(path, comment, sizeof comment - 1);
    assert_closed_after(path, NULL, NULL);
    unlink(path);
}

static void on_error_closed_holds_after_a_syntax_error(void **state)
{
    static const char text[] = "inbound \"a\" { rate = \"1/s\" port = {1 2} }\non_error = closed\n";
    char path[32];
    write_temp(path, text, sizeof text - 1);
    assert_closed_after(path, NULL, NULL);
    unlink(path);
}

static void on_error_closed_holds_for_inline_rules_that_cannot_be_split(void **state)
{
    enum sl_on_error oe = SL_ON_ERROR_OPEN;
    char err[256];
    assert_null(
        sl_conf_load(NULL, "global on_error=closed; in port=80 rate='20/s", &oe, err, sizeof err));
    assert_string_equal(err, "inline rule 2: has an unterminated quote");
    assert_int_equal(oe, SL_ON_ERROR_CLOSED);
    oe = SL_ON_ERROR_OPEN;
    assert_null(sl_conf_load(NULL, "in port=80 rate=\"1/s\x01\"; global on_error=closed", &oe, err,
                             sizeof err));
    assert_string_equal(err, "inline rule 1: has a control character in a value");
    assert_int_equal(oe, SL_ON_ERROR_CLOSED);
    oe = SL_ON_ERROR_OPEN;
    assert_null(
        sl_conf_load(NULL, "global shared=\"a\x02\" on_error=closed", &oe, err, sizeof err));
    assert_int_equal(oe, SL_ON_ERROR_CLOSED);
    oe = SL_ON_ERROR_OPEN;
    assert_null(
        sl_conf_load(NULL, "sideways port=1; global on_error=closed", &oe, err, sizeof err));
    assert_int_equal(oe, SL_ON_ERROR_CLOSED);
    /* and a file's closed holds when the inline rules cannot be split */
    assert_closed_after(FIXTURE("broken-on-error-closed.conf"), "in rate='1/s", NULL);
}

/* ---- files that are not regular (issue 12, defect 12) ------------------ */

static void a_fifo_as_config_file_is_refused_without_blocking(void **state)
{
    char path[64];
    snprintf(path, sizeof path, "/tmp/sluice-conf-fifo-%d", (int)getpid());
    unlink(path);
    assert_int_equal(mkfifo(path, 0600), 0);
    char expected[128];
    snprintf(expected, sizeof expected, "%s: is not a regular file", path);
    assert_error(path, NULL, expected); /* blocked for ever before: open() waited for a writer */
    unlink(path);
}

/* Issue 12, defect 8: a node would count its own datagrams as a peer's. */
static void a_node_listed_in_its_own_peers_is_refused(void **state)
{
    char rules[512];
    const char *key = FIXTURE("gossip.key");
    snprintf(rules, sizeof rules,
             "gossip listen=10.0.0.1:7946 peers=10.0.0.2:7946,10.0.0.1:7946 key_file=%s", key);
    assert_error(NULL, rules,
                 "inline rule 1: gossip: option 'peers': '10.0.0.1:7946' is this node's own "
                 "listen address");
    snprintf(rules, sizeof rules,
             "gossip listen=[2001:db8::0:1]:7946 peers=[2001:db8::1]:7946 key_file=%s", key);
    assert_error(NULL, rules,
                 "inline rule 1: gossip: option 'peers': '[2001:db8::1]:7946' is this node's own "
                 "listen address");
    snprintf(rules, sizeof rules,
             "gossip listen=0.0.0.0:7946 peers=10.0.0.2:7946,127.0.0.5:7946 key_file=%s", key);
    assert_error(NULL, rules,
                 "inline rule 1: gossip: option 'peers': '127.0.0.5:7946' is this node's own "
                 "listen address");
    /* the same address on another port is another node */
    snprintf(rules, sizeof rules, "gossip listen=127.0.0.1:7946 peers=127.0.0.1:7947 key_file=%s",
             key);
    enum sl_on_error oe;
    char err[256];
    struct sl_config *c = sl_conf_load(NULL, rules, &oe, err, sizeof err);
    assert_non_null(c);
    sl_conf_free(c);
}

/* ---- warnings (issue 13, item 5) ---------------------------------------- */

static char warned[4][256];
static int nwarned;

static void keep_warning(const char *line)
{
    if (nwarned < 4) snprintf(warned[nwarned], sizeof warned[0], "%s", line);
    nwarned++;
}

static void a_burst_that_the_algorithm_ignores_is_a_warning(void **state)
{
    char rules[512];
    nwarned = 0;
    sl_conf_set_warn(keep_warning);
    snprintf(rules, sizeof rules,
             "in rate=20/s burst=5; in rate=20/s burst=5 algorithm=sliding name=s; "
             "out to=192.0.2.1 rate=1/s burst=2 algorithm=fixed name=f; in rate=20/s name=n; "
             "in rate=20/s burst=5 scope=cluster name=c; "
             "gossip listen=10.0.0.1:1 peers=10.0.0.2:1 key_file=%s",
             FIXTURE("gossip.key"));
    struct sl_config *c = load_ok(NULL, rules);
    sl_conf_set_warn(NULL);
    assert_int_equal(c->nrules, 5);
    assert_int_equal(nwarned, 3);
    assert_string_equal(warned[0], "inline rule 2: inbound \"s\": option 'burst': '5' is ignored: "
                                   "algorithm sliding counts a window, only gcra has a burst");
    assert_string_equal(warned[1], "inline rule 3: outbound \"f\": option 'burst': '2' is ignored: "
                                   "algorithm fixed counts a window, only gcra has a burst");
    assert_string_equal(warned[2], "inline rule 5: inbound \"c\": option 'burst': '5' is ignored: "
                                   "scope = cluster counts a sliding window");
    sl_conf_free(c);
}

/* ---- printing ----------------------------------------------------------- */

static void printing_every_option_loads_back_and_prints_the_same(void **state)
{
    struct sl_config *c = load_ok(FIXTURE("all-options.conf"), NULL);
    assert_prints_same_after_reload(c);
    sl_conf_free(c);
}

static void printing_defaults_and_inline_rules_loads_back_and_prints_the_same(void **state)
{
    struct sl_config *c =
        load_ok(FIXTURE("defaults.conf"), "in rate=3/1500ms per=prefix; out to=10.0.0.1:443,"
                                          "api.vendor.example:8443 rate=1/d errno=200 "
                                          "max_delay=250us action=reject");
    assert_prints_same_after_reload(c);
    sl_conf_free(c);
}

static void printing_writes_defaults_out_explicitly(void **state)
{
    struct sl_config *c = load_ok(NULL, "out to=API.example.:443 rate=100/60s");
    char *text = print_to_string(c);
    assert_non_null(strstr(text, "table_slots = 65536\n"));
    assert_non_null(strstr(text, "outbound \"out-1\" {\n"));
    assert_non_null(strstr(text, "    port        = {}\n"));
    assert_non_null(strstr(text, "    to          = {\"api.example:443\"}\n"));
    assert_non_null(strstr(text, "    rate        = \"100/m\"\n"));
    assert_non_null(strstr(text, "    burst       = 100\n"));
    assert_non_null(strstr(text, "    per         = rule\n"));
    assert_non_null(strstr(text, "    action      = delay\n"));
    assert_non_null(strstr(text, "    max_delay   = 10s\n"));
    assert_non_null(strstr(text, "    errno       = ETIMEDOUT\n"));
    assert_non_null(strstr(text, "    dry_run     = no\n"));
    free(text);
    sl_conf_free(c);
}

static void printing_byte_limits_conns_and_gossip_loads_back_and_prints_the_same(void **state)
{
    static const char *const files[] = {"bandwidth-limits.conf", "conns-only.conf",
                                        "gossip-three-nodes.conf"};
    for (size_t i = 0; i < 3; i++) {
        struct sl_config *c = load_ok(FIXTURE(files[i]), NULL);
        assert_prints_same_after_reload(c);
        sl_conf_free(c);
    }
}

static void printing_writes_new_options_and_never_the_key(void **state)
{
    struct sl_config *c = load_ok(FIXTURE("gossip-three-nodes.conf"),
                                  "in send_rate=1536KiB/s recv_rate=2MB/s conns=7");
    char *text = print_to_string(c);
    assert_non_null(strstr(text, "\ngossip {\n"
                                 "    listen       = \"127.0.0.2:7946\"\n"
                                 "    peers        = {\"127.0.0.3:7946\", \"127.0.0.4:7946\"}\n"
                                 "    interval     = 20ms\n"
                                 "    peer_timeout = 200ms\n"
                                 "    alone_share  = 34\n"
                                 "    key_file     = \"/"));
    assert_non_null(strstr(text, "/gossip.key\"\n}\n"));
    assert_null(strstr(text, KEY_HEX));
    assert_null(strstr(text, "0001020304"));
    assert_non_null(strstr(text, "    scope       = cluster\n"));
    assert_non_null(strstr(text, "    recv_rate   = \"2MB/s\"\n"
                                 "    recv_burst  = \"200KB\"\n"
                                 "    send_rate   = \"1536KiB/s\"\n"
                                 "    send_burst  = \"157286B\"\n"
                                 "    conns       = 7\n"
                                 "    scope       = local\n"));
    free(text);
    sl_conf_free(c);
}

/* How `per = header:NAME` and its kind are written in the option table:
 * an enumeration name ending in ':' takes a parameter. */
static void an_enumeration_name_ending_in_a_colon_takes_a_parameter(void **state)
{
    static const char *const names[] = {"peer", "header:", "query:", NULL};
    int i = -1;
    assert_null(conf_parse_enum("header:X-API-Key", names, &i));
    assert_int_equal(i, 1);
    assert_string_equal(conf_enum_param("header:X-API-Key"), "X-API-Key");
    assert_null(conf_parse_enum("query:key", names, &i));
    assert_int_equal(i, 2);
    assert_null(conf_parse_enum("peer", names, &i));
    assert_int_equal(i, 0);
    const char *bad = "is not one of peer, header:NAME, query:NAME";
    assert_string_equal(conf_parse_enum("header:", names, &i), bad);
    assert_string_equal(conf_parse_enum("header", names, &i), bad);
    assert_string_equal(conf_parse_enum("header:a b", names, &i), bad);
    assert_string_equal(conf_parse_enum("peer:x", names, &i), bad);
}

/* Issue 31: the text of one --in or --out is one rule. A ';' that the
 * inline reader would take for the end of the rule is found, at its
 * place; one it keeps in a value (quoted, escaped) is not. */
static void the_separator_of_inline_rules_is_found_where_the_reader_splits(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        int at; /* -1: none */
    } cases[] = {
        {"port=80 rate=1/s", -1},
        {"port=80 rate=1/s; out to=10.0.0.1 rate=1/d", 16},
        {"port=80 rate=1/s;", 16},
        {"per='header:a;b' rate=1/s", -1},
        {"per=\"header:a;b\" rate=1/s;x", 25},
        {"per=header:a\\;b rate=1/s", -1},
        {"per='it\\'s;' x;y", 14},
        {"a=\"'\";b", 5},
        {"a='unterminated;", -1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const char *at = sl_conf_inline_separator(cases[i].text);
        if ((at ? (int)(at - cases[i].text) : -1) != cases[i].at)
            fail_msg("%s: ';' at %d, expected %d", cases[i].text,
                     at ? (int)(at - cases[i].text) : -1, cases[i].at);
    }
    /* and where it finds one, the reader makes two rules of the text */
    char err[512];
    enum sl_on_error on_error;
    struct sl_config *c = sl_conf_load(NULL, "in port=80 rate=1/s; out to=10.0.0.1 rate=1/d",
                                       &on_error, err, sizeof err);
    assert_non_null(c);
    assert_int_equal(c->nrules, 2);
    sl_conf_free(c);
    c = sl_conf_load(NULL, "in port=80 rate=1/s name='a;b'", &on_error, err, sizeof err);
    assert_null(c); /* one rule, whose name holds the ';' */
    assert_non_null(strstr(err, "'a;b' is not a name"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(all_options_file_sets_every_global, setup),
        cmocka_unit_test_setup(all_options_file_sets_every_gossip_option, setup),
        cmocka_unit_test_setup(all_options_file_sets_every_field_of_the_inbound_rule, setup),
        cmocka_unit_test_setup(all_options_file_sets_every_field_of_the_outbound_rule, setup),
        cmocka_unit_test_setup(nothing_to_load_gives_defaults_and_no_rules, setup),
        cmocka_unit_test_setup(inbound_rule_defaults_to_peer_reject_gcra_and_burst_n, setup),
        cmocka_unit_test_setup(a_rule_has_no_byte_or_concurrency_limit_and_local_scope_by_default,
                               setup),
        cmocka_unit_test_setup(outbound_rule_defaults_to_rule_delay_10s_and_etimedout, setup),
        cmocka_unit_test_setup(outbound_reject_defaults_to_econnrefused, setup),
        cmocka_unit_test_setup(per_prefix_defaults_to_24_and_48_bit_prefixes, setup),
        cmocka_unit_test_setup(rule_dry_run_defaults_to_the_global_dry_run, setup),
        cmocka_unit_test_setup(rates_are_normalised_to_the_largest_exact_unit, setup),
        cmocka_unit_test_setup(max_delay_takes_every_unit_and_zero, setup),
        cmocka_unit_test_setup(errno_takes_a_name_or_a_positive_number, setup),
        cmocka_unit_test_setup(an_address_with_a_port_in_to_gives_the_rule_its_ports, setup),
        cmocka_unit_test_setup(byte_rates_take_decimal_and_binary_units, setup),
        cmocka_unit_test_setup(byte_bursts_default_to_a_tenth_of_a_second_and_take_units, setup),
        cmocka_unit_test_setup(bandwidth_limits_file_sets_both_directions_with_and_without_a_rate,
                               setup),
        cmocka_unit_test_setup(conns_alone_is_a_whole_rule_and_delay_waits_for_a_place, setup),
        cmocka_unit_test_setup(burst_and_algorithm_without_a_rate_are_ignored, setup),
        cmocka_unit_test_setup(inline_rules_take_byte_rates_conns_and_scope, setup),
        cmocka_unit_test_setup(gossip_three_nodes_file_fills_interval_timeout_and_share, setup),
        cmocka_unit_test_setup(alone_share_defaults_to_an_equal_share_rounded_up, setup),
        cmocka_unit_test_setup(a_cluster_rule_counts_a_sliding_window_and_refuses_another_algorithm,
                               setup),
        cmocka_unit_test_setup(an_inline_gossip_section_takes_every_option_in_any_order, setup),
        cmocka_unit_test_setup(byte_and_conns_errors_each_get_their_own_words, setup),
        cmocka_unit_test_setup(a_cluster_rule_needs_a_gossip_section_and_a_rate, setup),
        cmocka_unit_test_setup(gossip_errors_each_get_their_own_words, setup),
        cmocka_unit_test_setup(a_second_gossip_section_is_refused, setup),
        cmocka_unit_test_setup(a_key_file_must_hold_64_hex_characters, setup),
        cmocka_unit_test_setup(a_key_file_others_can_read_or_write_is_refused, setup),
        cmocka_unit_test_setup(a_host_name_is_resolved_at_load_with_the_injected_resolver, setup),
        cmocka_unit_test_setup(a_host_name_that_does_not_resolve_is_kept_with_no_addresses, setup),
        cmocka_unit_test_setup(inline_rules_take_the_same_options_and_lists, setup),
        cmocka_unit_test_setup(inline_rules_are_named_per_direction_unless_named, setup),
        cmocka_unit_test_setup(inline_quotes_keep_spaces_and_commas_in_one_value, setup),
        cmocka_unit_test_setup(inline_errors_name_the_rule_by_its_number, setup),
        cmocka_unit_test_setup(inline_rules_follow_file_rules_and_their_globals_win, setup),
        cmocka_unit_test_setup(an_inline_rule_may_not_reuse_a_file_rule_name, setup),
        cmocka_unit_test_setup(a_rule_that_limits_nothing_is_reported_on_the_rule_line, setup),
        cmocka_unit_test_setup(an_unknown_option_is_reported_on_its_line_after_comments, setup),
        cmocka_unit_test_setup(a_bad_rate_names_file_line_option_and_value, setup),
        cmocka_unit_test_setup(an_inbound_option_in_an_outbound_rule_is_refused, setup),
        cmocka_unit_test_setup(a_rule_name_used_twice_is_refused, setup),
        cmocka_unit_test_setup(a_global_out_of_range_is_reported_without_a_section, setup),
        cmocka_unit_test_setup(an_unterminated_string_is_reported_where_it_starts, setup),
        cmocka_unit_test_setup(a_syntax_error_keeps_libconfuse_words, setup),
        cmocka_unit_test_setup(an_empty_reply_file_is_refused, setup),
        cmocka_unit_test_setup(a_window_algorithm_refuses_a_count_it_cannot_hold, setup),
        cmocka_unit_test_setup(a_missing_file_cannot_be_read, setup),
        cmocka_unit_test_setup(bad_values_each_get_their_own_words, setup),
        cmocka_unit_test_setup(more_than_the_maximum_of_rules_is_refused, setup),
        cmocka_unit_test_setup(more_than_the_maximum_of_ports_is_refused, setup),
        cmocka_unit_test_setup(on_error_closed_is_read_from_a_file_that_fails_later, setup),
        cmocka_unit_test_setup(on_error_closed_is_found_by_scanning_when_parsing_stops_before_it,
                               setup),
        cmocka_unit_test_setup(on_error_from_an_inline_global_holds_when_the_file_is_missing,
                               setup),
        cmocka_unit_test_setup(on_error_defaults_to_open_when_a_load_fails, setup),
        cmocka_unit_test_setup(sluice_on_error_in_the_environment_overrides_the_file, setup),
        cmocka_unit_test_setup(printing_every_option_loads_back_and_prints_the_same, setup),
        cmocka_unit_test_setup(printing_defaults_and_inline_rules_loads_back_and_prints_the_same,
                               setup),
        cmocka_unit_test_setup(printing_writes_defaults_out_explicitly, setup),
        cmocka_unit_test_setup(printing_byte_limits_conns_and_gossip_loads_back_and_prints_the_same,
                               setup),
        cmocka_unit_test_setup(printing_writes_new_options_and_never_the_key, setup),
        cmocka_unit_test_setup(an_enumeration_name_ending_in_a_colon_takes_a_parameter, setup),
        cmocka_unit_test_setup(on_error_closed_holds_for_a_file_with_a_nul_byte, setup),
        cmocka_unit_test_setup(on_error_closed_holds_for_a_file_over_1_mib, setup),
        cmocka_unit_test_setup(on_error_closed_holds_after_an_unterminated_string_or_comment,
                               setup),
        cmocka_unit_test_setup(on_error_closed_holds_after_a_syntax_error, setup),
        cmocka_unit_test_setup(on_error_closed_holds_for_inline_rules_that_cannot_be_split, setup),
        cmocka_unit_test_setup(a_fifo_as_config_file_is_refused_without_blocking, setup),
        cmocka_unit_test_setup(a_node_listed_in_its_own_peers_is_refused, setup),
        cmocka_unit_test_setup(a_burst_that_the_algorithm_ignores_is_a_warning, setup),
        cmocka_unit_test(the_separator_of_inline_rules_is_found_where_the_reader_splits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL) != 0;
}
