/* SPDX-License-Identifier: BSD-2-Clause */
/* top.h - the keys a program denies most, from the ring of recent denials
 * in its table: what `sluice top` prints and the live page (cli/live.c)
 * shows. A key is an address (or its block), or for a request key the
 * short hash its log lines carry: never the value. */
#ifndef SL_CLI_TOP_H
#define SL_CLI_TOP_H

#include <stddef.h>
#include <stdint.h>

#include "../core/limit/table.h"

struct sl_top_seen {
    struct sl_denial d;
    uint64_t count; /* after sl_top_tally: denials of this rule and key */
};

/* Denials read so far and still in the window; zero it to start. */
struct sl_top_view {
    struct sl_top_seen *v;
    size_t n, cap;
    uint64_t from, lost;
};

/* Reads what the ring gained, drops what fell out of the window. */
void sl_top_refresh(struct sl_top_view *w, const struct sl_table *t, uint64_t now,
                    uint64_t window_ns);

/* The view's keys with their counts, most denied first: an array to free
 * (NULL when out of memory), *m entries. */
struct sl_top_seen *sl_top_tally(const struct sl_top_view *w, size_t *m);

/* "127.0.0.1", "10.0.0.0/24", "key 3fa9c1", "(the rule)". */
void sl_top_format_key(const struct sl_key *k, char *out, size_t len);

#endif
