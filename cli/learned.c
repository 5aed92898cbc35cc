/* SPDX-License-Identifier: BSD-2-Clause */
/* learned.c - what `learn` rules learned, read from the table and sorted
 * for the readers (learned.h). */
#include "learned.h"

#include <stdlib.h>
#include <time.h>

/* by rule; in force before ended; in force: the longest to go first;
 * ended: the latest first */
static int order(const void *a, const void *b, void *now_arg)
{
    const struct sl_learned_hold *x = a, *y = b;
    uint64_t sort_now = *(const uint64_t *)now_arg;
    if (x->rule != y->rule) return x->rule < y->rule ? -1 : 1;
    bool xin = x->until_ns > sort_now, yin = y->until_ns > sort_now;
    if (xin != yin) return xin ? -1 : 1;
    if (x->until_ns != y->until_ns) return x->until_ns > y->until_ns ? -1 : 1;
    return (x->at_ns < y->at_ns) - (x->at_ns > y->at_ns);
}

void sl_learned_read(const struct sl_table *t, uint64_t now, struct sl_learned_view *out)
{
    out->n = sl_table_learned(t, out->v, SL_TABLE_LEARNED);
    qsort_r(out->v, out->n, sizeof *out->v, order, &now);
}

bool sl_learned_shown(const struct sl_learned_view *w, size_t i, uint64_t now)
{
    if (w->v[i].until_ns > now) return true;
    size_t ended = 0;
    for (size_t j = 0; j < i; j++)
        ended += w->v[j].rule == w->v[i].rule && w->v[j].until_ns <= now;
    return ended < SL_LEARNED_ENDED_SHOWN;
}

void sl_learned_wall(uint64_t mono_ns, int64_t wall_offset_ns, char *out, size_t len)
{
    int64_t wall = (int64_t)mono_ns + wall_offset_ns;
    time_t s = (time_t)(wall / 1000000000);
    struct tm tm;
    if (wall < 0 || !gmtime_r(&s, &tm)) {
        snprintf(out, len, "?");
        return;
    }
    char day[32];
    strftime(day, sizeof day, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(out, len, "%s.%03dZ", day, (int)(wall % 1000000000 / 1000000));
}
