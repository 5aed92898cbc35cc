/* SPDX-License-Identifier: BSD-2-Clause */
/* test_redis_conf.c - the redis section: defaults, every option, the
 * errors (each names file, line, option and value), and that `sluice
 * check` never prints the password. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../conf/conf.h"
#include "testutil.h"

static char path[64];

static const char *write_conf(const char *text)
{
    snprintf(path, sizeof path, "/tmp/sluice-redis-conf-%d.conf", (int)getpid());
    FILE *f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
    return path;
}

static struct sl_config *load(const char *text, char *err, size_t errlen)
{
    enum sl_on_error oe;
    err[0] = 0;
    struct sl_config *c = sl_conf_load(write_conf(text), NULL, &oe, err, errlen);
    unlink(path);
    return c;
}

static void assert_error(const char *text, const char *expected_tail)
{
    char err[512];
    struct sl_config *c = load(text, err, sizeof err);
    if (c) {
        sl_conf_free(c);
        fail_msg("loaded: %s", text);
    }
    const char *colon = strchr(err, ':'); /* skip the temporary file's name */
    assert_non_null(colon);
    assert_string_equal(colon + 1, expected_tail);
}

static void a_redis_section_has_defaults_for_all_but_the_address(void **st)
{
    char err[512];
    struct sl_config *c = load("redis { address = \"127.0.0.1:6379\" }\n"
                               "inbound \"web\" { port = 80 rate = \"60/s\" scope = redis }\n",
                               err, sizeof err);
    assert_non_null(c);
    assert_true(c->redis.enabled);
    assert_string_equal(c->redis.address, "127.0.0.1:6379");
    assert_string_equal(c->redis.prefix, "sluice:");
    assert_int_equal(c->redis.interval_ns, 20 * MS);
    assert_int_equal(c->redis.timeout_ns, 200 * MS);
    assert_int_equal(c->redis.on_error, SL_BACKEND_LOCAL);
    assert_int_equal(c->redis.local_share_pct, 50);
    assert_int_equal(c->rules[0].scope, SL_SCOPE_REDIS);
    assert_int_equal(c->rules[0].limit.alg, SL_ALG_SLIDING);
    sl_conf_free(c);
}

static void every_redis_option_is_read(void **st)
{
    char err[512];
    struct sl_config *c = load("redis {\n address = \"unix:/run/redis.sock\"\n user = app\n"
                               " password = \"s3cret-pw\"\n prefix = \"rl:\"\n interval = 20ms\n"
                               " timeout = 50ms\n on_backend_error = closed\n local_share = 30\n}\n"
                               "inbound \"web\" { port = 80 req_rate = \"10/s\" scope = redis }\n",
                               err, sizeof err);
    assert_non_null(c);
    assert_string_equal(c->redis.address, "unix:/run/redis.sock");
    assert_string_equal(c->redis.user, "app");
    assert_string_equal(c->redis.password, "s3cret-pw");
    assert_string_equal(c->redis.prefix, "rl:");
    assert_int_equal(c->redis.interval_ns, 20 * MS);
    assert_int_equal(c->redis.timeout_ns, 50 * MS);
    assert_int_equal(c->redis.on_error, SL_BACKEND_CLOSED);
    assert_int_equal(c->redis.local_share_pct, 30);
    assert_int_equal(c->rules[0].req_limit.alg, SL_ALG_SLIDING);

    char *out = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);
    sl_conf_print(c, f);
    fclose(f);
    assert_null(strstr(out, "s3cret-pw"));
    assert_non_null(strstr(out, "password is set (sha-256 "));
    free(out);
    sl_conf_free(c);
}

static void redis_errors_name_the_line_the_option_and_the_value(void **st)
{
    assert_error("inbound \"web\" { port = 80 rate = \"60/s\" scope = redis }\n",
                 "1: inbound \"web\": option 'scope': 'redis' needs a redis section");
    assert_error("redis { prefix = x }\n",
                 "1: redis: option 'address' is missing (or 'sentinels', 'cluster')");
    assert_error("redis {\n address = \"unix:run\" }\n",
                 "2: redis: option 'address': 'unix:run' is not unix:/ABSOLUTE/PATH");
    assert_error("redis { address = \"127.0.0.1:6379\" user = app }\n",
                 "1: redis: option 'user': 'app' needs a password");
    assert_error("redis { address = \"127.0.0.1:6379\"\n on_backend_error = maybe }\n",
                 "2: redis: option 'on_backend_error': 'maybe' is not one of local, open, closed");
    assert_error("redis { address = \"127.0.0.1:6379\" }\n"
                 "inbound \"web\" { port = 80 scope = redis conns = 3 }\n",
                 "2: inbound \"web\": option 'scope': 'redis' needs a rate or a req_rate (what "
                 "redis shares)");
    assert_error("redis { address = \"127.0.0.1:6379\" }\n"
                 "inbound \"web\" { port = 80 rate = \"60/s\" algorithm = gcra scope = redis }\n",
                 "2: inbound \"web\": option 'algorithm': 'gcra' is not available with scope = "
                 "redis (it counts a sliding window)");
    assert_error("redis { address = \"127.0.0.1:6379\" }\n"
                 "inbound \"api\" { port = 80 req_rate = \"6/s\" per = \"header:X-Key\" scope = "
                 "redis }\n",
                 "2: inbound \"api\": option 'per': 'header:X-Key' needs a key_file in the redis "
                 "section with scope = redis");
    assert_error("redis { address = \"127.0.0.1:6379\" }\nredis { address = \"127.0.0.1:6380\" }\n",
                 "2: redis: there is already a redis section on line 1");
}

static void sentinels_and_cluster_are_read(void **st)
{
    char err[512];
    struct sl_config *c = load("redis { sentinels = \"127.0.0.1:26379,[::1]:26380\"\n"
                               " master = mymaster }\n"
                               "inbound \"web\" { port = 80 rate = \"60/s\" scope = redis }\n",
                               err, sizeof err);
    assert_non_null(c);
    assert_int_equal(c->redis.mode, SL_REDIS_SENTINEL);
    assert_int_equal(c->redis.naddrs, 2);
    assert_string_equal(c->redis.addrs[0], "127.0.0.1:26379");
    assert_string_equal(c->redis.addrs[1], "[::1]:26380");
    assert_string_equal(c->redis.master, "mymaster");
    sl_conf_free(c);
    c = load("redis { cluster = \"127.0.0.1:7000,127.0.0.1:7001,127.0.0.1:7002\" }\n", err,
             sizeof err);
    assert_non_null(c);
    assert_int_equal(c->redis.mode, SL_REDIS_CLUSTER);
    assert_int_equal(c->redis.naddrs, 3);
    assert_string_equal(c->redis.addrs[2], "127.0.0.1:7002");
    sl_conf_free(c);
}

static void sentinel_and_cluster_errors_name_the_option(void **st)
{
    assert_error("redis { sentinels = \"127.0.0.1:26379\" }\n",
                 "1: redis: option 'sentinels': '127.0.0.1:26379' needs master (the name the "
                 "sentinels know the primary by)");
    assert_error("redis { address = \"127.0.0.1:6379\" master = m }\n",
                 "1: redis: option 'master': 'm' needs sentinels");
    assert_error("redis {\n address = \"127.0.0.1:6379\"\n cluster = \"127.0.0.1:7000\" }\n",
                 "1: redis: takes one of 'address', 'sentinels' and 'cluster'");
    assert_error("redis {\n cluster = \"127.0.0.1:7000,,127.0.0.1:7001\" }\n",
                 "2: redis: option 'cluster': '127.0.0.1:7000,,127.0.0.1:7001' has an empty "
                 "address (\"host:port,host:port\")");
    assert_error("redis {\n cluster = \"127.0.0.1:7000,localhost\" }\n",
                 "2: redis: option 'cluster': '127.0.0.1:7000,localhost' is not address:port (like "
                 "10.0.0.2:7946 or [2001:db8::2]:7946; no host names)");
    assert_error("redis { cluster = \"127.0.0.1:7000\" prefix = \"a{b}:\" }\n",
                 "1: redis: option 'prefix': 'a{b}:' may not have { or } with cluster (the "
                 "keys' hash tag)");
}

static void a_redis_section_can_be_inline(void **st)
{
    enum sl_on_error oe;
    char err[512];
    struct sl_config *c = sl_conf_load(
        NULL, "redis address=127.0.0.1:6390 interval=20ms; in port=80 rate=9/s scope=redis", &oe,
        err, sizeof err);
    assert_non_null(c);
    assert_string_equal(c->redis.address, "127.0.0.1:6390");
    assert_int_equal(c->redis.interval_ns, 20 * MS);
    assert_int_equal(c->rules[0].scope, SL_SCOPE_REDIS);
    sl_conf_free(c);
    c = sl_conf_load(NULL, "redis address=127.0.0.1:1; redis address=127.0.0.1:2", &oe, err,
                     sizeof err);
    assert_null(c);
    assert_string_equal(err,
                        "inline rule 2: redis: there is already a redis section in inline rule 1");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_redis_section_has_defaults_for_all_but_the_address),
        cmocka_unit_test(every_redis_option_is_read),
        cmocka_unit_test(redis_errors_name_the_line_the_option_and_the_value),
        cmocka_unit_test(a_redis_section_can_be_inline),
        cmocka_unit_test(sentinels_and_cluster_are_read),
        cmocka_unit_test(sentinel_and_cluster_errors_name_the_option),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
