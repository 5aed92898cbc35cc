/* fuzz_redis_reply.c - libFuzzer target for the Redis backend's reply
 * handling: arbitrary bytes fed to hiredis's reader (as they would come off
 * the socket, in two pieces split where the first byte says), and every
 * reply it makes handed to sl_redis_reply_counts, which must refuse all
 * but an array of five consistent non-negative integers. */
#include <hiredis/hiredis.h>
#include <stdint.h>
#include <stdlib.h>

#include "../../core/redis_int.h"

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
            freeReplyObject(reply);
        }
    }
    redisReaderFree(r);
    return 0;
}
