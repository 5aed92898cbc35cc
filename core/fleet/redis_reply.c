/* SPDX-License-Identifier: BSD-2-Clause */
/* redis_reply.c - reading one reply of core/fleet/redis.lua. hiredis parses the
 * protocol; this only checks the shape it must have, so that a reply from
 * something else (an error, a proxy's answer, a script of another version)
 * is refused rather than read as counts. Five elements, or six with a
 * learned hold (the script's KEYS[3]). Fuzzed: tests/fuzz/fuzz_redis_reply.c. */
#include <hiredis/hiredis.h>

#include "redis_int.h"

int sl_redis_reply_counts(const void *reply, struct sl_redis_counts *out)
{
    const redisReply *r = reply;
    if (!r || r->type != REDIS_REPLY_ARRAY || (r->elements != 5 && r->elements != 6)) return -1;
    long long v[6] = {0};
    for (size_t i = 0; i < r->elements; i++) {
        const redisReply *e = r->element[i];
        if (!e || e->type != REDIS_REPLY_INTEGER || e->integer < 0) return -1;
        v[i] = e->integer;
    }
    if (v[0] > 1 || v[3] > v[1] || v[4] > v[2]) return -1; /* own counts are in the totals */
    *out = (struct sl_redis_counts){v[0], v[1], v[2], v[3], v[4], v[5]};
    return 0;
}
