/* SPDX-License-Identifier: BSD-2-Clause */
/* table_learned.h - what `learn` rules learned, kept in the shared table
 * for readers: which keys a vendor's answer holds or spreads, from which
 * field, until when (issue 35, item 2). `sluice stats`, `sluice metrics`
 * and the live page read it; the hold itself is the key's bucket
 * (sl_table_hold), this is only its description.
 *
 * A fixed set of SL_TABLE_LEARNED entries (table.h) at the end of the table's
 * mapping, one per key: a key learned again takes its own entry back, a
 * new key a free one, else the one whose time ends first (one that ended
 * before any still in force). So a key spread at every answer rewrites its
 * one entry and never pushes the other keys out; with more keys than
 * entries, those with the least time left are forgotten first.
 *
 * A key is told by the short hash its log lines carry (6 hex digits of
 * sl_req_key_short): never its value.
 */
#ifndef SL_TABLE_LEARNED_H
#define SL_TABLE_LEARNED_H

#include <stddef.h>
#include <stdint.h>

#include "table.h"

struct sl_learned_hold {
    int rule;          /* the rule entry */
    unsigned field;    /* which field said it: enum sl_learn_field (core/http/learn.h) */
    char key[7];       /* the key's short hash, as the log shows it */
    uint64_t hash;     /* the key's hash in the table: which key it is (never shown) */
    uint64_t at_ns;    /* when it was learned (monotonic ns) */
    uint64_t until_ns; /* a hold's end; a spread's, the end of the vendor's window (monotonic) */
    uint64_t gap_ns;   /* a spread: the gap between calls; 0: a hold */
    int64_t left;      /* a spread: the calls the vendor said were left */
};

/* Keeps what was learned for key h->hash of rule h->rule, in its entry
 * (see above). Lock-free; a writer that keeps losing the entry it chose
 * to other writers gives up (a description lost, the hold itself kept). */
void sl_table_note_learned(struct sl_table *t, const struct sl_learned_hold *h);

/* Copies out the entries, at most max, one per key (the latest learned),
 * in no particular order; entries being written are skipped. Returns how
 * many. Whether each is still in force is the reader's: until_ns > now. */
size_t sl_table_learned(const struct sl_table *t, struct sl_learned_hold *out, size_t max);

#endif
