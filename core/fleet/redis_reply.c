/* SPDX-License-Identifier: BSD-2-Clause */
/* redis_reply.c - reading one reply of core/fleet/redis.lua. hiredis parses the
 * protocol; this only checks the shape it must have, so that a reply from
 * something else (an error, a proxy's answer, a script of another version)
 * is refused rather than read as counts. Fuzzed: tests/fuzz/fuzz_redis_reply.c. */
#include <hiredis/hiredis.h>

#include "redis_int.h"

int sl_redis_reply_counts(const void *reply, struct sl_redis_counts *out)
{
    const redisReply *r = reply;
    if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != 5) return -1;
    long long v[5];
    for (int i = 0; i < 5; i++) {
        const redisReply *e = r->element[i];
        if (!e || e->type != REDIS_REPLY_INTEGER || e->integer < 0) return -1;
        v[i] = e->integer;
    }
    if (v[0] > 1 || v[3] > v[1] || v[4] > v[2]) return -1; /* own counts are in the totals */
    *out = (struct sl_redis_counts){v[0], v[1], v[2], v[3], v[4]};
    return 0;
}
