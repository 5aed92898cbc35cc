/* SPDX-License-Identifier: BSD-2-Clause */
/* test_redis_ha.c - Redis behind Sentinel and Redis Cluster, the parts
 * that need no server: CRC16 and hash-tag slots against Redis's known
 * values, the slot map from a CLUSTER SLOTS reply, MOVED / ASK errors,
 * and the sentinels' answers and +switch-master messages
 * (core/fleet/redis_cluster.c, core/fleet/redis_sentinel.c). Replies are built by
 * hiredis's reader from wire bytes, as the sender gets them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <hiredis/hiredis.h>
#include <stdio.h>
#include <string.h>

#include "../../core/fleet/redis_cluster.h"
#include "../../core/fleet/redis_sentinel.h"
#include "testutil.h"

static redisReply *parse(const char *wire)
{
    redisReader *r = redisReaderCreate();
    void *reply = NULL;
    redisReaderFeed(r, wire, strlen(wire));
    assert_int_equal(redisReaderGetReply(r, &reply), REDIS_OK);
    assert_non_null(reply);
    redisReaderFree(r);
    return reply;
}

static void crc16_is_xmodem_as_redis_cluster_uses(void **st)
{
    assert_int_equal(sl_crc16("123456789", 9), 0x31C3); /* the Redis Cluster spec's vector */
    assert_int_equal(sl_crc16("", 0), 0);
    /* CLUSTER KEYSLOT answers, from redis-server 7.0 */
    assert_int_equal(sl_rcluster_slot("foo", 3), 12182);
    assert_int_equal(sl_rcluster_slot("bar", 3), 5061);
    assert_int_equal(sl_rcluster_slot("sluice:{web:127.0.0.9}:1", 24), 7414);
}

static void hash_tags_put_both_windows_of_a_key_in_one_slot(void **st)
{
    unsigned tag = sl_rcluster_slot("user1000", 8);
    assert_int_equal(sl_rcluster_slot("{user1000}.following", 20), tag);
    assert_int_equal(sl_rcluster_slot("x{user1000}{other}", 18), tag); /* the first {...} */
    /* an empty tag, or no closing brace: the whole key */
    assert_int_equal(sl_rcluster_slot("foo{}{bar}", 10), sl_crc16("foo{}{bar}", 10) & 16383);
    assert_int_equal(sl_rcluster_slot("foo{bar", 7), sl_crc16("foo{bar", 7) & 16383);
    const char *a = "sluice:{web:10.0.0.7}:55", *b = "sluice:{web:10.0.0.7}:54";
    assert_int_equal(sl_rcluster_slot(a, strlen(a)), sl_rcluster_slot(b, strlen(b)));
    assert_int_equal(sl_rcluster_slot(a, strlen(a)), sl_rcluster_slot("web:10.0.0.7", 12));
}

static void the_slot_map_is_read_from_cluster_slots(void **st)
{
    static struct sl_rslots m;
    redisReply *r = parse("*3\r\n"
                          "*4\r\n:0\r\n:5460\r\n*3\r\n$9\r\n127.0.0.1\r\n:7000\r\n$2\r\nid\r\n"
                          "*3\r\n$9\r\n127.0.0.1\r\n:7003\r\n$2\r\nid\r\n"
                          "*3\r\n:5461\r\n:10922\r\n*2\r\n$3\r\n::1\r\n:7001\r\n"
                          "*3\r\n:10923\r\n:16383\r\n*2\r\n$9\r\n127.0.0.1\r\n:7000\r\n");
    assert_int_equal(sl_rcluster_parse_slots(r, &m), 0);
    freeReplyObject(r);
    assert_int_equal(m.nnodes, 2);
    assert_string_equal(m.addr[0], "127.0.0.1:7000");
    assert_string_equal(m.addr[1], "[::1]:7001");
    assert_int_equal(m.node[0], 0);
    assert_int_equal(m.node[5460], 0);
    assert_int_equal(m.node[5461], 1);
    assert_int_equal(m.node[10922], 1);
    assert_int_equal(m.node[16383], 0);
    /* a range whose primary has no address sluice can reach stays unknown */
    r = parse("*2\r\n*3\r\n:0\r\n:99\r\n*2\r\n$1\r\n?\r\n:7000\r\n"
              "*3\r\n:100\r\n:16383\r\n*2\r\n$9\r\n127.0.0.1\r\n:7001\r\n");
    assert_int_equal(sl_rcluster_parse_slots(r, &m), 0);
    freeReplyObject(r);
    assert_int_equal(m.node[99], SL_NO_NODE);
    assert_int_equal(m.node[100], 0);
    const char *bad[] = {
        "-ERR This instance has cluster support disabled\r\n",
        "*0\r\n",                                                          /* no primary */
        "*1\r\n*3\r\n:5\r\n:4\r\n*2\r\n$9\r\n127.0.0.1\r\n:7000\r\n",      /* first > last */
        "*1\r\n*3\r\n:0\r\n:16384\r\n*2\r\n$9\r\n127.0.0.1\r\n:7000\r\n",  /* past the slots */
        "*1\r\n*3\r\n:0\r\n:9\r\n*2\r\n$9\r\n127.0.0.1\r\n$4\r\n7000\r\n", /* port as text */
        "*1\r\n*2\r\n:0\r\n:9\r\n",                                        /* no node */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        r = parse(bad[i]);
        assert_int_equal(sl_rcluster_parse_slots(r, &m), -1);
        freeReplyObject(r);
    }
}

static void moved_and_ask_are_read(void **st)
{
    unsigned slot = 0;
    char addr[64];
    redisReply *r = parse("-MOVED 3999 127.0.0.1:6381\r\n");
    assert_int_equal(sl_rcluster_parse_redirect(r, &slot, addr, sizeof addr), 1);
    assert_int_equal(slot, 3999);
    assert_string_equal(addr, "127.0.0.1:6381");
    freeReplyObject(r);
    r = parse("-ASK 16383 ::1:7002\r\n");
    assert_int_equal(sl_rcluster_parse_redirect(r, &slot, addr, sizeof addr), 2);
    assert_int_equal(slot, 16383);
    assert_string_equal(addr, "[::1]:7002");
    freeReplyObject(r);
    const char *no[] = {
        "-MOVED 16384 127.0.0.1:6381\r\n", "-MOVED 12 :6381\r\n", "-MOVED x 127.0.0.1:6381\r\n",
        "-MOVED 12 host.example:6381\r\n", "-ERR wrong\r\n",      "+MOVED 1 127.0.0.1:1\r\n",
        "-MOVED 12 127.0.0.1:99999\r\n",   "-ASK 12\r\n"};
    for (size_t i = 0; i < sizeof no / sizeof no[0]; i++) {
        r = parse(no[i]);
        assert_int_equal(sl_rcluster_parse_redirect(r, &slot, addr, sizeof addr), 0);
        freeReplyObject(r);
    }
}

static void the_sentinels_answers_are_read(void **st)
{
    char addr[64];
    redisReply *r = parse("*2\r\n$9\r\n127.0.0.1\r\n$4\r\n6380\r\n");
    assert_int_equal(sl_rsentinel_parse_addr(r, addr, sizeof addr), 0);
    assert_string_equal(addr, "127.0.0.1:6380");
    freeReplyObject(r);
    const char *no[] = {"$-1\r\n", "*2\r\n$9\r\nredis.lan\r\n$4\r\n6380\r\n",
                        "*2\r\n$9\r\n127.0.0.1\r\n:6380\r\n", "*1\r\n$9\r\n127.0.0.1\r\n",
                        "*2\r\n$9\r\n127.0.0.1\r\n$5\r\n70000\r\n"};
    for (size_t i = 0; i < sizeof no / sizeof no[0]; i++) {
        r = parse(no[i]);
        assert_int_equal(sl_rsentinel_parse_addr(r, addr, sizeof addr), -1);
        freeReplyObject(r);
    }
}

static void switch_master_messages_name_the_new_primary(void **st)
{
    char addr[64];
    const char *msg = "*3\r\n$7\r\nmessage\r\n$14\r\n+switch-master\r\n"
                      "$38\r\nmymaster 127.0.0.1 6379 127.0.0.1 6380\r\n";
    redisReply *r = parse(msg);
    assert_int_equal(sl_rsentinel_parse_switch(r, "mymaster", addr, sizeof addr), 0);
    assert_string_equal(addr, "127.0.0.1:6380");
    assert_int_equal(sl_rsentinel_parse_switch(r, "other", addr, sizeof addr), -1);
    assert_int_equal(sl_rsentinel_parse_switch(r, "mymaste", addr, sizeof addr), -1);
    freeReplyObject(r);
    const char *no[] = {
        /* the subscription's confirmation */
        "*3\r\n$9\r\nsubscribe\r\n$14\r\n+switch-master\r\n:1\r\n",
        /* another channel */
        "*3\r\n$7\r\nmessage\r\n$6\r\n+sdown\r\n$38\r\nmymaster 127.0.0.1 6379 127.0.0.1 6380\r\n",
        /* four words, six words */
        "*3\r\n$7\r\nmessage\r\n$14\r\n+switch-master\r\n$29\r\nmymaster 127.0.0.1 6379 1.2.3\r\n",
        ("*3\r\n$7\r\nmessage\r\n$14\r\n+switch-master\r\n"
         "$34\r\nmymaster 1.1.1.1 1 2.2.2.2 2 extra\r\n"),
    };
    for (size_t i = 0; i < sizeof no / sizeof no[0]; i++) {
        r = parse(no[i]);
        assert_int_equal(sl_rsentinel_parse_switch(r, "mymaster", addr, sizeof addr), -1);
        freeReplyObject(r);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(crc16_is_xmodem_as_redis_cluster_uses),
        cmocka_unit_test(hash_tags_put_both_windows_of_a_key_in_one_slot),
        cmocka_unit_test(the_slot_map_is_read_from_cluster_slots),
        cmocka_unit_test(moved_and_ask_are_read),
        cmocka_unit_test(the_sentinels_answers_are_read),
        cmocka_unit_test(switch_master_messages_name_the_new_primary),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
