/* SPDX-License-Identifier: BSD-2-Clause */
/* redis_open.c - opening and closing the Redis backend: the top of
 * core/fleet's Redis files, which nothing below calls. Opening maps the
 * state (redis_state.c) and hands the sender layer (sender.c) the Redis
 * thread (redis.c), so that forked children drop its sockets; the thread
 * itself is started by the first decision (redis_state.c calls
 * sl_sender_check), so a program that inherits the config through exec and
 * never decides never connects. Closing stops the thread where it runs and
 * unmaps; a program's state lives as long as the program.
 */
#include "redis.h"

#include "redis_int.h"
#include "redis_sender.h"
#include "sender.h"

struct sl_redis_state *sl_redis_open(const struct sl_config *cfg, char *err, size_t errlen)
{
    struct sl_redis_state *s = sl_redis_map(cfg, err, errlen);
    if (!s) return NULL;
    sl_redis_sender(s);
    sl_sender_watch(&s->snd);
    return s; /* the first decision starts the sender (sl_sender_check) */
}

void sl_redis_close(struct sl_redis_state *s)
{
    if (!s) return;
    sl_sender_stop(&s->snd);
    sl_redis_unmap(s);
}
