/* SPDX-License-Identifier: BSD-2-Clause */
/* redis_view.c - the Redis sender's state of a running program (core/fleet/redis.c
 * keeps it in a memory file): when Redis last answered, the counters
 * (failovers, MOVED, ASK among them) and the servers synced with, each with
 * the script calls it answered: the primary behind Sentinel, or each
 * primary of a cluster. */
#include "redis_view.h"

#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <unistd.h>

#include "../core/clock.h"
#include "locate.h"

bool sl_redis_view(int pid, struct sl_rhdr *h)
{
    char path[PATH_MAX];
    if (pid <= 0 || !sl_locate_memfd(pid, "sluice-redis", path, sizeof path)) return false;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    bool ok = false;
    for (int tries = 0; tries < 100 && !ok; tries++) { /* addr_seq odd: being rewritten */
        ok = pread(fd, h, sizeof *h, 0) == (ssize_t)sizeof *h && !(atomic_load(&h->addr_seq) & 1);
        if (!ok) usleep(1000);
    }
    close(fd);
    if (ok && h->nnodes > SL_REDIS_NODES_MAX) h->nnodes = SL_REDIS_NODES_MAX;
    for (uint32_t i = 0; ok && i < h->nnodes; i++)
        h->nodes[i].addr[sizeof h->nodes[i].addr - 1] = 0;
    return ok;
}

void sl_redis_view_print(FILE *out, const struct sl_rhdr *h)
{
    uint64_t ok = atomic_load(&h->ok_at), now = sl_clock_now();
    fprintf(out, "\nredis: ");
    if (ok)
        fprintf(out, "last complete round %.3f s ago\n", (double)(now > ok ? now - ok : 0) / 1e9);
    else
        fprintf(out, "no complete round yet\n");
    for (int k = 0; k < SL_RC_NCOUNTERS; k++)
        fprintf(out, "%s%s %llu", k ? ", " : "  ", sl_redis_counter_names[k],
                (unsigned long long)atomic_load(&h->counters[k]));
    fputc('\n', out);
    fprintf(out, "  %-48s %12s\n", "node", "calls");
    for (uint32_t i = 0; i < h->nnodes; i++)
        fprintf(out, "  %-48s %12llu\n", h->nodes[i].addr,
                (unsigned long long)atomic_load(&h->nodes[i].calls));
}
