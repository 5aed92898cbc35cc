/* SPDX-License-Identifier: BSD-2-Clause */
/* fuzz_redis_reply.c - libFuzzer target for the Redis backend's reply
 * handling: arbitrary bytes fed to hiredis's reader (as they would come off
 * the socket, in two pieces split where the first byte says), and every
 * reply it makes handed to sl_redis_reply_counts, which must refuse all
 * but an array of five consistent non-negative integers, and to the
 * Sentinel and Cluster readers (the sentinels' answer, +switch-master,
 * CLUSTER SLOTS, MOVED / ASK), whose every address must be one sluice can
 * connect to and every slot and node index in range. */
#include <hiredis/hiredis.h>
#include <stdint.h>
#include <stdlib.h>

#include <string.h>

#include "../../core/fleet/hostport.h"
#include "../../core/fleet/redis_cluster.h"
#include "../../core/fleet/redis_int.h"
#include "../../core/fleet/redis_sentinel.h"

static void must_connect(const char *addr)
{
    struct sockaddr_storage ss;
    socklen_t len;
    if (strlen(addr) >= 64 || sl_hostport_parse(addr, &ss, &len)) abort();
}

static void high_availability(const void *reply)
{
    static struct sl_rslots m;
    char addr[64];
    unsigned slot = SL_SLOTS;
    if (sl_rsentinel_parse_addr(reply, addr, sizeof addr) == 0) must_connect(addr);
    if (sl_rsentinel_parse_switch(reply, "mymaster", addr, sizeof addr) == 0) must_connect(addr);
    if (sl_rcluster_parse_redirect(reply, &slot, addr, sizeof addr)) {
        if (slot >= SL_SLOTS) abort();
        must_connect(addr);
    }
    if (sl_rcluster_parse_slots(reply, &m) == 0) {
        if (m.nnodes == 0 || m.nnodes > SL_REDIS_NODES_MAX) abort();
        for (uint32_t i = 0; i < m.nnodes; i++)
            must_connect(m.addr[i]);
        for (unsigned i = 0; i < SL_SLOTS; i++)
            if (m.node[i] != SL_NO_NODE && m.node[i] >= m.nnodes) abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    size_t cut = data[0] % size;
    const char *p = (const char *)data + 1;
    size_t n = size - 1;
    if (cut > n) cut = n;
    redisReader *r = redisReaderCreate();
    if (!r) return 0;
    const size_t pieces[2][2] = {{0, cut}, {cut, n - cut}};
    for (int i = 0; i < 2; i++) {
        if (redisReaderFeed(r, p + pieces[i][0], pieces[i][1]) != REDIS_OK) break;
        for (;;) {
            void *reply = NULL;
            if (redisReaderGetReply(r, &reply) != REDIS_OK || !reply) break;
            struct sl_redis_counts k;
            if (sl_redis_reply_counts(reply, &k) == 0 &&
                (k.allowed > 1 || k.own_curr > k.curr || k.own_prev > k.prev || k.curr < 0))
                abort();
            high_availability(reply);
            freeReplyObject(reply);
        }
    }
    redisReaderFree(r);
    return 0;
}
